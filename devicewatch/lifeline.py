"""Ties the workload's life to the recorder's, for deaths that no handler sees.

Three layers, each covering what the one before cannot:

* The recorder is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a double-forked or orphaned
  descendant is re-parented to the recorder instead of init, so it stays in the tree the
  recorder samples and ends.
* The workload gets ``PR_SET_PDEATHSIG`` (SIGTERM): the kernel signals it when the thread that
  launched it dies. The recorder launches from its main thread, which lives as long as it does.
* A watchdog process (``devicewatch.watchdog``) notices the recorder's death as end-of-file on
  a pipe and ends every process carrying the run's marker, ``setsid`` grandchildren included.

Linux only; elsewhere each layer is skipped and the recorder's own clean-up remains.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

try:
    _loaded = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    _prctl = _loaded.prctl
    _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _libc: ctypes.CDLL | None = _loaded
except (OSError, AttributeError):
    _libc = None


def become_subreaper() -> bool:
    """Orphaned descendants of ours are re-parented to this process instead of init."""
    return _libc is not None and sys.platform.startswith("linux") and \
        _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` for Popen: the child gets SIG when the launching thread dies.

    If the parent died between fork and prctl, the signal never comes, so the child checks
    that its parent is still the one that forked it and ends itself otherwise.
    """
    if _libc is None or not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()
    prctl = _prctl

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def adopted_children(exclude: set[int]) -> list[int]:
    """This process's children but the ones in EXCLUDE: orphans it adopted as a subreaper."""
    me = os.getpid()
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{me}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{me}/task/{tid}/children", "rb") as f:
                found.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return [pid for pid in found if pid not in exclude]


def reap(pids: list[int]) -> None:
    """Collect the exit status of adopted orphans that have died (no zombies pile up)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


class Watchdog:
    """The process that ends the run's tree if this recorder dies without doing it."""

    def __init__(self, marker: str, grace: float, fifo_dir: str):
        read_fd, self._write_fd = os.pipe2(os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
        try:
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", "devicewatch.watchdog", marker, str(grace), fifo_dir],
                stdin=read_fd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, env=_env_without(marker))
        except OSError:
            self.process = None
        finally:
            os.close(read_fd)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def _say(self, line: bytes) -> None:
        try:
            os.write(self._write_fd, line + b"\n")
        except OSError:
            pass

    def watch_group(self, pgid: int) -> None:
        self._say(b"PGID %d" % pgid)

    def release(self) -> None:
        """The recorder has ended the run itself: the watchdog leaves without touching anything."""
        if self._write_fd < 0:
            return
        self._say(b"DONE")
        os.close(self._write_fd)
        self._write_fd = -1
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _env_without(marker: str) -> dict[str, str]:
    """The watchdog must not carry the marker it hunts for (nor import from a stale path)."""
    env = dict(os.environ)
    env.pop("DEVICEWATCH_EVENTS", None)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
