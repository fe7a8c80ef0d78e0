"""The workload's terminal: a pseudo-terminal where the user has a terminal.

A program decides how to print (a progress bar that redraws itself, colours, prompts) by asking
whether its output is a terminal and how wide it is. Headless in a terminal, the workload is
given a pseudo-terminal of its own that is a copy of the user's (same settings, same size,
resized with it); the dashboard gives it one the size of its output panel. Everything the
workload writes comes out of the master side, byte for byte; what the user types goes in there.

The user's terminal is switched to raw mode while the workload owns it, as ``script`` and
``ssh -t`` do: keys (Ctrl-C and Ctrl-Z too) reach the workload's terminal, which turns them
into signals for the workload's foreground process group. Raw mode is undone on every way out
(``restore`` is idempotent and registered with ``atexit``; SIGTERM and SIGHUP end the recorder
through its clean path).
"""

from __future__ import annotations

import atexit
import fcntl
import os
import struct
import termios
import tty

# ``c_cc`` index of the interrupt character (Ctrl-C by default) in a termios attribute list.
_CC = 6


def terminal_size(fd: int) -> tuple[int, int] | None:
    """(rows, columns) of the terminal on FD, or None if it is not one (or has no size)."""
    try:
        rows, cols, _x, _y = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        return None
    return (rows, cols) if rows and cols else None


def set_size(fd: int, rows: int, cols: int) -> None:
    """Resize the terminal on FD; its foreground process group gets SIGWINCH from the kernel."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def parse_size(text: str) -> tuple[int, int] | None:
    """``COLSxROWS`` (``120x40``) as (rows, columns), or None if it is not one."""
    cols, sep, rows = text.lower().partition("x")
    if not sep or not cols.isdigit() or not rows.isdigit():
        return None
    rows_n, cols_n = int(rows), int(cols)
    return (rows_n, cols_n) if 0 < rows_n <= 10000 and 0 < cols_n <= 10000 else None


class PseudoTerminal:
    """A pseudo-terminal pair. ``like``: the user's terminal, whose settings and size are copied;
    else ``size`` (rows, columns) on a terminal with the system's default settings."""

    def __init__(self, like: int | None = None, size: tuple[int, int] | None = None):
        self.master, self.slave = os.openpty()   # both non-inheritable: the child gets dup2'd copies
        if like is not None:
            try:
                termios.tcsetattr(self.slave, termios.TCSANOW, termios.tcgetattr(like))
            except termios.error:
                pass
            size = terminal_size(like) or size
        if size is not None:
            set_size(self.master, *size)

    def resize(self, rows: int, cols: int) -> None:
        try:
            set_size(self.master, rows, cols)
        except OSError:
            pass

    def interrupt_char(self) -> bytes | None:
        """The byte the workload's terminal turns into SIGINT now, or None if it turns none
        (the workload switched signals off, as an editor or a REPL in raw mode does)."""
        return self._signal_char(termios.VINTR)

    def suspend_char(self) -> bytes | None:
        """The byte the workload's terminal turns into SIGTSTP now (Ctrl-Z), or None."""
        return self._signal_char(termios.VSUSP)

    def _signal_char(self, which: int) -> bytes | None:
        try:
            attrs = termios.tcgetattr(self.master)
        except termios.error:
            return None
        if not attrs[3] & termios.ISIG:
            return None
        char = attrs[_CC][which]
        return char if isinstance(char, bytes) and char != b"\0" else None

    def child_started(self) -> None:
        """The workload has its copies of the terminal: ours goes, so that reading the master
        ends (EIO) once the workload and everything it started have closed theirs."""
        if self.slave >= 0:
            os.close(self.slave)
            self.slave = -1

    def close(self) -> None:
        self.child_started()
        if self.master >= 0:
            try:
                os.close(self.master)
            except OSError:
                pass
            self.master = -1


def take_controlling_terminal(fd: int) -> None:
    """In the child, after ``setsid``: the pseudo-terminal on FD becomes its controlling
    terminal, so that /dev/tty, Ctrl-C, Ctrl-Z and SIGWINCH work as in a terminal."""
    try:
        fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
    except OSError:
        pass


class RawMode:
    """The user's terminal (on FD) in raw mode while the workload owns it, restored on every exit.

    Taken only when the recorder is in the terminal's foreground: a recorder started in the
    background (``&``) would be stopped by SIGTTOU for changing it, and leaves it alone."""

    def __init__(self, fd: int):
        self.fd = fd
        self._saved: list | None = None   # termios' attribute list
        self._registered = False

    @staticmethod
    def foreground(fd: int) -> bool:
        try:
            return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            return False

    def enter(self) -> bool:
        """Switch to raw mode; False if the terminal could not be (left as it was)."""
        if not self.foreground(self.fd):
            return False
        try:
            self._saved = termios.tcgetattr(self.fd)
            tty.setraw(self.fd, termios.TCSANOW)
        except termios.error:
            self._saved = None
            return False
        if not self._registered:
            atexit.register(self.restore)
            self._registered = True
        return True

    @staticmethod
    def job_controlled() -> bool:
        """A shell controls this process's job (it was started from an interactive shell, in a
        process group of its own): stopping the job gives the shell the terminal back."""
        try:
            parent = os.getppid()
            return os.getpgid(parent) != os.getpgrp() and os.getsid(parent) == os.getsid(0)
        except OSError:
            return False

    def restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is None:
            return
        try:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)
        except termios.error:
            pass
