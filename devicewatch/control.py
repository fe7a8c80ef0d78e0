"""The recorder's control channel: a viewer drops markers into a run that is being recorded.

A marker must land in the run file, and only the recorder writes that file. The dashboard
starts the recorder with ``--control`` and a pipe on its standard input; each line it writes
there is one command, a JSON object. Only ``{"kind": "marker", "label": ...}`` exists so far;
the recorder turns it into an ordinary marker event (``source: "dashboard"``) stamped with its
own clock. End of input (the viewer quit or crashed) only ends the channel, never the run.

Standard library only, like ``events``: the recorder imports it, the dashboard imports it.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable

from . import records
from .events import MARKER

MAX_LABEL = 200
MAX_LINE = 4096


def marker_line(label: str) -> bytes:
    """One command line that asks the recorder to write a marker with ``label``."""
    return (json.dumps({"kind": MARKER, "label": label[:MAX_LABEL]}) + "\n").encode()


def parse_command(line: bytes, t: float) -> dict[str, Any] | None:
    """The event record a command line stands for, or None for anything unreadable."""
    if len(line) > MAX_LINE:
        return None
    try:
        command = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(command, dict) or command.get("kind") != MARKER:
        return None
    label = command.get("label")
    if not isinstance(label, str):
        return None
    return records.event(t, MARKER, label=label[:MAX_LABEL], source="dashboard")


def follow(fd: int, write: Callable[[dict[str, Any]], None],
           clock: Callable[[], float]) -> threading.Thread:
    """Read commands from file descriptor ``fd`` on a daemon thread and ``write`` their events.

    Plain ``os.read`` rather than a buffered file: a daemon thread parked inside a buffered
    reader makes the interpreter abort at exit, while one parked in ``os.read`` is harmless.
    """

    def read() -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(fd, 4096)
                if not chunk:
                    return  # the viewer went away: the run goes on without its control channel
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    record = parse_command(line.strip(), clock())
                    if record is not None:
                        write(record)
                if len(pending) > MAX_LINE:
                    pending = b""
        except OSError:
            pass

    thread = threading.Thread(target=read, name="devicewatch-control", daemon=True)
    thread.start()
    return thread
