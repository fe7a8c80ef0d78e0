"""Arming the zero-code instrumentation in one workload process.

``arm`` is what the sitecustomize calls once a watched framework has been imported: it arms
that framework's hooks (the hooks module its row of ``frameworks.FRAMEWORKS`` names) on this
process's state (``process_state.PROCESS``). The hooks and the framework callbacks import only
``process_state``; this module loads them, so nothing imports back.
"""

from __future__ import annotations

import functools
import importlib
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

    events.phase_begin = phase_begin
