"""The workload's standard streams and terminal: given what the recorder was given.

Headless with a terminal, the workload gets a pseudo-terminal copied from it for each of its
standard streams that is a terminal (stdout and stderr then share it, as on any terminal), and
pipes for the others; in a pipe or CI, pipes; in the dashboard, a pseudo-terminal the size of the
output panel. Its standard input is the recorder's, relayed (keys typed, or a pipe and its end);
the dashboard's keys come through the control channel. Ctrl-C and Ctrl-Z typed into its terminal
act as they would without devicewatch (see ``_typed_interrupt`` and ``_typed_suspend``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any, TextIO

from .input_relay import InputRelay
from .options import RecordOptions
from .pseudo_terminal import PseudoTerminal, RawMode, terminal_size
from .terminal import Terminal
from .workload import Workload


class WorkloadStreams:
    """What the workload reads and writes, and the user's terminal while it owns it.
    ``on_second_interrupt``: a second Ctrl-C typed (the run is to be cancelled);
    ``on_stopped``: Ctrl-Z stopped the workload and is about to stop the recorder."""

    def __init__(self, options: RecordOptions, out: TextIO, err: TextIO, terminal: Terminal,
                 on_second_interrupt: Callable[[], None], on_stopped: Callable[[], None]):
        self.options, self.out, self.err, self.terminal = options, out, err, terminal
        self._on_second_interrupt, self._on_stopped = on_second_interrupt, on_stopped
        self.workload: Workload | None = None
        self.pty: PseudoTerminal | None = None
        self.input: InputRelay | None = None
        self._raw_mode: RawMode | None = None
        self.interrupts = 0               # Ctrl-C typed into the workload's terminal

    def resized(self, size: tuple[int, int] | None = None) -> None:
        """Our terminal (or the dashboard's panel) changed size: the workload's follows."""
        if self.pty is None:
            return
        size = size or terminal_size(_fileno(self.out))
        if size is not None:
            self.pty.resize(*size)

    def send(self, data: bytes) -> None:
        """Keys for the workload (the dashboard's, through the control channel)."""
        if self.input is not None:
            self.input.send(data)

    def start(self, workload: Workload) -> tuple[subprocess.Popen[bytes], list[tuple[str, Any, bool]]]:
        """Launch the workload with its standard streams wired (see the module's docstring);
        returns it and its outputs to pump: (stream name, readable file, a pseudo-terminal's)."""
        options = self.options
        self.workload = workload
        stdin_tty, stdout_tty, stderr_tty = (_isatty(0), _isatty(_fileno(self.out)), _isatty(_fileno(self.err)))
        if options.terminal is not None:                       # the dashboard's output panel
            self.pty = PseudoTerminal(size=options.terminal)
            in_tty, out_tty, err_tty = True, True, True
        elif options.echo and not options.control and not options.trial and stdout_tty:
            self.pty = PseudoTerminal(like=_fileno(self.out))   # headless in a terminal
            in_tty, out_tty, err_tty = stdin_tty, True, stderr_tty
            self.terminal.workload_owns_terminal()
        else:                                                  # a pipe, CI, a trial
            in_tty = out_tty = err_tty = False
        pty = self.pty
        slave = pty.slave if pty is not None else -1
        # Input: a trial and a background recorder read none (a terminal would stop a background
        # reader with SIGTTIN); the control channel's input comes as commands.
        read_stdin = not options.trial and not options.control and (not stdin_tty or RawMode.foreground(0))
        stdin: Any = slave if in_tty else subprocess.PIPE if (read_stdin or options.control) else subprocess.DEVNULL
        terminal_fd = next((fd for fd, on in enumerate((in_tty, out_tty, err_tty)) if on), None)
        try:
            process = workload.start(stdin=stdin, stdout=slave if out_tty else subprocess.PIPE,
                                     stderr=slave if err_tty else subprocess.PIPE, terminal_fd=terminal_fd)
        except OSError:
            if pty is not None:
                pty.close()
                self.pty = None
            raise
        outputs: list[tuple[str, Any, bool]] = []
        if pty is not None:   # stdout (and stderr, where it is a terminal too): one stream, as on a terminal
            pty.child_started()
            outputs.append(("stdout", open(pty.master, "rb", closefd=False), True))
        if process.stdout is not None:
            outputs.append(("stdout", process.stdout, False))
        if process.stderr is not None:
            outputs.append(("stderr", process.stderr, False))
        if in_tty and pty is not None:
            self.input = InputRelay(pty.master, owns_fd=False, interrupt_char=pty.interrupt_char,
                                    on_interrupt=self._typed_interrupt, suspend_char=pty.suspend_char,
                                    on_suspend=self._typed_suspend)
            if stdin_tty and options.terminal is None and read_stdin:
                self._raw_mode = RawMode(0)
                if self._raw_mode.enter():
                    self.input.follow(0)
        elif process.stdin is not None:
            fd = os.dup(process.stdin.fileno())   # the relay's to close at the end of input
            process.stdin.close()
            process.stdin = None
            self.input = InputRelay(fd, owns_fd=True)
            if read_stdin:
                self.input.follow(0)
        return process, outputs

    def release(self) -> None:
        """The user's terminal as it was; the workload's terminal closed."""
        if self.input is not None:
            self.input.close()
        if self._raw_mode is not None:
            self._raw_mode.restore()
        if self.pty is not None:
            self.pty.close()

    def _typed_interrupt(self) -> None:
        """A Ctrl-C typed into the workload's terminal: its terminal signals it, as without
        devicewatch; the second one cancels the run as a Ctrl-C to the recorder does."""
        self.interrupts += 1
        if self.interrupts >= 2:
            self._on_second_interrupt()

    def _typed_suspend(self) -> None:
        """A Ctrl-Z typed into the workload's terminal. The workload leads a session of its own,
        and POSIX discards a terminal's SIGTSTP to such a group (an "orphaned" one) unless it is
        caught: the recorder stops it with SIGSTOP, as its terminal would have with SIGTSTP.
        As a shell's job, the recorder stops too and gives the user's terminal back; ``fg`` (the
        shell's SIGCONT) brings both back. Without a shell's job control, the workload stays
        stopped and is shown so (a second Ctrl-C still ends it)."""
        workload = self.workload
        if workload is None:
            return
        if not _catches(workload.pid, signal.SIGTSTP):
            _signal_group(workload.pid, signal.SIGSTOP)
        raw = self._raw_mode
        if raw is None or not raw.job_controlled():
            return
        self._on_stopped()
        raw.restore()
        # The job stops as one, and this thread goes on only once the shell continues it: a
        # SIGTSTP sent to the group alone is taken by whichever thread the kernel picks, and
        # this one would run on, give the terminal back to raw mode and continue the workload
        # before the recorder had stopped. So the signal is made this thread's own too, held
        # blocked until the group has been sent its, and taken here when unblocked.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTSTP})
        try:
            signal.pthread_kill(threading.get_ident(), signal.SIGTSTP)
            os.killpg(os.getpgrp(), signal.SIGTSTP)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTSTP})   # stops here until fg
        raw.enter()
        _signal_group(workload.pid, signal.SIGCONT)
        self.resized()


def _catches(pid: int, sig: int) -> bool:
    """Process PID has a handler for SIG (/proc/PID/status, SigCgt)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _fileno(stream: Any) -> int:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):   # a test's StringIO
        return -1


def _isatty(fd: int) -> bool:
    return fd >= 0 and os.isatty(fd)
