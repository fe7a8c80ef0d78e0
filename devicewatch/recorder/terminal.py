"""The headless recorder's terminal: the workload's output echoed, and a status line below it.

The output is echoed as the workload wrote it, bytes as they come. Both write to the same
terminal from different threads (the output pumps echo, the sampler shows the status), so one
lock orders them, echoed output first clears the status line, and the status line is shown
only where the workload left the cursor at the start of a line (below a line it has not ended,
it would be written into it). While the workload owns the terminal (a pseudo-terminal: it may
draw anywhere on the screen) there is no status line at all.
A terminal that goes away (a closed window, EIO, a viewer that quit) ends the echo or the
status line, never the recording; a recording that cannot be written is said here (``say``).
"""

from __future__ import annotations

import threading
from typing import TextIO
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
                 write: Callable[[records.Writable], None], t: Callable[[], float]):
        self._out, self._err = out, err
        self._echo = echo
        self._status_line = status_line   # None: only when stderr is a terminal
        self._write, self._t = write, t
        self._lock = threading.Lock()
        self._shown = False
        self._line_open = False          # the workload's last echoed byte did not end a line
        self._raw = False                # the user's terminal is the workload's, in raw mode

    @property
    def echoing(self) -> bool:
        return self._echo

    def echo_bytes(self, stream: str, data: bytes) -> None:
        """The workload's output as it came, to our stdout or stderr."""
        if not self._echo or not data:
            return
        try:
            with self._lock:
                self._clear()
                target = self._out if stream == "stdout" else self._err
                binary = getattr(target, "buffer", None)
                if binary is not None:
                    target.flush()
                    binary.write(data)
                    binary.flush()
                else:  # a text-only stream (a test's StringIO)
                    target.write(data.decode("utf-8", errors="replace"))
                    target.flush()
                self._line_open = not data.endswith(b"\n")
        except (OSError, ValueError) as exc:  # our terminal or viewer went away: record on
            self._echo = False
            self._write(records.notice(self._t(), f"stopped echoing the workload's output: {exc}"))

    def workload_owns_terminal(self) -> None:
        """The workload draws on our terminal through its pseudo-terminal: no status line."""
        self._status_line = False
        self._raw = True

    def terminal_given_back(self) -> None:
        """The user's terminal is out of raw mode again (the workload has ended)."""
        self._raw = False

    def say(self, line: str) -> None:
        """One line of devicewatch's own on stderr (a recording that cannot be written), on a
        line of its own below the workload's output; whether stderr is still there or not."""
        end = "\r\n" if self._raw else "\n"   # the user's terminal is in raw mode while the workload owns it
        with self._lock:
            self._clear()
            try:
                self._err.write((end if self._line_open else "") + line + end)
                self._err.flush()
                self._line_open = False
            except (OSError, ValueError):
                pass

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
            if self._line_open:
                return
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
