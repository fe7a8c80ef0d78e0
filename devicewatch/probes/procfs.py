"""Linux's /proc read directly: the per-sample readings at a fraction of psutil's cost.

At 10 samples/s the recorder's budget is 1 ms of CPU a sample, and psutil spent most of it:
each call opens and parses its files afresh and builds named tuples (about 0.35 ms for the
cores, 0.26 ms for a small process tree, 0.08 ms for the recorder's own CPU, measured at
10 Hz where caches are cold). Here each file is opened once and re-read with ``pread`` from
offset 0, which makes the kernel generate it anew, and only the numbers a sample needs are
parsed. The arithmetic is psutil's, so readings are the same as before:

* a core's busy percent is its non-idle time (all but idle and iowait, guest time counted
  once, inside user) over its total time since the last sample;
* a process's CPU percent is its user + system time over the wall time since the last read,
  so a process on two cores reads up to 200%.

``available()`` says whether this machine has such a /proc; elsewhere the probes use psutil.
"""

from __future__ import annotations

import os
import time


def close_quietly(fd: int | None) -> None:
    """Close a kept descriptor (None: none was open); one whose file is gone closes all the same."""
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def available() -> bool:
    return os.path.exists("/proc/self/stat") and os.path.exists("/proc/stat")


class ProcFile:
    """One /proc file kept open; ``read`` gives its current contents (OSError once it is gone)."""

    def __init__(self, path: str, size: int = 4096):
        self.path = path
        self._fd: int | None = None  # set first: a file gone before it opened still closes cleanly
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self._size = size

    def read(self) -> bytes:
        if self._fd is None:
            raise OSError(f"{self.path} is closed")
        while True:
            data = os.pread(self._fd, self._size, 0)
            if len(data) < self._size:
                return data
            self._size *= 2  # filled the buffer: the file may go on

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass


def _core_times(line: bytes) -> tuple[int, int]:
    """(busy, total) clock ticks of one ``cpuN`` line of /proc/stat."""
    values = [int(v) for v in line.split()[1:]]
    total = sum(values) - sum(values[8:10])  # guest and guest_nice are already inside user and nice
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return total - idle, total


class CoreTimes:
    """Every online core's busy percent since the previous call (the first call primes)."""

    def __init__(self) -> None:
        self._stat = ProcFile("/proc/stat", 256 * ((os.cpu_count() or 1) + 2))
        self._last: dict[bytes, tuple[int, int]] = {}
        self.percent()

    def percent(self) -> list[float]:
        cores: list[float] = []
        now: dict[bytes, tuple[int, int]] = {}
        last = self._last
        data = self._stat.read()
        end = data.find(b"\nintr")   # the cores' lines only: the interrupt counts after them are long
        for line in (data if end < 0 else data[:end]).split(b"\n")[1:]:  # the first line sums all cores
            if not line.startswith(b"cpu"):
                break
            name = line[:line.index(b" ")]
            busy, total = now[name] = _core_times(line)
            last_busy, last_total = last.get(name, (busy, total))
            d_total = total - last_total
            if d_total > 0:
                cores.append(round(100.0 * min(max(busy - last_busy, 0), d_total) / d_total, 1))
            else:
                cores.append(0.0)
        self._last = now
        return cores


class MemInfo:
    """Used memory and swap in bytes, from /proc/meminfo, as psutil counts them."""

    # The four lines a sample needs, found by name (the file has fifty and more): each name as it
    # starts a line, so ``SwapFree`` is not found inside another name.
    NAMES = (b"MemTotal", b"MemAvailable", b"SwapTotal", b"SwapFree")
    _STARTS = tuple(b"\n" + name + b":" for name in NAMES)

    def __init__(self) -> None:
        self._file = ProcFile("/proc/meminfo", 8192)

    def read(self) -> dict[str, int] | None:
        """``used`` (total - available), ``total``, ``swap_used``, ``swap_total``; None where this
        kernel does not say what is available (psutil estimates it)."""
        data = b"\n" + self._file.read()
        values: list[int | None] = []
        for start in self._STARTS:
            at = data.find(start)
            if at < 0:
                values.append(None)
                continue
            at += len(start)
            end = data.find(b"\n", at)
            values.append(int(data[at:end if end >= 0 else len(data)].split()[0]) * 1024)
        total, available, swap_total, swap_free = values
        if total is None or available is None:
            return None
        swap_total = swap_total or 0
        return {"used": total - available, "total": total,
                "swap_used": swap_total - (swap_total if swap_free is None else swap_free), "swap_total": swap_total}


class TaskStat:
    """One process's /proc/PID/stat, kept open: the descriptor belongs to that process, so once
    it has exited ``read`` fails (ESRCH) instead of reading a new process with a reused PID."""

    def __init__(self, pid: int):
        self.pid = pid
        self._file = ProcFile(f"/proc/{pid}/stat", 1024)
        self._cpu: float | None = None
        self._at = 0.0
        self.state = b""   # the process's state letter as last read (``R``, ``S``, ``T``…)

    def read(self) -> tuple[float, int, int] | None:
        """(CPU % since the previous read, RSS bytes, threads); None once the process has been
        reaped. A zombie still reads (no CPU, no RSS), as psutil counts it: a workload that
        does not reap its children shows them. The first read primes the CPU counter (0%)."""
        try:
            data = self._file.read()
            fields = data[data.rindex(b")") + 2:].split()  # the name in parentheses may hold spaces
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            rss, threads = int(fields[21]) * PAGE_SIZE, int(fields[17])
            self.state = fields[0]
        except (OSError, ValueError, IndexError):  # gone, or a line this reader cannot parse
            return None
        now = time.monotonic()
        percent = 0.0
        if self._cpu is not None and now > self._at:
            percent = max(cpu - self._cpu, 0.0) / (now - self._at) * 100.0
        self._cpu, self._at = cpu, now
        return round(percent, 1), rss, threads

    def close(self) -> None:
        self._file.close()


class OwnCpu:
    """This process's CPU % since the previous call, all threads, from one ``times()`` call."""

    def __init__(self) -> None:
        times = os.times()
        self._cpu, self._at = times.user + times.system, time.monotonic()

    def percent(self) -> float:
        times = os.times()
        cpu, now = times.user + times.system, time.monotonic()
        percent = max(cpu - self._cpu, 0.0) / (now - self._at) * 100.0 if now > self._at else 0.0
        self._cpu, self._at = cpu, now
        return percent


class ThreadDelays:
    """How long one process's threads waited for a core: the kernel's run-queue delay of each
    thread (``/proc/PID/task/TID/schedstat``: time on a CPU, time runnable but waiting for one,
    in ns), summed over the threads. A thread that wants a core and does not get one (another
    program has it, or more threads than cores) adds to it; a thread that sleeps, blocks or
    waits on a lock does not. Each thread's file is kept open; the list of threads is looked
    at again on ``refresh`` (once a second), and at most ``MAX_THREADS`` are kept per process.

    The threads are read in turn from one list kept between calls (a sample reads tens of them,
    about 3 µs each here): no list is built per call and each file is read with one ``pread``
    of its descriptor (a schedstat line is three numbers, well under ``LINE``)."""

    MAX_THREADS = 512
    LINE = 128

    def __init__(self, pid: int):
        self.pid = pid
        self._fds: dict[str, int] = {}
        self._order: list[str] = []        # the threads in the order they are read in turn
        self._last: dict[str, int] = {}
        self._cursor = 0
        self.available = os.path.exists(f"/proc/{pid}/task/{pid}/schedstat")
        self.refresh()

    def refresh(self, tids: list[str] | None = None) -> None:
        """Open the files of threads not seen before; TIDS: this process's threads as just
        listed by the caller, else listed here."""
        if not self.available:
            return
        if tids is None:
            try:
                tids = os.listdir(f"/proc/{self.pid}/task")
            except OSError:
                return
        for tid in tids[:self.MAX_THREADS]:
            if tid not in self._fds:
                try:
                    self._fds[tid] = os.open(f"/proc/{self.pid}/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue
                self._order.append(tid)

    def waited(self, most: int | None = None) -> int:
        """Nanoseconds this process's threads waited for a core since each was last read (a
        thread's first read only primes it). With MOST, at most that many threads are read,
        the next ones on the next call: each delay is a running total, so a thread read every
        few calls adds all its waiting since, and the sum over a run stays whole."""
        order, fds, last, line = self._order, self._fds, self._last, self.LINE
        count = len(order)
        if not count:
            return 0
        reads = count if most is None or most >= count else most
        start = self._cursor % count if reads < count else 0
        total = 0
        ended: list[str] = []
        for i in range(start, start + reads):
            tid = order[i % count]
            try:
                delay = int(os.pread(fds[tid], line, 0).split(b" ", 2)[1])
            except (OSError, ValueError, IndexError):   # the thread has ended
                ended.append(tid)
                continue
            before = last.get(tid)
            last[tid] = delay
            if before is not None and delay > before:
                total += delay - before
        self._cursor = start + reads
        for tid in ended:
            self._forget(tid)
        return total

    def _forget(self, tid: str) -> None:
        close_quietly(self._fds.pop(tid, None))
        self._last.pop(tid, None)
        self._order.remove(tid)

    @property
    def threads(self) -> int:
        return len(self._order)

    def close(self) -> None:
        for tid in list(self._order):
            self._forget(tid)

    def __del__(self) -> None:   # its descriptors are its own, as a ProcFile's are
        try:
            self.close()
        except (AttributeError, OSError):   # a half-made object
            pass
