"""CPU, memory and threads of a process tree: the workload with all its descendants.

Finding descendants is the costly part of a sample: psutil's recursive ``children()`` reads
the status of every process on the machine. On Linux the kernel lists each thread's children
in ``/proc/PID/task/TID/children``, so the tree is walked from the root instead, and the
membership is refreshed every ``REFRESH_EVERY`` samples (once a second at 10 Hz) while known members are read on
every sample.

Both costs are bounded so that a workload cannot buy the sampler's time: a refresh reads at most
``MAX_TASKS_READ`` threads' children lists per process (a process with thousands of threads
is read in a rotating window, so a child of any thread is found within a few seconds), and
at most ``MAX_MEMBERS`` processes are read per sample (a fork storm of short-lived processes
is counted, not each one read). What a bound left out is said once in a notice
(``take_notices``), which the recorder writes to the run file.

A refresh that could find nothing new is not made: every process and thread the workload
starts takes a new PID, and the kernel says the last PID it handed out (``LastPid``: the fifth
field of /proc/loadavg, one small read). While that has not moved since the last refresh that
walked the whole tree, the members are the same and none is a zombie (whose children are
handed to the subreaper), nothing can have joined the tree: the walk, a few hundred
microseconds for one process and milliseconds for 200 threads, is left out.

Each member is read from its own /proc/PID/stat, kept open (``procfs.TaskStat``: CPU, RSS and
threads in one read), or through psutil where there is no such /proc. Where the kernel keeps
scheduler statistics, each member's threads' run-queue delay is read too (``procfs.ThreadDelays``):
the time they were ready to run and waited for a core, which is what other programs, a CPU
quota or more threads than cores cost the workload. Those are read in turn, as few a sample as
read every thread once in ``THREADS_COVER`` samples (two seconds at 10 Hz: 200 threads, ten a
sample), ``THREADS_READ`` at most: each delay is a running total, so a thread read every two
seconds adds all its waiting since, and the figure's readers (the contention verdict, over two
seconds at least; the dashboard's chart, drawn a few times a second) need seconds, not tenths.
"""

from __future__ import annotations

import os
import time
from typing import Any

import psutil

from . import procfs

REFRESH_EVERY = 10
MAX_TASKS_READ = 128    # threads' children lists read per process and refresh
MAX_MEMBERS = 64        # processes read per sample
THREADS_READ = 20       # threads' run-queue delays read per sample at most, in turn
THREADS_COVER = 20      # samples in which every thread's delay is read, where THREADS_READ allows

# The workload tree's readings, in the order the run file stores them; RSS in MiB. ``cpu_wait``:
# how long its threads waited for a core (run-queue delay), % of one core like ``cpu``: 100 is
# one thread's worth of waiting the whole interval.
PROC_FIELDS = ("cpu", "rss", "threads", "count", "cpu_wait")
PROC_SCALE = {"rss": 1 << 20}


def descendants(root: int, window: dict[int, int] | None = None, skipped: list[int] | None = None,
                opened: dict[tuple[int, str], procfs.ProcFile] | None = None,
                listed: dict[int, list[str]] | None = None) -> list[int]:
    """PIDs below ``root``, from /proc's children lists where the kernel offers them.

    With ``window`` (pid -> rotating offset), a process with more than MAX_TASKS_READ threads
    has only that many of its lists read, the next ones on the next call; the number of lists
    left unread is added to ``skipped[0]``. With ``opened``, each thread's list is kept open
    there between calls and read again in place (a tree of 200 threads is 200 opens a second
    otherwise); the lists of threads no longer seen are closed. With ``listed``, each process's
    threads as listed here are put there (the threads' delays take them from it instead of
    listing them a second time).
    """
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        try:
            return [p.pid for p in psutil.Process(root).children(recursive=True)]
        except psutil.Error:
            return []
    found: list[int] = []
    seen: set[tuple[int, str]] = set()
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        if listed is not None:
            listed[pid] = tasks
        if window is not None and len(tasks) > MAX_TASKS_READ:
            start = window.get(pid, 0) % len(tasks)
            window[pid] = start + MAX_TASKS_READ - 1
            rest = [t for t in tasks if t != str(pid)]  # the main thread's list is always read
            tasks = [str(pid)] + (rest + rest)[start:start + MAX_TASKS_READ - 1]
            if skipped is not None:
                skipped[0] += len(rest) + 1 - len(tasks)
        for tid in tasks:
            try:
                if opened is None:
                    with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                        text = f.read()
                else:
                    seen.add((pid, tid))
                    file = opened.get((pid, tid))
                    if file is None:
                        file = opened[(pid, tid)] = procfs.ProcFile(f"/proc/{pid}/task/{tid}/children", 256)
                    text = file.read()
                children = [int(c) for c in text.split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            stack.extend(children)
    if opened is not None:
        for key in [key for key in opened if key not in seen]:
            opened.pop(key).close()
    return found


class _PsutilMember:
    """A process read through psutil: where /proc is not Linux's."""

    def __init__(self, pid: int):
        self._proc = psutil.Process(pid)
        self._proc.cpu_percent(None)  # primes this process's counter

    def read(self) -> tuple[float, int, int] | None:
        try:
            with self._proc.oneshot():
                return self._proc.cpu_percent(None), self._proc.memory_info().rss, self._proc.num_threads()
        except psutil.Error:
            return None  # exited (or a zombie we may no longer read)

    def close(self) -> None:
        pass


def _member(pid: int) -> procfs.TaskStat | _PsutilMember:
    """A reader of one process (OSError or psutil.Error if it is already gone)."""
    if procfs.available():
        member = procfs.TaskStat(pid)
        member.read()  # primes the CPU counter
        return member
    return _PsutilMember(pid)


class LastPid:
    """The last PID the kernel handed out in our PID namespace (which also numbers every process
    of a namespace below it): it moves whenever a process or thread is created anywhere on the
    machine. ``read`` gives None where the kernel does not say (no such /proc, a field that is
    not a positive number): then every refresh walks the tree."""

    def __init__(self, path: str = "/proc/loadavg"):
        try:
            self._file: procfs.ProcFile | None = procfs.ProcFile(path, 128)
        except OSError:
            self._file = None

    def read(self) -> int | None:
        if self._file is None:
            return None
        try:
            pid = int(self._file.read().split()[4])
        except (OSError, ValueError, IndexError):
            return None
        return pid if pid > 0 else None


class ProcessTreeProbe:
    """The workload's tree; with ``adopter`` (a subreaper), also the orphans re-parented to it."""

    def __init__(self, root_pid: int, adopter: int | None = None, exclude: set[int] | frozenset[int] = frozenset()):
        self.root_pid = root_pid
        self.adopter = adopter
        self.exclude = set(exclude) | {root_pid}
        self._members: dict[int, procfs.TaskStat | _PsutilMember] = {}
        self._delays: dict[int, procfs.ThreadDelays] = {}
        self._delays_at: float | None = None
        self._tick = 0
        self._window: dict[int, int] = {}
        self._children: dict[tuple[int, str], procfs.ProcFile] = {}   # each thread's children list, kept open
        self._notices: list[str] = []
        self._said: set[str] = set()
        self._last_pid = LastPid()
        self._walked: tuple[int, frozenset[int]] | None = None   # (last PID, members) after a whole walk
        self.walks = 0   # refreshes that walked the tree
        self._root_seen = self._track(root_pid)

    def _track(self, pid: int) -> bool:
        if pid not in self._members:
            try:
                self._members[pid] = _member(pid)
            except (OSError, psutil.Error):
                return False
            if isinstance(self._members[pid], procfs.TaskStat):
                delays = procfs.ThreadDelays(pid)
                if delays.available:
                    delays.waited()   # primes each thread's counter
                    self._delays[pid] = delays
        return True

    def _note(self, kind: str, message: str) -> None:
        if kind not in self._said:
            self._said.add(kind)
            self._notices.append(message)

    def take_notices(self) -> list[str]:
        """What the bounds left out, each kind said once."""
        notices, self._notices = self._notices, []
        return notices

    def _unchanged(self, last_pid: int | None) -> bool:
        """Nothing can have joined the tree since the last whole walk: no PID handed out since,
        the same members, none of them a zombie."""
        if last_pid is None or self._walked is None or self._walked != (last_pid, frozenset(self._members)):
            return False
        return not any(isinstance(member, procfs.TaskStat) and member.state == b"Z"
                       for member in self._members.values())

    def _refresh(self) -> None:
        if not self._root_seen:
            return
        last_pid = self._last_pid.read()   # before the walk: a process started during it moves the next one
        if self._unchanged(last_pid):
            return
        self.walks += 1
        skipped = [0]
        left_out = False
        listed: dict[int, list[str]] = {}
        found = descendants(self.root_pid, self._window, skipped, self._children, listed)
        if self.adopter is not None:
            from ..lifeline import adopted_children, reap

            orphans = adopted_children(self.exclude)
            if self.adopter == os.getpid():
                reap(orphans)
            for pid in orphans:
                if os.path.exists(f"/proc/{pid}"):
                    found.append(pid)
                    found.extend(descendants(pid, self._window, skipped))
        if skipped[0]:
            self._note("tasks", f"process tree: a process has over {MAX_TASKS_READ} threads; their children "
                                f"lists are read {MAX_TASKS_READ} a second in turn, so a new child may be "
                                "found a few seconds late")
        for pid in found:
            if pid in self._members:
                continue
            if len(self._members) >= MAX_MEMBERS:
                self._note("members", f"process tree: over {MAX_MEMBERS} processes at once; only "
                                      f"{MAX_MEMBERS} are read per sample, so proc.cpu, rss, threads and "
                                      "count leave the rest out")
                left_out = True
                break
            self._track(pid)
        for pid, delays in self._delays.items():
            delays.refresh(listed.get(pid))
            left_out = left_out or delays.threads >= procfs.ThreadDelays.MAX_THREADS
        # Only a walk that left nothing out lets the next ones be skipped.
        whole = last_pid is not None and not skipped[0] and not left_out
        self._walked = (last_pid, frozenset(self._members)) if whole and last_pid is not None else None

    def pids(self) -> list[int]:
        return list(self._members)

    def states(self) -> dict[int, bytes]:
        """Each member's state letter as the last sample read it (where /proc is Linux's)."""
        return {pid: member.state for pid, member in self._members.items()
                if isinstance(member, procfs.TaskStat) and member.state}

    def sample(self) -> dict[str, Any] | None:
        if self._tick % REFRESH_EVERY == 0:
            self._refresh()
        self._tick += 1
        cpu = 0.0
        rss = threads = count = waited = 0
        for pid, member in list(self._members.items()):
            reading = member.read()
            if reading is None:
                member.close()
                del self._members[pid]
                delays = self._delays.pop(pid, None)
                if delays is not None:
                    delays.close()
                continue
            cpu += reading[0]
            rss += reading[1]
            threads += reading[2]
            count += 1
        if count == 0:
            return None
        # The threads' delays, each once in THREADS_COVER samples (THREADS_READ a sample at
        # most), the processes taken in turn from a different one each sample so that none is
        # left out however many there are.
        readers = list(self._delays.values())
        budget = min(THREADS_READ, -(-sum(delays.threads for delays in readers) // THREADS_COVER))
        start = self._tick % len(readers) if readers else 0
        for delays in readers[start:] + readers[:start]:
            if budget <= 0:
                break
            most = min(budget, delays.threads)
            waited += delays.waited(most)
            budget -= most
        sample: dict[str, Any] = {"cpu": round(cpu, 1), "rss": rss, "threads": threads, "count": count}
        now = time.monotonic()
        if self._delays and self._delays_at is not None and now > self._delays_at:
            sample["cpu_wait"] = round(waited / 1e9 / (now - self._delays_at) * 100.0, 1)
        self._delays_at = now if self._delays else None
        return sample


class SelfProbe:
    """CPU used by a given process (the recorder itself, a dashboard), % of one core."""

    def __init__(self, pid: int):
        self._own = procfs.OwnCpu() if pid == os.getpid() else None
        self._other: procfs.TaskStat | _PsutilMember | None = None
        if self._own is None:
            try:
                self._other = _member(pid)
            except (OSError, psutil.Error):
                pass

    def sample(self) -> float | None:
        if self._own is not None:
            return round(self._own.percent(), 2)
        if self._other is None:
            return None
        reading = self._other.read()
        if reading is None:
            self._other = None
            return None
        return round(reading[0], 2)
