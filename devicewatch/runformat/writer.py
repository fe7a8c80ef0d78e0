"""The run file's one writer, and the columnar form it builds while it writes.

``RunWriter`` appends records, one flushed line each, so a crash loses at most the line being
written; samples given as the probes return them are encoded as the sample table's
``Encoder`` encodes them (``encode.SampleEncoder``), and their columns are made from the
encoded values as they go (``_Columns``), spilled a chunk at a time. ``compact``, called
when a run ends, joins them into the columnar form beside the journal (``columnar.py``), or
builds them by reading the journal when no writer in this process did.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any
from collections.abc import Callable

import orjson

from . import columnar
from .runfile import (
    FORMAT,
    SCHEMA,
    Follower,
    _Discard,
    _Intake,
    _open,
    _parse,
)
from .encode import SampleEncoder
from .records import Typed
from .schema import SAMPLE_PREFIX, Chunk, fields_header, valid_sample


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
            if encoded is not None and self.intake.run.samples.compact and valid_sample(encoded):
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

    Each record reaches the journal at once; the columns are made from ``FEED_EVERY`` records
    at a time: made one record at a time, a tenth of a second apart, each found the code and
    data it needs out of the processor's caches, and cost the recorder's sampling thread
    several times what it does in a batch. They are read only once the writer has closed.
    """

    FEED_EVERY = 128

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any],
                 fields: dict[str, Any] | None = None):
        self.path = str(path)
        self._lock = threading.Lock()
        # 0o664 filtered by the user's umask: never executable, and never writable by others
        # even under umask 0 (another user could otherwise rewrite what a run recorded).
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o664)
        self.closed = False
        self._written = 0
        self._unfed: list[Callable[[_Columns], None]] = []   # records written, not yet in the columns
        try:  # a new run at this path: the columns of the run it replaces are not its own
            os.unlink(columnar.path_for(self.path))
        except OSError:
            pass
        try:
            self._columns: _Columns | None = _Columns(self.path)
        except OSError:  # no room for the spill: the run is recorded all the same
            self._columns = None
        declared = fields or probe_fields()
        self._encoder = SampleEncoder(declared["fields"], declared["scale"], declared.get("digits"))
        self.write({"type": "header", "format": FORMAT, "schema": SCHEMA, **header, **declared})

    def write(self, record: dict[str, Any] | Typed) -> None:
        """Write one record: a typed one as its ``to_json``, a sample as the encoder stores it."""
        if not isinstance(record, dict):
            record = record.to_json()
        if record.get("type") == "sample" and "sys" not in record:
            encoded = self._encoder.encode(record)
            data = _dumps(encoded) + b"\n"
            self._commit(data, lambda columns: columns.feed(data[:-1], "sample", encoded=encoded))
            return
        self.write_line(record)

    def write_line(self, record: dict[str, Any]) -> None:
        """Write a record as it is (a sample already in the compact layout, say)."""
        data, kind = _dumps(record) + b"\n", record.get("type")
        self._commit(data, lambda columns: columns.feed(data[:-1], kind))

    def write_records(self, records: Sequence[dict[str, Any] | Typed | bytes], chunk: Chunk | None = None) -> None:
        """Several records in file order, in one write; a record given as bytes is a sample line
        already in the schema-2 layout. ``chunk``: the values of the samples among them
        (``devicewatch merge`` encodes its samples a block at a time from arrays), from which
        their columns are made instead of decoding their lines again."""
        if not records:
            return
        lines: list[bytes] = []
        kinds: list[Any] = []
        encoded: list[dict[str, Any] | None] = []
        for record in records:
            if isinstance(record, bytes):
                if not record.startswith(SAMPLE_PREFIX):
                    raise ValueError("a line given as bytes must be a sample")
                lines.append(record)
                kinds.append("sample")
                encoded.append(None)
            else:
                if not isinstance(record, dict):
                    record = record.to_json()
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
        """Append DATA (whole lines) to the journal now, and FEED the columns being built from it
        with the records after it (``FEED_EVERY``)."""
        with self._lock:
            if self.closed:
                return
            self._append(data)
            if self._columns is not None:
                self._unfed.append(feed)
                if len(self._unfed) >= self.FEED_EVERY:
                    self._feed()

    def _feed(self) -> None:
        """The records written since the columns were last fed, into the columns in file order."""
        unfed, self._unfed = self._unfed, []
        if self._columns is not None:
            try:
                for feed in unfed:
                    feed(self._columns)
            except Exception:
                self._drop_columns()

    def _append(self, data: bytes) -> None:
        written = os.write(self._fd, data)
        self._written += written
        if written == len(data):
            return
        view = memoryview(data)[written:]
        while view:
            written = os.write(self._fd, view)
            self._written += written
            view = view[written:]

    def _drop_columns(self) -> None:
        self._unfed = []
        if self._columns is not None:
            self._columns.close()
            self._columns = None

    def close(self) -> None:
        """Close the journal; its columns wait for ``compact``, which the end of a run calls."""
        with self._lock:
            if not self.closed:
                self.closed = True
                os.close(self._fd)
                self._feed()
                if self._columns is not None:
                    try:
                        self._columns.finish()
                        self._columns.written = self._written
                        _keep_built(self.path, self._columns)
                        self._columns = None
                    except Exception:
                        self._drop_columns()
