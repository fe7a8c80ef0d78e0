"""The figures of two recorded runs side by side: no text, no UI.

The figures are pure functions over two ``Run`` objects (``comparison(run_a, run_b)``), so the
text table (``render.compare_text``), the JSON and the dashboard's comparison view all show the
same numbers. Runs that differ (core counts, GPU or none, epoch counts, workloads) still compare;
whatever cannot be compared is said in ``Comparison.notes`` rather than left out silently.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from . import analysis
from .analysis.contention import OTHERS_NOTABLE, cores_figure
from .analysis.utilization import MeanP95, PhaseUtilization
from .beside import Beside
from .runformat.runfile import Run



@dataclass
class Side:
    """Everything one run contributes to a comparison, computed once."""

    label: str                 # "A" or "B"
    run: Run
    duration: float
    cores: int
    gpus: int                  # GPUs with samples in the run
    gpu_names: list[str]
    status: str
    epochs: list[analysis.EpochRow]
    phases: list[analysis.Phase]
    utilization: dict[str, PhaseUtilization]
    devices: list[analysis.DeviceIdle]
    verdict: analysis.Verdict
    run_info: dict[str, Any]
    results: list[dict[str, Any]]
    unmeasured: analysis.Unmeasured | None = None   # its epochs without a data wait, and why
    failure: analysis.Failure | None = None         # why it failed, where it did
    wait: analysis.DataWait | None = None           # its data wait over its epochs (``analysis.data_wait``)

    @property
    def unit(self) -> str:
        """What its epoch rows count: ``epoch``, or ``segment`` for step-based training."""
        return analysis.unit(self.epochs)

    @property
    def epoch_seconds(self) -> float:
        """Time from the first epoch's start to the last epoch's end."""
        return self.epochs[-1].end - self.epochs[0].start if self.epochs else 0.0

    @property
    def phase_seconds(self) -> float:
        """Time from the first phase's start to the last phase's end."""
        if not self.phases:
            return 0.0
        return max(p.end for p in self.phases) - min(p.start for p in self.phases)

    @property
    def idle_device(self) -> analysis.DeviceIdle | None:
        """The device whose idle time the comparison is about: the busiest GPU, else total CPU."""
        if not self.devices:
            return None
        return max(self.devices, key=lambda d: d.mean)

    @property
    def data_wait(self) -> dict[str, Any] | None:
        """The run's data wait over its epochs (``analysis.data_wait_dict``), or None."""
        return analysis.data_wait_dict(self.wait)

    @property
    def command(self) -> str:
        return command_of(self.run)

    @property
    def others(self) -> float | None:
        """Cores other programs kept busy while its phases ran (the verdict's figure), or None
        for a run that did not record its process tree."""
        value = self.verdict.figures.get("others_cores")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def allowed(self) -> float:
        """The cores it may use (all of the machine's unless fewer were allowed)."""
        value = self.verdict.figures.get("allowed_cores")
        return float(value) if isinstance(value, (int, float)) else float(self.cores)

    @property
    def workload_cores(self) -> float | None:
        """Cores its process tree kept busy while its phases ran (the verdict's figure)."""
        value = self.verdict.figures.get("workload_cores")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def waiting_cores(self) -> float | None:
        """Cores' worth of its threads waiting for a core (the verdict's figure), or None."""
        value = self.verdict.figures.get("waiting_cores")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def contended(self) -> bool:
        return self.verdict.label == "contended"

    def others_text(self) -> str:
        """``1.1 of 2 cores``, or ``-`` where not recorded."""
        if self.others is None:
            return "-"
        return f"{self.others:.1f} of {analysis.Cores(self.cores, self.allowed).machine_of()}"


def command_of(run: Run) -> str:
    """How the run's workload was asked for: a registered name and its arguments, else the command."""
    workload = run.header.workload
    if workload.name:
        return " ".join([workload.name, *map(shlex.quote, workload.args)])
    return " ".join(map(shlex.quote, workload.command)) or run.title


def side(run: Run, label: str) -> Side:
    """RUN's side of a comparison, from its figures (``analysis.run_figures``: a merged run's
    devices and verdict each node's)."""
    f = analysis.run_figures(run)
    s = f.series
    return Side(
        label=label, run=run, duration=run.duration, cores=int(s.cpu.shape[1]) or run.cores,
        gpus=s.gpus, gpu_names=[analysis.gpu_label(run, g) for g in range(s.gpus)],
        status=analysis.status_text(run), epochs=f.epoch_rows, phases=f.phases, utilization=f.utilization,
        devices=f.devices, verdict=f.verdict, run_info=analysis.run_info(run), results=analysis.results(run),
        unmeasured=f.unmeasured, failure=f.failure, wait=f.data_wait)


@dataclass
class EpochPair:
    """One epoch number in either run; ``None`` on the side that has no such epoch."""

    epoch: int
    a: analysis.EpochRow | None
    b: analysis.EpochRow | None

    def delta(self, figure: str) -> float | None:
        """B minus A for total, train, validate or other, in seconds."""
        if self.a is None or self.b is None:
            return None
        return getattr(self.b, figure) - getattr(self.a, figure)

    def data_wait_share(self, which: str) -> float | None:
        """Run A's or B's (``which``: "a" or "b") data wait as a share of this epoch."""
        row = getattr(self, which)
        return None if row is None else row.data_wait_share

    def loop_wait_share(self, which: str) -> float | None:
        """Run A's or B's data wait as a share of this epoch's training loop (the table's
        *data wait*, what the verdict judges)."""
        row = getattr(self, which)
        return None if row is None else row.loop_wait_share

    def steps(self, which: str) -> Any:
        """Run A's or B's optimizer steps in this epoch (its ``steps`` metric), or None."""
        row = getattr(self, which)
        return None if row is None else row.metrics.steps

    def change(self, figure: str = "total") -> float | None:
        """(B - A) / A: -0.2 means B took 20% less time."""
        if self.a is None or self.b is None or getattr(self.a, figure) <= 0:
            return None
        return (getattr(self.b, figure) - getattr(self.a, figure)) / getattr(self.a, figure)


@dataclass
class PhasePair:
    """Mean utilization while one phase name is active, in both runs (``None`` where absent)."""

    name: str
    a: PhaseUtilization | None
    b: PhaseUtilization | None

    def _side(self, which: str) -> PhaseUtilization | None:
        side: PhaseUtilization | None = getattr(self, which)
        return side

    @staticmethod
    def _mean(figures: tuple[MeanP95, ...], index: int) -> float | None:
        return figures[index].mean if 0 <= index < len(figures) else None

    def seconds(self, which: str) -> float | None:
        side = self._side(which)
        return None if side is None else side.seconds

    def cpu_total(self, which: str) -> float | None:
        side = self._side(which)
        return None if side is None else side.cpu_total.mean

    def core(self, which: str, index: int) -> float | None:
        side = self._side(which)
        return None if side is None else self._mean(side.cores, index)

    def gpu(self, which: str, index: int) -> float | None:
        side = self._side(which)
        return None if side is None else self._mean(side.gpus, index)


@dataclass
class Comparison:
    a: Side
    b: Side
    # what the speedup measures: "epochs" (or "segments", "epochs and segments"), "phases" or "whole run"
    basis: str
    seconds_a: float
    seconds_b: float
    epochs: list[EpochPair]
    phases: list[PhasePair]
    per_core: bool              # same core count: per-core columns are comparable
    per_gpu: bool               # same GPU count (and at least one): per-GPU columns comparable
    idle_kind: str              # "GPU", "CPU", or "mixed" (one run has a GPU, the other not)
    notes: list[str] = field(default_factory=list)
    headline: str = ""
    # the notes that explain the headline (of ``notes``): shown beside it wherever it is shown
    explains: list[str] = field(default_factory=list)

    @property
    def speedup(self) -> float | None:
        """How many times faster B is than A on ``basis`` (above 1: B is faster)."""
        return self.seconds_a / self.seconds_b if self.seconds_a > 0 and self.seconds_b > 0 else None

    @property
    def change(self) -> float | None:
        """(B - A) / A on ``basis``: -0.21 means B finished 21% sooner."""
        return (self.seconds_b - self.seconds_a) / self.seconds_a if self.seconds_a > 0 else None

    @property
    def units(self) -> str:
        """What the epoch rows count, in words: "epochs", "segments", or "epochs and segments"
        where A's and B's differ."""
        return units_of(self.a, self.b)


def units_of(a: Side, b: Side) -> str:
    """"epochs" or "segments" where A and B count the same, else "epochs and segments"."""
    if a.unit == b.unit:
        return analysis.units_text(a.unit)
    return " and ".join(analysis.units_text(u) for u in sorted({a.unit, b.unit}))


def _basis(a: Side, b: Side) -> tuple[str, float, float]:
    """Compare the epochs (or segments) when both runs have them, else the phases, else the whole run.

    Whole-run time includes starting the interpreter and importing the framework, which can
    hide the difference the experiment is about; the epochs are the part that was changed.
    """
    if a.epochs and b.epochs:
        return units_of(a, b), a.epoch_seconds, b.epoch_seconds
    if a.phases and b.phases:
        return "phases", a.phase_seconds, b.phase_seconds
    return "whole run", a.duration, b.duration


def _notes(a: Side, b: Side, basis: str, explains: list[str]) -> list[str]:
    notes = []
    by_units = bool(a.epochs and b.epochs)   # the basis is the epochs (or segments)
    name_a, name_b = a.run.header.workload.name, b.run.header.workload.name
    if name_a != name_b:
        notes.append(f"different workloads: A runs {a.run.title}, B runs {b.run.title}")
    host_a, host_b = a.run.header.host, b.run.header.host
    if host_a.hostname != host_b.hostname or host_a.cpu_model != host_b.cpu_model:
        notes.append(f"recorded on different machines: A on {host_a.hostname or '?'} "
                     f"({host_a.cpu_model or '?'}), B on {host_b.hostname or '?'} "
                     f"({host_b.cpu_model or '?'})")
    if a.cores != b.cores:
        notes.append(f"A has {a.cores} cores, B has {b.cores}: per-core columns omitted")
    if a.gpus != b.gpus:
        if not a.gpus or not b.gpus:
            with_gpu, without = (a, b) if a.gpus else (b, a)
            notes.append(f"{without.label} has no GPU samples, {with_gpu.label} has {with_gpu.gpus}: "
                         f"GPU columns show {with_gpu.label} only, and idle time is {with_gpu.label}'s "
                         f"GPU against {without.label}'s total CPU (not the same device)")
        else:
            notes.append(f"A has {a.gpus} GPUs, B has {b.gpus}: per-GPU columns omitted; "
                         "idle time compares the busiest GPU of each")
    elif not a.gpus:
        notes.append("no GPU in either run: idle time and dips are for total CPU, not a GPU")
    if a.epochs and b.epochs and a.unit != b.unit:
        notes.append(f"A counts {analysis.units_text(a.unit)}, B counts {analysis.units_text(b.unit)} "
                     "(a segment is the training between two evaluations of a loop without epochs): "
                     f"the table pairs {a.unit} n of A with {b.unit} n of B, which are not the same work")
    if len(a.epochs) != len(b.epochs):
        if a.unit == b.unit:
            notes.append(f"A has {len(a.epochs)} {analysis.units_text(a.unit)}, B has {len(b.epochs)}: "
                         f"the {a.unit} table pairs them by number, and total times cover different work")
        else:
            notes.append(f"A has {analysis.units_text(a.unit, len(a.epochs))}, B has "
                         f"{analysis.units_text(b.unit, len(b.epochs))}: total times cover different work")
    elif not by_units:
        notes.append(f"no epochs in {'either run' if not a.epochs and not b.epochs else 'one run'}: "
                     f"the speedup compares {'the span of the phases' if basis == 'phases' else 'whole runs, startup included'}")
    notes += explains   # overlapped epochs: the table and the headline read differently
    # Why a run failed comes first: what the comparison says of it is said of a run cut short.
    notes[:0] = [s.failure.of(s.label) for s in (a, b) if s.failure is not None]
    for s in (a, b):
        if s.failure is None and s.status != "ok" and not (s.run.end and s.run.end.status == "trial"):
            notes.append(f"{s.label} did not finish normally: {s.status}")
        if len(s.run.samples) < 2:
            notes.append(f"{s.label} has {len(s.run.samples)} samples: too few for utilization figures")
    interval_a, interval_b = a.run.header.interval, b.run.header.interval
    if interval_a != interval_b:
        notes.append(f"sampled at different intervals ({interval_a}s and {interval_b}s)")
    return notes


# B within this share of A's time took as long: the headline's "as long", and the load's "neither
# was the slower".
AS_LONG = 0.005
# Epoch totals that add up to this many times their span or more overlap (a note says so).
OVERLAP = 1.05
# What the headline says B did, by ``direction``: every note that speaks of it says the same.
DID = {"sooner": "finished sooner", "longer": "took longer", "as long": "took as long"}


def direction(seconds_a: float, seconds_b: float) -> str | None:
    """How B's SECONDS_B stand to A's SECONDS_A: "sooner", "longer" or "as long" (within
    ``AS_LONG``); None where either has no time."""
    if seconds_a <= 0 or seconds_b <= 0:
        return None
    change = (seconds_b - seconds_a) / seconds_a
    if abs(change) < AS_LONG:
        return "as long"
    return "sooner" if change < 0 else "longer"


def overlap_note(label: str, unit: str, summed: float, span: float) -> str | None:
    """Where a run's UNIT totals add up to more than their SPAN (part of one runs beside the
    next): the note that says so, else None."""
    if not summed > OVERLAP * span > 0:
        return None
    return (f"{label}'s {unit}s overlap (part of one {unit} runs beside the next): its {unit} totals add up "
            f"to {summed:.1f}s but span {span:.1f}s")


def reading_clause(unit: str, summed_a: float, summed_b: float, span_a: float, span_b: float) -> str | None:
    """Where the table's UNIT totals (summed) point one way and the headline's spans the other
    (overlapped epochs: each longer, the run shorter), the words that say both; None where
    they agree. The headline's word is ``direction`` of the spans, as the headline picks it."""
    way, table = direction(span_a, span_b), direction(summed_a, summed_b)
    if way is None or table is None or way == table:
        return None
    more = {"longer": "more than", "sooner": "less than", "as long": "as much as"}[table]
    return (f"the headline times the span from the first {unit}'s start to the last's end: B's {unit} "
            f"totals add up to {more} A's ({summed_b:.1f}s vs {summed_a:.1f}s) while over the span "
            f"B {DID[way]}")


def overlap_notes(a: Side, b: Side) -> list[str]:
    """Each run whose epochs overlap, said; the last note also says how the table's epochs
    and the headline's span read where they point different ways."""
    summed = {s.label: sum(e.total for e in s.epochs) for s in (a, b)}
    notes = [note for s in (a, b) if (note := overlap_note(s.label, s.unit, summed[s.label], s.epoch_seconds))]
    clause = reading_clause(a.unit if a.unit == b.unit else f"{a.unit}/{b.unit}", summed["A"], summed["B"],
                            a.epoch_seconds, b.epoch_seconds)
    if notes and clause:
        notes[-1] += f"; {clause}"
    return notes


def _pct(fraction: float) -> str:
    return f"{abs(fraction) * 100:.0f}%"


def _duration(seconds: float, scale: float | None = None) -> str:
    """Seconds with a precision that suits ``scale`` (the larger of two figures shown together)."""
    scale = seconds if scale is None else scale
    return f"{seconds:.2f}s" if scale < 10 else f"{seconds:.1f}s" if scale < 600 else f"{seconds / 60:.1f} min"


# When other programs' load may explain a difference between two runs; every test in figures.
# The load moved: what they took differs by at least a quarter of a core and a tenth of the cores
# the runs may use (a busy laptop's background moves by less than that between two runs by
# itself). And it matters: the cores it took from the busier run could have cost that run at
# least half the time between A and B, and at least a twentieth of its own time (a few percent
# is what two runs of one script differ by on a quiet machine).
LOAD_MOVED_CORES = 0.25
LOAD_MOVED_SHARE = 0.1
LOAD_EXPLAINS = 0.5
LOAD_COST_FLOOR = 0.05


@dataclass(frozen=True)
class LoadGap:
    """Other programs took the cores unequally in A and B: what each took, of how many cores,
    and what the difference could have cost the busier run."""

    others_a: float
    others_b: float
    cores_a: float             # the cores each run may use
    cores_b: float
    seconds_a: float
    seconds_b: float
    could_cost: float          # the share of the busier run's time its extra load could have taken
    machine: int | None = None  # the machine's cores, which other programs' are counted of (None: not known)

    @property
    def cores(self) -> float:
        return max(self.cores_a, self.cores_b)

    @property
    def busier(self) -> str:
        return "B" if self.others_b > self.others_a else "A"

    @property
    def slower(self) -> str | None:
        """The run that took longer, None where they took as long (within half a percent)."""
        way = direction(self.seconds_a, self.seconds_b)
        return None if way in (None, "as long") else "B" if way == "longer" else "A"

    @property
    def matters(self) -> bool:
        """The time the extra load could have cost the busier run is at least LOAD_EXPLAINS of
        the difference between A and B, and LOAD_COST_FLOOR of the busier run's own time."""
        busier_seconds = self.seconds_b if self.busier == "B" else self.seconds_a
        could = self.could_cost * busier_seconds
        return (self.could_cost >= LOAD_COST_FLOOR
                and could >= LOAD_EXPLAINS * abs(self.seconds_b - self.seconds_a))

    def line(self) -> str | None:
        """One line where it matters: the busier run is the slower, so the difference may be
        the other programs'; or the faster, so the change may gain more on a quiet machine."""
        if not self.matters:
            return None
        of = (cores_figure(self.cores_a) if cores_figure(self.cores_a) == cores_figure(self.cores_b)
              else f"{cores_figure(self.cores_a)} and {cores_figure(self.cores_b)}")
        if self.machine is not None and self.machine > self.cores + 1e-6:
            of = f"the machine's {self.machine}"   # they run on every core, not on those the runs may use
        took = f"other programs took {self.others_a:.1f} cores in A and {self.others_b:.1f} in B (of {of})"
        if self.slower == self.busier:
            return f"{took}: the difference may be theirs, not the change's"
        if self.slower is None:
            return f"{took}: {self.busier} ran beside more of them and may be faster on a quiet machine"
        return (f"{took}: {self.busier} ran beside more of them and still finished sooner: on a quiet machine "
                "the difference may be larger")

    def to_json(self) -> dict[str, Any]:
        return {"others_cores": {"a": round(self.others_a, 2), "b": round(self.others_b, 2)},
                "of_cores": {"a": round(self.cores_a, 2), "b": round(self.cores_b, 2)}, "busier": self.busier,
                "could_cost": round(self.could_cost, 3), "matters": self.matters, "line": self.line()}


def load_gap(others_a: float | None, others_b: float | None, cores: float | tuple[float, float],
             seconds_a: float, seconds_b: float, busier_workload: float | None = None,
             busier_waiting: float | None = None, machine: int | None = None) -> LoadGap | None:
    """The load of other programs in A and B, of CORES (A's and B's where they differ), where it
    moved (``LOAD_MOVED_*``, against the larger), else None (a quiet pair, or a run that did not
    record its process tree). The busier run could have had at
    most the extra cores they took, and no more than its threads waited for (BUSIER_WAITING,
    where measured); with them its BUSIER_WORKLOAD cores would have done the same work in
    workload / (workload + extra) of the time: an upper bound, as not all work spreads."""
    if others_a is None or others_b is None:
        return None
    cores_a, cores_b = cores if isinstance(cores, tuple) else (cores, cores)
    extra = abs(others_b - others_a)
    if extra < max(LOAD_MOVED_CORES, LOAD_MOVED_SHARE * max(cores_a, cores_b)):
        return None
    could_have = extra if busier_waiting is None else min(extra, busier_waiting)
    got = busier_workload or 0.0
    could_cost = could_have / (got + could_have) if could_have > 0 else 0.0
    return LoadGap(others_a, others_b, cores_a, cores_b, seconds_a, seconds_b, could_cost, machine)


def comparison_load(c: Comparison) -> LoadGap | None:
    """The comparison's ``load_gap``: A's and B's other programs over the phases the verdicts
    judge, against the time of the comparison's basis."""
    busier = c.b if (c.b.others or 0.0) > (c.a.others or 0.0) else c.a
    return load_gap(c.a.others, c.b.others, (c.a.allowed, c.b.allowed), c.seconds_a, c.seconds_b,
                    busier.workload_cores, busier.waiting_cores, c.a.cores if c.a.cores == c.b.cores else None)


def load_note(c: Comparison) -> str | None:
    """The headline's line on the load of other programs, None for a pair where it did not
    move or could not explain the difference."""
    gap = comparison_load(c)
    return None if gap is None else gap.line()


def load_lines(c: Comparison) -> list[str]:
    """What was taking the cores, said beside the notes even where A and B were alike: what
    other programs took where either run's was enough to matter (``OTHERS_NOTABLE``), and each
    contended run, whose gain from running work side by side needs a core left free."""
    lines = []
    if any(s.others is not None and s.others >= OTHERS_NOTABLE for s in (c.a, c.b)):
        known = [s for s in (c.a, c.b) if s.others is not None]
        # "1.1 of 2 cores during A and 0.3 during B": the cores said once where they are alike
        alike = len({s.others_text().partition(" of ")[2] for s in known}) == 1
        each = [f"{s.others:.1f}" if i and alike else s.others_text() for i, s in enumerate(known)]
        lines.append("other programs took " + " and ".join(f"{t} during {s.label}" for t, s in zip(each, known)))
    for s in (c.a, c.b):
        if s.contended:
            waited = f" ({s.waiting_cores:.1f} cores' worth)" if s.waiting_cores is not None else ""
            lines.append(f"{s.label} was contended: its threads waited for a core{waited}, so what it gains "
                         "by running work side by side needs a free core")
    return lines


def verdict_change(c: Comparison) -> str:
    """What became of the verdict: "A: single-core-bound → B: lane-bound", or "both CPU-bound"."""
    a, b = c.a.verdict.label, c.b.verdict.label
    return f"both {a}" if a == b else f"A: {a} → B: {b}"


def timing(seconds_a: float, seconds_b: float, basis: str) -> str:
    """The headline's first words: how B's time on BASIS stood to A's, by ``direction``."""
    way = direction(seconds_a, seconds_b)
    if way is None:
        first = "the runs cannot be timed against each other (one has no duration)"
    elif way == "as long":
        first = f"B took as long as A ({_duration(seconds_a)})"
    else:
        scale = max(seconds_a, seconds_b)
        both = f"{_duration(seconds_b, scale)} vs {_duration(seconds_a, scale)}"
        change = (seconds_b - seconds_a) / seconds_a
        if way == "sooner":
            first = f"B finished {_pct(change)} sooner ({both}, {seconds_a / seconds_b:.2f}x as fast)"
        else:
            first = f"B took {_pct(change)} longer ({both})"
    return first if basis == "whole run" else f"{first} over the {basis}"


def headline(c: Comparison) -> str:
    """One sentence in plain words: who finished sooner, what happened to idle time, and to
    the verdict. A side that failed is said first: its time is a run cut short, not a result."""
    failed = [s.failure.of(s.label) for s in (c.a, c.b) if s.failure is not None]
    if failed:
        return "the runs are not timed against each other, as " + " and ".join(failed)
    first = timing(c.seconds_a, c.seconds_b, c.basis)
    da, db = c.a.idle_device, c.b.idle_device
    if da is None or db is None:
        return f"{first}; {verdict_change(c)}"
    if c.idle_kind == "GPU":
        ia, ib = da.idle_fraction, db.idle_fraction
        if round(ia * 100) == round(ib * 100):
            second = f"GPU idle stayed at {_pct(ia)} of the time"
        else:
            second = f"GPU idle {'fell' if ib < ia else 'rose'} from {_pct(ia)} to {_pct(ib)} of the time"
    elif c.idle_kind == "CPU":
        second = f"the CPU averaged {da.mean:.0f}% in A and {db.mean:.0f}% in B"
    else:
        gpu_side = c.a if c.a.gpus else c.b
        device = gpu_side.idle_device
        second = f"{gpu_side.label}'s GPU was idle {_pct(device.idle_fraction)} of the time" if device else ""
    return "; ".join(part for part in (first, second, verdict_change(c)) if part)


def comparison(run_a: Run, run_b: Run) -> Comparison:
    """All the figures of ``devicewatch compare``, for the text table, the JSON and the dashboard."""
    # B's side in a thread beside A's: most of the work is NumPy, which lets go of the GIL, so two
    # day-long runs take little more than one on two cores.
    pending_b = Beside(side, run_b, "B", name="devicewatch-compare")
    a = side(run_a, "A")
    b = pending_b.result()
    basis, seconds_a, seconds_b = _basis(a, b)
    by_a = {row.epoch: row for row in a.epochs}
    by_b = {row.epoch: row for row in b.epochs}
    epoch_pairs = [EpochPair(n, by_a.get(n), by_b.get(n)) for n in sorted(set(by_a) | set(by_b))]
    names = list(a.utilization) + [n for n in b.utilization if n not in a.utilization]
    if analysis.NO_PHASE in names:  # the remainder goes last
        names.remove(analysis.NO_PHASE)
        names.append(analysis.NO_PHASE)
    phase_pairs = [PhasePair(n, a.utilization.get(n), b.utilization.get(n)) for n in names]
    explains = overlap_notes(a, b) if a.epochs and b.epochs else []
    if a.gpus and b.gpus:
        idle_kind = "GPU"
    elif not a.gpus and not b.gpus:
        idle_kind = "CPU"
    else:
        idle_kind = "mixed"
    c = Comparison(a, b, basis, seconds_a, seconds_b, epoch_pairs, phase_pairs,
                   per_core=a.cores == b.cores, per_gpu=a.gpus == b.gpus and a.gpus > 0,
                   idle_kind=idle_kind, notes=_notes(a, b, basis, explains), explains=explains)
    c.headline = headline(c)
    note = load_note(c)
    if note:
        c.headline += f"\n{note}"   # one more line: the sentence above stays whole
    return c


# -- JSON -----------------------------------------------------------------------------------

def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _epoch_dict(row: analysis.EpochRow | None, unit: str) -> dict[str, Any] | None:
    if row is None:
        return None
    out = analysis.epoch_dict(row, unit)
    del out["epoch"]  # the pair's key
    return out


def _device_dict(d: analysis.DeviceIdle | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"device": d.device, "mean": d.mean, "idle_fraction": d.idle_fraction, "dips": len(d.dips),
            "dip_seconds": _r(d.dip_seconds), "dip_phases": sorted({x.phase for x in d.dips})}


def _side_dict(s: Side) -> dict[str, Any]:
    return {
        "file": s.run.path, "workload": s.run.title, "command": s.command, "status": s.status,
        "failure": s.failure.to_json() if s.failure is not None else None,
        "duration": _r(s.duration), "epoch_seconds": _r(s.epoch_seconds), "phase_seconds": _r(s.phase_seconds),
        "cores": s.cores, "gpus": s.gpu_names, "run_info": s.run_info,
        "idle": _device_dict(s.idle_device), "devices": [_device_dict(d) for d in s.devices],
        "verdict": {"label": s.verdict.label, "text": s.verdict.text, "figures": s.verdict.figures},
        "others_cores": _r(s.others, 2),
        "unit": s.unit,
        "data_wait": s.data_wait,
        "data_wait_unmeasured": analysis.unmeasured_dict(s.unmeasured),
        "results": s.results,
    }


def to_dict(c: Comparison) -> dict[str, Any]:
    """What ``devicewatch compare --json`` prints. Times in seconds; deltas are B minus A."""
    return {
        "headline": c.headline,
        "verdicts": {"a": c.a.verdict.label, "b": c.b.verdict.label},
        "basis": c.basis,
        "seconds": {"a": _r(c.seconds_a), "b": _r(c.seconds_b)},
        "speedup": _r(c.speedup), "change": _r(c.change, 4),
        "notes": c.notes, "explains": c.explains,
        "load_differs": load_note(c) is not None,
        "load": None if (gap := comparison_load(c)) is None else gap.to_json(),
        "load_lines": load_lines(c),
        "a": _side_dict(c.a), "b": _side_dict(c.b),
        "units": {"a": c.a.unit, "b": c.b.unit},
        "epochs": [{"epoch": p.epoch, "a": _epoch_dict(p.a, c.a.unit), "b": _epoch_dict(p.b, c.b.unit),
                    "delta": {f: _r(p.delta(f)) for f in ("total", "train", "validate", "other")},
                    "data_wait_share": {w: _r(p.data_wait_share(w), 4) for w in "ab"},
                    "loop_wait_share": {w: _r(p.loop_wait_share(w), 4) for w in "ab"},
                    "change": _r(p.change(), 4)} for p in c.epochs],
        "phases": [{"phase": p.name, "a": None if p.a is None else p.a.to_json(),
                    "b": None if p.b is None else p.b.to_json()} for p in c.phases],
        "per_core_comparable": c.per_core, "per_gpu_comparable": c.per_gpu, "idle_kind": c.idle_kind,
    }
