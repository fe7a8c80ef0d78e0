"""The run file: one JSON object per line, the only interface between recorder and views.

Line 1 is the header, then samples, events, log lines and notices in time order as they
happened, and last an end record. Every record has ``type`` and (except the header) ``t``,
seconds since the run started on the monotonic clock. ``docs/run-format.md`` documents every
field. This module holds the schema constants, the writer and the one reader: ``load`` for a
finished file and ``Follower`` for a file that is still growing; both accept a last line cut
off by a crash, and both refuse foreign or newer-schema files with a one-line ``RunFileError``.
The reader reads schema 1 (every field named in every sample) and schema 2 (field lists in
the header, samples as per-device arrays); samples are decoded into columns (``samples.py``).
When a run ends, ``compact`` writes those columns beside the journal (``columnar.py``), built
while the writer wrote; ``load`` reads them instead of the journal's JSON while they match it.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import threading
import zlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from . import columnar
from .. import events as ev
from ..errors import RunFileError
from .header import Header
from .samples import Samples
from .schema import SAMPLE_PREFIX, Chunk, Encoder, fields_header

FORMAT = "devicewatch-run"
SCHEMA = 2          # what the writer writes; the reader reads 1 and 2
RECORD_TYPES = ("header", "sample", "event", "log", "notice", "gpu_status", "end")
END_STATUSES = ("ok", "trial", "failed", "cancelled", "error")
# Ends that are no failure: the workload finished, or a trial of ``devicewatch try`` was ended
# on purpose once its window was measured.
FINISHED = ("ok", "trial")
# What every view says of a file without an end record (recorder killed, disk full, power lost).
NO_END_RECORD = "the recorder ended without an end record"


class Events(Sequence):  # type: ignore[type-arg]
    """A run's events in file order, as a sequence of dicts, stored so that a million do not
    cost a million dicts.

    The kinds the analysis reads (``DECODED``: phases, epochs, run info, results) are kept as
    dicts. Every other event (markers, above all) is kept as its line, compressed in blocks of
    ``BLOCK`` lines, and decoded again when asked for: about 15 bytes each instead of 400.
    ``of(kinds)`` returns the events of some kinds without decoding the others.
    """

    DECODED = frozenset((ev.RUN_INFO, ev.PHASE_BEGIN, ev.PHASE_END, ev.EPOCH, ev.RESULT))
    BLOCK = 2048

    def __init__(self, records: Iterable[dict[str, Any]] = ()):
        self._n = 0
        self._kept: list[dict[str, Any]] = []
        self._kept_at: list[int] = []      # the position of each kept event
        self._packed: list[bytes] = []     # zlib blocks of event lines
        self._packed_at: list[int] = []    # per block, the position of its first line ...
        self._packed_pos: list[int] = []   # ... and the positions of all its lines, flattened
        self._lines: list[bytes] = []      # the block being filled
        self._lines_at: list[int] = []
        self._cache: tuple[int, list[bytes]] | None = None
        for record in records:
            self.append(record)

    def append(self, record: dict[str, Any], line: bytes | None = None) -> None:
        """File one event; ``line`` (its JSON) lets a kind the analysis does not read stay packed."""
        if line is None or record.get("kind") in self.DECODED:
            self._kept.append(record)
            self._kept_at.append(self._n)
        else:
            self._lines.append(bytes(line))
            self._lines_at.append(self._n)
            if len(self._lines) >= self.BLOCK:
                self._pack()
        self._n += 1

    def _pack(self) -> None:
        self._packed.append(zlib.compress(b"\n".join(self._lines), 1))
        self._packed_at.append(self._lines_at[0])
        self._packed_pos.extend(self._lines_at)
        self._lines, self._lines_at = [], []

    def _block(self, b: int) -> list[bytes]:
        if self._cache is None or self._cache[0] != b:
            self._cache = (b, zlib.decompress(self._packed[b]).split(b"\n"))
        return self._cache[1]

    def of(self, *kinds: str) -> list[dict[str, Any]]:
        """The events of these kinds, in order (the analysis's kinds without decoding any other)."""
        if self.DECODED.issuperset(kinds):
            return [e for e in self._kept if e.get("kind") in kinds]
        return [e for e in self if e.get("kind") in kinds]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._n))]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError(index)
        k = bisect_right(self._kept_at, index) - 1
        if k >= 0 and self._kept_at[k] == index:
            return self._kept[k]
        if self._lines_at and index >= self._lines_at[0]:
            return orjson.loads(self._lines[bisect_right(self._lines_at, index) - 1])
        b = bisect_right(self._packed_at, index) - 1
        first = b * self.BLOCK
        return orjson.loads(self._block(b)[bisect_right(self._packed_pos, index, first, first + self.BLOCK) - 1 - first])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        kept = iter(zip(self._kept_at, self._kept))
        next_kept = next(kept, None)
        for b in range(len(self._packed) + 1):
            if b < len(self._packed):
                lines = zlib.decompress(self._packed[b]).split(b"\n")
                positions = self._packed_pos[b * self.BLOCK:(b + 1) * self.BLOCK]
            else:
                lines, positions = list(self._lines), list(self._lines_at)
            for at, line in zip(positions, lines):
                while next_kept is not None and next_kept[0] < at:
                    yield next_kept[1]
                    next_kept = next(kept, None)
                yield orjson.loads(line)
        while next_kept is not None:
            yield next_kept[1]
            next_kept = next(kept, None)

    def __repr__(self) -> str:
        return f"Events({len(self)} events)"


@dataclass
class Run:
    """Everything one run file holds, in the order it was written."""

    path: str
    header: Header  # a dict given is parsed (tests, tools)
    samples: Samples = None  # type: ignore[assignment]  # columns, made from the header
    events: Events = field(default_factory=Events)  # a sequence of dicts; a list given becomes one
    logs: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    gpu_status: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    bad_lines: int = 0          # lines in the middle that were not valid records
    cut_last_line: bool = False  # the final line was incomplete (a crash mid-write)

    keep: int | None = None     # samples kept (the newest); None keeps them all
    columnar: bool = False      # read from the columnar form beside the journal (``columnar.py``)

    def __post_init__(self) -> None:
        if not isinstance(self.header, Header):
            self.header = Header.parse(self.header)
        if not isinstance(self.events, Events):
            self.events = Events(self.events)
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
        if self.end is not None and "duration" in self.end:
            return float(self.end["duration"])
        last = float(self.samples.t[-1]) if len(self.samples) else 0.0
        for records in (self.events, self.logs):
            if records:
                last = max(last, float(records[-1].get("t", 0.0)))
        return last

    @property
    def cores(self) -> int:
        return self.header.host.cpu_count

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

    def of_host(self, label: str) -> "Run":
        """One node of a merged run as a run of its own (its samples, its ranks' events and
        lines, its host object), so every single-host figure (utilization, dips, verdict)
        applies to it unchanged. RunFileError if the run has no such node."""
        node_entry = next((node for node in self.header.nodes if node.label == label), None)
        if node_entry is None:
            raise RunFileError(f"{os.path.basename(self.path)} has no host {label!r}")
        mine = lambda records: [r for r in records if r.get("host") == label]  # noqa: E731
        node = Run(self.path, self.header.for_node(node_entry), self.samples.of_host(label, node_entry.host),
                   mine(self.events), mine(self.logs), mine(self.notices), mine(self.gpu_status), self.end,
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
            if not isinstance(record.get("kind"), str):
                self.bad_lines += 1
                return
            self.events.append(record, line)
        elif kind == "log":
            self.logs.append(record)
        elif kind == "notice":
            self.notices.append(record)
        elif kind == "gpu_status":
            self.gpu_status.append(record)
        elif kind == "end":
            self.end = record
        else:
            self.bad_lines += 1


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
        if key in record and not isinstance(record[key], kinds) or isinstance(record.get(key), bool):
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
    "end": (("status", str), ("exit_code", int), ("signal", str), ("duration", _NUMBER), ("reason", str)),
}


def well_formed(record: dict[str, Any]) -> bool:
    """The record's time is a finite number and its known fields have their types (or null)."""
    t = record.get("t")
    if type(t) not in _NUMBER or not math.isfinite(t):
        return False
    for key, kinds in RECORD_FIELDS.get(record.get("type"), ()):  # type: ignore[arg-type]
        value = record.get(key)
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
            return False
    return True


def _sample_ok(record: dict[str, Any]) -> bool:
    """A schema-2 sample has a finite time and its per-core list, if any, is a list."""
    t = record.get("t")
    return type(t) in _NUMBER and math.isfinite(t) and record.get("cpu", []).__class__ is list


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = orjson.loads(line)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _open(path: str) -> tuple[Any, Callable[[int], bytes]]:
    """A run file opened for reading (gzip too) and how to read from it; RunFileError if it cannot be."""
    packed = path.endswith(".gz")
    opener: Callable[..., Any] = gzip.open if packed else open
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
            if not _sample_ok(record):  # the columns take any other damage as missing values
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

    def __enter__(self) -> "Follower":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def poll(self, final: bool = False, collect: bool = True) -> list[dict[str, Any]]:
        """New records since the last poll (none kept when not ``collect``); the run's sample
        columns include them on return. Raises RunFileError if the header is not ours, or
        if the file was truncated under us (what was read stays in ``run``). A file replaced
        or deleted at its path is still the one opened: it is followed to its end."""
        new: list[dict[str, Any]] = [] if collect else _Discard()
        self._raw = not collect  # nobody wants the sample records: their lines go to the columns as read
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
    except Exception:  # noqa: BLE001 - a damaged columnar form only means reading the journal
        return None


class _Columns:
    """The columnar form of one run, built a chunk at a time while its journal is written (or
    read): sample lines go through the reader's own ``_Intake`` into columns, spilled every
    ``EVERY`` samples; every other line is kept as written, to be read back the same way."""

    EVERY = 1024            # samples a chunk: under 30 ms to decode with 64 cores and 8 GPUs
    LINES_BYTES = 1 << 23   # other lines held before they are spilled too

    def __init__(self, path: str):
        self.path = path
        self.intake = _Intake(path)
        self.intake._raw = True
        self.spill = columnar.Spill(os.path.dirname(os.path.abspath(path)))
        self.others: list[bytes] = []
        self.others_bytes = 0
        self.since = 0          # samples since the last spill
        self.ended = False      # an end record went by: the run is finished
        self.written = 0        # bytes of the journal these columns cover

    def feed(self, line: bytes, kind: Any = None, last: bool = False, encoded: dict[str, Any] | None = None) -> None:
        """One line of the journal; ``kind``: its record's type when the writer knows it;
        ``encoded``: the sample the writer's encoder made, whose values the columns take
        instead of parsing the line again."""
        if self.intake.run is None:  # the header
            self.intake._take(line, _Discard(), last)
            if self.intake.run is not None:
                self.others.append(line)
            return
        if kind is None and not line.startswith(SAMPLE_PREFIX):
            record = _parse(line)
            if record is None and last:  # cut by a crash: the reader ignores it too
                self.intake.run.cut_last_line = True
                return
            kind = record.get("type") if record is not None else None
        elif kind is None:
            kind = "sample"
        if kind == "sample":
            if encoded is not None and self.intake.run.samples.compact and _sample_ok(encoded):
                self.intake.run.samples.add(encoded)
            else:
                self.intake._take(line, _Discard(), last)
            self.since += 1
        elif line.strip():
            self.others.append(line)
            self.others_bytes += len(line)
            self.ended = self.ended or kind == "end"
        if self.since >= self.EVERY or self.others_bytes >= self.LINES_BYTES:
            self._spill()

    def feed_chunk(self, lines: list[bytes], kinds: list[Any], chunk: Chunk) -> None:
        """Lines of the journal in order, whose samples' values ``chunk`` holds: the samples'
        columns are made from those values, every other line is fed as ``feed`` feeds it."""
        run = self.intake.run
        assert run is not None
        samples = [kind == "sample" for kind in kinds]
        if sum(samples) != len(chunk):
            raise ValueError("the stored samples are not those among the lines")
        for line, kind, sample in zip(lines, kinds, samples):
            if not sample:
                self.feed(line, kind)
        run.samples.add_chunk(chunk)
        self.since += len(chunk)
        if self.since >= self.EVERY:
            self._spill()

    def _spill(self) -> None:
        assert self.intake.run is not None
        self.spill.write(self.intake.run.samples.take(), self.others)
        self.others, self.others_bytes, self.since = [], 0, 0

    def finish(self) -> None:
        if self.intake.run is not None:
            self._spill()

    def meta(self) -> dict[str, Any]:
        """What the columnar file says besides its arrays: the Samples' state, the bad lines of
        the samples (the other lines are counted again as they are read back), a cut last line."""
        run = self.intake.run
        assert run is not None
        state = run.samples.state()
        bad = run.bad_lines + state["bad"]
        return {"state": dict(state, bad=0), "bad_lines": bad, "cut_last_line": run.cut_last_line}

    def close(self) -> None:
        self.spill.close()


# Columns built by writers that have closed, by journal, for ``compact`` (a few at most: a
# process that writes runs and never compacts them does not keep their spills for ever).
_BUILT: dict[str, _Columns] = {}
_BUILT_KEPT = 4


def _keep_built(path: str, columns: _Columns) -> None:
    key = os.path.realpath(path)
    if key in _BUILT:
        _BUILT.pop(key).close()
    _BUILT[key] = columns
    while len(_BUILT) > _BUILT_KEPT:
        _BUILT.pop(next(iter(_BUILT))).close()


def compact(path: str | os.PathLike[str]) -> str | None:
    """The run at ``path`` has ended: write its columnar form beside it (``columnar.py``) and
    return that file's path. The columns come from the run's writer when it wrote them in this
    process, else from reading the journal. None, and nothing written, when the journal has no
    end record (cut short, or still being written): readers then read the journal."""
    path = os.fspath(path)
    built = _BUILT.pop(os.path.realpath(path), None)
    if built is not None and built.written != os.path.getsize(path):  # the journal changed since
        built.close()
        built = None
    try:
        if built is None:
            if not path.endswith(".gz") and not _ends_with_end_record(path):
                return None  # cut short or still being written: not worth reading through
            built = _columns_of_journal(path)
        if not built.ended or built.intake.run is None:
            return None
        meta = dict(built.meta(), journal=columnar.fingerprint(path))
        return columnar.assemble(built.spill, path, meta, built.intake.run.samples.sizes())
    except OSError:  # no room beside the journal, say: readers read the journal
        return None
    finally:
        if built is not None:
            built.close()


def _ends_with_end_record(path: str) -> bool:
    """Whether the journal's last line is an end record (read from its tail alone)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        tail = os.pread(handle.fileno(), min(size, 1 << 16), max(0, size - (1 << 16)))
    record = _parse(tail.rstrip(b"\n").rsplit(b"\n", 1)[-1])
    return record is not None and record.get("type") == "end"


def _columns_of_journal(path: str) -> _Columns:
    """The columns of a journal no writer built them for in this process, read chunk by chunk."""
    built = _Columns(path)
    handle, read = _open(path)
    try:
        pending = b""
        while True:
            try:
                chunk = read(Follower.CHUNK)
            except (OSError, EOFError):  # a compressed file cut short
                chunk = b""
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                built.feed(line)
        if pending:
            built.feed(pending, last=True)
        built.finish()
    except BaseException:
        built.close()
        raise
    finally:
        handle.close()
    return built


class _Discard(list):  # type: ignore[type-arg]
    """A list that keeps nothing: ``load`` needs the run, not the records one by one."""

    def append(self, item: Any) -> None:
        pass


def probe_fields() -> dict[str, Any]:
    """The header's ``fields`` and ``scale``, from the probes that produce the readings."""
    from ..probes import cpu, gpu, process  # here: a reader never needs psutil

    return fields_header(cpu.SYSTEM_FIELDS, cpu.SYSTEM_SCALE, process.PROC_FIELDS, process.PROC_SCALE,
                         gpu.GPU_FIELDS, gpu.GPU_SCALE, gpu.GPU_PROC_FIELDS, gpu.GPU_PROC_SCALE,
                         gpu.GPU_DIGITS)


def _dumps(record: Any) -> bytes:
    try:
        return orjson.dumps(record, default=str)
    except orjson.JSONEncodeError:  # an integer over 64 bits: the standard library writes it
        return json.dumps(record, separators=(",", ":"), allow_nan=False, default=str).encode()


class RunWriter:
    """Appends records, one flushed line each, so a crash loses at most the line being written.

    Samples given as the probes return them (named fields) are written in the compact schema-2
    layout whose field lists the header declares (``fields``: from the probes unless given).
    """

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any],
                 fields: dict[str, Any] | None = None):
        self.path = str(path)
        self._lock = threading.Lock()
        # 0o664 filtered by the user's umask: never executable, and never writable by others
        # even under umask 0 (another user could otherwise rewrite what a run recorded).
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o664)
        self.closed = False
        self._written = 0
        try:  # a new run at this path: the columns of the run it replaces are not its own
            os.unlink(columnar.path_for(self.path))
        except OSError:
            pass
        try:
            self._columns: _Columns | None = _Columns(self.path)
        except OSError:  # no room for the spill: the run is recorded all the same
            self._columns = None
        declared = fields or probe_fields()
        self._encoder = Encoder(declared["fields"], declared["scale"], declared.get("digits"))
        self.write({"type": "header", "format": FORMAT, "schema": SCHEMA, **header, **declared})

    def write(self, record: dict[str, Any]) -> None:
        if record.get("type") == "sample" and "sys" not in record:
            encoded = self._encoder.encode(record)
            data = _dumps(encoded) + b"\n"
            self._commit(data, lambda columns: columns.feed(data[:-1], "sample", encoded=encoded))
            return
        self.write_line(record)

    def write_line(self, record: dict[str, Any]) -> None:
        """Write a record as it is (a sample already in the compact layout, say)."""
        data = _dumps(record) + b"\n"
        self._commit(data, lambda columns: columns.feed(data[:-1], record.get("type")))

    def write_records(self, records: Sequence[dict[str, Any] | bytes], chunk: Chunk | None = None) -> None:
        """Several records in file order, in one write; a record given as bytes is a sample line
        already in the schema-2 layout. ``chunk``: the values of the samples among them
        (``devicewatch merge`` encodes its samples a block at a time from arrays), from which
        their columns are made instead of decoding their lines again."""
        if not records:
            return
        lines, kinds, encoded = [], [], []
        for record in records:
            if isinstance(record, bytes):
                if not record.startswith(SAMPLE_PREFIX):
                    raise ValueError("a line given as bytes must be a sample")
                lines.append(record)
                kinds.append("sample")
                encoded.append(None)
            else:
                mine = record.get("type") == "sample" and "sys" not in record
                if mine:
                    record = self._encoder.encode(record)
                lines.append(_dumps(record))
                kinds.append(record.get("type"))
                encoded.append(record if mine else None)

        def feed(columns: _Columns) -> None:
            if chunk is not None:
                columns.feed_chunk(lines, kinds, chunk)
                return
            for line, kind, values in zip(lines, kinds, encoded):
                columns.feed(line, kind, encoded=values)

        self._commit(b"\n".join(lines) + b"\n", feed)

    def _commit(self, data: bytes, feed: Callable[[_Columns], None]) -> None:
        """Append DATA (whole lines) to the journal and FEED the columns being built from it."""
        with self._lock:
            if self.closed:
                return
            self._append(data)
            if self._columns is not None:
                try:
                    feed(self._columns)
                except Exception:  # noqa: BLE001 - the columns are a copy: they never stop the journal
                    self._drop_columns()

    def _append(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            self._written += written
            view = view[written:]

    def _drop_columns(self) -> None:
        if self._columns is not None:
            self._columns.close()
            self._columns = None

    def close(self) -> None:
        """Close the journal; its columns wait for ``compact``, which the end of a run calls."""
        with self._lock:
            if not self.closed:
                self.closed = True
                os.close(self._fd)
                if self._columns is not None:
                    try:
                        self._columns.finish()
                        self._columns.written = self._written
                        _keep_built(self.path, self._columns)
                        self._columns = None
                    except Exception:  # noqa: BLE001 - compact reads the journal instead
                        self._drop_columns()
