"""What the workload got of the cores it may use, and who else took them.

A run on a machine it does not own shares its cores: other programs (a browser, a video call,
another user's job) and devicewatch itself take some, a CPU quota or an affinity mask allows
only some. Three figures say how much that cost, each counted in cores over the samples
judged:

* ``others``: the cores other programs kept busy — the machine's busy cores less the workload's
  tree and devicewatch's own recorder and dashboard (``/proc/stat`` against the tree's
  ``/proc/PID/stat``);
* ``waiting``: how long the workload's threads were ready to run and waited for a core, summed
  over its threads (the kernel's run-queue delay, ``/proc/PID/task/TID/schedstat``): 0.7 is
  seven tenths of a thread's time, every second, spent waiting;
* ``allowed``: the cores it may use at all (``Run.cpu_limits`` where recorded, else every core).

The workload is *contended* when its threads waited for a core a large share of the time they
wanted one: that costs a loop of operator threads far more than the cores it lost (a parallel
region waits for its slowest thread), and is what ``threads`` set to the cores it can get
removes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runformat.runfile import Run
from .core_sentences import OTHERS_NOTABLE as OTHERS_NOTABLE  # where the views have always found it
from .core_sentences import Cores, time_weighted
from .core_sentences import figure as cores_figure  # noqa: F401 (the views' name for it)
from .utilization import Series

CONTENDED_WAIT = 0.2       # cores' worth of the workload's threads waiting for a core, at least ...
CONTENDED_SHARE = 0.2      # ... and this share of the time its threads wanted a core: contended


def allowed_cores(run: Run, t: np.ndarray | None = None) -> float:
    """The cores the workload may use over the samples at times T, or over the whole run where
    None: its CPU limits where the run recorded them (``Run.cpu_limits``), each reading counted
    for the samples (or the time) it held, so that a limit set for a second weighs a second;
    else every core."""
    limits = run.cpu_limits
    if limits is None:
        return float(max(run.cores, 1))
    if t is None:
        return time_weighted(limits, 0.0, run.duration)
    if not limits.changes or not len(t):
        return float(limits.at(float(t[0]) if len(t) else 0.0).allowed)
    starts = np.array([reading.t for reading in limits.readings])
    allowed = np.array([reading.limits.allowed for reading in limits.readings])
    which = np.clip(np.searchsorted(starts, t, "right") - 1, 0, len(allowed) - 1)
    return float(allowed[which].mean())


@dataclass(frozen=True)
class Contention:
    """The cores of a run's judged samples: who took them and how long the workload waited."""

    host_cores: int
    allowed: float              # cores the workload may use
    workload: float | None      # cores its process tree kept busy (None: not recorded)
    others: float | None        # cores other programs kept busy (None: the tree was not recorded)
    devicewatch: float          # the recorder's and a dashboard's own
    waiting: float | None       # cores' worth of its threads waiting for a core (None: not read)
    threads: float | None       # threads in its tree, on average

    @property
    def limited(self) -> bool:
        return self.allowed < self.host_cores - 1e-6

    @property
    def wanted(self) -> float | None:
        """Cores the workload's threads wanted: those they got and those they waited for."""
        if self.workload is None or self.waiting is None:
            return None
        return self.workload + self.waiting

    @property
    def wait_share(self) -> float | None:
        """The share of the time its threads wanted a core that they spent waiting for one."""
        wanted = self.wanted
        if wanted is None or wanted <= 0:
            return None
        return self.waiting / wanted if self.waiting is not None else None

    @property
    def contended(self) -> bool:
        return self.contended_at(CONTENDED_WAIT, CONTENDED_SHARE)

    def contended_at(self, wait: float, share: float) -> bool:
        """Its threads waited at least WAIT cores' worth, SHARE of the time they wanted a core."""
        wait_share = self.wait_share
        return wait_share is not None and self.waiting is not None and self.waiting >= wait and wait_share >= share

    @property
    def free(self) -> float:
        """Cores of those allowed that neither the workload nor other programs kept busy."""
        taken = (self.workload or 0.0) + (self.others or 0.0) + self.devicewatch
        return max(0.0, self.allowed - taken)

    @property
    def cores(self) -> Cores:
        """The machine's cores and those it may use, as every sentence counts them."""
        return Cores(self.host_cores, self.allowed)

    @property
    def obtainable(self) -> float:
        """Cores the workload can get: those allowed, no more than the machine's less what
        other programs and devicewatch took."""
        return self.cores.obtainable((self.others or 0.0) + self.devicewatch)

    def to_json(self) -> dict[str, float | None]:
        return {"allowed_cores": round(self.allowed, 2), "host_cores": self.host_cores,
                "workload_cores": _round(self.workload), "others_cores": _round(self.others),
                "devicewatch_cores": round(self.devicewatch, 3), "waiting_cores": _round(self.waiting),
                "wait_share": _round(self.wait_share, 3), "threads": _round(self.threads, 1)}


def cores_text(allowed: float | None, host_cores: int) -> str:
    """What the workload's cores are "of": ``2 cores``, or where fewer are allowed ``4 cores
    allowed of 64``, ``0.5 cores allowed of 2`` (``core_sentences.Cores.of``)."""
    return Cores(host_cores, allowed).of()


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _mean(values: np.ndarray, mask: np.ndarray) -> float | None:
    if len(values) != len(mask):
        return None
    chosen = values[mask]
    chosen = chosen[~np.isnan(chosen)]
    return float(chosen.mean()) if chosen.size else None


def contention(run: Run, s: Series, in_run: np.ndarray) -> Contention:
    """The figures of the samples in IN_RUN (a mask over ``s.t``)."""
    host = int(s.cpu.shape[1]) if s.cpu.ndim == 2 and s.cpu.shape[1] else max(run.cores, 1)
    allowed = min(allowed_cores(run, s.t[in_run] if len(in_run) == len(s.t) else None), float(host))
    machine = _mean(s.cpu_total, in_run)
    machine_cores = (machine or 0.0) / 100.0 * host
    workload = _mean(s.proc_cpu, in_run)
    workload = None if workload is None else workload / 100.0
    own = sum(v for v in (_mean(s.recorder_cpu, in_run), _mean(s.watcher_cpu, in_run)) if v is not None) / 100.0
    others = None if workload is None else max(0.0, machine_cores - workload - own)
    waiting = _mean(s.proc_wait, in_run) if len(s.proc_wait) == len(s.t) else None
    threads = _mean(run.samples.proc("threads"), in_run) if len(run.samples) == len(s.t) else None
    return Contention(host, allowed, workload, others, own, None if waiting is None else waiting / 100.0, threads)
