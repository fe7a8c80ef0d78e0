"""Samples as arrays (``Series``) and utilization per phase: CPU, each core, memory and GPUs,
mean and p95 over the samples inside each phase; GPM activity and the driver's sample rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import nanmath
from ..runformat.runfile import Run
from ..runformat.percent import MISSING_PERCENT
from .pairing import NO_PHASE, Phase, union_length


@dataclass
class Series:
    """Samples as arrays: row i of every array is sample i (times ``t`` in seconds)."""

    t: np.ndarray
    cpu: np.ndarray            # (samples, cores) percent; may be given as a function that makes it (below)
    cpu_total: np.ndarray
    proc_cpu: np.ndarray       # workload tree, percent of one core (NaN when not running)
    proc_rss: np.ndarray       # bytes
    proc_wait: np.ndarray      # how long its threads waited for a core, % of one core (NaN: not read)
    recorder_cpu: np.ndarray
    watcher_cpu: np.ndarray
    gpu_t: list[np.ndarray]    # per GPU: times of utilization values (buffered samples where given)
    gpu_util: list[np.ndarray]
    gpu_mem_used: np.ndarray   # (samples, gpus) bytes
    gpu_power: np.ndarray      # (samples, gpus) watts
    # ``cpu`` as whole percents in bytes (``Samples.core_percent``) where it is so: per-core
    # figures are counted from it instead of sorting floats
    cpu_percent: np.ndarray | None = None
    # figures already computed from these arrays (``device_idle``: the report and the verdict
    # both ask for it), with the phases they were computed for
    memo: dict[Any, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def gpus(self) -> int:
        return len(self.gpu_util)


def _cpu(self: Series) -> np.ndarray:
    cpu = self.__dict__["_cpu"]
    if callable(cpu):
        cpu = self.__dict__["_cpu"] = cpu()
    return cpu


def _set_cpu(self: Series, cpu: Any) -> None:
    self.__dict__["_cpu"] = cpu


# ``Series.cpu`` made when first read: a day of 64 cores is 221 MB of floats, which per-core
# figures (counted from bytes) and a merged run's whole-run figures never read.
Series.cpu = property(_cpu, _set_cpu)  # type: ignore[assignment]


def series(run: Run) -> Series:
    """The run's sample columns as the analysis needs them (views, no per-sample work)."""
    c = run.samples
    gpu_t: list[np.ndarray] = []
    gpu_util: list[np.ndarray] = []
    for g in range(c.gpus if c.gpu_present.any() else 0):  # GPUs listed but never sampled: none
        t, v = c.util(g)
        gpu_t.append(t)
        gpu_util.append(v)
    # cpu is given as the function that makes it: made when first read (``Series.cpu``)
    return Series(c.t, lambda: c.cpu, c.cpu_total, c.proc("cpu"), c.proc("rss"), c.proc("cpu_wait"),  # type: ignore[arg-type]
                  c.recorder_cpu, c.watcher_cpu, gpu_t, gpu_util, c.gpu("mem_used"), c.gpu("power_w"), c.core_percent())


def active_mask(t: np.ndarray, intervals: list[tuple[float, float]]) -> np.ndarray:
    """Which times fall in any of the half-open intervals [start, end) (sorted ``t``): every
    interval's rows found at once, and covered by counting starts and ends (a day holds
    thousands of intervals)."""
    if not intervals:
        return np.zeros(len(t), dtype=bool)
    bounds = np.array(intervals, dtype=float).reshape(-1, 2)
    lo, hi = np.searchsorted(t, bounds[:, 0], "left"), np.searchsorted(t, bounds[:, 1], "left")
    lo, hi = lo[lo < hi], hi[lo < hi]
    depth = np.bincount(lo, minlength=len(t) + 1) - np.bincount(hi, minlength=len(t) + 1)
    return np.cumsum(depth[:-1]) > 0


def stats(values: np.ndarray) -> dict[str, float | None]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return {"mean": None, "p95": None}
    return {"mean": round(float(values.mean()), 1), "p95": round(float(_p95(values)), 1)}


def _p95(values: np.ndarray) -> Any:
    """``np.percentile(values, 95)`` (linear), step for step, without the ``np.unique`` inside
    it, whose first call imports ``numpy.ma`` (tens of ms of a report's start). No NaN in it."""
    n = len(values)
    virtual = (n - 1) * (95 / 100)
    if virtual >= n - 1:
        return values.max()
    previous = int(virtual // 1)
    a, b = np.partition(values, (previous, previous + 1))[[previous, previous + 1]]
    gamma = virtual - previous
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def _stats_columns(values: np.ndarray) -> list[dict[str, float | None]]:
    """``stats`` of every column at once (64 cores: one percentile call, not 64); whole
    percents are counted instead (``_stats_of_counts``)."""
    if values.shape[1] == 0:
        return []
    values = values.astype(float)
    means = nanmath.nanmean(values, axis=0)  # a core without a reading: NaN, None below
    p95 = means.copy()
    read = ~np.isnan(means)
    if read.any():
        p95[read] = np.nanpercentile(values[:, read], 95, axis=0)
    return [{"mean": None, "p95": None} if np.isnan(m) else {"mean": round(float(m), 1), "p95": round(float(p), 1)}
            for m, p in zip(means, p95)]


PERCENT_ROWS = 1 << 17  # rows counted at a time: bounds the copies to a few MB


def _percent_counts(percent: np.ndarray) -> np.ndarray:
    """How often each column holds each value 0–255: columns × 256 counts (255: missing).
    Two columns' bytes are read as one 16-bit number and counted in one ``bincount`` of 65,536
    bins, half the passes of counting each byte alone."""
    rows, columns = percent.shape
    if columns % 2:  # a column of missing values pairs the last one
        percent = np.concatenate([percent, np.full((rows, 1), MISSING_PERCENT, np.uint8)], axis=1)
    pairs = np.ascontiguousarray(percent).view("<u2")
    counts = np.zeros((pairs.shape[1] * 2, 256), np.int64)
    for start in range(0, rows, PERCENT_ROWS):
        block = np.ascontiguousarray(pairs[start:start + PERCENT_ROWS].T)
        for k, column in enumerate(block):
            both = np.bincount(column, minlength=1 << 16).reshape(256, 256)  # [second column's value, first's]
            counts[2 * k] += both.sum(axis=0)
            counts[2 * k + 1] += both.sum(axis=1)
    return counts[:columns]


def _stats_of_counts(counts: np.ndarray) -> list[dict[str, float | None]]:
    """Mean and p95 per column from its value counts, the very numbers ``np.nanmean`` and
    ``np.nanpercentile`` (linear) give on the values themselves: whole numbers sum exactly, and
    the interpolation is numpy's own, step for step."""
    counts = counts[:, :MISSING_PERCENT]
    n = counts.sum(axis=1)
    total = (counts * np.arange(MISSING_PERCENT)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = total.astype(float) / n
    virtual = (n - 1) * (95 / 100)
    previous = np.floor(virtual)
    above = virtual >= n - 1
    lower = np.where(above, n - 1, previous).astype(np.int64)
    upper = np.where(above, n - 1, previous + 1).astype(np.int64)
    gamma = virtual - np.where(above, -1, previous)
    cumulative = np.cumsum(counts, axis=1)
    a = (cumulative <= lower[:, None]).sum(axis=1).astype(float)  # the value at sorted position lower
    b = (cumulative <= upper[:, None]).sum(axis=1).astype(float)
    diff = b - a
    p95 = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    return [{"mean": None, "p95": None} if count == 0 else {"mean": round(float(m), 1), "p95": round(float(p), 1)}
            for count, m, p in zip(n, means, p95)]


@dataclass(frozen=True)
class MeanP95:
    """A figure's mean and 95th percentile over some samples (None where none was read)."""

    mean: float | None
    p95: float | None

    @classmethod
    def of(cls, figures: dict[str, float | None]) -> MeanP95:
        return cls(figures["mean"], figures["p95"])

    def to_json(self) -> dict[str, float | None]:
        return {"mean": self.mean, "p95": self.p95}


@dataclass(frozen=True)
class PhaseUtilization:
    """What the machine did while one phase name was active: its seconds (None for the time in
    no phase of a run with phases), the samples taken, and the mean and p95 of total CPU, of
    each core and of each GPU."""

    seconds: float | None
    samples: int
    cpu_total: MeanP95
    cores: tuple[MeanP95, ...]
    gpus: tuple[MeanP95, ...]

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "samples": self.samples, "cpu_total": self.cpu_total.to_json(),
                "cores": [c.to_json() for c in self.cores], "gpus": [g.to_json() for g in self.gpus]}


def phase_utilization(run: Run, s: Series, all_phases: list[Phase]) -> dict[str, PhaseUtilization]:
    """Mean and p95 of total CPU, each core and each GPU while each phase name is active.

    A sample counts for every phase name active at its time (overlapped lanes count for
    both); samples outside every phase count under ``(no phase)``.
    """
    names: dict[str, list[tuple[float, float]]] = {}
    for p in all_phases:
        names.setdefault(p.name, []).append((p.start, p.end))
    result: dict[str, PhaseUtilization] = {}
    any_phase = np.zeros(len(s.t), dtype=bool)
    gpu_any = [np.zeros(len(gt), dtype=bool) for gt in s.gpu_t]
    for name, intervals in names.items():
        mask = active_mask(s.t, intervals)
        any_phase |= mask
        gpu_masks = [active_mask(gt, intervals) for gt in s.gpu_t]
        for g, m in enumerate(gpu_masks):
            gpu_any[g] |= m
        result[name] = _utilization_entry(s, mask, gpu_masks, union_length(intervals))
    outside = ~any_phase
    if all_phases and outside.any():
        result[NO_PHASE] = _utilization_entry(s, outside, [~m for m in gpu_any], None)
    if not all_phases:
        result[NO_PHASE] = _utilization_entry(s, outside, [~m for m in gpu_any], run.duration)
    return result


def _utilization_entry(s: Series, mask: np.ndarray, gpu_masks: list[np.ndarray],
                       seconds: float | None) -> PhaseUtilization:
    cores = _stats_columns(s.cpu[mask]) if s.cpu_percent is None \
        else _stats_of_counts(_percent_counts(s.cpu_percent[mask]))
    return PhaseUtilization(round(seconds, 3) if seconds is not None else None, int(mask.sum()),
                            MeanP95.of(stats(s.cpu_total[mask])), tuple(MeanP95.of(c) for c in cores),
                            tuple(MeanP95.of(stats(s.gpu_util[g][m])) for g, m in enumerate(gpu_masks)))


def gpm_series(run: Run, name: str, gpu: int) -> tuple[np.ndarray, np.ndarray]:
    """Times and values of one GPM field (``sm_active``, ``pcie_rx``…) of one GPU, where present.

    GPM values average the window since the previous GPM sample, so samples without them
    (a window under 100 ms, or no GPM) are left out rather than filled in."""
    samples = run.samples
    if gpu >= samples.gpus or name not in samples.gpu_fields:
        return np.empty(0), np.empty(0)
    values = samples.gpu(name)[:, gpu]
    present = ~np.isnan(values)
    return samples.t[present], values[present]


def sm_active_mean(run: Run, gpu: int, mask: np.ndarray | None = None) -> float | None:
    """Mean ``sm_active`` of one GPU over the samples in MASK (all when None); None without GPM."""
    samples = run.samples
    if gpu >= samples.gpus or "sm_active" not in samples.gpu_fields:
        return None
    values = samples.gpu("sm_active")[:, gpu]
    if mask is not None:
        n = min(len(mask), len(values))
        values = values[:n][np.asarray(mask[:n], dtype=bool)]
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else None


def driver_sample_periods(run: Run) -> list[float | None]:
    """The driver's utilization sample period per GPU in seconds, as the recorder measured it."""
    periods: list[float | None] = [None] * len(run.gpu_names)
    for status in run.gpu_status:
        for g, value in enumerate(status.util_period or ()):
            if value is not None and value > 0:
                if g >= len(periods):
                    periods += [None] * (g + 1 - len(periods))
                periods[g] = float(value)
    return periods
