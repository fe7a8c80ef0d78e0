"""The script's own epoch number, read once from its loop variable as devicewatch joins.

``py-spy dump --nonblocking --locals`` reads the local variables of each frame without stopping
the process (0.26 s, 0.02 s of CPU, once). A loop variable named for the epoch (``epoch``,
``current_epoch``…) holding a whole number in one of the script's own frames is the epoch under
way: the passes seen whole after it are numbered on from it. A loop at a script's top level
keeps its variable among the module's globals, which py-spy does not read: such a script's
passes are counted from the attach (1: the first seen whole), and the run says so.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from ..integrations.zero_code.epoch_variable import named_for_epoch
from .classify import is_framework
from .sampler import find_tool
from .stacks import Frame

TIMEOUT = 10   # seconds a dump may take on a busy machine
TRIES = 3
LOOP_THREAD = "MainThread"
PY_SPY_VAR = "DEVICEWATCH_PY_SPY"


def find_py_spy() -> str | None:
    return find_tool("py-spy", PY_SPY_VAR)


def epoch_in(dump: Any) -> tuple[str, int] | None:
    """The loop variable and its value in py-spy's ``dump --json --locals`` output: the
    innermost of the loop thread's own frames (not a framework's) that holds one, or None."""
    if not isinstance(dump, list):
        return None
    for thread in dump:
        if not isinstance(thread, dict) or thread.get("thread_name") != LOOP_THREAD:
            continue
        for frame in thread.get("frames") or []:   # innermost first
            if not isinstance(frame, dict):
                continue
            where = Frame(str(frame.get("name", "")), str(frame.get("filename", "")), 0)
            if is_framework(where) or not where.file.endswith(".py") or not where.file.startswith("/"):
                continue
            for local in frame.get("locals") or []:
                if not isinstance(local, dict) or not named_for_epoch(str(local.get("name", ""))):
                    continue
                text = str(local.get("repr", ""))
                if text.lstrip("-").isdigit():
                    return str(local["name"]), int(text)
    return None


def read_epoch(py_spy: str, pid: int, tries: int = TRIES) -> tuple[str, int] | None:
    """The epoch under way in PID by its loop variable, or None (none found, or not readable).
    A non-blocking read may catch a stack as it changes: it is read again, TRIES times at most."""
    for _ in range(tries):
        try:
            done = subprocess.run([py_spy, "dump", "--nonblocking", "--locals", "--json", "--pid", str(pid)],
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
            found = epoch_in(json.loads(done.stdout)) if done.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, ValueError):
            found = None
        if found is not None:
            return found
    return None
