"""CPU, memory and threads of a process tree: the workload with all its descendants.

Finding descendants is the costly part of a sample: psutil's recursive ``children()`` reads
the status of every process on the machine. On Linux the kernel lists each thread's children
in ``/proc/PID/task/TID/children``, so the tree is walked from the root instead, and the
membership is refreshed every ``REFRESH_EVERY`` samples (once a second at 10 Hz) while known members are read on
every sample.
"""

from __future__ import annotations

import os
from typing import Any

import psutil

REFRESH_EVERY = 10

# The workload tree's readings, in the order the run file stores them; RSS in MiB.
PROC_FIELDS = ("cpu", "rss", "threads", "count")
PROC_SCALE = {"rss": 1 << 20}


def descendants(root: int) -> list[int]:
    """PIDs below ``root``, from /proc's children lists where the kernel offers them."""
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        try:
            return [p.pid for p in psutil.Process(root).children(recursive=True)]
        except psutil.Error:
            return []
    found: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    children = [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            stack.extend(children)
    return found


class ProcessTreeProbe:
    def __init__(self, root_pid: int):
        self.root_pid = root_pid
        self._members: dict[int, psutil.Process] = {}
        self._tick = 0
        try:
            self._root: psutil.Process | None = psutil.Process(root_pid)
            self._track(self._root)
        except psutil.Error:
            self._root = None

    def _track(self, proc: psutil.Process) -> None:
        if proc.pid not in self._members:
            try:
                proc.cpu_percent(None)  # primes this process's counter
            except psutil.Error:
                return
            self._members[proc.pid] = proc

    def _refresh(self) -> None:
        if self._root is None:
            return
        for pid in descendants(self.root_pid):
            if pid not in self._members:
                try:
                    self._track(psutil.Process(pid))
                except psutil.Error:
                    pass

    def pids(self) -> list[int]:
        return list(self._members)

    def sample(self) -> dict[str, Any] | None:
        if self._tick % REFRESH_EVERY == 0:
            self._refresh()
        self._tick += 1
        cpu = 0.0
        rss = threads = count = 0
        for pid, proc in list(self._members.items()):
            try:
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
                    threads += proc.num_threads()
                count += 1
            except psutil.Error:
                del self._members[pid]  # exited (or a zombie we may no longer read)
        if count == 0:
            return None
        return {"cpu": round(cpu, 1), "rss": rss, "threads": threads, "count": count}


class SelfProbe:
    """CPU used by given processes (the recorder itself, a dashboard), % of one core each."""

    def __init__(self, pid: int):
        try:
            self._proc: psutil.Process | None = psutil.Process(pid)
            self._proc.cpu_percent(None)
        except psutil.Error:
            self._proc = None

    def sample(self) -> float | None:
        if self._proc is None:
            return None
        try:
            return round(self._proc.cpu_percent(None), 2)
        except psutil.Error:
            self._proc = None
            return None
