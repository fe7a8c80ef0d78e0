"""The run file's records other than the header and samples: one frozen dataclass per record
type devicewatch writes itself (``Notice``, ``LogLine``, ``End``, ``GpuStatus``, ``CpuLimitsRecord``,
and the ``Phase`` and ``Marker`` events), each spelled once with its fields, and the events
read typed: ``Epoch`` (its metrics told apart: ``EpochMetrics``), ``RunInfo`` and ``Result``.
The workload's other events are still built as dicts here.

As austin-python's ``events.py`` types each record it reads, a record is parsed at the edge
(``parse``: the reader, which counts a record it refuses as a bad line), passed inward as an
object, and turned back into the file's dict at the other edge (``to_json``: the writer), so a
field no class declares cannot reach a view or ``report --json``. ``docs/run-format.md``
documents every field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .. import events
from ..loop_figures import DATA_WAIT_FIGURE, FIGURES, STEPS, UnitFigures
from ..probes.cpu_limits import CpuLimits

RESERVED = ("type", "t", "kind")

# An object as the file has it (a record, or one of its parts): what ``parse`` reads and ``to_json`` writes.
JsonObject = dict[str, Any]


class RecordError(ValueError):
    """A record that is not one of the file's records: a required field missing or of the wrong type."""


def _time(record: JsonObject, what: str) -> float:
    t: Any = record.get("t")
    if type(t) not in (int, float) or not math.isfinite(t):
        raise RecordError(f"{what} record without a time")
    return float(t)


def _text(record: JsonObject, key: str, what: str, default: str | None = None) -> str:
    value = record.get(key)
    value = default if value is None else value
    if not isinstance(value, str):
        raise RecordError(f"{what} record without {key}")
    return value


def _opt(record: JsonObject, key: str, kinds: Any) -> Any:
    """An optional field: its value when it has one of KINDS (a bool is no number), else None."""
    value = record.get(key)
    return value if isinstance(value, kinds) and not isinstance(value, bool) else None


_NUMBER = (int, float)


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the run file should say about the run itself (a bound reached, a GPU lost);
    what else it carries is one of the fields below, each written only when set."""

    t: float
    message: str
    level: str = "warning"               # info, warning, error
    state: str | None = None             # the workload's state: waiting for input, stopped, running
    outside_signal: str | None = None    # a signal from outside, passed to the workload
    dropped_lines: int | None = None     # output over the bound left out: lines, bytes, which stream
    dropped_bytes: int | None = None
    stream: str | None = None
    dropped: dict[str, int] | None = None   # events over the bound dropped, by kind
    dropped_from: float | None = None
    dropped_to: float | None = None
    host: str | None = None              # a merged run's node

    def to_json(self) -> JsonObject:
        record: JsonObject = {"type": "notice", "t": self.t, "level": self.level, "message": self.message}
        for key in _NOTICE_EXTRAS:
            value = getattr(self, key)
            if value is not None:
                record[key] = value
        return record

    @classmethod
    def parse(cls, record: JsonObject) -> Notice:
        return cls(_time(record, "a notice"), _text(record, "message", "a notice"),
                   _text(record, "level", "a notice", "warning"),
                   _opt(record, "state", str), _opt(record, "outside_signal", str),
                   _opt(record, "dropped_lines", int), _opt(record, "dropped_bytes", int),
                   _opt(record, "stream", str), _counts(record.get("dropped")),
                   _opt(record, "dropped_from", _NUMBER), _opt(record, "dropped_to", _NUMBER),
                   _opt(record, "host", str))


_NOTICE_EXTRAS = ("state", "outside_signal", "dropped_lines", "dropped_bytes", "stream", "dropped",
                  "dropped_from", "dropped_to", "host")


def _counts(value: Any) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if type(v) is int}


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of the workload's output."""

    t: float
    stream: str                      # stdout, stderr, or terminal (a pseudo-terminal's one stream)
    line: str
    raw: str | None = None           # its bytes in base64 when they are not UTF-8
    cut_from: int | None = None      # its length when it was cut
    partial: bool = False            # a line not yet ended, as it stands (the stream's next log replaces it)
    host: str | None = None          # a merged run's node, and the rank that printed it
    rank: int | None = None

    def to_json(self) -> JsonObject:
        record: JsonObject = {"type": "log", "t": self.t, "stream": self.stream, "line": self.line}
        if self.raw is not None:
            record["raw"] = self.raw
        if self.cut_from is not None:
            record["cut_from"] = self.cut_from
        if self.partial:
            record["partial"] = True
        if self.host is not None:
            record["host"] = self.host
        if self.rank is not None:
            record["rank"] = self.rank
        return record

    @classmethod
    def parse(cls, record: JsonObject) -> LogLine:
        t: Any = record.get("t")
        stream, line = record.get("stream"), record.get("line")
        if len(record) == 4 and type(stream) is str and type(line) is str and type(t) in _NUMBER \
                and math.isfinite(t):   # the common line, with nothing else to read: a run may hold millions
            return cls(t, stream, line)
        return cls(_time(record, "a log"), _text(record, "stream", "a log"), _text(record, "line", "a log"),
                   _opt(record, "raw", str), _opt(record, "cut_from", int), record.get("partial") is True,
                   _opt(record, "host", str), _opt(record, "rank", int))


@dataclass(frozen=True, slots=True)
class ClockPair:
    """The wall clock and the monotonic clock read together (merge aligns nodes by them)."""

    unix: float
    mono: float

    def to_json(self) -> JsonObject:
        return {"unix": self.unix, "mono": self.mono}

    @classmethod
    def parse(cls, value: Any) -> ClockPair | None:
        """The pair, or None where VALUE is not one."""
        if not isinstance(value, dict):
            return None
        unix: Any = value.get("unix")
        mono: Any = value.get("mono")
        if type(unix) not in _NUMBER or type(mono) not in _NUMBER:
            return None
        return cls(float(unix), float(mono))


@dataclass(frozen=True, slots=True)
class End:
    """How the run ended: the last record of every finished run file."""

    t: float
    status: str                          # runfile.END_STATUSES
    exit_code: int | None = None
    signal: str | None = None            # the signal that ended the workload
    duration: float | None = None        # seconds, = t
    reason: str | None = None            # in words
    clock: ClockPair | None = None       # the clocks read at the end
    instrument: dict[str, Any] | None = None   # what the zero-code instrumentation did (its summary)
    outside_signal: str | None = None    # the signal from outside that ended the run

    def to_json(self) -> JsonObject:
        record: JsonObject = {"type": "end", "t": self.t, "status": self.status, "exit_code": self.exit_code,
                                  "signal": self.signal, "duration": self.duration, "reason": self.reason}
        if self.clock is not None:
            record["clock"] = self.clock.to_json()
        if self.instrument is not None:
            record["instrument"] = self.instrument
        if self.outside_signal is not None:
            record["outside_signal"] = self.outside_signal
        return record

    @classmethod
    def parse(cls, record: JsonObject) -> End:
        duration: Any = record.get("duration")
        return cls(_time(record, "an end"), _text(record, "status", "an end"), _opt(record, "exit_code", int),
                   _opt(record, "signal", str), float(duration) if type(duration) in _NUMBER else None,
                   _opt(record, "reason", str), ClockPair.parse(record.get("clock")),
                   _opt(record, "instrument", dict), _opt(record, "outside_signal", str))


@dataclass(frozen=True, slots=True)
class GpuStatus:
    """Whether the GPUs can be sampled, and why not: at the start, then whenever that changes
    (NVML lost mid-run, the driver's sample period measured)."""

    t: float
    available: bool
    reason: str | None                         # why not, in words
    devices: int
    gpm: tuple[str | None, ...] | None = None  # per GPU, why its GPM metrics are not read (None: they are)
    util_period: tuple[float | None, ...] | None = None   # per GPU, the driver's sample period in seconds
    host: str | None = None                    # a merged run's node

    def to_json(self) -> JsonObject:
        record: JsonObject = {"type": "gpu_status", "t": self.t, "available": self.available,
                                  "reason": self.reason, "devices": self.devices}
        if self.gpm is not None:
            record["gpm"] = list(self.gpm)
        if self.util_period is not None:
            record["util_period"] = list(self.util_period)
        if self.host is not None:
            record["host"] = self.host
        return record

    @classmethod
    def parse(cls, record: JsonObject) -> GpuStatus:
        available = record.get("available")
        if type(available) is not bool:
            raise RecordError("a gpu_status record without available")
        devices: Any = record.get("devices")
        return cls(_time(record, "a gpu_status"), available, _opt(record, "reason", str),
                   devices if type(devices) is int else 0,
                   _each(record.get("gpm"), str), _each(record.get("util_period"), _NUMBER), _opt(record, "host", str))


def _each(value: Any, kinds: Any) -> tuple[Any, ...] | None:
    """A per-GPU list: each entry of one of KINDS kept, any other None; None where VALUE is no list."""
    if not isinstance(value, list):
        return None
    return tuple(v if isinstance(v, kinds) and not isinstance(v, bool) else None for v in value)


@dataclass(frozen=True, slots=True)
class CpuLimitsRecord:
    """The cores the workload's root process may use, read at its launch and at each change."""

    t: float
    pid: int | None
    limits: CpuLimits

    def to_json(self) -> JsonObject:
        return {"type": "cpu_limits", "t": self.t, "pid": self.pid, **self.limits.to_json()}

    @classmethod
    def parse(cls, record: JsonObject) -> CpuLimitsRecord:
        limits = CpuLimits.from_json(record)
        if limits is None:
            raise RecordError("a cpu_limits record without its limits")
        return cls(_time(record, "a cpu_limits"), _opt(record, "pid", int), limits)


@dataclass(frozen=True, slots=True)
class EpochMetrics:
    """An epoch event's ``metrics``, told apart: the figures devicewatch measured in the unit
    (``loop_figures.UnitFigures``, a field each; None where it measured none) and the
    workload's own (loss, accuracy…), a mapping by the names the workload gave them. The file
    keeps them in one object; ``to_json`` gives it back."""

    figures: UnitFigures | None
    workload: dict[str, Any]

    def to_json(self) -> JsonObject:
        return {**self.workload, **(self.figures.to_json() if self.figures is not None else {})}

    @property
    def steps(self) -> int | None:
        """The optimizer steps the loop counted in the unit (None: not instrumented)."""
        return None if self.figures is None else self.figures.steps

    @property
    def data_wait_s(self) -> Any:
        """The unit's measured input wait: the loop's figure, else the workload's own metric
        of that name (as written: the reader checks it is a number)."""
        if self.figures is not None:
            return self.figures.data_wait_s
        return self.workload.get(DATA_WAIT_FIGURE)

    def then(self, later: EpochMetrics) -> EpochMetrics:
        """These metrics with a later event's of the same unit over them (a name in both: the
        later one's), told apart again."""
        return EpochMetrics.of({**self.to_json(), **later.to_json()})

    def names(self) -> list[str]:
        """The names of the metrics the unit has, in the order ``to_json`` writes them."""
        return list(self.to_json())

    def get(self, name: str) -> Any:
        """A metric by the name a view shows it under (a column of the workload's own): the
        loop's figure of that name, else the workload's."""
        if name in FIGURES and self.figures is not None:
            return getattr(self.figures, name)
        return self.workload.get(name)

    @classmethod
    def of(cls, metrics: dict[str, Any]) -> EpochMetrics:
        """METRICS split by ``FIGURES``' names: the instrumentation's figures always hold
        ``steps``; without it, every metric is the workload's (a script may say its own
        ``data_wait_s``)."""
        if STEPS not in metrics:
            return cls(None, dict(metrics))
        return cls(UnitFigures(**{k: v for k, v in metrics.items() if k in FIGURES}),
                   {k: v for k, v in metrics.items() if k not in FIGURES})


def _event(t: float, kind: str, own: dict[str, Any], extra: dict[str, Any]) -> JsonObject:
    """An event as the file stores it: its own fields, then the sender's others (none of which
    may replace the record's ``type``, ``t`` or ``kind``, nor its own fields)."""
    return {"type": "event", "t": t, "kind": kind, **own,
            **{k: v for k, v in extra.items() if k not in RESERVED and k not in own}}


def _extra(record: JsonObject, own: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in RESERVED and k not in own}


def _as_read(record: JsonObject, own: dict[str, Any], order: tuple[str, ...]) -> JsonObject:
    """RECORD as the file had it where it was read (ORDER: its fields in the file's order):
    those fields in that order, an own field the file lacked left out, then any field since
    added; as made (no ORDER), RECORD."""
    if not order:
        return record
    return {**{key: record[key] for key in order if key in record},
            **{key: value for key, value in record.items() if key not in own}}


@dataclass(frozen=True, slots=True)
class Phase:
    """A phase's begin or end (``phase_begin``, ``phase_end``); ``extra``: the sender's other
    fields (its ``source``, pid, rank, an ``epochs`` count…); ``order`` as ``Epoch``'s."""

    t: float
    begin: bool
    name: str
    epoch: int | None = None
    lane: str = events.DEFAULT_LANE
    extra: dict[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def kind(self) -> str:
        return events.PHASE_BEGIN if self.begin else events.PHASE_END

    def to_json(self) -> JsonObject:
        own = {"name": self.name, "epoch": self.epoch, "lane": self.lane}
        return _as_read(_event(self.t, self.kind, own, self.extra), own, self.order)

    @classmethod
    def parse(cls, record: JsonObject) -> Phase:
        kind = record.get("kind")
        if kind not in (events.PHASE_BEGIN, events.PHASE_END):
            raise RecordError(f"a {kind} event is no phase")
        epoch: Any = record.get("epoch")
        return cls(_time(record, "a phase"), kind == events.PHASE_BEGIN, _text(record, "name", "a phase"),
                   epoch if type(epoch) is int else None, _text(record, "lane", "a phase", events.DEFAULT_LANE),
                   _extra(record, ("name", "epoch", "lane")), tuple(record))


@dataclass(frozen=True, slots=True)
class Marker:
    """A free-form marker (``label``), from the workload or the dashboard (``source``);
    ``order`` as ``Epoch``'s."""

    t: float
    label: str
    extra: dict[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> JsonObject:
        own = {"label": self.label}
        return _as_read(_event(self.t, events.MARKER, own, self.extra), own, self.order)

    @classmethod
    def parse(cls, record: JsonObject) -> Marker:
        if record.get("kind") != events.MARKER:
            raise RecordError(f"a {record.get('kind')} event is no marker")
        return cls(_time(record, "a marker"), _text(record, "label", "a marker"), _extra(record, ("label",)),
                   tuple(record))


@dataclass(frozen=True, slots=True)
class Epoch:
    """An epoch's (or segment's) end as the workload or the zero-code loop says it: its number,
    its metrics told apart (``EpochMetrics``) and what its unit is (``unit``: ``segment`` for
    the training between two evaluations of a step-based loop; None, an epoch). ``extra``: the
    sender's other fields (pid, thread, source…); ``order``: the fields in the order the file
    has them, so that ``to_json`` writes the record back as it was read."""

    t: float
    epoch: int
    metrics: EpochMetrics
    unit: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> JsonObject:
        own: dict[str, Any] = {"epoch": self.epoch, "metrics": self.metrics.to_json()}
        if self.unit is not None:
            own["unit"] = self.unit
        return _as_read(_event(self.t, events.EPOCH, own, self.extra), own, self.order)

    @classmethod
    def parse(cls, record: JsonObject) -> Epoch:
        if record.get("kind") != events.EPOCH:
            raise RecordError(f"a {record.get('kind')} event is no epoch")
        epoch: Any = record.get("epoch")
        if type(epoch) is not int:
            raise RecordError("an epoch record without epoch")
        metrics: Any = record.get("metrics")
        return cls(_time(record, "an epoch"), epoch, EpochMetrics.of(metrics if isinstance(metrics, dict) else {}),
                   _opt(record, "unit", str), _extra(record, ("epoch", "metrics", "unit")), tuple(record))


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the workload says about itself (``info``: framework, device, parameters, data,
    epochs…, by the names it gives them); ``extra`` and ``order`` as ``Epoch``'s."""

    t: float
    info: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> JsonObject:
        own = {"info": self.info}
        return _as_read(_event(self.t, events.RUN_INFO, own, self.extra), own, self.order)

    @classmethod
    def parse(cls, record: JsonObject) -> RunInfo:
        if record.get("kind") != events.RUN_INFO:
            raise RecordError(f"a {record.get('kind')} event is no run_info")
        info = record.get("info")
        if not isinstance(info, dict):
            raise RecordError("a run_info record without info")
        return cls(_time(record, "a run_info"), info, _extra(record, ("info",)), tuple(record))


@dataclass(frozen=True, slots=True)
class Result:
    """One measured outcome (``name``, and its ``values`` by the workload's names: ms, gflops…);
    ``extra`` and ``order`` as ``Epoch``'s."""

    t: float
    name: str
    values: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> JsonObject:
        own = {"name": self.name, "values": self.values}
        return _as_read(_event(self.t, events.RESULT, own, self.extra), own, self.order)

    @classmethod
    def parse(cls, record: JsonObject) -> Result:
        if record.get("kind") != events.RESULT:
            raise RecordError(f"a {record.get('kind')} event is no result")
        values = record.get("values")
        return cls(_time(record, "a result"), _text(record, "name", "a result"),
                   values if isinstance(values, dict) else {}, _extra(record, ("name", "values")), tuple(record))


# The events read typed, by kind: ``Run.add`` refuses one its class refuses (a bad line).
READ_TYPED: dict[str, type[Epoch] | type[RunInfo] | type[Result]] = {
    events.EPOCH: Epoch, events.RUN_INFO: RunInfo, events.RESULT: Result}


def notice(t: float, message: str, level: str = "warning", **extra: Any) -> Notice:
    """Something the run file should say about the run itself (a bound reached, a GPU lost)."""
    return Notice(t, message, level, **extra)


def log(t: float, stream: str, line: str, raw: str | None = None, cut_from: int | None = None,
        partial: bool = False) -> LogLine:
    """One line of the workload's output; ``raw``: its bytes in base64 when they are not UTF-8;
    ``cut_from``: its length when it was cut; ``partial``: a line not yet ended, as it stands
    (the stream's next log record replaces it)."""
    return LogLine(t, stream, line, raw, cut_from, partial)


def end(t: float, status: str, exit_code: int | None, signal: str | None, reason: str,
        clock: ClockPair | None = None, instrument: dict[str, Any] | None = None,
        outside_signal: str | None = None) -> End:
    """How the run ended (its duration is its time)."""
    return End(t, status, exit_code, signal, t, reason, clock, instrument, outside_signal)


def event(t: float, kind: str, /, **fields: Any) -> JsonObject:
    """An event as the run file stores it: the workload's fields under the recorder's time
    (a field of the workload's named ``type``, ``t`` or ``kind`` cannot replace the record's own)."""
    return {"type": "event", "t": t, "kind": kind, **{k: v for k, v in fields.items() if k not in RESERVED}}


def gpu_status(t: float, available: bool, reason: str | None, devices: int,
               gpm: list[str | None] | None = None, util_period: list[float | None] | None = None) -> GpuStatus:
    """Whether the GPUs can be sampled (and why not), at the start and whenever that changes."""
    return GpuStatus(t, available, reason, devices, None if gpm is None else tuple(gpm),
                     None if util_period is None else tuple(util_period))


def cpu_limits(t: float, pid: int, limits: CpuLimits) -> CpuLimitsRecord:
    """The cores process PID (the workload's root) may use: at its launch and whenever that changes."""
    return CpuLimitsRecord(t, pid, limits)


Typed = Notice | LogLine | End | Phase | Marker | Epoch | RunInfo | Result | GpuStatus | CpuLimitsRecord
Writable = JsonObject | Typed   # what ``RunWriter.write`` takes: a typed record, or a sample, an event…
