"""Everything ``devicewatch report`` shows of a run's figures (``figures.RunFigures``, made
once), as printed: a typed, frozen ``Summary`` (``Summary.of``), whose attributes the report
reads and whose ``to_json()`` is ``report --json``. Figures are rounded here, once; nothing is
computed here that the figures do not hold.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..runformat.records import EpochMetrics
from .epoch_rows import EPOCH_UNIT, DataWait, EpochRow, Unmeasured
from .figures import RunFigures
from .idle import DeviceIdle
from .pairing import lane_overlap, lanes
from .stragglers import EpochStragglers
from .stragglers import text as straggler_text
from .utilization import PhaseUtilization, driver_sample_periods, stats
from .verdicts import Verdict
from .wording import Failure, instrumentation_text, results, run_info, status_text


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _plain(value: Any) -> Any:
    """A figure as JSON data: a typed part by its ``to_json``, containers element by element."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class _Figures:
    """``to_json``: the fields that are figures, in their order (what ``--json`` prints)."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.metadata.get("json", True)}  # type: ignore[arg-type]  # a dataclass's mix-in


@dataclass(frozen=True)
class EpochFigures(_Figures):
    """One epoch (or segment) as printed: seconds, the data wait and its shares (of the epoch,
    and of the training loop: the table's), the metrics as recorded: the figures devicewatch
    measured, a field each, and the workload's own by name (``EpochMetrics``)."""

    epoch: int
    unit: str
    start: float
    total: float
    train: float
    validate: float
    other: float
    phase_seconds: dict[str, float]
    untracked: float
    data_wait: float | None
    data_wait_share: float | None
    data_wait_source: str | None
    train_loop: float
    loop_wait_share: float | None
    metrics: EpochMetrics
    partial: bool   # it never ended: the run ended inside it (``EpochRow.partial``)

    @classmethod
    def of(cls, e: EpochRow, unit_: str = EPOCH_UNIT) -> EpochFigures:
        """E rounded; its unit is UNIT_ (the run's) where its epoch event has not said."""
        return cls(e.epoch, e.unit or unit_, round(e.start, 3), round(e.total, 3), round(e.train, 3),
                   round(e.validate, 3), round(e.other, 3), {k: round(v, 3) for k, v in e.phases.items()},
                   round(e.untracked, 3), _r(e.data_wait), _r(e.data_wait_share, 4), e.data_wait_source,
                   round(e.train_loop, 3), _r(e.loop_wait_share, 4), e.metrics, e.partial)


@dataclass(frozen=True)
class DataWaitFigures(_Figures):
    """The run's data wait over all its epochs (``data_wait``)."""

    seconds: float
    train_loop: float
    share: float
    source: str

    @classmethod
    def of(cls, wait: DataWait) -> DataWaitFigures:
        return cls(round(wait.seconds, 3), round(wait.train_loop, 3), round(wait.share, 4), wait.source)


@dataclass(frozen=True)
class UnmeasuredFigures(_Figures):
    """Why the data wait was not measured (``data_wait_unmeasured``), with the line that says it."""

    unit: str
    rows: Any
    reason: str
    text: str

    @classmethod
    def of(cls, found: Unmeasured) -> UnmeasuredFigures:
        return cls(found.unit, found.numbers, found.reason, found.text)


@dataclass(frozen=True)
class DeviceFigures(_Figures):
    """One device's mean, idle share and dips (below ``DIP_THRESHOLD``), and the phases they fall in."""

    device: str
    mean: float
    idle_fraction: float
    dips: int
    dip_seconds: float
    dip_phases: list[str]

    @classmethod
    def of(cls, d: DeviceIdle) -> DeviceFigures:
        return cls(d.device, d.mean, d.idle_fraction, len(d.dips), round(d.dip_seconds, 3),
                   sorted({x.phase for x in d.dips}))


@dataclass(frozen=True)
class VerdictFigures(_Figures):
    """The verdict as printed."""

    label: str
    text: str
    figures: dict[str, Any]

    @classmethod
    def of(cls, v: Verdict) -> VerdictFigures:
        return cls(v.label, v.text, v.figures)


@dataclass(frozen=True)
class HostSummary(_Figures):
    """One node of a merged run, on its own machine's samples and its own ranks' phases."""

    host: str
    hostname: str | None
    samples: int
    cpu_mean: float | None
    devices: list[DeviceFigures]
    verdict: VerdictFigures


@dataclass(frozen=True)
class StragglerFigures(_Figures):
    """Whose work ended an epoch of a merged run last (``stragglers``), whether the others'
    wait is a finding (at or above the epoch's noise floor), where the straggler lost its time,
    and the line that says it; ranks as strings, as JSON keys are."""

    epoch: int
    last_rank: int
    max_wait: float
    waited: dict[str, float]
    length: float
    noise_floor: float
    finding: bool
    lost_in: str | None
    phase_excess: float
    text: str

    @classmethod
    def of(cls, row: EpochStragglers, unit_: str = EPOCH_UNIT) -> StragglerFigures:
        return cls(row.epoch, row.last_rank, round(row.max_wait, 6), {str(r): w for r, w in row.waited.items()},
                   row.length, round(row.noise_floor, 6), row.finding, row.lost_in, row.phase_excess,
                   straggler_text(row, unit_))


@dataclass(frozen=True)
class GpuState(_Figures):
    """Whether the GPUs could be read, and why not."""

    available: bool
    reason: str | None


@dataclass(frozen=True)
class Summary(_Figures):
    """Everything ``devicewatch report`` shows of a run. For a merged run the devices and the
    verdict are each node's (``per_host``); phase utilization is over every node's samples
    together. ``phases`` maps each phase name to its utilization entry (``phase_utilization``:
    seconds, CPU total, each core and each GPU, mean and p95), as printed."""

    file: str
    workload: str
    command: Any
    started: Any
    duration: float
    status: str | None      # the end record's, "unknown" without one
    status_text: str
    failure: Failure | None   # why it failed, where it did (``wording.failure``)
    exit_code: int | None
    ended_abruptly: bool
    instrumentation: str | None
    host: dict[str, Any]
    run_info: dict[str, Any]
    gpu: GpuState
    samples: int
    unit: str
    epochs: list[EpochFigures]
    data_wait: DataWaitFigures | None
    data_wait_unmeasured: UnmeasuredFigures | None
    phases: dict[str, PhaseUtilization]
    devices: list[DeviceFigures]
    lanes: list[str]
    overlap: dict[str, float]
    results: list[dict[str, Any]]
    verdict: VerdictFigures
    gpu_driver_periods: list[float | None]
    hosts: list[str]
    per_host: list[HostSummary]
    alignment: str | None
    stragglers: list[StragglerFigures]
    notices: list[Any]
    recorder_cpu_mean: float | None

    @classmethod
    def of(cls, f: RunFigures) -> Summary:
        """F as ``devicewatch report`` prints it (``to_json()``: ``--json``)."""
        run = f.run
        alignment = run.header.alignment
        return cls(
            file=run.path,
            workload=run.title,
            command=list(run.header.workload.command) or None,
            started=run.header.started,
            duration=round(run.duration, 3),
            status=run.end.status if run.end else "unknown",
            status_text=status_text(run),
            failure=f.failure,
            exit_code=run.end.exit_code if run.end else None,
            ended_abruptly=run.ended_abruptly,
            instrumentation=instrumentation_text(run),
            host=run.header.host.to_json(),
            run_info=run_info(run),
            gpu=GpuState(bool(run.gpu_status and run.gpu_status[0].available),
                         run.gpu_status[0].reason if run.gpu_status else None),
            samples=len(run.samples),
            unit=f.unit,
            epochs=[EpochFigures.of(e, f.unit) for e in f.epoch_rows],
            data_wait=None if f.data_wait is None else DataWaitFigures.of(f.data_wait),
            data_wait_unmeasured=None if f.unmeasured is None else UnmeasuredFigures.of(f.unmeasured),
            phases=f.utilization,
            devices=[DeviceFigures.of(d) for d in f.devices],
            lanes=lanes(f.phases),
            overlap={k: round(v_, 3) for k, v_ in lane_overlap(f.phases).items()},
            results=results(run),
            verdict=VerdictFigures.of(f.verdict),
            gpu_driver_periods=driver_sample_periods(run),
            hosts=run.host_labels,
            per_host=[HostSummary(h.host, h.hostname, h.samples, h.cpu_mean,
                                  [DeviceFigures.of(d) for d in h.devices], VerdictFigures.of(h.verdict))
                      for h in f.hosts],
            alignment=alignment.get("text") if alignment is not None else None,
            stragglers=straggler_figures(f.stragglers, f.unit),
            notices=[n.message for n in run.notices],
            recorder_cpu_mean=stats(f.series.recorder_cpu)["mean"],
        )


def epoch_dict(e: EpochRow, unit_: str = EPOCH_UNIT) -> dict[str, Any]:
    """One epoch as plain data (``compare --json``): ``EpochFigures`` as JSON."""
    return EpochFigures.of(e, unit_).to_json()


def data_wait_dict(wait: DataWait | None) -> dict[str, Any] | None:
    """The run's data wait over all its epochs (``data_wait``), as plain data."""
    return None if wait is None else DataWaitFigures.of(wait).to_json()


def unmeasured_dict(found: Unmeasured | None) -> dict[str, Any] | None:
    """``data_wait_unmeasured`` as plain data (``compare --json``)."""
    return None if found is None else UnmeasuredFigures.of(found).to_json()


def straggler_figures(rows: list[EpochStragglers], unit_: str) -> list[StragglerFigures]:
    """Stragglers ROWS (``stragglers``) rounded as printed, each with its line in UNIT_'s words."""
    return [StragglerFigures.of(row, unit_) for row in rows]
