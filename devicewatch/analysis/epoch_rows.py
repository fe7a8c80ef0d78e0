"""Epochs: each epoch's seconds by phase, its training loop and data wait (``EpochRow``), the
run's data wait, and why it was not measured where it was not (a merged run's stragglers:
``stragglers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Iterable

from ..loop_figures import DATA_WAIT_FIGURE, WORKINGS
from ..runformat.records import EpochMetrics
from ..runformat.runfile import Run
from .pairing import AUTO_SOURCE, STDOUT_SOURCE, Phase, union_length

# The per-epoch metric with the exact seconds the training loop was blocked in its DataLoader
# (the zero-code instrumentation sends it; its visible waits are also ``data`` phases).
DATA_WAIT_METRIC = DATA_WAIT_FIGURE


# What an ``epoch`` event's unit is (its ``unit`` field): a pass over the data, or a segment, the
# training between two evaluations of a step-based loop (no epochs); absent means an epoch.
EPOCH_UNIT, SEGMENT_UNIT = "epoch", "segment"


# The loaders whose waits the zero-code instrumentation measures (docs/zero-code.md).
MEASURED_LOADERS = "DataLoader or tf.data dataset"


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
    ``partial``: the epoch never ended: a phase of it is still open (the run ended inside it,
    failed, cancelled or ended on purpose; or, while it records, the epoch is the one now), or
    the run's end closed it (``cut_by_end``). Its seconds are those up to the end.
    """

    epoch: int
    start: float
    end: float
    train: float
    validate: float
    other: float
    metrics: EpochMetrics
    # Seconds in each named phase (data, train, copy, validate, …; lanes merged), in the order
    # the phases first appear: what the lanes draw, counted the same way.
    phases: dict[str, float] = field(default_factory=dict)
    data_wait: float | None = None
    data_wait_source: str | None = None   # "metric" (data_wait_s) or "phases" (data phases)
    train_loop: float = 0.0
    covered: float | None = None          # seconds in any phase (lanes merged)
    unit: str | None = None               # "epoch" or "segment" as its epoch event says; None: no event yet
    partial: bool = False                 # it never ended (see above)

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


def _epoch_row(epoch: int, members: list[Phase], metrics: EpochMetrics, unit: str | None = None) -> EpochRow:
    start = min(p.start for p in members)
    end = max(p.end for p in members)
    owned = _owned_spans(members)
    named: dict[str, list[tuple[float, float]]] = {}
    for p in sorted(members, key=lambda p: p.start):
        named.setdefault(p.name, [])
    for p, a, b in owned:
        named[p.name].append((a, b))
    train = union_length([(a, b) for p, a, b in owned if p.kind == "train"])
    validate = union_length([(a, b) for p, a, b in owned if p.kind == "validate"])
    busy = union_length([(a, b) for p, a, b in owned if p.kind in ("train", "validate")])
    # The training loop: the lanes that train, their train phases, and the data phases in them.
    loop_lanes = {p.lane for p in members if p.kind == "train"}
    waits = [(a, b) for p, a, b in owned if p.kind == "data" and p.lane in loop_lanes]
    loop = union_length([(p.start, p.end) for p in members if p.kind == "train"] + waits)
    measured = metrics.data_wait_s
    if isinstance(measured, (int, float)) and type(measured) is not bool and 0 <= measured < float("inf"):
        data_wait, source = float(measured), "metric"
    elif any(p.kind == "data" and p.lane in loop_lanes for p in members):
        data_wait, source = union_length(waits), "phases"
    else:
        data_wait, source = None, None
    return EpochRow(epoch, start, end, train, validate, max(0.0, (end - start) - busy), metrics,
                    {name: union_length(spans) for name, spans in named.items()},
                    data_wait, source, loop, union_length([(p.start, p.end) for p in members]), unit,
                    any(p.open for p in members))


def epochs(run: Run, all_phases: list[Phase]) -> list[EpochRow]:
    """One row per epoch of ALL_PHASES (RUN's, ``phases``): its span, the seconds of its phases
    (see ``EpochRow``), its metrics."""
    by_epoch: dict[int, list[Phase]] = {}
    for p in all_phases:
        if p.epoch is not None:
            by_epoch.setdefault(p.epoch, []).append(p)
    metrics: dict[int, EpochMetrics] = {}
    units: dict[int, str] = {}
    for event in run.epoch_events:
        had = metrics.get(event.epoch)
        metrics[event.epoch] = event.metrics if had is None else had.then(event.metrics)
        units[event.epoch] = SEGMENT_UNIT if event.unit == SEGMENT_UNIT else EPOCH_UNIT
    return cut_by_end(run, [_epoch_row(epoch, by_epoch[epoch], metrics.get(epoch, NO_METRICS), units.get(epoch))
                            for epoch in sorted(by_epoch)])


# An epoch without an epoch event (yet): no metrics.
NO_METRICS = EpochMetrics(None, {})


# How close to the run's end an epoch's last phase may end and still be one the end closed.
END_SLACK = 0.5


def cut_by_end(run: Run, rows: list[EpochRow]) -> list[EpochRow]:
    """ROWS, the last marked partial where the run's end cut it short: a run that did not
    finish on its own (failed, cancelled, a trial ended on purpose) whose last epoch ends
    with the run (within ``END_SLACK``) and has no epoch event to say it was done. Epochs
    printed on the workload's output are closed by the recorder when the run ends, whatever
    ended it: their phase is no longer open, but the epoch was cut all the same."""
    if run.end is None or run.end.status == "ok" or not rows:
        return rows
    last = max(rows, key=lambda r: r.end)
    if last.partial or last.unit is not None or last.end < run.duration - END_SLACK:
        return rows
    return [replace(r, partial=True) if r is last else r for r in rows]


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


# What the zero-code loop measures in each unit for the verdict and the advice, which say it in
# words ("waited on its queue 95% of the time", "a worker made a batch in 20 ms"): beside the
# table's data wait, a second wait in raw seconds would be two data figures on one row. They
# stay in ``report --json`` and ``export``. The loop's ``UnitFigures`` declares which they are.
LOOP_WORKINGS = frozenset(WORKINGS)


def repeated_metrics(phase_names: Iterable[str], metric_names: Iterable[str]) -> set[str]:
    """The metrics an epoch table does not show as the workload's own: a phase's seconds
    (``train_s`` beside a ``train`` phase) and the data wait, which it shows in its own
    columns, and the loop's workings, which the verdict and the advice say."""
    phases_ = set(phase_names)
    return {m for m in metric_names
            if m == DATA_WAIT_METRIC or m in LOOP_WORKINGS or (m.endswith("_s") and m[:-2] in phases_)}


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


def data_wait_unmeasured(run: Run, rows: list[EpochRow], all_phases: list[Phase]) -> Unmeasured | None:
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
    sources = {p.attrs.get("source") for p in all_phases}
    summary = run.end.instrument if run.end else None
    if sources - {AUTO_SOURCE, STDOUT_SOURCE}:
        reason = "the workload sends its own phases and reports no data wait"
    elif AUTO_SOURCE in sources or (summary is not None and summary.get("active")):
        reason = f"the training loop read no {MEASURED_LOADERS}"
    else:
        reason = _not_instrumented(run, summary)
    return Unmeasured(unit(rows), missing, len(said), reason)


def _not_instrumented(run: Run, summary: dict[str, Any] | None) -> str:
    """Why the zero-code instrumentation measured nothing, from the end record, else the header."""
    offered = run.header.instrument
    if summary is not None:
        return f"zero-code instrumentation not active ({summary.get('reason') or 'no reason recorded'})"
    if offered is not None and not offered.offered:
        return f"zero-code instrumentation not offered ({offered.reason or 'no reason recorded'})"
    if offered is not None:
        return ("zero-code instrumentation offered, but none of its phases came "
                "and the run has no end record to say why")
    return "the run was recorded without zero-code instrumentation"


def phase_names(rows: list[EpochRow]) -> list[str]:
    """Every phase name of the epochs, in the order they first appear."""
    seen: dict[str, None] = {}
    for row in rows:
        for name in row.phases:
            seen.setdefault(name, None)
    return list(seen)
