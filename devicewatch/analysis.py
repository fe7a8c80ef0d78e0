"""Pure functions over a ``Run``: phases, epochs, utilization per phase, GPU idle and dips,
lane overlap, and a one-line verdict. Nothing here reads files or draws anything, so the
report, the dashboard, compare and export all share the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Iterable

import numpy as np

from . import events, nanmath
from .runformat.runfile import NO_END_RECORD, Run
from .runformat.percent import MISSING_PERCENT

PHASE_KINDS = ("train", "validate", "data", "copy")
NO_PHASE = "(no phase)"
DIP_THRESHOLD = 30.0   # % utilization under which a device counts as dipping
IDLE_THRESHOLD = 10.0  # % under which a GPU counts as idle
MIN_DIP_SECONDS = 0.2  # shorter excursions are noise, not a dip
SM_ACTIVE_LOW = 50.0   # % SM activity under which a busy GPU is launch-bound, not GPU-bound
# The per-epoch metric with the exact seconds the training loop was blocked in its DataLoader
# (the zero-code instrumentation sends it; its visible waits are also ``data`` phases).
DATA_WAIT_METRIC = "data_wait_s"
WAIT_PHASE = "wait"          # a rank waiting for the others at a barrier (zero-code): no finish of its epoch
# What an ``epoch`` event's unit is (its ``unit`` field): a pass over the data, or a segment, the
# training between two evaluations of a step-based loop (no epochs); absent means an epoch.
EPOCH_UNIT, SEGMENT_UNIT = "epoch", "segment"
# The loaders whose waits the zero-code instrumentation measures (docs/zero-code.md).
MEASURED_LOADERS = "DataLoader or tf.data dataset"
AUTO_SOURCE, STDOUT_SOURCE = "auto", "stdout"  # phases of the zero-code instrumentation, of the output
# What the epoch tables' loop and data wait columns hold (``EpochRow.train_loop``, ``loop_wait_share``).
LOOP_WAIT_LEGEND = "loop: the training loop, data waits included; data wait: the share of the loop spent waiting on input"

# The verdict's thresholds (docs/verdicts.md lists them beside the labels they decide).
GPU_BUSY = 80.0             # % mean utilization from which a GPU is the limit (GPU- or launch-bound)
VALIDATION_DIP_SHARE = 0.4  # share of the GPU's dip time in validation that makes a run validation-bound
FEED_ALL_CORES = 80.0       # % of all cores busy beside an unfilled GPU: the CPU cannot feed it
FEED_ONE_CORE = 90.0        # % of the busiest core beside an unfilled GPU: one core cannot feed it
DATA_WAIT_BOUND = 0.3       # share of the training loop spent waiting on data: input-bound
CPU_BOUND = 85.0            # % of all cores busy: CPU-bound
CORE_SATURATED = 85.0       # % of the busiest core: some work is limited by one core
SERIAL_CORES = 1.25         # cores busy up to this, with one saturated: the work is serial
OWN_CORE = 0.5              # cores the workload's own tree keeps busy, at least, for a saturated core to be its
LANES_OVERLAP = 0.1         # share of the phase time with two or more lanes at once: parallel lanes
PACING_LANE = 0.9           # share of the phase time one lane is busy: it sets the pace


@dataclass(frozen=True)
class Phase:
    name: str
    lane: str
    epoch: int | None
    start: float
    end: float
    open: bool = False  # never ended: the workload died or is still running
    attrs: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def kind(self) -> str:
        """train, validate, data, copy, or other."""
        return self.name if self.name in PHASE_KINDS else "other"


@dataclass
class EpochRow:
    """One epoch's seconds, counted so that no instant counts twice within a lane: a phase
    nested in another phase of the same lane owns its time, and the outer phase counts only
    the rest (a ``data`` wait inside ``train`` is data, not also train). Phases of different
    lanes running side by side each count their own time.

    ``train`` and ``validate`` are the seconds of those kinds of phase counted so; ``other``
    is the rest of the epoch (data, copy, gaps). ``data_wait`` is the time the training loop
    waited on its input: the ``data_wait_s`` metric where the epoch has it (exact, including
    waits too short to draw as phases), else the ``data`` phases in the lanes the epoch trains
    in, else None (not measured). ``train_loop`` is the training loop's time: its train phases
    with the data waits inside or between them, once. ``unit`` is what its ``epoch`` event
    says it is (``epoch`` or ``segment``), None before that event (``unit()`` says the run's).
    """

    epoch: int
    start: float
    end: float
    train: float
    validate: float
    other: float
    metrics: dict[str, Any]
    # Seconds in each named phase (data, train, copy, validate, …; lanes merged), in the order
    # the phases first appear: what the lanes draw, counted the same way.
    phases: dict[str, float] = field(default_factory=dict)
    data_wait: float | None = None
    data_wait_source: str | None = None   # "metric" (data_wait_s) or "phases" (data phases)
    train_loop: float = 0.0
    covered: float | None = None          # seconds in any phase (lanes merged)
    unit: str | None = None               # "epoch" or "segment" as its epoch event says; None: no event yet

    @property
    def total(self) -> float:
        return self.end - self.start

    @property
    def untracked(self) -> float:
        """Seconds of the epoch in no phase at all."""
        if self.covered is not None:
            return max(0.0, self.total - self.covered)
        return max(0.0, self.total - sum(self.phases.values())) if self.phases else self.other

    @property
    def data_wait_share(self) -> float | None:
        """The data wait as a share of the whole epoch (None where not measured)."""
        if self.data_wait is None or self.total <= 0:
            return None
        return min(1.0, self.data_wait / self.total)

    @property
    def loop_wait_share(self) -> float | None:
        """The data wait as a share of the training loop's time (what the verdict judges)."""
        if self.data_wait is None or self.train_loop <= 0:
            return None
        return min(1.0, self.data_wait / self.train_loop)


@dataclass
class Series:
    """Samples as arrays: row i of every array is sample i (times ``t`` in seconds)."""

    t: np.ndarray
    cpu: np.ndarray            # (samples, cores) percent; may be given as a function that makes it (below)
    cpu_total: np.ndarray
    proc_cpu: np.ndarray       # workload tree, percent of one core (NaN when not running)
    proc_rss: np.ndarray       # bytes
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


@dataclass
class Dip:
    start: float
    end: float
    phase: str  # the phase(s) active in the middle of the dip

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class DeviceIdle:
    device: str
    idle_fraction: float
    mean: float
    dips: list[Dip]

    @property
    def dip_seconds(self) -> float:
        return sum(d.duration for d in self.dips)


@dataclass
class Verdict:
    label: str
    text: str
    figures: dict[str, float]


# -- phases and epochs ---------------------------------------------------------------------

def phases(run: Run) -> list[Phase]:
    """Pair phase_begin and phase_end events by (pid, lane, name, epoch), in start order."""
    tracker = events.PhaseTracker()
    done: list[Phase] = []
    # Epochs parsed from output lines stand in only for workloads that send no phases of
    # their own (the recorder may see an output line before the workload's first event).
    paired = run.events.of(events.PHASE_BEGIN, events.PHASE_END)
    own = any(e.get("kind") == events.PHASE_BEGIN and e.get("source") != "stdout" for e in paired)
    for event in paired:
        if own and event.get("source") == "stdout":
            continue
        begin = tracker.take(event)
        if begin is not None:
            done.append(phase_from(begin, float(event["t"])))
    end = run.duration
    for begin in tracker.open_phases():
        done.append(phase_from(begin, max(end, float(begin["t"])), True))
    done.sort(key=phase_order)
    return done


def phase_order(p: Phase) -> tuple[float, str]:
    """The order phases are listed in: by start, then lane."""
    return (p.start, p.lane)


def phase_from(begin: dict[str, Any], end: float, is_open: bool = False) -> Phase:
    """The phase a ``phase_begin`` event starts, ending at ``end`` (``is_open``: not ended yet)."""
    reserved = {"type", "t", "kind", "name", "lane", "epoch", "pid", "thread"}
    epoch = begin.get("epoch")
    return Phase(str(begin.get("name")), str(begin.get("lane", "main")),
                 epoch if isinstance(epoch, int) else None, float(begin["t"]), end, is_open,
                 {k: v for k, v in begin.items() if k not in reserved})


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def _owned_spans(members: list[Phase]) -> list[tuple[Phase, float, float]]:
    """Where each phase is the innermost of its lane: (phase, start, end) pieces. Within a
    lane the phase begun last among those running owns the time, so a phase nested in another
    takes its time out of the outer one (of two begun at the same instant, the one that ends
    first is the nested one: a loop's first wait begins with its train phase); lanes are
    independent of each other."""
    out: list[tuple[Phase, float, float]] = []
    by_lane: dict[str, list[Phase]] = {}
    for p in members:
        if p.duration > 0:  # an instant owns no time
            by_lane.setdefault(p.lane, []).append(p)
    for lane_phases in by_lane.values():
        # Ends before begins at the same instant: a phase that starts as another ends follows it.
        points = sorted([(p.end, 0, i) for i, p in enumerate(lane_phases)]
                        + [(p.start, 1, i) for i, p in enumerate(lane_phases)])
        active: dict[int, Phase] = {}
        previous = 0.0
        for time, is_begin, i in points:
            if active and time > previous:
                owner = max(active, key=lambda j: (active[j].start, -active[j].end, j))
                out.append((active[owner], previous, time))
            if is_begin:
                active[i] = lane_phases[i]
            else:
                active.pop(i, None)
            previous = time
    return out


def _epoch_row(epoch: int, members: list[Phase], metrics: dict[str, Any], unit: str | None = None) -> EpochRow:
    start = min(p.start for p in members)
    end = max(p.end for p in members)
    owned = _owned_spans(members)
    named: dict[str, list[tuple[float, float]]] = {}
    for p in sorted(members, key=lambda p: p.start):
        named.setdefault(p.name, [])
    for p, a, b in owned:
        named[p.name].append((a, b))
    train = _union_length([(a, b) for p, a, b in owned if p.kind == "train"])
    validate = _union_length([(a, b) for p, a, b in owned if p.kind == "validate"])
    busy = _union_length([(a, b) for p, a, b in owned if p.kind in ("train", "validate")])
    # The training loop: the lanes that train, their train phases, and the data phases in them.
    loop_lanes = {p.lane for p in members if p.kind == "train"}
    waits = [(a, b) for p, a, b in owned if p.kind == "data" and p.lane in loop_lanes]
    loop = _union_length([(p.start, p.end) for p in members if p.kind == "train"] + waits)
    measured = metrics.get(DATA_WAIT_METRIC)
    if type(measured) in (int, float) and 0 <= measured < float("inf"):
        data_wait, source = float(measured), "metric"
    elif any(p.kind == "data" and p.lane in loop_lanes for p in members):
        data_wait, source = _union_length(waits), "phases"
    else:
        data_wait, source = None, None
    return EpochRow(epoch, start, end, train, validate, max(0.0, (end - start) - busy), metrics,
                    {name: _union_length(spans) for name, spans in named.items()},
                    data_wait, source, loop, _union_length([(p.start, p.end) for p in members]), unit)


def epochs(run: Run, all_phases: list[Phase] | None = None) -> list[EpochRow]:
    """One row per epoch: its span, the seconds of its phases (see ``EpochRow``), its metrics."""
    all_phases = phases(run) if all_phases is None else all_phases
    by_epoch: dict[int, list[Phase]] = {}
    for p in all_phases:
        if p.epoch is not None:
            by_epoch.setdefault(p.epoch, []).append(p)
    metrics: dict[int, dict[str, Any]] = {}
    units: dict[int, str] = {}
    for event in run.events.of(events.EPOCH):
        if event.get("kind") == events.EPOCH and isinstance(event.get("epoch"), int):
            metrics.setdefault(event["epoch"], {}).update(event.get("metrics") or {})
            units[event["epoch"]] = SEGMENT_UNIT if event.get("unit") == SEGMENT_UNIT else EPOCH_UNIT
    return [_epoch_row(epoch, by_epoch[epoch], metrics.get(epoch, {}), units.get(epoch))
            for epoch in sorted(by_epoch)]


def unit(rows: list[EpochRow]) -> str:
    """What a run's rows count: ``segment`` where every row whose epoch event has come says
    so (step-based training, evaluated every N steps), else ``epoch``."""
    said = {r.unit for r in rows if r.unit is not None}
    return SEGMENT_UNIT if said == {SEGMENT_UNIT} else EPOCH_UNIT


def units_text(unit_: str, count: int | None = None) -> str:
    """The unit's word for COUNT of them: "1 epoch", "3 segments"; "segments" without a count."""
    if count is None:
        return f"{unit_}s"
    return f"{count} {unit_}{'s' * (count != 1)}"


def repeated_metrics(phase_names: Iterable[str], metric_names: Iterable[str]) -> set[str]:
    """The metrics an epoch table already shows in its own columns: a phase's seconds
    (``train_s`` beside a ``train`` phase) and the data wait."""
    phases_ = set(phase_names)
    return {m for m in metric_names if m == DATA_WAIT_METRIC or (m.endswith("_s") and m[:-2] in phases_)}


@dataclass(frozen=True)
class DataWait:
    """How long a run's training loops waited on their input, over the epochs that measured it."""

    seconds: float
    train_loop: float   # seconds of those epochs' training loops
    source: str         # "metric" where every such epoch had data_wait_s, else "phases"

    @property
    def share(self) -> float:
        return min(1.0, self.seconds / self.train_loop)


def data_wait(rows: list[EpochRow]) -> DataWait | None:
    """The run's data wait, or None where no epoch measured it."""
    measured = [r for r in rows if r.data_wait is not None and r.train_loop > 0]
    if not measured:
        return None
    source = "metric" if all(r.data_wait_source == "metric" for r in measured) else "phases"
    return DataWait(sum(r.data_wait or 0.0 for r in measured), sum(r.train_loop for r in measured), source)


@dataclass(frozen=True)
class Unmeasured:
    """Epochs (or segments) whose data wait is not measured, and why: said once per run, so
    that a view shows "not measured" and the reason instead of a 0% or a column of dashes."""

    unit: str            # the run's unit (``unit()``)
    numbers: list[int]   # the rows without a data wait
    rows: int            # rows in all (those of a recording run whose epoch event has come)
    reason: str

    @property
    def text(self) -> str:
        """``data wait: not measured — REASON`` (``… not measured in 2 of 5 epochs (4, 5) — …``
        where some rows did measure it)."""
        where = ""
        if len(self.numbers) < self.rows:
            listed = ", ".join(map(str, self.numbers[:5])) + (", …" if len(self.numbers) > 5 else "")
            where = f" in {len(self.numbers)} of {units_text(self.unit, self.rows)} ({listed})"
        return f"data wait: not measured{where} — {self.reason}"


def data_wait_unmeasured(run: Run, rows: list[EpochRow], all_phases: list[Phase] | None = None
                         ) -> Unmeasured | None:
    """The rows of RUN without a data wait, and why, or None where every row has one (or
    there are no rows). A row whose epoch event has not come yet while the run records is
    left out: the zero-code instrumentation sends ``data_wait_s`` when the epoch ends.

    Why, in order: the workload sends its own phases (it reports no data wait); the zero-code
    instrumentation was active (its phases are in the run, or the end record says so), so the
    training loop read no loader it measures; else why the instrumentation was not active."""
    said = [r for r in rows if run.finished or r.unit is not None]
    missing = [r.epoch for r in said if r.data_wait is None]
    if not missing:
        return None
    all_phases = phases(run) if all_phases is None else all_phases
    sources = {p.attrs.get("source") for p in all_phases}
    summary = run.end.get("instrument") if run.end else None
    summary = summary if isinstance(summary, dict) else None
    if sources - {AUTO_SOURCE, STDOUT_SOURCE}:
        reason = "the workload sends its own phases and reports no data wait"
    elif AUTO_SOURCE in sources or (summary is not None and summary.get("active")):
        reason = f"the training loop read no {MEASURED_LOADERS}"
    else:
        reason = _not_instrumented(run, summary)
    return Unmeasured(unit(rows), missing, len(said), reason)


def _not_instrumented(run: Run, summary: dict[str, Any] | None) -> str:
    """Why the zero-code instrumentation measured nothing, from the end record, else the header."""
    offered = run.header.raw.get("instrument")
    if summary is not None:
        return f"zero-code instrumentation not active ({summary.get('reason') or 'no reason recorded'})"
    if isinstance(offered, dict) and not offered.get("offered"):
        return f"zero-code instrumentation not offered ({offered.get('reason') or 'no reason recorded'})"
    if isinstance(offered, dict):
        return ("zero-code instrumentation offered, but none of its phases came "
                "and the run has no end record to say why")
    return "the run was recorded without zero-code instrumentation"


def unmeasured_dict(found: Unmeasured | None) -> dict[str, Any] | None:
    """``data_wait_unmeasured`` as plain data (``report --json``, ``compare --json``)."""
    if found is None:
        return None
    return {"unit": found.unit, "rows": found.numbers, "reason": found.reason, "text": found.text}


def phase_names(rows: list[EpochRow]) -> list[str]:
    """Every phase name of the epochs, in the order they first appear."""
    seen: dict[str, None] = {}
    for row in rows:
        for name in row.phases:
            seen.setdefault(name, None)
    return list(seen)


def lanes(all_phases: list[Phase]) -> list[str]:
    seen: dict[str, None] = {}
    for p in all_phases:
        seen.setdefault(p.lane, None)
    return list(seen)


def lane_overlap(all_phases: list[Phase]) -> dict[str, float]:
    """How much of the time some phase runs is spent with phases running in two or more lanes."""
    busy = overlap = 0.0
    active = 0
    previous = None
    per_lane_active: dict[str, int] = {}
    # Sweep over lane activity, counting distinct lanes rather than phases.
    edges: list[tuple[float, int, str]] = []
    for p in all_phases:
        if p.duration > 0:
            edges += [(p.start, 1, p.lane), (p.end, -1, p.lane)]
    edges.sort(key=lambda e: (e[0], e[1]))
    for time, delta, lane in edges:
        if previous is not None:
            span = time - previous
            if active >= 1:
                busy += span
            if active >= 2:
                overlap += span
        per_lane_active[lane] = per_lane_active.get(lane, 0) + delta
        active = sum(1 for v in per_lane_active.values() if v > 0)
        previous = time
    return {"busy_seconds": busy, "overlap_seconds": overlap,
            "overlap_fraction": overlap / busy if busy > 0 else 0.0}


# -- samples ---------------------------------------------------------------------------------

def series(run: Run) -> Series:
    """The run's sample columns as the analysis needs them (views, no per-sample work)."""
    c = run.samples
    gpu_t: list[np.ndarray] = []
    gpu_util: list[np.ndarray] = []
    for g in range(c.gpus if c.gpu_present.any() else 0):  # GPUs listed but never sampled: none
        t, v = c.util(g)
        gpu_t.append(t)
        gpu_util.append(v)
    return Series(c.t, lambda: c.cpu, c.cpu_total, c.proc("cpu"), c.proc("rss"), c.recorder_cpu, c.watcher_cpu,
                  gpu_t, gpu_util, c.gpu("mem_used"), c.gpu("power_w"), c.core_percent())


def _active_mask(t: np.ndarray, intervals: list[tuple[float, float]]) -> np.ndarray:
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


def _stats(values: np.ndarray) -> dict[str, float | None]:
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
    """``_stats`` of every column at once (64 cores: one percentile call, not 64); whole
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


def phase_utilization(run: Run, s: Series | None = None,
                      all_phases: list[Phase] | None = None) -> dict[str, dict[str, Any]]:
    """Mean and p95 of total CPU, each core and each GPU while each phase name is active.

    A sample counts for every phase name active at its time (overlapped lanes count for
    both); samples outside every phase count under ``(no phase)``.
    """
    s = series(run) if s is None else s
    all_phases = phases(run) if all_phases is None else all_phases
    names: dict[str, list[tuple[float, float]]] = {}
    for p in all_phases:
        names.setdefault(p.name, []).append((p.start, p.end))
    result: dict[str, dict[str, Any]] = {}
    any_phase = np.zeros(len(s.t), dtype=bool)
    gpu_any = [np.zeros(len(gt), dtype=bool) for gt in s.gpu_t]
    for name, intervals in names.items():
        mask = _active_mask(s.t, intervals)
        any_phase |= mask
        gpu_masks = [_active_mask(gt, intervals) for gt in s.gpu_t]
        for g, m in enumerate(gpu_masks):
            gpu_any[g] |= m
        result[name] = _utilization_entry(s, mask, gpu_masks, _union_length(intervals))
    outside = ~any_phase
    if all_phases and outside.any():
        result[NO_PHASE] = _utilization_entry(s, outside, [~m for m in gpu_any], None)
    if not all_phases:
        result[NO_PHASE] = _utilization_entry(s, outside, [~m for m in gpu_any], run.duration)
    return result


def _utilization_entry(s: Series, mask: np.ndarray, gpu_masks: list[np.ndarray],
                       seconds: float | None) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 3) if seconds is not None else None,
        "samples": int(mask.sum()),
        "cpu_total": _stats(s.cpu_total[mask]),
        "cores": _stats_columns(s.cpu[mask]) if s.cpu_percent is None
        else _stats_of_counts(_percent_counts(s.cpu_percent[mask])),
        "gpus": [_stats(s.gpu_util[g][m]) for g, m in enumerate(gpu_masks)],
    }


# -- idle time and dips ----------------------------------------------------------------------

def dips(t: np.ndarray, values: np.ndarray, all_phases: list[Phase],
         threshold: float = DIP_THRESHOLD, min_seconds: float = MIN_DIP_SECONDS) -> list[Dip]:
    """Maximal stretches below ``threshold``, from the last sample above it to the next one
    (or to the last sample, when the run ends in a dip)."""
    spans = _dip_spans(t, values, threshold, min_seconds)
    names = _phases_at(all_phases, [(begin + end) / 2 for begin, end in spans])
    return [Dip(begin, end, name) for (begin, end), name in zip(spans, names)]


def _dip_spans(t: np.ndarray, values: np.ndarray, threshold: float, min_seconds: float) -> list[tuple[float, float]]:
    """The (start, end) of each dip of ``dips``, without the phases."""
    spans: list[tuple[float, float]] = []
    if len(t) < 2:
        return spans
    below = np.concatenate(([False], values < threshold, [False]))
    edges = np.flatnonzero(np.diff(below.astype(np.int8)))
    last = len(t) - 1
    for first, after in zip(edges[::2], edges[1::2]):  # run of low samples: first .. after-1
        begin_time = t[first - 1] if first > 0 else t[first]
        end_time = t[min(after, last)]
        if end_time - begin_time >= min_seconds:
            spans.append((float(begin_time), float(end_time)))
    return spans


def _phases_at(all_phases: list[Phase], times: list[float]) -> list[str]:
    """The phase names active at each time (``start <= time < end``), joined by "+" in name
    order, NO_PHASE where none: one sweep over the phases' starts and ends, not a scan of
    every phase per time (a day holds thousands of dips and thousands of phases)."""
    spans = [p for p in all_phases if p.end > p.start]  # the others are never active
    starts = sorted(spans, key=lambda p: p.start)
    ends = sorted(spans, key=lambda p: p.end)
    active: dict[str, int] = {}
    out: dict[int, str] = {}
    i = j = 0
    for k in sorted(range(len(times)), key=times.__getitem__):
        time = times[k]
        while i < len(starts) and starts[i].start <= time:
            active[starts[i].name] = active.get(starts[i].name, 0) + 1
            i += 1
        while j < len(ends) and ends[j].end <= time:
            active[ends[j].name] -= 1
            j += 1
        names = sorted(name for name, count in active.items() if count > 0)
        out[k] = "+".join(names) if names else NO_PHASE
    return [out[k] for k in range(len(times))]


def device_idle(run: Run, s: Series | None = None, all_phases: list[Phase] | None = None,
                threshold: float = DIP_THRESHOLD) -> list[DeviceIdle]:
    """Per GPU: idle fraction, mean utilization and dips. With no GPU: the same for total CPU."""
    s = series(run) if s is None else s
    all_phases = phases(run) if all_phases is None else all_phases
    known = s.memo.get(("device_idle", threshold))
    if known is not None and known[0] is all_phases:
        return list(known[1])
    out = []
    devices: list[tuple[str, np.ndarray, np.ndarray]] = []
    for g in range(s.gpus):  # by index too: a machine's GPUs usually share one name
        name = gpu_label(run, g)
        devices.append((name if name == f"GPU {g}" else f"GPU {g} ({name})", s.gpu_t[g], s.gpu_util[g]))
    if not devices:
        devices.append(("CPU (all cores)", s.t, s.cpu_total))
    found = []  # per device: label, idle, mean, dips' spans; the phases of every dip found in one sweep
    for label, t, values in devices:
        valid = ~np.isnan(values)
        t, values = t[valid], values[valid]
        if values.size == 0:
            continue
        idle = float((values < IDLE_THRESHOLD).mean())
        found.append((label, idle, float(values.mean()), _dip_spans(t, values, threshold, MIN_DIP_SECONDS)))
    names = iter(_phases_at(all_phases, [(begin + end) / 2 for *_, spans in found for begin, end in spans]))
    for label, idle, mean, spans in found:
        out.append(DeviceIdle(label, round(idle, 4), round(mean, 1),
                              [Dip(begin, end, next(names)) for begin, end in spans]))
    s.memo[("device_idle", threshold)] = (all_phases, out)
    return list(out)


# -- the verdict -----------------------------------------------------------------------------

@dataclass(frozen=True)
class CpuUse:
    """What the CPU did while the workload's phases ran, counted in cores: 1.4 of 2 cores
    busy is not serial work, and neither is 9 of 16, whatever their mean percentage."""

    cores: int
    total: float              # mean % of all cores
    busiest: float            # mean % of the busiest core of each sample
    workload: float | None    # mean cores the workload's process tree kept busy (None: not recorded)

    @property
    def machine(self) -> float:
        """Cores busy on the whole machine, the workload's and everyone else's."""
        return self.total / 100.0 * self.cores

    @property
    def used(self) -> float:
        """Cores the workload kept busy: its own where recorded (other processes are not its
        work), else the machine's."""
        return self.workload if self.workload is not None else self.machine

    def busy_text(self) -> str:
        text = f"{self.used:.1f} of {self.cores} cores busy"
        if self.workload is not None and abs(self.machine - self.workload) >= 0.5:
            text += f" with the workload, {self.machine:.1f} on the whole machine"
        return text


@dataclass(frozen=True)
class LaneUse:
    """What the lanes did: how much of the phase time ran in two or more lanes at once, and
    how much of it each lane was busy."""

    overlap: float                 # share of the phase time with two or more lanes active
    busy: dict[str, float]         # lane -> share of the phase time it had a phase running
    names: dict[str, list[str]]    # lane -> its phase names, in order of appearance

    @property
    def parallel(self) -> bool:
        return len(self.busy) > 1 and self.overlap >= LANES_OVERLAP

    @property
    def pacing(self) -> str | None:
        """The one lane busy nearly all the time while others run beside it: it sets the pace."""
        full = [lane for lane, share in self.busy.items() if share >= PACING_LANE]
        return full[0] if len(full) == 1 and self.parallel else None


def _busiest_core_mean(s: Series, in_run: np.ndarray) -> float:
    """The mean over the samples in IN_RUN of each one's busiest core (NaN: none read). From
    the per-core bytes where the run has them: a day of 64 cores is 55 MB of them, 442 MB of
    floats."""
    if not in_run.any():
        return 0.0
    percent = s.cpu_percent
    if percent is None or len(percent) != len(s.t):
        return float(np.nanmean(np.nanmax(s.cpu[in_run], axis=1))) if s.cpu.size else 0.0
    if not percent.size:
        return 0.0
    rows = percent[in_run]
    read = rows != MISSING_PERCENT
    busiest = np.where(read, rows, 0).max(axis=1).astype(float)
    busiest[~read.any(axis=1)] = np.nan
    return float(np.nanmean(busiest))


def cpu_use(s: Series, in_run: np.ndarray, cores: int) -> CpuUse:
    """The CPU figures of the samples in IN_RUN."""
    total = float(np.nanmean(s.cpu_total[in_run])) if in_run.any() else 0.0
    busiest = _busiest_core_mean(s, in_run)
    workload = None
    if len(s.proc_cpu) == len(s.t):
        proc = s.proc_cpu[in_run]
        proc = proc[~np.isnan(proc)]
        if proc.size:
            workload = float(proc.mean()) / 100.0
    return CpuUse(cores, 0.0 if total != total else total, 0.0 if busiest != busiest else busiest, workload)


def lane_use(all_phases: list[Phase]) -> LaneUse:
    overlap = lane_overlap(all_phases)
    span = overlap["busy_seconds"]
    spans: dict[str, list[tuple[float, float]]] = {}
    names: dict[str, list[str]] = {}
    for p in all_phases:
        spans.setdefault(p.lane, []).append((p.start, p.end))
        if p.name not in names.setdefault(p.lane, []):
            names[p.lane].append(p.name)
    busy = {lane: (_union_length(x) / span if span > 0 else 0.0) for lane, x in spans.items()}
    return LaneUse(overlap["overlap_fraction"], busy, names)


def verdict(run: Run, s: Series | None = None, all_phases: list[Phase] | None = None) -> Verdict:
    """The run in one line: what limited it (docs/verdicts.md lists the labels, their order and
    thresholds). Judged on the samples inside the workload's phases, in cores busy, by what its
    lanes did side by side, and by how long its training loop waited on data."""
    s = series(run) if s is None else s
    all_phases = phases(run) if all_phases is None else all_phases
    if len(s.t) < 2:
        return Verdict("too short", "too few samples to judge (the run lasted under a sample or two)", {})
    in_run = _active_mask(s.t, [(p.start, p.end) for p in all_phases]) if all_phases else np.ones(len(s.t), bool)
    if not in_run.any():  # phases too short to hold a sample: judge the whole run instead
        in_run = np.ones(len(s.t), bool)
    cores = int(s.cpu.shape[1]) if s.cpu.ndim == 2 and s.cpu.shape[1] else max(run.cores, 1)
    cpu = cpu_use(s, in_run, cores)
    lanes_ = lane_use(all_phases)
    wait = data_wait(epochs(run, all_phases))
    figures: dict[str, float] = {"cpu_mean": round(cpu.total, 1), "busiest_core_mean": round(cpu.busiest, 1),
                                 "cores": cores, "cores_busy": round(cpu.machine, 2)}
    if cpu.workload is not None:
        figures["workload_cores"] = round(cpu.workload, 2)
    figures["lane_overlap"] = round(lanes_.overlap, 3)
    if wait is not None:
        figures["data_wait_share"] = round(wait.share, 3)
    gpu_used = [g for g in range(s.gpus) if s.gpu_util[g].size and np.nanmax(s.gpu_util[g]) > IDLE_THRESHOLD]
    if gpu_used:
        return _gpu_verdict(run, s, all_phases, in_run, cpu, wait, figures)
    if wait is not None and wait.share >= DATA_WAIT_BOUND:
        return Verdict("input-bound", f"{_wait_text(wait, input_name(run))}; {cpu.busy_text()}", figures)
    return _cpu_verdict(cpu, lanes_, figures)


def input_name(run: Run) -> str:
    """What the training loop read its batches from, as the zero-code instrumentation saw it
    (its ``setup`` event): "DataLoader", "tf.data input", "input" where it read neither, and
    "DataLoader" for a run without one (a workload's own ``data_wait_s``, an older recording)."""
    for event in run.events.of(events.INSTRUMENT):
        if event.get("state") == "setup":
            if event.get("loader"):
                return "DataLoader"
            return "tf.data input" if event.get("tf_data") else "input"
    return "DataLoader"


def _wait_text(wait: DataWait, source: str = "DataLoader") -> str:
    if wait.source == "metric":
        return (f"input-bound: the training loop waited on its {source} {wait.share:.0%} of the time "
                f"({wait.seconds:.1f} of {wait.train_loop:.1f} s)")
    return (f"input-bound: the training loop spent {wait.share:.0%} of its time in data phases "
            f"({wait.seconds:.1f} of {wait.train_loop:.1f} s), waiting for or preparing its input")


def _gpu_verdict(run: Run, s: Series, all_phases: list[Phase], in_run: np.ndarray, cpu: CpuUse,
                 wait: DataWait | None, figures: dict[str, float]) -> Verdict:
    idle = device_idle(run, s, all_phases)
    gpu = max(idle[:s.gpus], key=lambda d: d.mean)
    figures.update(gpu_mean=gpu.mean, gpu_idle_fraction=gpu.idle_fraction,
                   gpu_dip_seconds=round(gpu.dip_seconds, 2))
    if gpu.mean >= GPU_BUSY:
        busiest = max(range(s.gpus), key=lambda g: idle[g].mean)
        sm = sm_active_mean(run, busiest, in_run)
        if sm is None:
            return Verdict("GPU-bound", f"GPU-bound: the GPU is busy {gpu.mean:.0f}% on average; "
                           "the input pipeline keeps it fed (SM activity not measured: busy "
                           "need not mean the chip is full)", figures)
        figures["sm_active_mean"] = round(sm, 1)
        if sm < SM_ACTIVE_LOW:
            return Verdict("launch-bound", f"GPU busy {gpu.mean:.0f}% of the time but SMs {sm:.0f}% "
                           "active: kernels too small or too few — launch-bound", figures)
        return Verdict("GPU-bound", f"GPU-bound: the GPU is busy {gpu.mean:.0f}% on average with "
                       f"SMs {sm:.0f}% active; the input pipeline keeps it fed", figures)
    if wait is not None and wait.share >= DATA_WAIT_BOUND:
        return Verdict("input-bound", f"{_wait_text(wait, input_name(run))}; the GPU averages {gpu.mean:.0f}%", figures)
    by_phase: dict[str, float] = {}
    for d in gpu.dips:
        by_phase[d.phase] = by_phase.get(d.phase, 0.0) + d.duration
    worst = max(by_phase, key=by_phase.get) if by_phase else None  # type: ignore[arg-type]
    share = by_phase[worst] / gpu.dip_seconds if worst and gpu.dip_seconds else 0.0
    if worst and "validate" in worst and share >= VALIDATION_DIP_SHARE:
        return Verdict("validation-bound", f"validation-bound: the GPU dips {len(gpu.dips)} times, "
                       f"{share:.0%} of the dip time during validation; overlap validation "
                       "with training", figures)
    if cpu.total >= FEED_ALL_CORES:
        return Verdict("input-bound", f"input-bound: the GPU averages {gpu.mean:.0f}% while "
                       f"{cpu.machine:.1f} of {cpu.cores} cores are busy ({cpu.total:.0f}%): the CPU "
                       "cannot feed it", figures)
    if cpu.busiest >= FEED_ONE_CORE and (cpu.workload is None or cpu.workload >= OWN_CORE):
        return Verdict("input-bound", f"input-bound: the GPU averages {gpu.mean:.0f}% while the busiest "
                       f"core averages {cpu.busiest:.0f}% ({cpu.busy_text()}): one core feeds the GPU "
                       "and cannot keep up", figures)
    return Verdict("GPU underused", f"GPU underused: {gpu.mean:.0f}% on average, idle "
                   f"{gpu.idle_fraction:.0%} of the time, and the CPU is not the limit "
                   f"({cpu.busy_text()}, the busiest core {cpu.busiest:.0f}%)", figures)


def _cpu_verdict(cpu: CpuUse, lanes_: LaneUse, figures: dict[str, float]) -> Verdict:
    if cpu.total >= CPU_BOUND:
        by = ""
        if cpu.workload is not None and cpu.machine - cpu.workload >= 0.5:
            by = f", {cpu.workload:.1f} of them by the workload"
        return Verdict("CPU-bound", f"CPU-bound: {cpu.machine:.1f} of {cpu.cores} cores busy "
                       f"({cpu.total:.0f}%) on average{by}: every core is working", figures)
    if cpu.workload is not None and cpu.workload < OWN_CORE and cpu.busiest >= CORE_SATURATED:
        # A saturated core the workload's own processes cannot account for is another program's.
        return Verdict("waiting", f"waiting: the workload keeps {cpu.workload:.1f} of {cpu.cores} cores busy while "
                       f"other programs keep {cpu.machine - cpu.workload:.1f} busy (the busiest core averages "
                       f"{cpu.busiest:.0f}%, not the workload's): the workload mostly waits (I/O, sleep, or a device)",
                       figures)
    pacing = lanes_.pacing
    if pacing is not None and cpu.busiest >= CORE_SATURATED:
        others = [lane for lane in lanes_.busy if lane != pacing]
        beside = list(dict.fromkeys(n for lane in others for n in lanes_.names[lane]))
        return Verdict("lane-bound", f"lane-bound: the {pacing} lane is busy {lanes_.busy[pacing]:.0%} of "
                       f"the time and sets the pace; {', '.join(beside)} runs beside it in {len(others)} "
                       f"more lane{'s' if len(others) > 1 else ''} (two or more lanes at once "
                       f"{lanes_.overlap:.0%} of the time); {cpu.busy_text()} on average", figures)
    if cpu.busiest >= CORE_SATURATED and cpu.used <= SERIAL_CORES and not lanes_.parallel:
        turns = ""
        if len(lanes_.busy) > 1:
            *first, last = lanes_.busy
            turns = f" (its lanes {', '.join(first)} and {last} take turns)"
        return Verdict("single-core-bound", f"single-core-bound: one core does the work (the busiest averages "
                       f"{cpu.busiest:.0f}%; {cpu.busy_text()}): the work is serial{turns}", figures)
    if cpu.busiest >= CORE_SATURATED:
        return Verdict("partly parallel", f"partly parallel: {cpu.busy_text()} on average and the busiest "
                       f"core averages {cpu.busiest:.0f}%: {cpu.cores - cpu.used:.1f} cores are left idle "
                       "(fewer threads or processes than cores, or a serial part holding the rest back)",
                       figures)
    return Verdict("waiting", f"waiting: {cpu.busy_text()} and no core is saturated (the busiest "
                   f"averages {cpu.busiest:.0f}%): the workload mostly waits (I/O, sleep, or a device)",
                   figures)


def _device_rows(found: list[DeviceIdle]) -> list[dict[str, Any]]:
    return [{"device": d.device, "mean": d.mean, "idle_fraction": d.idle_fraction,
             "dips": len(d.dips), "dip_seconds": round(d.dip_seconds, 3),
             "dip_phases": sorted({x.phase for x in d.dips})} for d in found]


@dataclass
class HostFigures:
    """One node of a merged run, judged on its own machine's samples and its own ranks' phases."""

    host: str
    hostname: str | None
    samples: int
    cpu_mean: float | None
    devices: list[DeviceIdle]
    verdict: Verdict


def host_figures(run: Run) -> list[HostFigures]:
    """A merged run's nodes one by one (the nodes' samples interleave in time, so dips and a
    verdict over all of them together would describe no machine). Empty for one node's run."""
    out = []
    for label in run.host_labels:
        node = run.of_host(label)
        s, node_phases = series(node), phases(node)
        out.append(HostFigures(label, node.header.raw.get("host", {}).get("hostname"), len(node.samples),
                               _stats(s.cpu_total)["mean"], device_idle(node, s, node_phases),
                               verdict(node, s, node_phases)))
    return out


def run_judgement(run: Run, s: Series | None = None, all_phases: list[Phase] | None = None
                  ) -> tuple[list[DeviceIdle], Verdict, list[HostFigures]]:
    """The devices and the verdict of a run. For a merged run, each node's: its devices named
    ``node 0: GPU 0 …``, and one verdict joining the nodes' (label ``mixed`` where they differ)."""
    hosts = host_figures(run)
    if not hosts:
        s = series(run) if s is None else s
        all_phases = phases(run) if all_phases is None else all_phases
        return device_idle(run, s, all_phases), verdict(run, s, all_phases), []
    devices = [replace(d, device=f"{h.host}: {d.device}") for h in hosts for d in h.devices]
    labels = {h.verdict.label for h in hosts}
    joined = Verdict(labels.pop() if len(labels) == 1 else "mixed",
                     "; ".join(f"{h.host}: {h.verdict.text}" for h in hosts),
                     {h.host: h.verdict.figures for h in hosts})  # type: ignore[misc]
    return devices, joined, hosts


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def epoch_dict(e: EpochRow, unit_: str = EPOCH_UNIT) -> dict[str, Any]:
    """One epoch as plain data (``report --json``, ``compare --json``): its unit (UNIT_, the
    run's, where its epoch event has not said), seconds, the data wait and its shares (of the
    epoch, and of the training loop: the table's), the metrics as recorded."""
    return {"epoch": e.epoch, "unit": e.unit or unit_, "start": round(e.start, 3), "total": round(e.total, 3),
            "train": round(e.train, 3), "validate": round(e.validate, 3), "other": round(e.other, 3),
            "phase_seconds": {k: round(v, 3) for k, v in e.phases.items()}, "untracked": round(e.untracked, 3),
            "data_wait": _r(e.data_wait), "data_wait_share": _r(e.data_wait_share, 4),
            "data_wait_source": e.data_wait_source, "train_loop": round(e.train_loop, 3),
            "loop_wait_share": _r(e.loop_wait_share, 4), "metrics": e.metrics}


def data_wait_dict(rows: list[EpochRow]) -> dict[str, Any] | None:
    """The run's data wait over all its epochs (``data_wait``), as plain data."""
    wait = data_wait(rows)
    if wait is None:
        return None
    return {"seconds": round(wait.seconds, 3), "train_loop": round(wait.train_loop, 3),
            "share": round(wait.share, 4), "source": wait.source}


def summarize(run: Run) -> dict[str, Any]:
    """Everything ``devicewatch report --json`` prints, as plain data. For a merged run the
    devices and the verdict are each node's (``per_host``); phase utilization is over every
    node's samples together."""
    s = series(run)
    all_phases = phases(run)
    rows = epochs(run, all_phases)
    run_unit = unit(rows)
    devices, v, hosts = run_judgement(run, s, all_phases)
    per_host = [{"host": h.host, "hostname": h.hostname, "samples": h.samples, "cpu_mean": h.cpu_mean,
                 "devices": _device_rows(h.devices),
                 "verdict": {"label": h.verdict.label, "text": h.verdict.text, "figures": h.verdict.figures}}
                for h in hosts]
    return {
        "file": run.path,
        "workload": run.title,
        "command": run.header.raw.get("workload", {}).get("command"),
        "started": run.header.raw.get("started"),
        "duration": round(run.duration, 3),
        "status": run.end.get("status") if run.end else "unknown",
        "status_text": status_text(run),
        "exit_code": run.end.get("exit_code") if run.end else None,
        "ended_abruptly": run.ended_abruptly,
        "instrumentation": instrumentation_text(run),
        "host": run.header.raw.get("host", {}),
        "run_info": run_info(run),
        "gpu": {"available": bool(run.gpu_status and run.gpu_status[0].get("available")),
                "reason": run.gpu_status[0].get("reason") if run.gpu_status else None},
        "samples": len(run.samples),
        "unit": run_unit,
        "epochs": [epoch_dict(e, run_unit) for e in rows],
        "data_wait": data_wait_dict(rows),
        "data_wait_unmeasured": unmeasured_dict(data_wait_unmeasured(run, rows, all_phases)),
        "phases": phase_utilization(run, s, all_phases),
        "devices": _device_rows(devices),
        "lanes": lanes(all_phases),
        "overlap": {k: round(v_, 3) for k, v_ in lane_overlap(all_phases).items()},
        "results": results(run),
        "verdict": {"label": v.label, "text": v.text, "figures": v.figures},
        "gpu_driver_periods": driver_sample_periods(run),
        "hosts": run.host_labels,
        "per_host": per_host,
        "alignment": (run.header.raw.get("alignment") or {}).get("text")
        if isinstance(run.header.raw.get("alignment"), dict) else None,
        "stragglers": straggler_rows(run, all_phases),
        "notices": [n.get("message") for n in run.notices],
        "recorder_cpu_mean": _stats(s.recorder_cpu)["mean"],
    }


# -- what the workload said about itself, and how the run ended ------------------------------

def run_info(run: Run) -> dict[str, Any]:
    """All run_info events merged, later keys winning: framework, device, params, data, …"""
    info: dict[str, Any] = {}
    for event in run.events.of(events.RUN_INFO):
        if event.get("kind") == events.RUN_INFO and isinstance(event.get("info"), dict):
            info.update(event["info"])
    return info


def results(run: Run) -> list[dict[str, Any]]:
    """Each result event as one flat row: its name and its values."""
    return [{"name": e.get("name"), **(e.get("values") if isinstance(e.get("values"), dict) else {})}
            for e in run.events.of(events.RESULT)]


def last_error_line(run: Run) -> str | None:
    """The workload's last line on stderr: a workload that fails says why there."""
    for line in reversed(run.logs):
        if line.get("stream") == "stderr" and str(line.get("line", "")).strip():
            return str(line["line"]).strip()
    return None


def instrumentation_text(run: Run) -> str | None:
    """What the zero-code instrumentation did, in one line (from the header's ``instrument``
    and the end record's): ``active in 2 processes (torch, lightning)``, or why not. None for a
    run recorded before it existed."""
    offered = run.header.raw.get("instrument")
    summary = run.end.get("instrument") if run.end else None
    if not isinstance(summary, dict):
        if not isinstance(offered, dict):
            return None
        return "offered (the run has no end record to say more)" if offered.get("offered") \
            else f"not offered: {offered.get('reason')}"
    if not summary.get("active"):
        return f"not active: {summary.get('reason')}"
    n = summary.get("processes", 0)
    text = f"active in {n} process{'es' * (n != 1)}"
    if summary.get("frameworks"):
        text += f" ({', '.join(map(str, summary['frameworks']))})"
    errors = summary.get("errors")
    if isinstance(errors, list) and errors:
        text += f"; {len(errors)} hook(s) failed and disarmed themselves, first: {errors[0]}"
    if summary.get("left_out"):
        text += f"; {summary['left_out']} of its events over its budget left out"
    return text


def status_text(run: Run) -> str:
    """How the run ended, in words: "ok", "failed (exit code 1)", or the recorder's death."""
    if run.end is None:
        return NO_END_RECORD
    status = str(run.end.get("status", "unknown"))
    if status == "trial":
        return "trial (ended on purpose once its window was measured)"
    if run.end.get("exit_code") not in (0, None):
        status += f" (exit code {run.end['exit_code']})"
    return status


def gpu_label(run: Run, index: int) -> str:
    """The name the header gives GPU ``index``, or "GPU N" where it gives none."""
    names = run.gpu_names
    return names[index] if index < len(names) and names[index] else f"GPU {index}"


# -- GPU depth: GPM activity and the driver's own sampling rate ---------------------------------

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
        measured = status.get("util_period")
        if measured.__class__ is not list:
            continue
        for g, value in enumerate(measured):
            if value.__class__ in (int, float) and value > 0:
                if g >= len(periods):
                    periods += [None] * (g + 1 - len(periods))
                periods[g] = float(value)
    return periods


def driver_rate_text(period: float | None) -> str:
    """One line for the views and the report: how often the driver itself samples utilization."""
    if period is None:
        return "GPU utilization: driver sample period unknown (one-second averages)"
    return f"GPU utilization: driver samples every {period * 1000:.0f} ms"


# -- stragglers: ranks of a merged run waiting for the last one ---------------------------------

@dataclass(frozen=True)
class EpochStragglers:
    """Who finished an epoch last, and how long each other rank waited for it."""

    epoch: int
    last_rank: int
    finished: dict[int, float]   # rank -> time its last phase of the epoch ended (s)
    waited: dict[int, float]     # rank -> seconds between its finish and the last rank's

    @property
    def max_wait(self) -> float:
        return max(self.waited.values(), default=0.0)


def stragglers(run: Run, all_phases: list[Phase] | None = None) -> list[EpochStragglers]:
    """Per epoch with two or more ranks: the rank whose last phase ended last, and the others' wait.

    Phases that never ended (a run cut short) are left out: their end is not a finish; so are
    ``wait`` phases (a rank at a barrier is waiting for the others, not working).
    """
    all_phases = phases(run) if all_phases is None else all_phases
    ends: dict[int, dict[int, float]] = {}
    for p in all_phases:
        rank = p.attrs.get("rank")
        if p.epoch is None or p.open or type(rank) is not int or p.name == WAIT_PHASE:
            continue
        by_rank = ends.setdefault(p.epoch, {})
        by_rank[rank] = max(by_rank.get(rank, p.end), p.end)
    out = []
    for epoch in sorted(ends):
        finished = ends[epoch]
        if len(finished) < 2:
            continue
        last = max(sorted(finished), key=lambda r: finished[r])
        out.append(EpochStragglers(epoch, last, dict(sorted(finished.items())),
                                   {r: round(finished[last] - t, 6) for r, t in sorted(finished.items()) if r != last}))
    return out


def straggler_rows(run: Run, all_phases: list[Phase] | None = None) -> list[dict[str, Any]]:
    """``stragglers`` as plain data (what ``report --json`` prints); ranks as strings, as JSON keys are."""
    return [{"epoch": row.epoch, "last_rank": row.last_rank, "max_wait": round(row.max_wait, 6),
             "waited": {str(r): w for r, w in row.waited.items()}} for row in stragglers(run, all_phases)]
