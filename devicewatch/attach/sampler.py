"""austin, on a thread of its own, its samples read as it writes them.

One ``austin -P`` run samples the process for as long as it is watched and writes each sample as
it takes it (no window to wait for, no moment between two runs unsampled): the phases follow
the job within a sampling period. austin never stops the process (it reads its memory with
``process_vm_readv``); a stack it reads while it changes it marks invalid, and that sample is left
out. Wall-clock mode keeps the threads that wait (a Dataset reading a file, a queue's ``get``):
a data wait is one.

Refused (ptrace scope, capabilities, another user's process), the sampler stops with one line
naming the fix (``refusal``); the recorder then records what /proc allows, without phases.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import psutil

from .stacks import SampleReader, Slice, Slicer

RATE = 25            # samples a second: the accuracy and cost docs/attach.md measures
START_WAIT = "2s"    # austin's wait for the process's interpreter to be found (a busy machine is slow)
BATCH = 0.2          # seconds of slices handed on together (the builder's writes, not one a sample)
GIVE_UP = 3          # austin runs that ended, none having read a stack, before sampling stops
AUSTIN_VAR = "DEVICEWATCH_AUSTIN"
CAP_SYS_PTRACE = 19


def find_tool(name: str, variable: str) -> str | None:
    """The program NAME: named in the environment VARIABLE, beside this Python (its virtual
    environment, where pip put it), or on PATH."""
    named = os.environ.get(variable)
    if named:
        return named if os.access(named, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


def find_austin() -> str | None:
    return find_tool("austin", AUSTIN_VAR)


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
    """Whether this process may read PID's memory (the right austin needs): /proc/PID/mem opens."""
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))
        return True
    except PermissionError:
        return False
    except OSError:
        return True   # gone, or no such file here: austin's own run will say


def not_python(pid: int) -> str:
    """Why a process austin finds no Python in is not the one to attach to, and which is: a
    launcher (a shell, tmux, torchrun's agent) whose Python children run the training."""
    try:
        process = psutil.Process(pid)
        name = process.name()
        children = [c for c in process.children(recursive=True) if "python" in c.name().lower()]
    except psutil.Error:
        return "austin finds no Python in it"
    if name.startswith("python"):
        return f"austin cannot read the stacks of this {name} (a Python newer than austin knows, or one it cannot parse)"
    if not children:
        return f"{name} runs no Python that austin can read"
    first = children[0]
    try:
        command = " ".join(first.cmdline())[:60]
    except psutil.Error:
        command = first.name()
    more = f" (and {len(children) - 1} more)" if len(children) > 1 else ""
    return f"it is {name}, not Python; its Python child is {first.pid} ({command}){more}: devicewatch attach {first.pid}"


class StackSampler:
    """Runs austin on PID until stopped or PID ends, handing its slices, on the recorder's clock
    (seconds from ORIGIN, a ``time.monotonic()``), to ON_SLICES, a batch every BATCH seconds."""

    def __init__(self, pid: int, origin: float, on_slices: Callable[[list[Slice]], None],
                 rate: int = RATE, austin: str | None = None, on_stop: Callable[[str], None] = lambda _why: None):
        self.pid = pid
        self.origin = origin
        self.rate = rate
        self.austin = austin or find_austin()
        self._on_slices = on_slices
        self._on_stop = on_stop            # told at once why sampling stopped early (a refusal, no Python)
        self._stop = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.refusal: str | None = None    # why the stacks cannot be read, with its fix
        self.samples = 0                   # stacks read whole
        self.invalid = 0                   # stacks austin read as they changed: left out
        self.failures = 0                  # austin runs that read no stack
        self.last_error = ""               # austin's reason for its last run that read nothing
        self.gave_up: str | None = None    # why sampling stopped though allowed (not a Python austin reads)
        self.unsampled_s = 0.0             # seconds between two austin runs, none sampling
        self.cpu_s = 0.0                   # austin's own CPU time, its runs together

    def check(self) -> str | None:
        """Why sampling cannot start, or None: said before the first sample."""
        if self.austin is None:
            return ("austin is not installed (pip install 'austin-dist>=3.7,<4', or name it in "
                    f"{AUSTIN_VAR}): recording what /proc allows, without phases")
        if not may_read(self.pid):
            return (f"cannot read the stacks of process {self.pid} (permission denied): {refusal_fix(self.pid)}; "
                    "recording what /proc allows, without phases")
        return None

    def start(self) -> None:
        self.refusal = self.check()
        _children_cpu()   # what ended before (the loop variable's read) is not the sampler's
        if self.refusal is None:
            self._thread = threading.Thread(target=self._sample, name="stack-sampler", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop at once: austin is ended, and what it wrote before is still read and handed on
        (on a busy machine this reader may be a second or more behind austin)."""
        self._stop.set()
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                self._process.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _sample(self) -> None:
        self._loop()
        why = self.refusal or self.gave_up
        if why and not self._stop.is_set():
            self._on_stop(why)

    def _loop(self) -> None:
        """austin runs until the process ends; one that ends while the process runs on (it lost
        the interpreter for a moment) is started again, GIVE_UP times at most without a stack read."""
        slicer, reader = Slicer(), SampleReader()
        ended: float | None = None
        while not self._stop.is_set() and psutil.pid_exists(self.pid):
            began = time.monotonic()
            if ended is not None:
                self.unsampled_s += began - ended
            read = self._run(reader, slicer)
            ended = time.monotonic()
            slicer.forget()
            if read is None or self._stop.is_set():
                return
            if read == 0:
                self.failures += 1
                if self.failures >= GIVE_UP:
                    self.gave_up = (f"cannot read the stacks of process {self.pid}: "
                                    f"{self.last_error or 'austin gave no reason'}; recording without phases")
                    return
                self._stop.wait(0.5)
            else:
                self.failures = 0

    def _run(self, reader: SampleReader, slicer: Slicer) -> int | None:
        """One austin run to its end: the stacks it read, or None once sampling must stop."""
        argv = [str(self.austin), "-P", "-t", START_WAIT, "-i", f"{max(1, round(1e6 / self.rate))}us",
                "-p", str(self.pid)]
        with self._lock:
            if self._stop.is_set():
                return None
            self._process = process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                       stderr=subprocess.PIPE)
        assert process.stdout is not None
        read, due = 0, time.monotonic() + BATCH
        for raw in process.stdout:
            now = time.monotonic()
            sample = reader.read(raw.decode(errors="replace"))
            if sample is None:
                self.invalid += raw.startswith(b"P")
                continue
            read += 1
            slicer.add(sample, now - self.origin)
            if now >= due:
                self._hand_on(slicer.ready())
                due = now + BATCH
        self._hand_on(slicer.flush())
        err = process.stderr.read() if process.stderr else b""
        process.wait()
        self.samples += read
        self.cpu_s += _children_cpu()
        if self._stop.is_set():
            return None
        if read == 0 and process.returncode != 0:
            if not may_read(self.pid):
                self.refusal = (f"cannot read the stacks of process {self.pid} (permission denied): "
                                f"{refusal_fix(self.pid)}; recording what /proc allows, without phases")
                return None
            said = " ".join(err.decode(errors="replace").split())
            self.last_error = not_python(self.pid) if "not a Python process" in said else \
                said.lstrip("\U0001f47e\U0001f6d1 ").strip()[:200]
        return read

    def _hand_on(self, batch: list[Slice]) -> None:
        if batch:
            self._on_slices(batch)


_seen_children_cpu = 0.0


def _children_cpu() -> float:
    """The CPU time of this process's ended children since the last call (its austin runs)."""
    global _seen_children_cpu
    times = os.times()
    total = times.children_user + times.children_system
    spent, _seen_children_cpu = total - _seen_children_cpu, total
    return spent
