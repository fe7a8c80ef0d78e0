"""py-spy, non-blocking, window after window, on a thread of its own.

py-spy writes its trace when a window ends, so the sampler runs one ``py-spy record`` a window
(``WINDOW`` seconds) and hands each window's slices on, stamped on the recorder's clock: the
phases follow the job about a window late. ``--nonblocking`` always: py-spy's default stops the
target's threads for every sample (with PyTorch's OpenMP threads waiting on the stopped one,
epochs took 15.7% longer), and devicewatch never stops what it watches. ``--idle`` keeps the
threads that wait (a Dataset reading a file, a queue's ``get``): a data wait is one.

Refused (ptrace scope, capabilities, another user's process), the sampler stops with one line
naming the fix (``refusal``); the recorder then records what /proc allows, without phases.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import psutil

from .stacks import Slice, slices

RATE = 25            # samples a second: the accuracy and cost docs/attach.md measures
WINDOW = 2           # seconds a py-spy run samples before its trace is read (1 s: 3.6% of a core, 2 s: 2.1-2.4%)
OVERLAP = 0.3        # seconds the next run starts before one ends: more than a run takes to start sampling
MAX_OVERLAP = 0.6    # ... and at the most, on a machine so busy that a run takes that long to start
POLL = 0.05          # seconds between looks at the runs under way
GIVE_UP = 3          # py-spy runs that failed, none having read a stack, before sampling stops
PY_SPY_VAR = "DEVICEWATCH_PY_SPY"
CAP_SYS_PTRACE = 19


def find_py_spy() -> str | None:
    """py-spy: named in DEVICEWATCH_PY_SPY, beside this Python (its virtual environment), or on PATH."""
    named = os.environ.get(PY_SPY_VAR)
    if named:
        return named if os.access(named, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")


def _has_ptrace_capability() -> bool:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError):
        pass
    return False


def _ptrace_scope() -> int | None:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def refusal_fix(pid: int) -> str:
    """The exact fix for a refused read of PID's memory, from why it was refused."""
    try:
        owner = psutil.Process(pid).uids().real
    except psutil.Error:
        owner = None
    root = os.geteuid() == 0
    if owner is not None and owner != os.getuid() and not root and not _has_ptrace_capability():
        return (f"the process belongs to uid {owner}: run devicewatch as that user or as root "
                "(sudo), or grant it CAP_SYS_PTRACE (in a container: --cap-add SYS_PTRACE)")
    scope = _ptrace_scope()
    if scope is not None and scope >= 1 and not _has_ptrace_capability():
        return (f"kernel.yama.ptrace_scope is {scope}: run `sudo sysctl kernel.yama.ptrace_scope=0`, "
                "or grant devicewatch CAP_SYS_PTRACE (in a container: --cap-add SYS_PTRACE)")
    return ("grant devicewatch CAP_SYS_PTRACE (in a container: docker run --cap-add SYS_PTRACE; "
            "on Kubernetes: securityContext.capabilities.add: [SYS_PTRACE])")


def may_read(pid: int) -> bool:
    """Whether this process may read PID's memory (the right py-spy needs): /proc/PID/mem opens."""
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))
        return True
    except PermissionError:
        return False
    except OSError:
        return True   # gone, or no such file here: py-spy's own run will say


class StackSampler:
    """Runs py-spy on PID until stopped or PID ends, handing each window's slices, on the
    recorder's clock (seconds from ORIGIN, a ``time.monotonic()``), to ON_SLICES."""

    def __init__(self, pid: int, origin: float, on_slices: Callable[[list[Slice]], None],
                 rate: int = RATE, py_spy: str | None = None, on_stop: Callable[[str], None] = lambda _why: None):
        self.pid = pid
        self.origin = origin
        self.rate = rate
        self.py_spy = py_spy or find_py_spy()
        self._on_slices = on_slices
        self._on_stop = on_stop            # told at once why sampling stopped early (a refusal, no Python)
        self._stop = threading.Event()
        self._processes: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.refusal: str | None = None    # why the stacks cannot be read, with its fix
        self.windows = 0
        self.failures = 0                  # windows py-spy could not sample
        self.last_error = [""]
        self.gave_up: str | None = None    # why sampling stopped though allowed (not a Python py-spy reads)
        self.overlap = OVERLAP             # seconds the next window starts before this one ends
        self.unsampled_s = 0.0             # seconds between windows that no window sampled
        self._covered_to: float | None = None
        self.cpu_s = 0.0                   # py-spy's own CPU time, its windows together

    def check(self) -> str | None:
        """Why sampling cannot start, or None: said before the first window."""
        if self.py_spy is None:
            return ("py-spy is not installed (pip install py-spy==0.4.3, or name it in "
                    f"{PY_SPY_VAR}): recording what /proc allows, without phases")
        if not may_read(self.pid):
            return (f"cannot read the stacks of process {self.pid} (permission denied): {refusal_fix(self.pid)}; "
                    "recording what /proc allows, without phases")
        return None

    def start(self) -> None:
        self.refusal = self.check()
        if self.refusal is None:
            self._thread = threading.Thread(target=self._sample, name="stack-sampler", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop: the window under way is left unread (a detach must not wait a window)."""
        self._stop.set()
        with self._lock:
            for process in self._processes:
                if process.poll() is None:
                    process.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _sample(self) -> None:
        self._loop()
        why = self.refusal or self.gave_up
        if why and not self._stop.is_set():
            self._on_stop(why)

    def _loop(self) -> None:
        """py-spy runs back to back, each started OVERLAP before the one under way ends (a run
        takes a moment to start sampling), read in the order they began; what two runs both
        sampled is taken once (``PhaseBuilder.feed`` skips what it has seen)."""
        with tempfile.TemporaryDirectory(prefix="devicewatch-attach-") as folder:
            pending: list[tuple[subprocess.Popen[bytes], float, str]] = []
            due, count = time.monotonic(), 0
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= due and psutil.pid_exists(self.pid):
                    count += 1
                    path = os.path.join(folder, f"window-{count}.json")
                    launched = self._launch(path)
                    if launched is None:
                        break
                    pending.append((launched, now, path))
                    due = now + WINDOW - self.overlap
                while pending and pending[0][0].poll() is not None:
                    process, began, path = pending.pop(0)
                    found = self._read(process, began, path)
                    if found is None:
                        return
                    if self.failures >= GIVE_UP and self.windows == 0:   # no Python py-spy can read
                        self.gave_up = (f"py-spy cannot read the stacks of process {self.pid} "
                                        f"({self.last_error[0] or 'no reason given'}): recording without phases")
                        return
                    if found:
                        self._cover(found)
                        self._on_slices(found)
                if not pending and not psutil.pid_exists(self.pid):
                    return
                self._stop.wait(max(0.0, min(due - time.monotonic(), POLL)))

    def _cover(self, found: list[Slice]) -> None:
        """Adapt the overlap to what the windows covered: a gap between the last window's last
        sample and this one's first (py-spy slow to start on a busy machine) widens it by the
        gap; a wide overlap narrows back, OVERLAP at the least."""
        first, last = min(s.start for s in found), max(s.end for s in found)
        if self._covered_to is not None:
            gap = first - self._covered_to
            if gap > 0:
                self.unsampled_s += gap
                self.overlap = min(MAX_OVERLAP, self.overlap + gap + 0.05)
            elif gap < -2 * OVERLAP:
                self.overlap = max(OVERLAP, self.overlap - 0.05)
        self._covered_to = max(last, self._covered_to or last)

    def _launch(self, path: str) -> subprocess.Popen[bytes] | None:
        argv = [str(self.py_spy), "record", "--nonblocking", "--idle", "--threads", "--rate", str(self.rate),
                "--duration", str(WINDOW), "--format", "chrometrace", "--output", path, "--pid", str(self.pid)]
        with self._lock:
            if self._stop.is_set():
                return None
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
            self._processes.append(process)
            return process

    def _read(self, process: subprocess.Popen[bytes], began: float, path: str) -> list[Slice] | None:
        """One window's slices ([] when it read nothing), or None once sampling must stop."""
        _, err = process.communicate()
        with self._lock:
            self._processes.remove(process)
        self.cpu_s += _children_cpu()
        if self._stop.is_set():
            return None
        if process.returncode != 0:
            if not psutil.pid_exists(self.pid):
                return None
            text = err.decode(errors="replace").lower()
            if "permission" in text or "operation not permitted" in text:
                self.refusal = (f"cannot read the stacks of process {self.pid} (permission denied): "
                                f"{refusal_fix(self.pid)}; recording what /proc allows, without phases")
                return None
            self.failures += 1
            said = [line.removeprefix("Error: ") for line in err.decode(errors="replace").splitlines()
                    if line.startswith("Error: ")]   # py-spy's reason, without its backtrace
            self.last_error = said[:1] or [""]
            return []
        self.windows += 1
        try:
            with open(path, "rb") as f:
                trace = json.load(f)
            os.unlink(path)
        except (OSError, ValueError):
            return []
        offset = began - self.origin
        return [Slice(s.thread, s.tid, s.start + offset, s.end + offset, s.stack)
                for s in slices(trace if isinstance(trace, list) else [])]


_seen_children_cpu = 0.0


def _children_cpu() -> float:
    """The CPU time of this process's ended children since the last call (its py-spy runs)."""
    global _seen_children_cpu
    times = os.times()
    total = times.children_user + times.children_system
    spent, _seen_children_cpu = total - _seen_children_cpu, total
    return spent
