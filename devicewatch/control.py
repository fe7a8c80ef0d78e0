"""The recorder's control channel: the dashboard that started a run talks to its recorder.

Only the recorder writes the run file, and only the dashboard that started it holds the
writing end of the recorder's standard input (the recorder runs with ``--control``). Each line
is one command, a JSON object:

* ``{"kind": "marker", "label": "..."}``: a marker event (``source: "dashboard"``) stamped with
  the recorder's clock;
* ``{"kind": "stop", "reason": "..."}``: cancel the workload, the end record saying why (the
  dashboard's terminal was closed, say);
* ``{"kind": "detach"}``: the user chose to quit the dashboard and keep recording.

End of input means the dashboard has gone, however it went (quit, crash, a closed terminal, a
killed session): unless it detached first, the run is cancelled with the reason
``DASHBOARD_GONE``, as a program started from a shell ends with it. Nothing runs unseen.

Standard library only, like ``events``: the recorder imports it, the dashboard imports it.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any
from collections.abc import Callable

from .runformat import records
from .events import MARKER

MAX_LABEL = 200
MAX_LINE = 4096
STOP, DETACH = "stop", "detach"
DASHBOARD_GONE = "the dashboard went away (closed or crashed)"


def marker_line(label: str) -> bytes:
    """One command line that asks the recorder to write a marker with ``label``."""
    return (json.dumps({"kind": MARKER, "label": label[:MAX_LABEL]}) + "\n").encode()


def stop_line(reason: str) -> bytes:
    """One command line that asks the recorder to cancel the run, saying why."""
    return (json.dumps({"kind": STOP, "reason": reason[:MAX_LABEL]}) + "\n").encode()


def detach_line() -> bytes:
    """The command that leaves the run recording when the dashboard goes."""
    return (json.dumps({"kind": DETACH}) + "\n").encode()


def parse_command(line: bytes) -> dict[str, Any] | None:
    """A command line as a dict with a known ``kind`` and its fields checked, else None."""
    if len(line) > MAX_LINE:
        return None
    try:
        command = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(command, dict):
        return None
    kind = command.get("kind")
    if kind == MARKER and isinstance(command.get("label"), str):
        return {"kind": MARKER, "label": command["label"][:MAX_LABEL]}
    if kind == STOP:
        reason = command.get("reason")
        return {"kind": STOP, "reason": reason[:MAX_LABEL] if isinstance(reason, str) and reason else None}
    if kind == DETACH:
        return {"kind": DETACH}
    return None


def follow(fd: int, write: Callable[[dict[str, Any]], None], clock: Callable[[], float],
           cancel: Callable[[str], None]) -> threading.Thread:
    """Read commands from file descriptor ``fd`` on a daemon thread: markers are ``write``n,
    a stop or the dashboard's going ``cancel`` the run (with the reason).

    Plain ``os.read`` rather than a buffered file: a daemon thread parked inside a buffered
    reader makes the interpreter abort at exit, while one parked in ``os.read`` is harmless.
    """

    def read() -> None:
        pending = b""
        detached = False
        try:
            while True:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    command = parse_command(line.strip())
                    if command is None:
                        continue
                    if command["kind"] == MARKER:
                        write(records.event(clock(), MARKER, label=command["label"], source="dashboard"))
                    elif command["kind"] == STOP:
                        cancel(command["reason"] or DASHBOARD_GONE)
                    else:
                        detached = True
                        write(records.notice(clock(), "the dashboard quit and left the run recording", level="info"))
                if len(pending) > MAX_LINE:
                    pending = b""
        except OSError:
            pass
        if not detached:
            cancel(DASHBOARD_GONE)

    thread = threading.Thread(target=read, name="devicewatch-control", daemon=True)
    thread.start()
    return thread
