"""The workload's standard input: what the user pipes or types reaches it, and so does its end.

One relay per run copies the recorder's standard input to the workload's: the master side of
its pseudo-terminal (typed keys, in raw mode) or the writing end of a pipe (piped input),
which is closed at the end of input so that the workload reads its EOF. It runs on a daemon
thread that waits in ``select`` and reads only what has come, so that once the workload has
ended it stops without taking keys typed for the shell (and a daemon thread parked there is
harmless at exit, unlike one in a buffered reader). The dashboard's keys
arrive as control commands and go the same way (``send``).

Ctrl-C typed into the workload's terminal is a SIGINT its terminal gives it, as without
devicewatch; the relay counts them (``on_interrupt``) so that the recorder can say the user
interrupted the run, and escalate at the second one as a Ctrl-C to the recorder does. Ctrl-Z
stops the workload the same way; the relay says so (``on_suspend``) once it is passed on.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable

CHUNK = 4096
POLL = 0.2      # seconds between looks at whether the relay was closed


class InputRelay:
    """Writes to FD (the pty's master, or a pipe's writing end, ``owns_fd``: closed at the end)."""

    def __init__(self, fd: int, owns_fd: bool, interrupt_char: Callable[[], bytes | None] = lambda: None,
                 on_interrupt: Callable[[], None] = lambda: None,
                 suspend_char: Callable[[], bytes | None] = lambda: None,
                 on_suspend: Callable[[], None] = lambda: None):
        self.fd, self._owns_fd = fd, owns_fd
        self._interrupt_char, self._on_interrupt = interrupt_char, on_interrupt
        self._suspend_char, self._on_suspend = suspend_char, on_suspend
        self._lock = threading.Lock()
        self._closed = False

    def send(self, data: bytes) -> bool:
        """Pass DATA on; False once the workload's input is closed (it exited, or input ended)."""
        if self._closed:
            return False
        char = self._interrupt_char()
        if char is not None:
            for _ in range(data.count(char)):
                self._on_interrupt()
        with self._lock:
            if self._closed:
                return False
            view = memoryview(data)
            try:
                while view:
                    written = os.write(self.fd, view)
                    view = view[written:]
            except OSError:   # the workload closed its input (or exited): what it did not read is gone
                self._close()
                return False
        suspend = self._suspend_char()
        if suspend is not None and suspend in data:
            self._on_suspend()
        return True

    def end(self) -> None:
        """The end of input: a pipe is closed (the workload reads EOF); a terminal stays open."""
        with self._lock:
            if self._owns_fd:
                self._close()

    def close(self) -> None:
        """No more input: the workload has ended (its terminal is about to be closed)."""
        with self._lock:
            self._close()
            self._closed = True

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owns_fd:
                try:
                    os.close(self.fd)
                except OSError:
                    pass

    def follow(self, source: int) -> threading.Thread:
        """Copy file descriptor SOURCE until its end, on a daemon thread."""

        def copy() -> None:
            while not self._closed:
                try:
                    if not select.select([source], [], [], POLL)[0] or self._closed:
                        continue
                    chunk = os.read(source, CHUNK)
                except InterruptedError:
                    continue
                except (OSError, ValueError):
                    chunk = b""
                if not chunk or not self.send(chunk):
                    break
            self.end()

        thread = threading.Thread(target=copy, name="devicewatch-input", daemon=True)
        thread.start()
        return thread
