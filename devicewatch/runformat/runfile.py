"""The run file: one JSON object per line, the only interface between recorder and views.

Line 1 is the header, then samples, events, log lines and notices in time order as they
happened, and last an end record. Every record has ``type`` and (except the header) ``t``,
seconds since the run started on the monotonic clock. ``docs/run-format.md`` documents every
field. This module holds the schema constants and the one reader: ``load`` for a finished
file and ``Follower`` for a file that is still growing; both accept a last line cut off by a
crash, and both refuse foreign or newer-schema files with a one-line ``RunFileError``. The
reader reads schema 1 (every field named in every sample) and schema 2 (field lists in the
header, samples as per-device arrays); the header is parsed once into a ``Header``, samples
are decoded into columns (``samples.py``). When a run ends, the writer's ``compact``
(``writer.py``) writes those columns beside the journal (``columnar.py``); ``load`` reads them
instead of the journal's JSON while they match it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable

import orjson

from .. import events as ev
from ..errors import RunFileError
from . import columnar
from .eventlog import Events
from .header import CpuLimitsOverRun, Header, LimitsReading
from .records import (READ_TYPED, CpuLimitsRecord, End, Epoch, GpuStatus, JsonObject, LogLine, Notice, RecordError,
                      Result, RunInfo)
from .samples import Samples
from .schema import SAMPLE_PREFIX, valid_sample

FORMAT = "devicewatch-run"
SCHEMA = 2          # what the writer writes; the reader reads 1 and 2
RECORD_TYPES = ("header", "sample", "event", "log", "notice", "gpu_status", "cpu_limits", "end")
END_STATUSES = ("ok", "trial", "failed", "cancelled", "error")
# Ends that are no failure: the workload finished, or a trial of ``devicewatch try`` was ended
# on purpose once its window was measured.
FINISHED = ("ok", "trial")
# What every view says of a file without an end record (recorder killed, disk full, power lost).
NO_END_RECORD = "the recorder ended without an end record"


@dataclass
class Run:
    """Everything one run file holds, in the order it was written."""

    path: str
    header: Header  # a dict given is parsed (tests, tools)
    samples: Samples = None  # type: ignore[assignment]  # columns, made from the header
    events: Events = field(default_factory=Events)  # a sequence of dicts; a list given becomes one
    logs: list[LogLine] = field(default_factory=list)      # dicts given are parsed (tests, tools), as
    notices: list[Notice] = field(default_factory=list)    # are the notices and the end
    gpu_status: list[GpuStatus] = field(default_factory=list)   # dicts given are parsed too
    end: End | None = None
    bad_lines: int = 0          # lines in the middle that were not valid records
    cut_last_line: bool = False  # the final line was incomplete (a crash mid-write)
    open_line: LogLine | None = None   # the output's line not yet ended (a partial log record)

    keep: int | None = None     # samples kept (the newest); None keeps them all
    columnar: bool = False      # read from the columnar form beside the journal (``columnar.py``)
    cpu_limit_records: list[CpuLimitsRecord] = field(default_factory=list)   # as written; read ``cpu_limits``

    def __post_init__(self) -> None:
        if not isinstance(self.header, Header):
            self.header = Header.parse(self.header)
        if not isinstance(self.events, Events):
            self.events = Events(self.events)
        self.logs = [LogLine.parse(r) if isinstance(r, dict) else r for r in self.logs]
        self.notices = [Notice.parse(r) if isinstance(r, dict) else r for r in self.notices]
        self.gpu_status = [GpuStatus.parse(r) if isinstance(r, dict) else r for r in self.gpu_status]
        self.cpu_limit_records = [CpuLimitsRecord.parse(r) if isinstance(r, dict) else r
                                  for r in self.cpu_limit_records]
        if isinstance(self.end, dict):
            self.end = End.parse(self.end)
        if self.samples is None:
            self.samples = Samples(self.header, self.keep)

    @property
    def finished(self) -> bool:
        return self.end is not None

    @property
    def ended_abruptly(self) -> bool:
        """The recorder stopped without writing its end record (killed, power lost)."""
        return self.end is None

    @property
    def duration(self) -> float:
        if self.end is not None and self.end.duration is not None:
            return self.end.duration
        last = float(self.samples.t[-1]) if len(self.samples) else 0.0
        if self.events:
            last = max(last, float(self.events[-1].get("t", 0.0)))
        if self.logs:
            last = max(last, self.logs[-1].t)
        return last

    @property
    def epoch_events(self) -> list[Epoch]:
        """The run's epoch events, typed, in order (one its class refuses left out: a file's
        is counted bad as it is read)."""
        return _typed(self.events.of(ev.EPOCH), Epoch)

    @property
    def run_info_events(self) -> list[RunInfo]:
        """The run's run_info events, typed, in order."""
        return _typed(self.events.of(ev.RUN_INFO), RunInfo)

    @property
    def result_events(self) -> list[Result]:
        """The run's result events, typed, in order."""
        return _typed(self.events.of(ev.RESULT), Result)

    @property
    def cores(self) -> int:
        return self.header.host.cpu_count

    @property
    def cpu_limits(self) -> CpuLimitsOverRun | None:
        """The cores the workload could use over the run: its readings (at launch, then each
        change), else the recorder's own from the header; None for a file older than both."""
        return CpuLimitsOverRun.of([LimitsReading(r.t, r.limits) for r in self.cpu_limit_records], self.header.host)

    @property
    def gpu_names(self) -> list[str]:
        return [gpu.name for gpu in self.header.host.gpus]

    @property
    def title(self) -> str:
        workload = self.header.workload
        return workload.name or " ".join(workload.command) or Path(self.path).name

    @property
    def host_labels(self) -> list[str]:
        """A merged run's nodes (``node 0``, ``node 1``…), in node order; empty for one node's run."""
        return self.header.host_labels

    def of_host(self, label: str) -> Run:
        """One node of a merged run as a run of its own (its samples, its ranks' events and
        lines, its host object), so every single-host figure (utilization, dips, verdict)
        applies to it unchanged. RunFileError if the run has no such node."""
        node_entry = next((node for node in self.header.nodes if node.label == label), None)
        if node_entry is None:
            raise RunFileError(f"{os.path.basename(self.path)} has no host {label!r}")
        mine = lambda records: [r for r in records if r.get("host") == label]  # noqa: E731
        node = Run(self.path, self.header.for_node(node_entry), self.samples.of_host(label, node_entry.host),
                   Events(mine(self.events)), [r for r in self.logs if r.host == label],
                   [r for r in self.notices if r.host == label], [r for r in self.gpu_status if r.host == label], self.end,
                   self.bad_lines, self.cut_last_line)
        node.columnar = self.columnar
        return node

    def add(self, record: dict[str, Any], line: bytes | None = None) -> None:
        """File one record (``line``: its JSON, which an event may be kept as); a record without
        a numeric time or of an unknown type is counted bad."""
        kind = record.get("type")
        t = record.get("t")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t:
            self.bad_lines += 1
        elif kind == "sample":
            if not isinstance(record.get("cpu", []), list):
                self.bad_lines += 1
                return
            self.samples.add(record)
        elif kind == "event":
            if not isinstance(record.get("kind"), str) or not _event_reads(record):
                self.bad_lines += 1
                return
            self.events.append(record, line)
        elif kind in ("log", "notice", "end", "gpu_status", "cpu_limits"):
            try:
                self._file_typed(kind, record)
            except RecordError:
                self.bad_lines += 1
        else:
            self.bad_lines += 1

    def _file_typed(self, kind: str, record: dict[str, Any]) -> None:
        if kind == "log":
            line = LogLine.parse(record)
            if line.partial:   # a line as it stood: the stream's next log record replaces it
                self.open_line = line
            else:
                self.logs.append(line)
                if self.open_line is not None and self.open_line.stream == line.stream:
                    self.open_line = None
        elif kind == "notice":
            self.notices.append(Notice.parse(record))
        elif kind == "gpu_status":
            self.gpu_status.append(GpuStatus.parse(record))
        elif kind == "cpu_limits":
            self.cpu_limit_records.append(CpuLimitsRecord.parse(record))
        else:
            self.end = End.parse(record)


_T = TypeVar("_T", Epoch, RunInfo, Result)


def _typed(records: list[JsonObject], cls: type[_T]) -> list[_T]:
    out = []
    for record in records:
        try:
            out.append(cls.parse(record))
        except RecordError:
            continue
    return out


def _event_reads(record: JsonObject) -> bool:
    """The event is one its kind's class reads (an epoch event with its epoch…), or of a kind
    kept as it is."""
    cls = READ_TYPED.get(record["kind"])
    if cls is None:
        return True
    try:
        cls.parse(record)
    except RecordError:
        return False
    return True


def read_header(path: str | os.PathLike[str]) -> Header | None:
    """The header of a run file (first line only), or None if it is not a readable run file."""
    try:
        with open(path, "rb") as handle:
            return Header.parse(check_header(orjson.loads(handle.readline()), str(path)))
    except (OSError, ValueError, RunFileError):
        return None


def check_header(record: Any, path: str) -> dict[str, Any]:
    name = os.path.basename(path)
    if not isinstance(record, dict) or record.get("type") != "header" or record.get("format") != FORMAT:
        raise RunFileError(f"{name} is not a devicewatch run file")
    schema = record.get("schema")
    if not isinstance(schema, int) or schema < 1:
        raise RunFileError(f"{name} has an invalid schema version: {schema!r}")
    if schema > SCHEMA:
        raise RunFileError(
            f"{name} was written by a newer devicewatch (schema {schema}; this one reads up to {SCHEMA})")
    for key, kinds, what in HEADER_FIELDS:
        if (key in record and not isinstance(record[key], kinds)) or isinstance(record.get(key), bool):
            raise RunFileError(f"{name} has a damaged header: {key} is not {what}")
    return record


# Fields every view relies on, with the JSON types the recorder writes. A record that breaks
# them was not written by a recorder (a hand edit, a bit flip): it counts as a bad line, so
# that no view ever meets a string where it expects a number.
_NUMBER = (int, float)
HEADER_FIELDS = (("host", dict, "an object"), ("workload", dict, "an object"),
                 ("interval", _NUMBER, "a number"), ("started_unix", _NUMBER, "a number"),
                 ("started", str, "a string"))
RECORD_FIELDS: dict[str, tuple[tuple[str, Any], ...]] = {
    "sample": (("cpu", list), ("cpu_total", _NUMBER), ("gpus", list), ("proc", (dict, list)), ("mem", dict),
               ("sys", list), ("gpu", list), ("gpu_util", list), ("gpu_procs", list),
               ("recorder_cpu", _NUMBER), ("watcher_cpu", _NUMBER)),
    "event": (("kind", str), ("metrics", dict), ("info", dict), ("values", dict)),
    "log": (("line", str), ("stream", str)),
    "notice": (("message", str), ("level", str)),
    "gpu_status": (("reason", str),),
    "cpu_limits": (("pid", int), ("host_cores", int), ("affinity", str), ("cpuset", str), ("quota_cores", _NUMBER),
                   ("allowed", _NUMBER)),
    "end": (("status", str), ("exit_code", int), ("signal", str), ("duration", _NUMBER), ("reason", str)),
}


def well_formed(record: dict[str, Any]) -> bool:
    """The record's time is a finite number and its known fields have their types (or null)."""
    t: Any = record.get("t")
    if type(t) not in _NUMBER or not math.isfinite(t):
        return False
    for key, kinds in RECORD_FIELDS.get(record.get("type"), ()):  # type: ignore[arg-type]
        value = record.get(key)
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
            return False
    return True


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = orjson.loads(line)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _open(path: str) -> tuple[Any, Callable[[int], bytes]]:
    """A run file opened for reading (gzip too) and how to read from it; RunFileError if it cannot be."""
    packed = path.endswith(".gz")
    opener: Callable[..., Any] = open
    if packed:
        import gzip  # here: a plain journal's report does not pay for its import

        opener = gzip.open
    try:
        handle = opener(path, "rb")
    except FileNotFoundError:
        raise RunFileError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise RunFileError(f"{path} is a directory, not a run file") from None
    except OSError as exc:
        raise RunFileError(f"cannot read {path}: {exc.strerror}") from None
    # read1: what was decompressed before a cut-short end is returned, not lost with it
    return handle, handle.read1 if packed else handle.read


class _Intake:
    """Where a line of a run file becomes part of a ``Run``: the one path for a journal being
    read, a journal being written (its columns built as it goes) and the lines kept in its
    columnar form."""

    def __init__(self, path: str, keep: int | None = None):
        self.path = path
        self._keep = keep
        self._raw = False   # sample lines go to the columns as read, not through the JSON parser
        self.run: Run | None = None

    def _take(self, line: bytes, new: list[dict[str, Any]], last: bool) -> None:
        if not line.strip():
            return
        if self._raw and not last and self.run is not None and self.run.samples.compact \
                and line.startswith(SAMPLE_PREFIX):
            self.run.samples.add_line(line)  # decoded with its chunk (samples.SAMPLE_LINE)
            return
        record = _parse(line)
        if self.run is None:
            if record is None and b"\0" in line[:64]:
                raise RunFileError(f"{os.path.basename(self.path)} is not a devicewatch run file")
            self.run = Run(self.path, Header.parse(check_header(record, self.path)), keep=self._keep)
            return
        if record is None:
            if last:
                self.run.cut_last_line = True
            else:
                self.run.bad_lines += 1
            return
        if record.get("type") == "sample" and self.run.samples.compact:
            if not valid_sample(record):  # the columns take any other damage as missing values
                self.run.bad_lines += 1
                return
        elif not well_formed(record):
            self.run.bad_lines += 1
            return
        self.run.add(record, line)
        new.append(record)


class Follower(_Intake):
    """Reads a run file incrementally: each ``poll`` returns the records added since the last.

    Only complete lines are consumed while the file may still grow; ``poll(final=True)``
    also takes an unterminated last line, or marks it cut if it does not parse.
    """

    CHUNK = 1 << 20

    def __init__(self, path: str | os.PathLike[str], keep: int | None = None):
        super().__init__(str(path), keep)
        self._pending = b""
        self._file, self._read = _open(self.path)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def poll(self, final: bool = False, collect: bool = True, samples: bool = True) -> list[dict[str, Any]]:
        """New records since the last poll (none kept when not ``collect``; no sample records
        when not ``samples``); the run's sample columns include them on return. Raises
        RunFileError if the header is not ours, or if the file was truncated under us (what was
        read stays in ``run``). A file replaced or deleted at its path is still the one opened:
        it is followed to its end."""
        new: list[dict[str, Any]] = [] if collect else _Discard()
        self._raw = not (collect and samples)  # nobody wants the sample records: their lines go to the columns as read
        size = os.fstat(self._file.fileno()).st_size
        if size < self._file.tell():
            raise RunFileError(f"{os.path.basename(self.path)} was truncated while being read; "
                               "the records read before are kept")
        while True:
            try:
                chunk = self._read(self.CHUNK)
            except (OSError, EOFError):  # a compressed file cut short: keep what came before
                chunk = b""
            if not chunk:
                break
            self._pending += chunk
            lines = self._pending.split(b"\n")
            self._pending = lines.pop()
            for line in lines:
                self._take(line, new, last=False)
        if final and self._pending:
            line, self._pending = self._pending, b""
            self._take(line, new, last=True)
        if final and self.run is None:
            raise RunFileError(f"{os.path.basename(self.path)} is empty, not a run file")
        if self.run is not None:
            self.run.samples.flush()
            self.run.bad_lines += self.run.samples.bad
            self.run.samples.bad = 0
        return new


def load(path: str | os.PathLike[str]) -> Run:
    """Read a whole run file, finished or not (a recorder may still be writing it): from its
    columnar form when one is beside it and matches it (``compact``), else from the journal."""
    run = load_columns(path)
    if run is not None:
        return run
    with Follower(path) as follower:
        follower.poll(final=True, collect=False)
        assert follower.run is not None
        return follower.run


def load_columns(path: str | os.PathLike[str]) -> Run | None:
    """The run from its columnar form: the journal's other lines read back through ``_Intake``,
    the samples memory-mapped. None where there is none that matches the journal."""
    path = str(path)
    found = columnar.read(path)
    if found is None:
        return None
    meta, arrays, lines = found
    try:
        intake = _Intake(path)
        for line in lines:
            intake._take(line, _Discard(), last=False)
        run = intake.run
        bad, cut = meta["bad_lines"], meta["cut_last_line"]
        if run is None or type(bad) is not int or type(cut) is not bool:
            return None
        run.samples = Samples.from_columns(run.header, meta["state"], arrays)
        run.bad_lines += bad
        run.cut_last_line = cut
        run.columnar = True
        return run
    except Exception:
        return None


class _Discard(list[Any]):
    """A list that keeps nothing: ``load`` needs the run, not the records one by one."""

    def append(self, item: Any) -> None:
        pass


