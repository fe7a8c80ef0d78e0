"""The headless recorder's terminal: the workload's output echoed, and a status line below it.

Both write to the same terminal from different threads (the output pumps echo, the sampler
shows the status), so one lock orders them and an echoed line first clears the status line.
A terminal that goes away (a closed window, EIO, a viewer that quit) ends the echo or the
status line, never the recording.
"""

from __future__ import annotations

import threading
from typing import Any, TextIO
from collections.abc import Callable

from ..runformat import records


def status_text(t: float, epoch: int | None, epochs: int | None, phase: str | None,
                cpu_total: float, gpu_utils: list[float]) -> str:
    """``  12.3s · epoch 3/20 · train · CPU  54.0% · GPU  97%``"""
    parts = [f"{t:7.1f}s"]
    if epoch is not None:
        parts.append(f"epoch {epoch}" + (f"/{epochs}" if epochs else ""))
    if phase:
        parts.append(phase)
    parts.append(f"CPU {cpu_total:5.1f}%")
    if gpu_utils:
        parts.append("GPU " + " ".join(f"{u:3.0f}%" for u in gpu_utils))
    return " · ".join(parts)


class Terminal:
    """Echo and status line; ``write`` and ``t`` let it say in the run file when echoing stopped."""

    def __init__(self, out: TextIO, err: TextIO, echo: bool, status_line: bool | None,
                 write: Callable[[dict[str, Any]], None], t: Callable[[], float]):
        self._out, self._err = out, err
        self._echo = echo
        self._status_line = status_line   # None: only when stderr is a terminal
        self._write, self._t = write, t
        self._lock = threading.Lock()
        self._shown = False

    @property
    def echoing(self) -> bool:
        return self._echo

    def echo(self, stream: str, text: str) -> None:
        """One line of the workload's output, to our stdout or stderr as it came."""
        if not self._echo:
            return
        try:
            with self._lock:
                self._clear()
                target = self._out if stream == "stdout" else self._err
                target.write(text + "\n")
                target.flush()
        except (OSError, ValueError) as exc:  # our terminal or viewer went away: record on
            self._echo = False
            self._write(records.notice(self._t(), f"stopped echoing the workload's output: {exc}"))

    def wants_status(self) -> bool:
        if self._status_line is None:
            try:
                self._status_line = self._err.isatty()
            except (OSError, ValueError):
                self._status_line = False
        return self._status_line

    def show_status(self, text: str) -> None:
        if not self.wants_status():
            return
        with self._lock:
            try:
                self._err.write("\r\x1b[K[devicewatch] " + text)
                self._err.flush()
                self._shown = True
            except (OSError, ValueError):  # the terminal is gone (closed window, EIO): record on
                self._status_line = False

    def clear_status(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._shown:
            self._shown = False
            try:
                self._err.write("\r\x1b[K")
                self._err.flush()
            except (OSError, ValueError):
                self._status_line = False
