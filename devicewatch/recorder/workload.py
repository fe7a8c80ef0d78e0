"""The workload's processes: launched, signalled as one tree, and none left running.

The workload starts in a session of its own (a Ctrl-C or hang-up meant for the recorder's
terminal reaches the recorder, which then passes it on in order) with the parent-death signal
armed (``lifeline``). Signals go to its process group and to every descendant ever seen, so a
process that left the group (``setsid``) is reached too. A cancel escalates: SIGINT (a
training script's KeyboardInterrupt handler can save its work), SIGTERM one grace period later,
SIGKILL one more grace period later. A signal from outside (SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
SIGUSR2) is passed on as itself (``pass_on``); after SIGTERM, SIGHUP or SIGQUIT the workload has a
grace period of its own to end (its handler saves a checkpoint), and only then does it escalate:
SIGTERM (after a SIGHUP or SIGQUIT), SIGKILL. Every signal meant to end it is followed by SIGCONT,
as ``timeout(1)`` does: a workload stopped (Ctrl-Z, SIGSTOP) would otherwise hold the signal
pending, its handler unrun, until its grace ran out. Descendants still alive when the workload
itself has exited are ended: none is left orphaned.

Its standard streams are what the recorder was given, as far as a recorder can pass them on
(recorder.py decides): a pseudo-terminal where the user has a terminal, pipes elsewhere; its
input the recorder's own, relayed. Whether it waits on that input, or was stopped, is looked up
in /proc (``state``).
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

import psutil

from ..events import ENV_VAR
from ..lifeline import die_with_parent
from ..probes.procfs import ProcFile
from .pseudo_terminal import take_controlling_terminal

CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
# Signals from outside passed to the workload as themselves; the first two end it, with its grace.
PASSED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# The read system calls by number (/proc/PID/syscall), where the kernel has them.
READ_CALLS = {"x86_64": {0, 19}, "aarch64": {63, 65}}.get(platform.machine(), set())
WAITING_FOR_INPUT, STOPPED, RUNNING = "waiting for input", "stopped", "running"


def exit_status(returncode: int) -> int:
    """A shell's exit status: a death by signal N reads as 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


class Workload:
    """The workload's process tree. ``marker`` is the value of ``DEVICEWATCH_EVENTS`` in its
    environment (the event FIFO's path): every descendant carries it, ``setsid`` or not."""

    def __init__(self, command: list[str], env: dict[str, str], marker: str, grace: float):
        self.command, self.env, self.marker, self.grace = command, env, marker, grace
        self.process: subprocess.Popen[bytes] | None = None
        self.known_pids: set[int] = set()   # every descendant a sample has seen
        self.input_names: set[str] = set()   # what its standard input is (/proc/PID/fd names)
        self._cancel_stage = 0
        self._cancel_at = 0.0
        self._outside_steps: list[signal.Signals] = []   # what follows an ending signal from outside
        self._outside_at = 0.0
        self._outside_grace = grace
        self.outside_signal: signal.Signals | None = None   # the first ending signal passed on
        self._syscalls: dict[int, ProcFile] = {}   # /proc/PID/syscall of the processes ``state`` looks at

    def start(self, stdin: Any = subprocess.PIPE, stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
              terminal_fd: int | None = None) -> subprocess.Popen[bytes]:
        """Launch with these standard streams (``terminal_fd``: which of its 0, 1, 2 is a
        pseudo-terminal, to become its controlling terminal); OSError if it cannot be started."""
        lifeline = die_with_parent()

        def prepare() -> None:
            if lifeline is not None:
                lifeline()
            if terminal_fd is not None:
                take_controlling_terminal(terminal_fd)

        self.process = subprocess.Popen(
            self.command, stdin=stdin, stdout=stdout, stderr=stderr, env=self.env, start_new_session=True,
            close_fds=True, preexec_fn=prepare)
        given = self.process.stdin.fileno() if self.process.stdin is not None else stdin
        name = _fd_name(given) if isinstance(given, int) and given >= 0 else None
        self.input_names = {name} if name else set()
        return self.process

    def state(self, pids: Iterable[int], states: Mapping[int, bytes] | None = None) -> str:
        """``stopped`` (SIGSTOP, SIGTSTP), ``waiting for input`` (blocked reading its terminal or
        its standard input, in the kernel's own words: /proc/PID/syscall), else ``running``; the
        state of the workload's first process in PIDS (its own first) that is not running.
        ``states``: state letters the sampler has just read (``ProcessTreeProbe.states``), so
        that a look opens no /proc/PID/stat of its own for them."""
        asked = [self.pid, *(p for p in pids if p != self.pid)][:64]
        for pid in set(self._syscalls).difference(asked):   # a process no longer asked about
            self._syscalls.pop(pid).close()
        for pid in asked:
            try:
                status = states.get(pid) if states else None
                if status is None:
                    with open(f"/proc/{pid}/stat", "rb") as handle:
                        status = handle.read().rsplit(b")", 1)[1].split()[0]
                if status in (b"T", b"t"):
                    return STOPPED
                if status != b"S" or not READ_CALLS or not self.input_names:
                    continue
                if pid not in self._syscalls:   # kept open: looked at twice a second while it sleeps
                    self._syscalls[pid] = ProcFile(f"/proc/{pid}/syscall", 256)
                call = self._syscalls[pid].read().split()
                if len(call) > 1 and call[0].isdigit() and int(call[0]) in READ_CALLS \
                        and os.readlink(f"/proc/{pid}/fd/{int(call[1], 16)}") in self.input_names:
                    return WAITING_FOR_INPUT
            except (OSError, ValueError, IndexError):
                if pid in self._syscalls:
                    self._syscalls.pop(pid).close()
                continue
        return RUNNING

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def poll(self) -> int | None:
        """The exit status once the workload has exited (128 + N for signal N), else None."""
        assert self.process is not None
        code = self.process.poll()
        return None if code is None else exit_status(code)

    @property
    def signal_name(self) -> str | None:
        """The signal that ended the workload, if one did."""
        code = self.process.returncode if self.process is not None else None
        return signal.Signals(-code).name if code is not None and code < 0 else None

    def seen(self, pids: Iterable[int]) -> None:
        self.known_pids.update(pids)

    def signal_tree(self, sig: signal.Signals, tree_pids: Iterable[int] = ()) -> None:
        """Signal the workload's process group and any descendant that left it (setsid), each
        once: a member of the group signalled is not signalled again (two deliveries of one
        signal run a handler twice, the second maybe while the first is ending the process)."""
        try:
            os.killpg(self.pid, sig)
            grouped = True
        except (ProcessLookupError, PermissionError):
            grouped = False
        for pid in set(tree_pids) | self.known_pids:
            if pid == os.getpid():
                continue
            try:
                if grouped and os.getpgid(pid) == self.pid:
                    continue
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def end_tree(self, sig: signal.Signals, tree_pids: Iterable[int] = ()) -> None:
        """A signal meant to end the workload, then SIGCONT (SIGKILL needs none): a stopped
        process takes a signal it handles only once it runs again."""
        tree_pids = list(tree_pids)
        self.signal_tree(sig, tree_pids)
        if sig != signal.SIGKILL:
            self.signal_tree(signal.SIGCONT, tree_pids)

    def end_without_interrupt(self) -> None:
        """The coming cancel begins at SIGTERM: a trial that is over is ended, not interrupted
        (a SIGINT would print a KeyboardInterrupt's traceback, which reads as a crash)."""
        if self._cancel_stage == 0:
            self._cancel_stage = 1

    def cancel_step(self, now: float, tree_pids: Iterable[int]) -> None:
        """Called on every tick while a cancel is asked for: the next signal once it is due."""
        if self._cancel_stage >= len(CANCEL_SIGNALS):
            return
        if self._cancel_stage == 0 or now - self._cancel_at >= self.grace:
            self.end_tree(CANCEL_SIGNALS[self._cancel_stage], tree_pids)
            self._cancel_stage += 1
            self._cancel_at = now

    def pass_on(self, sig: signal.Signals, now: float, tree_pids: Iterable[int], grace: float) -> bool:
        """A signal from outside, to the workload as itself. After SIGTERM, SIGHUP or SIGQUIT the
        workload has GRACE seconds to end before ``outside_step`` escalates (a second one is
        passed on too, and changes no deadline), and a stopped workload is continued to take it.
        True if it was stopped and so continued."""
        tree_pids = list(tree_pids)
        if sig not in ENDING_SIGNALS:
            self.signal_tree(sig, tree_pids)
            return False
        stopped = self.state(tree_pids) == STOPPED
        self.end_tree(sig, tree_pids)
        if self.outside_signal is None:
            self.outside_signal = sig
            self._outside_steps = [step for step in (signal.SIGTERM, signal.SIGKILL) if step != sig]
            self._outside_at, self._outside_grace = now, grace
        return stopped

    def outside_step(self, now: float, tree_pids: Iterable[int]) -> signal.Signals | None:
        """Called on every tick: once the grace after an ending signal from outside is over, the
        next step (SIGTERM after a SIGHUP, then SIGKILL); returns the signal sent, if any."""
        if not self._outside_steps or now - self._outside_at < self._outside_grace:
            return None
        sig = self._outside_steps.pop(0)
        self.end_tree(sig, tree_pids)
        self._outside_at = now
        return sig

    def stragglers(self) -> list[psutil.Process]:
        """Descendants still alive after the workload exited (zombies are not alive)."""
        pids = set(self.known_pids)
        try:  # members of the group, and anyone carrying our marker, never seen in a sample
            for proc in psutil.process_iter(["pid"]):
                try:
                    if os.getpgid(proc.pid) == self.pid:
                        pids.add(proc.pid)
                    elif proc.environ().get(ENV_VAR) == self.marker:  # left the group (setsid)
                        pids.add(proc.pid)
                except (ProcessLookupError, PermissionError, psutil.Error):
                    pass
        except psutil.Error:
            pass
        alive = []
        for pid in pids - {self.pid, os.getpid()}:
            try:
                proc = psutil.Process(pid)
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.Error:
                pass
        return alive

    def end(self, alive: list[psutil.Process], tree_pids: Iterable[int]) -> None:
        """SIGTERM the stragglers, SIGKILL those left one grace period later."""
        tree_pids = list(tree_pids)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            self.end_tree(sig, tree_pids)
            for proc in alive:  # found only by their environment: neither in the tree nor the group
                try:
                    proc.send_signal(sig)
                    if sig != signal.SIGKILL:
                        proc.send_signal(signal.SIGCONT)
                except psutil.Error:
                    pass
            _gone, alive = psutil.wait_procs(alive, timeout=self.grace)
            if not alive:
                break


def _fd_name(fd: int) -> str | None:
    """What file descriptor FD of this process is, in /proc's words (``/dev/pts/3``, ``pipe:[…]``)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
