"""CPU, memory and threads of a process tree: the workload with all its descendants.

psutil's recursive ``children()`` scans every process on the machine, which costs more than
the rest of a sample together, so the tree's membership is refreshed every ``REFRESH_EVERY``
samples while the known members are read on every sample.
"""

from __future__ import annotations

from typing import Any

import psutil

REFRESH_EVERY = 5


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
        try:
            for child in self._root.children(recursive=True):
                self._track(child)
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
