"""The recorder's control channel: the dashboard that started a run talks to its recorder.

Only the recorder writes the run file, and only the dashboard that started it holds the
writing end of the recorder's standard input (the recorder runs with ``--control``). Each line
is one command, a JSON object:

* ``{"kind": "marker", "label": "..."}``: a marker event (``source: "dashboard"``) stamped with
  the recorder's clock;
* ``{"kind": "stop", "reason": "..."}``: cancel the workload, the end record saying why (the
  dashboard's terminal was closed, say);
* ``{"kind": "detach"}``: the user chose to quit the dashboard and keep recording;
* ``{"kind": "input", "text": "..."}``: keys typed into the workload's terminal (UTF-8);
* ``{"kind": "resize", "rows": R, "columns": C}``: the output panel, the workload's terminal, changed size;
* ``{"kind": "signal", "signal": "SIGTERM"}``: a signal sent to the dashboard, for the workload as
  itself (``SIGNALS``), as a headless recorder passes on one sent to it.

End of input means the dashboard has gone, however it went (quit, crash, a closed terminal, a
killed session): unless it detached first, the run is cancelled with the reason
``DASHBOARD_GONE``, as a program started from a shell ends with it. Nothing runs unseen. After a
signal that ends the workload (``ENDING_SIGNALS``) the dashboard goes without cancelling: the
workload has its grace, and the recorder ends it after that, as it would headless.

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
STOP, DETACH, INPUT, RESIZE, SIGNAL = "stop", "detach", "input", "resize", "signal"
# The signals a dashboard passes to its run's workload (the recorder's own PASSED_SIGNALS), and
# those of them that end it.
SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
ENDING_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT")
MAX_INPUT = 512      # characters of typed input in one command (a paste comes as several)
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


def input_lines(text: str) -> bytes:
    """Command lines that pass TEXT to the workload's terminal, as typed."""
    return b"".join((json.dumps({"kind": INPUT, "text": text[i:i + MAX_INPUT]}) + "\n").encode()
                    for i in range(0, len(text), MAX_INPUT))


def resize_line(rows: int, columns: int) -> bytes:
    """The command that gives the workload's terminal a new size."""
    return (json.dumps({"kind": RESIZE, "rows": rows, "columns": columns}) + "\n").encode()


def signal_line(name: str) -> bytes:
    """The command that passes the signal NAME (one of ``SIGNALS``) to the workload."""
    return (json.dumps({"kind": SIGNAL, "signal": name}) + "\n").encode()


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
    if kind == INPUT and isinstance(command.get("text"), str):
        return {"kind": INPUT, "text": command["text"][:MAX_INPUT]}
    if kind == RESIZE and all(type(command.get(k)) is int and 0 < command[k] <= 10000 for k in ("rows", "columns")):
        return {"kind": RESIZE, "rows": command["rows"], "columns": command["columns"]}
    if kind == SIGNAL and command.get("signal") in SIGNALS:
        return {"kind": SIGNAL, "signal": command["signal"]}
    return None


def follow(fd: int, write: Callable[[records.Writable], None], clock: Callable[[], float],
           cancel: Callable[[str], None], send_input: Callable[[bytes], None] = lambda _data: None,
           resize: Callable[[tuple[int, int]], None] = lambda _size: None,
           pass_on: Callable[[str], None] = lambda _name: None) -> threading.Thread:
    """Read commands from file descriptor ``fd`` on a daemon thread: markers are ``write``n,
    a stop or the dashboard's going ``cancel`` the run (with the reason), typed keys are
    ``send_input``, a new size of the workload's terminal is ``resize``d (rows, columns), a
    signal is ``pass_on``ed by name; the dashboard's going after an ending signal cancels nothing.

    Plain ``os.read`` rather than a buffered file: a daemon thread parked inside a buffered
    reader makes the interpreter abort at exit, while one parked in ``os.read`` is harmless.
    """

    def read() -> None:
        pending = b""
        detached = False   # ... or gone after an ending signal: the workload's grace runs on
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
                        write(records.Marker(clock(), command["label"], {"source": "dashboard"}))
                    elif command["kind"] == STOP:
                        cancel(command["reason"] or DASHBOARD_GONE)
                    elif command["kind"] == INPUT:
                        send_input(command["text"].encode("utf-8", errors="replace"))
                    elif command["kind"] == RESIZE:
                        resize((command["rows"], command["columns"]))
                    elif command["kind"] == SIGNAL:
                        pass_on(command["signal"])
                        detached = detached or command["signal"] in ENDING_SIGNALS
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
