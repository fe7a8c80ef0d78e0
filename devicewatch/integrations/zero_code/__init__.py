"""Phases, epochs and data wait for training scripts that know nothing of devicewatch.

The recorder puts ``startup/`` (a folder holding only a ``sitecustomize.py``) first on the
workload's ``PYTHONPATH``. Python runs it at start-up in every process of the workload; it
costs an import hook until a framework of the table (``frameworks.FRAMEWORKS``) is imported,
then arms that framework's hooks (``instrument.arm``). Everything they learn goes out through
``devicewatch.events`` like any workload's events, aggregated in the workload's process.

This module is the recorder's side: whether the instrumentation is offered to a command, and
the environment that offers it. Standard library only: the recorder imports it for every run.
"""

from __future__ import annotations

import os
import re
from typing import Any
from collections.abc import Mapping, Sequence

from . import frameworks

SWITCH_VAR = "DEVICEWATCH_INSTRUMENT"   # "0" (or off, false, no) switches the instrumentation off
# The modules the start-up hook watches and the framework each arms (``module=framework,…``):
# the table's (``frameworks.watched``), handed in since the hook may not import it.
WATCHED_VAR = "DEVICEWATCH_WATCHED"
SWITCHED_OFF = ("0", "off", "false", "no")
STARTUP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup")

# python, python3, python3.12, pythonw, pypy3, python3.12d: the interpreter itself.
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?[a-z]?$")
# Flags that keep the sitecustomize from running, and what each means for the user.
_BLOCKING = {"I": "-I (isolated mode ignores PYTHONPATH)", "E": "-E (ignores PYTHONPATH)",
             "S": "-S (no site module, so no sitecustomize)"}


def switched_off(env: Mapping[str, str]) -> bool:
    return env.get(SWITCH_VAR, "").strip().lower() in SWITCHED_OFF


def python_flags(command: Sequence[str]) -> str:
    """The one-letter flags a Python command line gives its interpreter ("" when the command is
    not a Python interpreter): what comes before the script, ``-m`` or ``-c``."""
    if not command or not _PYTHON.match(os.path.basename(command[0])):
        return ""
    flags = ""
    words = iter(command[1:])
    for word in words:
        if word == "--check-hash-based-pycs":
            next(words, None)
            continue
        if word == "-" or not word.startswith("-") or word.startswith("--"):
            break  # the script, stdin, or a long option such as --version
        for i, letter in enumerate(word[1:]):
            flags += letter
            if letter in "cm":  # what follows is the program's, not the interpreter's
                return flags
            if letter in "WX":  # its value is the rest of the word, or the next word
                if i == len(word) - 2:
                    next(words, None)
                break
    return flags


def offered(command: Sequence[str], env: Mapping[str, str], enabled: bool = True) -> dict[str, Any]:
    """Whether the instrumentation is offered to COMMAND and, if not, why: the header's
    ``instrument`` object. Offered to any command that is not Python run with -I, -E or -S,
    since a shell script or a launcher (torchrun) may start Python processes of its own."""
    if not enabled:
        return {"offered": False, "reason": "switched off by --no-instrument"}
    if switched_off(env):
        return {"offered": False, "reason": f"switched off by {SWITCH_VAR}={env[SWITCH_VAR]}"}
    flags = python_flags(command)
    for letter, why in _BLOCKING.items():
        if letter in flags:
            return {"offered": False, "reason": f"the command runs Python with {why}"}
    return {"offered": True}


def environment(command: Sequence[str], env: Mapping[str, str],
                enabled: bool = True) -> tuple[dict[str, str], dict[str, Any]]:
    """The workload's environment with the instrumentation offered (``startup/`` first on
    PYTHONPATH, the table's watched modules in WATCHED_VAR), and ``offered()``'s answer. Not
    offered: the environment as given."""
    info = offered(command, env, enabled)
    env = dict(env)
    if info["offered"]:
        # An empty entry would put the current directory on every process's sys.path.
        before = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = STARTUP_DIR + (os.pathsep + before if before else "")
        env[WATCHED_VAR] = ",".join(f"{module}={name}" for module, name in frameworks.watched().items())
    return env, info


# -- variants and trials: what ``devicewatch try`` asks of one run of a script ----------------

VARY_VAR = "DEVICEWATCH_VARY"     # JSON {knob: value}: the variant this run applies to the script
TRIAL_VAR = "DEVICEWATCH_TRIAL"   # JSON {"warmup": steps, "steps": N} or {"warmup": steps, "seconds": S}
# Knobs that change how the work is fed and spread, never the model's arithmetic: the
# DataLoader's arguments, and the threads of PyTorch's and TensorFlow's operators (with
# OMP_NUM_THREADS, set in the environment for the whole process).
LOADER_KNOBS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor")
THREADS = "threads"
MAP_PARALLEL = "map_parallel"     # tf.data: num_parallel_calls of the maps a script left sequential
KNOBS = LOADER_KNOBS + (THREADS, MAP_PARALLEL)
_BOOLEAN = ("pin_memory", "persistent_workers")


def knob_value(knob: str, text: str) -> int | bool:
    """The value of KNOB written as TEXT (``2``, ``true``), or ValueError saying what it takes."""
    if knob not in KNOBS:
        raise ValueError(f"unknown knob {knob!r}: the knobs are {', '.join(KNOBS)}")
    word = text.strip().lower()
    if knob in _BOOLEAN:
        if word in ("true", "1", "yes", "on"):
            return True
        if word in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"{knob} takes true or false, not {text!r}")
    try:
        value = int(word)
    except ValueError:
        raise ValueError(f"{knob} takes a whole number, not {text!r}") from None
    if value < (0 if knob == "num_workers" else 1):
        raise ValueError(f"{knob} must be at least {0 if knob == 'num_workers' else 1}, not {value}")
    return value
