"""Arming the zero-code instrumentation in one workload process.

``arm`` is what the sitecustomize calls once a watched framework has been imported: it arms
that framework's hooks (the hooks module its row of ``frameworks.FRAMEWORKS`` names) on this
process's state (``process_state.PROCESS``). The hooks and the framework callbacks import only
``process_state``; this module loads them, so nothing imports back.

``join`` and ``leave`` are what ``devicewatch attach`` runs in a process it joins mid-run (on
Python 3.14 or newer, by ``sys.remote_exec``; ``attach.remote``): the same hooks armed on the
frameworks the process has imported, and taken out again at the detach.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from typing import Any

from ... import events
from .frameworks import BY_NAME, WATCHED
from .process_state import PROCESS, own_phases


def arm(name: str, module: Any) -> None:
    """Arm the hooks of the framework whose module NAME has just been imported (its row of
    ``frameworks.FRAMEWORKS``: the hooks module the row names does the arming)."""
    framework = BY_NAME.get(WATCHED.get(name, ""))
    if framework is None or not PROCESS.live:
        return
    if not PROCESS.armed:
        _defer_to_the_scripts_own_phases()
    try:
        hooks = importlib.import_module(f"{__package__}.{framework.hooks}")
        hooks.on_import(framework.name, name, module, PROCESS)
        if name not in framework.completing:  # else part of an arming said already
            PROCESS.armed_now(framework.name)
    except Exception as exc:  # a framework we cannot hook runs as it is
        PROCESS.error(framework.name, "arm", exc)


def _defer_to_the_scripts_own_phases() -> None:
    """A script that sends phases itself (``devicewatch.events``: the workloads, a script of
    one's own) owns them: from its first phase on, the torch-level loop says none."""
    declare = events.phase_begin

    @functools.wraps(declare)
    def phase_begin(*args: Any, **kwargs: Any) -> None:
        if PROCESS.owner is None:
            own_phases("events")
        declare(*args, **kwargs)

    PROCESS.replace(events, "phase_begin", phase_begin)


def join(fifo: str) -> None:
    """Arm, in a process running already, the hooks of each framework of the table it has
    imported, speaking on FIFO without ever waiting for it (``process_state.Process.joined``:
    the first training batch tells whether the pass under way is whole, and the script's loop
    variable numbers it). Says ``joined`` at once, with what was armed, so the recorder need
    not wait for a phase to know the hooks are in."""
    if PROCESS.armed or not PROCESS.live:   # said on FIFO by the script that called (``attach.inside``)
        raise RuntimeError("devicewatch's hooks are in this process already (it runs under devicewatch)")
    os.environ[events.ENV_VAR] = fifo
    events.never_wait()
    PROCESS.joined()
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__spec__", None) is not None:
            arm(name, module)
    events.emit(events.INSTRUMENT, state="joined", frameworks=list(PROCESS.armed),
                python=".".join(map(str, sys.version_info[:3])))


def leave() -> None:
    """Take out every hook ``join`` put in (``Process.disarm``), say so, and stop speaking:
    the process runs on as it was."""
    PROCESS.disarm()
    events.emit(events.INSTRUMENT, state="left")
    events.close()
    os.environ.pop(events.ENV_VAR, None)
