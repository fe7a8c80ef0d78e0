"""Samples as columns: the compact schema-2 sample encoding and its decoding into NumPy arrays.

A one-hour recording of 64 cores and 8 GPUs at 10 Hz holds 36,000 samples; as Python dicts
they cost hundreds of megabytes and seconds to build. Here records are decoded in chunks
straight into arrays (``t``, ``cpu`` as samples × cores, ``gpu(field)`` as samples × GPUs,
the driver's buffered utilization samples as their own ``(t, gpu, value)`` columns), so
analysis, report, export and the dashboard work on arrays and never on one dict per sample.

The columns are declared once, in ``COLUMNS``: building, joining, trimming, selecting one
node of a merged run, the accessors and the columnar file (``columnar.py``) all follow it.
The field lists of a sample are not known here: the writer takes them from the probes and
puts them in the header (``fields`` and ``scale``); the reader takes them from the header.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import orjson

from .. import nanmath
from .header import Header, Host

# Schema 1 wrote every field by name in every sample; these are the fields it had, so that a
# schema-1 sample decodes into the same columns as a schema-2 one (values kept exact).
V1_FIELDS = {"sys": ("freq_mhz", "mem_used", "mem_total", "mem_swap_used", "mem_swap_total"),
             "proc": ("cpu", "rss", "threads", "count"),
             "gpu": ("util", "mem_util", "mem_used", "mem_total", "power_w", "temp_c", "sm_clock_mhz",
                     "sm_active", "sm_occupancy", "tensor_active", "dram_active", "pcie_tx", "pcie_rx"),
             "gpu_proc": ("pid", "mem", "util", "mem_util")}

CHUNK = 4096  # samples decoded into arrays at a time: bounds the Python objects alive at once

# The row families: a column has one row per sample, per buffered driver sample, or per
# reading of a process on a GPU. Each family has its own time and host column.
ROW, UTIL, PROCS = "row", "util", "procs"
FAMILY_TIME = {ROW: "t", UTIL: "util_t", PROCS: "procs_t"}
FAMILY_HOST = {ROW: "host", UTIL: "util_host", PROCS: "procs_host"}


@dataclass(frozen=True)
class Column:
    """One column of a run's samples: its NumPy dtype, its row family, the sizes after the row
    axis (``cores`` and ``gpus`` grow when a later sample shows more), and, for a header field
    group (``sys``, ``proc``, ``gpu``, ``gpu_proc``), one array per field of the group."""

    name: str
    dtype: str
    family: str = ROW
    dims: tuple[str, ...] = ()
    group: str | None = None

    @property
    def fill(self) -> Any:
        """What stands for a value not recorded (a core or GPU a sample did not have)."""
        kind = np.dtype(self.dtype).kind
        return False if kind == "b" else (-1 if kind == "i" else np.nan)

    def keys(self, fields: dict[str, list[str]]) -> list[str]:
        """The names its arrays are kept under: the column's, or ``gpu.util``, ``gpu.mem_used``…"""
        if self.group is None:
            return [self.name]
        return [f"{self.name}.{field}" for field in fields[self.group]]


COLUMNS = (
    Column("t", "f8"),                                  # s since the run started
    Column("cpu", "f4", dims=("cores",)),               # % per core
    Column("cpu_total", "f8"),                          # % of all cores
    Column("sys", "f8", group="sys"),                   # the machine: frequency, memory
    Column("proc", "f8", group="proc"),                 # the workload's process tree
    Column("gpu_present", "?"),                         # the sample holds a GPU poll
    # GPU readings and per-process use in single precision: a day of 8 GPUs is 0.4 GB less,
    # and every stored value (whole MiB, tenths of a percent) is exact in it or near enough.
    Column("gpu", "f4", dims=("gpus",), group="gpu"),
    Column("util_buffered", "?", dims=("gpus",)),       # the sample carried buffered samples of that GPU
    Column("recorder_cpu", "f8"),
    Column("watcher_cpu", "f8"),
    Column("gpus_t", "f8"),
    Column("host", "i2"),                               # index into host_labels; -1 in one node's run
    Column("util_t", "f8", UTIL),                       # the driver's buffered utilization samples
    Column("util_gpu", "i2", UTIL),
    Column("util_value", "f8", UTIL),
    Column("util_host", "i2", UTIL),
    Column("procs_t", "f8", PROCS),                     # processes on the GPUs
    Column("procs_gpu", "i2", PROCS),
    Column("procs", "f4", PROCS, group="gpu_proc"),
    Column("procs_host", "i2", PROCS),
)
BY_NAME = {column.name: column for column in COLUMNS}
GROUP_COLUMN = {column.group: column.name for column in COLUMNS if column.group}  # "gpu_proc" -> "procs"


def fields_header(sys_fields: tuple[str, ...], sys_scale: dict[str, int], proc_fields: tuple[str, ...],
                  proc_scale: dict[str, int], gpu_fields: tuple[str, ...], gpu_scale: dict[str, int],
                  gpu_proc_fields: tuple[str, ...], gpu_proc_scale: dict[str, int],
                  digits: dict[str, int] | None = None) -> dict[str, Any]:
    """The header's ``fields``, ``scale`` and ``digits``: the order of each per-device array, its
    units, and the decimals each field is stored with (1 unless ``digits`` says otherwise)."""
    groups = {"sys": (sys_fields, sys_scale), "proc": (proc_fields, proc_scale),
              "gpu": (gpu_fields, gpu_scale), "gpu_proc": (gpu_proc_fields, gpu_proc_scale)}
    digits = digits or {}
    return {"fields": {k: list(f) for k, (f, _) in groups.items()},
            "scale": {k: [int(s.get(name, 1)) for name in f] for k, (f, s) in groups.items()},
            "digits": {k: [int(digits.get(name, 1)) for name in f] for k, (f, _) in groups.items()}}


# A schema-2 sample's keys in the order the writer writes them, each with the pattern of its
# value as the writer writes it (one capture group), or None for a key that the chunked
# decoder leaves to the record decoder (MIG readings); required keys
# are in every sample. The writer's order and the chunked decoder's pattern both come from here.
_NUM = rb"(-?[0-9][0-9.eE+-]*)"
_LIST = rb"\[([-0-9.eE+,nul]*)\]"
SAMPLE_KEYS: tuple[tuple[str, bytes | None, bool], ...] = (
    ("t", _NUM, True), ("cpu", _LIST, True), ("sys", _LIST, True),
    ("proc", rb"(?:\[([-0-9.eE+,nul]*)\]|null)", True),
    ("gpu", rb"\[((?:\[[-0-9.eE+,nul]*\],?)*)\]", False), ("gpu_util", _LIST, False), ("gpu_procs", _LIST, False),
    ("gpu_mig", None, False), ("gpus_t", _NUM, False), ("recorder_cpu", _NUM, False), ("watcher_cpu", _NUM, False),
    ("host", rb'"([^"\\\x00-\x1f]*)"', False))
SAMPLE_PREFIX = b'{"type":"sample",'
# A sample exactly as the writer writes it: such lines are decoded a chunk at a time, the
# spans of each array cut out by this pattern and all the numbers of one kind parsed in one
# call (one flat JSON array), which skips a dict and a list per sample. Any other line (MIG
# readings, a host name with an escape, damage) sends its chunk through the record-by-record path.
SAMPLE_LINE = re.compile(rb'\{"type":"sample"' + b"".join(
    (rb',"%s":%s' if required else rb'(?:,"%s":%s)?') % (key.encode(), pattern)
    for key, pattern, required in SAMPLE_KEYS if pattern is not None) + rb"\}")
SPANS = tuple(key for key, pattern, _ in SAMPLE_KEYS if pattern is not None)  # SAMPLE_LINE's groups


def _compact(value: Any, scale: int, digits: int = 1) -> Any:
    """A value as stored: divided by its scale and rounded (integers stay integers)."""
    if value is None or value.__class__ is bool or not isinstance(value, (int, float)):
        return None
    if scale != 1:
        return round(value / scale)
    if value.__class__ is int:
        return value
    if not math.isfinite(value):
        return None
    value = round(value, digits)
    return int(value) if value.is_integer() else value


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """``{"mem": {"used": 1}}`` → ``{"mem_used": 1}``: nested probe readings by one name each."""
    out = dict(record)
    for key, value in record.items():
        if isinstance(value, dict):
            for inner, v in value.items():
                out[f"{key}_{inner}"] = v
    return out


def trim_trailing_nulls(row: list[Any]) -> list[Any]:
    """A row without its trailing nulls: fields a GPU never gives (GPM before Hopper, or between
    two GPM windows) cost nothing in the file; the reader pads the row back."""
    end = len(row)
    while end and row[end - 1] is None:
        end -= 1
    return row[:end] if end < len(row) else row


def trim_common_nulls(rows: list[list[Any]]) -> list[list[Any]]:
    """The GPUs' rows of one sample without the trailing fields that are null in every row, so
    all rows of a line keep one length (the reader parses a chunk of such lines in one go)."""
    if not rows:
        return rows
    keep = max(len(trim_trailing_nulls(row)) for row in rows)
    return [row[:keep] for row in rows] if keep < len(rows[0]) else rows


class Encoder:
    """Turns a sample as the probes return it (named fields, nested) into a schema-2 record."""

    def __init__(self, fields: dict[str, list[str]], scale: dict[str, list[int]],
                 digits: dict[str, list[int]] | None = None):
        self.fields = fields
        self.scale = {k: scale.get(k, [1] * len(f)) for k, f in fields.items()}
        self.digits = {k: (digits or {}).get(k, [1] * len(f)) for k, f in fields.items()}

    def _row(self, group: str, values: dict[str, Any]) -> list[Any]:
        return [_compact(values.get(name), s, d)
                for name, s, d in zip(self.fields[group], self.scale[group], self.digits[group])]

    def encode(self, record: dict[str, Any]) -> dict[str, Any]:
        t = record["t"]
        values: dict[str, Any] = {"t": t}
        cpu = record.get("cpu")
        values["cpu"] = [round(c) if isinstance(c, (int, float)) and math.isfinite(c) else None
                         for c in cpu] if isinstance(cpu, list) else []
        values["sys"] = self._row("sys", _flat(record))
        proc = record.get("proc")
        values["proc"] = self._row("proc", proc) if isinstance(proc, dict) else None
        gpus = record.get("gpus")
        if isinstance(gpus, list):
            entries = [g if isinstance(g, dict) else {} for g in gpus]
            values["gpu"] = trim_common_nulls([self._row("gpu", g) for g in entries])
            util = [x for g, e in enumerate(entries) for stamp, value in (e.get("util_samples") or ())
                    for x in (g, round((stamp - t) * 1000), _compact(value, 1))]
            if util:
                values["gpu_util"] = util
            procs = [x for g, e in enumerate(entries) for p in (e.get("procs") or ()) if isinstance(p, dict)
                     for x in (g, *self._row("gpu_proc", p))]
            if procs:
                values["gpu_procs"] = procs
            mig = [{"gpu": g, **instance} for g, e in enumerate(entries) for instance in (e.get("mig") or ())
                   if isinstance(instance, dict)]
            if mig:  # GPM per MIG instance: rare, kept by name
                values["gpu_mig"] = mig
            if record.get("gpus_t") is not None:  # a slow GPU poll: when it was asked for
                values["gpus_t"] = record["gpus_t"]
        for key in ("recorder_cpu", "watcher_cpu"):
            if record.get(key) is not None:
                values[key] = _compact(record[key], 1)
        if isinstance(record.get("host"), str):  # a merged run: which node's machine this is
            values["host"] = record["host"]
        # In SAMPLE_KEYS order, the order the chunked decoder's pattern expects.
        return {"type": "sample", **{key: values[key] for key, _, _ in SAMPLE_KEYS if key in values}}


def _v1_to_rows(record: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 sample in the schema-2 layout, values exact and buffered times absolute."""
    flat = _flat(record)
    out: dict[str, Any] = {"t": record["t"], "cpu": record.get("cpu") or [], "cpu_total": record.get("cpu_total"),
                           "sys": [flat.get(f) for f in V1_FIELDS["sys"]]}
    proc = record.get("proc")
    out["proc"] = [proc.get(f) for f in V1_FIELDS["proc"]] if isinstance(proc, dict) else None
    gpus = record.get("gpus")
    if isinstance(gpus, list):
        entries = [g if isinstance(g, dict) else {} for g in gpus]
        out["gpu"] = [[g.get(f) for f in V1_FIELDS["gpu"]] for g in entries]
        out["gpu_util"] = [x for g, e in enumerate(entries) for pair in (e.get("util_samples") or ())
                           if isinstance(pair, list) and len(pair) == 2 for x in (g, *pair)]
        out["gpu_procs"] = [x for g, e in enumerate(entries) for p in (e.get("procs") or ()) if isinstance(p, dict)
                            for x in (g, *(p.get(f) for f in V1_FIELDS["gpu_proc"]))]
    for key in ("recorder_cpu", "watcher_cpu", "gpus_t"):
        out[key] = record.get(key)
    if isinstance(record.get("host"), str):
        out["host"] = record["host"]
    return out


def _float(value: Any) -> float:
    return value if value.__class__ in (int, float) else math.nan


def _matrix(rows: list[Any], shape: tuple[int, ...], dtype: Any = float) -> np.ndarray:
    """``rows`` as an array of ``(len(rows),) + shape``; a row of another shape or type is NaN."""
    count = len(rows) * int(np.prod(shape))
    try:  # the common case, every row complete and numeric: one pass in C
        level: Any = rows
        for width in shape:
            if set(map(len, level)) - {width}:
                raise ValueError("ragged")
            level = list(itertools.chain.from_iterable(level))
        return np.fromiter(level, dtype=dtype, count=count).reshape((len(rows),) + shape)
    except (TypeError, ValueError):
        pass
    try:
        array = np.array(rows, dtype=dtype)
        if array.shape == (len(rows),) + shape:
            return array
    except (TypeError, ValueError):
        pass
    out = np.full((len(rows),) + shape, np.nan, dtype=dtype)
    for i, row in enumerate(rows):
        try:
            value = np.array(row, dtype=dtype)
        except (TypeError, ValueError):
            continue
        if value.shape == shape:
            out[i] = value
        elif value.ndim == len(shape) and value.ndim:  # fewer cores or GPUs than the widest sample
            index = tuple(slice(0, min(a, b)) for a, b in zip(value.shape, shape))
            out[(i,) + index] = value[index]
    return out


def _widest(rows: list[Any]) -> int:
    return max((len(r) for r in rows if isinstance(r, list)), default=0)


class _Decoded(NamedTuple):
    """A chunk of samples as read (stored units, flat buffered samples), before ``Samples._block``."""

    t: np.ndarray
    cpu: np.ndarray
    cpu_total: np.ndarray
    groups: dict[str, np.ndarray]       # "sys", "proc": samples × fields
    present: np.ndarray
    gpu: np.ndarray                     # samples × GPUs × fields
    util: tuple[np.ndarray, np.ndarray]  # (gpu, time, value) rows and the sample of each
    procs: tuple[np.ndarray, np.ndarray]  # (gpu, *fields) rows and the sample of each
    scalars: dict[str, np.ndarray]
    host: np.ndarray                    # index into ``labels``; -1: one node's run
    cores: int                          # the widths the chunk showed (at least those before it)
    gpus: int
    labels: list[str]                   # a merged run's hosts, those before the chunk first


class Stored(NamedTuple):
    """Schema-2 samples as their lines store them (the header's units and field order, buffered
    samples' times as offsets in ms, NaN where a line has null or nothing), one row per sample:
    what a chunk of their lines parses into. A writer that encodes samples from arrays
    (``devicewatch merge``) hands these over with its lines, so their columns are made without
    decoding the lines again (``Samples.add_stored``)."""

    t: np.ndarray                         # samples
    cpu: np.ndarray                       # samples × cores
    sys: np.ndarray                       # samples × the header's ``sys`` fields
    proc: np.ndarray                      # samples × ``proc`` fields (a row of NaN: ``null``)
    present: np.ndarray                   # the sample holds a GPU poll (``gpu``)
    gpu: np.ndarray                       # samples × GPUs × ``gpu`` fields
    util: tuple[np.ndarray, np.ndarray]   # ``gpu_util`` as (gpu, offset ms, value) rows, and each row's sample
    procs: tuple[np.ndarray, np.ndarray]  # ``gpu_procs`` as (gpu, *fields) rows, and each row's sample
    scalars: dict[str, np.ndarray]        # ``recorder_cpu``, ``watcher_cpu``, ``gpus_t``
    host: list[str | None]                # each sample's ``host``


# Per-core readings as whole percents in bytes (``Samples.core_percent``): what marks a missing
# one, and the key the bytes wait under until asked for.
MISSING_PERCENT = 255
PERCENT = "cpu%"
PERCENT_BLOCK = 1 << 16


class Samples:
    """Every sample of a run as columns; row ``i`` of each row column is sample ``i``.

    ``t`` (s), ``cpu`` (samples × cores, %), ``cpu_total``, ``sys(field)``, ``proc(field)``,
    ``gpu(field)`` (samples × GPUs), ``gpu_present`` (whether the sample had GPU readings),
    ``recorder_cpu``, ``watcher_cpu``; the driver's buffered utilization samples as
    ``util_t``, ``util_gpu``, ``util_value`` with ``util_buffered`` (samples × GPUs) saying
    which samples carried some; per-process GPU use as ``procs(field)`` with ``procs_t`` and
    ``procs_gpu``. Memory values are bytes whatever the file stored. ``COLUMNS`` lists them.

    ``keep`` bounds the rows kept (the newest), for a view that follows a run for days;
    ``total`` counts every row ever added, so a reader can tell which rows are new.
    """

    def __init__(self, header: Header, keep: int | None = None):
        self.compact = header.schema >= 2
        if self.compact:
            self.fields = {k: list(header.fields.get(k, V1_FIELDS[k])) for k in V1_FIELDS}
            self.scale = {k: np.array([*header.scale.get(k, ())][:len(f)] + [1.0] * max(0, len(f) - len(header.scale.get(k, ()))),
                                      dtype=float)
                          for k, f in self.fields.items()}
        else:
            self.fields = {k: list(v) for k, v in V1_FIELDS.items()}
            self.scale = {k: np.ones(len(v)) for k, v in V1_FIELDS.items()}
        host = header.host
        self.mem_total = math.nan if host.mem_total is None else host.mem_total
        self.gpu_mem_total = [math.nan if g.mem_total is None else g.mem_total for g in host.gpus]
        self.cores = host.cpu_count
        self.gpus = len(host.gpus)
        self.keep = keep
        self.host_labels: list[str] = []   # a merged run's hosts; ``host`` holds indexes into it
        self.total = 0          # rows ever added (kept or dropped)
        self._pending: list[dict[str, Any]] = []
        self._lines: list[bytes] = []    # schema-2 sample lines not decoded yet (``add_line``)
        self.bad = 0                     # of those, lines that were not samples (the reader counts them)
        self._blocks: list[dict[str, np.ndarray]] = []
        self._cols: dict[str, np.ndarray] = self._empty()
        # Columns made when first asked for: a node's rows of a merged run, per-core percents
        # stored as bytes (the columnar file).
        self._later: dict[str, Callable[[], np.ndarray]] = {}
        self._percent: np.ndarray | None = None
        # Each GPU's ``util`` series with the rows it was made from: the dashboard's model and
        # the analysis both ask for it (a day of 8 GPUs: 0.4 s each time).
        self._util: dict[int, tuple[tuple[int, int], tuple[np.ndarray, np.ndarray]]] = {}

    # -- the layout --------------------------------------------------------------------------

    def sizes(self) -> dict[str, int]:
        return {"cores": self.cores, "gpus": self.gpus}

    def layout(self) -> list[tuple[str, Column, tuple[int, ...]]]:
        """Every array of these samples: its key, its column and its shape after the row axis."""
        sizes = self.sizes()
        return [(key, column, tuple(sizes[d] for d in column.dims))
                for column in COLUMNS for key in column.keys(self.fields)]

    def _empty(self) -> dict[str, np.ndarray]:
        return {key: np.zeros((0, *shape), column.dtype) for key, column, shape in self.layout()}

    # -- building --------------------------------------------------------------------------

    def add(self, record: dict[str, Any]) -> None:
        self._pending.append(record if self.compact else _v1_to_rows(record))
        if len(self._pending) >= CHUNK:
            self._flush_pending()

    def _flush_pending(self) -> None:
        if self._pending:
            self._blocks.append(self._block(self._decode(self._pending)))
            self.total += len(self._pending)
            self._pending = []

    def add_line(self, line: bytes) -> None:
        """A schema-2 sample line as read, decoded later with the others of its chunk."""
        self._lines.append(line)
        if len(self._lines) >= CHUNK:
            self._flush_lines()

    def _flush_lines(self) -> None:
        if not self._lines:
            return
        lines, self._lines = self._lines, []
        decoded = _decode_lines(lines, self.fields, self.cores, self.gpus, self.host_labels)
        if decoded is not None:
            self._blocks.append(self._block(decoded))
            self.total += len(lines)
            return
        records = []  # a line not in the writer's own form: each decoded by the JSON parser
        for line in lines:
            try:
                record = orjson.loads(line)
            except (orjson.JSONDecodeError, RecursionError):
                record = None
            t = record.get("t") if isinstance(record, dict) else None
            if type(t) not in (int, float) or not math.isfinite(t) or record.get("cpu", []).__class__ is not list:
                self.bad += 1
                continue
            records.append(record)
        if records:
            self._blocks.append(self._block(self._decode(records)))
            self.total += len(records)

    def add_stored(self, stored: Stored) -> None:
        """Samples given as their lines store them, in file order: the columns that reading
        those lines would give (``Stored``), made straight from the values."""
        self._flush_lines()  # what came before, first
        self._flush_pending()
        k = len(stored.t)
        if not k:
            return
        cores = max(self.cores, stored.cpu.shape[1])
        gpus = max(self.gpus, stored.gpu.shape[1])
        cpu = np.full((k, cores), np.nan, np.float32)
        cpu[:, :stored.cpu.shape[1]] = stored.cpu
        gpu = np.full((k, gpus, len(self.fields["gpu"])), np.nan)
        gpu[:, :stored.gpu.shape[1]] = stored.gpu
        labels = list(self.host_labels)
        host = np.array([_host_index(labels, label) for label in stored.host], dtype=np.int16)
        self._blocks.append(self._block(_Decoded(
            np.asarray(stored.t, float), cpu, np.full(k, np.nan), {"sys": stored.sys, "proc": stored.proc},
            stored.present, gpu, stored.util, stored.procs, stored.scalars, host, cores, gpus, labels)))
        self.total += k

    def _decode(self, records: list[dict[str, Any]]) -> _Decoded:
        k = len(records)
        t = np.array([r["t"] for r in records], dtype=float)
        cpu_rows = [r.get("cpu") for r in records]
        cores = max(self.cores, _widest(cpu_rows))
        cpu = _matrix(cpu_rows, (cores,), np.float32)
        if self.compact:
            cpu_total = np.full(k, np.nan)
        else:
            cpu_total = np.array([_float(r.get("cpu_total")) for r in records])
        groups = {}
        for group in ("sys", "proc"):
            width = len(self.fields[group])
            nan_row = [None] * width
            groups[group] = _matrix([r.get(group) or nan_row for r in records], (width,))
        gpu_rows = [r.get("gpu") for r in records]
        present = np.array([isinstance(r, list) for r in gpu_rows], dtype=bool)
        gpus = max(self.gpus, _widest(gpu_rows))
        gpu = _gpu_matrix(gpu_rows, gpus, len(self.fields["gpu"]))
        util = _triples([r.get("gpu_util") for r in records], 3)
        procs = _triples([r.get("gpu_procs") for r in records], len(self.fields["gpu_proc"]) + 1)
        scalars = {key: np.array([_float(r.get(key)) for r in records]) for key in ("recorder_cpu", "watcher_cpu", "gpus_t")}
        labels = list(self.host_labels)
        host = np.array([_host_index(labels, r.get("host")) for r in records], dtype=np.int16)
        return _Decoded(t, cpu, cpu_total, groups, present, gpu, util, procs, scalars, host, cores, gpus, labels)

    def _block(self, chunk: _Decoded) -> dict[str, np.ndarray]:
        """One chunk's columns (bytes, absolute times, one array per field) from its arrays as read."""
        self.cores, self.gpus, self.host_labels = chunk.cores, chunk.gpus, chunk.labels
        t, cpu, cpu_total, host = chunk.t, chunk.cpu, chunk.cpu_total, chunk.host
        k = len(t)
        missing = np.isnan(cpu_total)
        if missing.any() and self.cores:
            cpu_total[missing] = np.round(nanmath.nanmean(cpu[missing], axis=1), 1)
        block: dict[str, np.ndarray] = {"t": t, "cpu": cpu, "cpu_total": cpu_total}
        for group in ("sys", "proc"):
            block.update(_by_field(group, self.fields[group], chunk.groups[group] * self.scale[group]))
        block["gpu_present"] = chunk.present
        gpu = chunk.gpu * self.scale["gpu"] if self.gpus else chunk.gpu
        block.update(_by_field("gpu", self.fields["gpu"], gpu.astype(BY_NAME["gpu"].dtype)))
        # Buffered driver samples: flat (gpu, time, value) triples per sample, in file order.
        values, owner = chunk.util
        gpu_index = values[:, 0]
        ok = (gpu_index >= 0) & (gpu_index < self.gpus) & (gpu_index == np.floor(gpu_index))
        values, owner = values[ok], owner[ok]
        block["util_gpu"] = values[:, 0].astype(np.int16)
        block["util_t"] = np.round(t[owner] + values[:, 1] / 1000.0, 4) if self.compact else values[:, 1]
        block["util_value"] = values[:, 2]
        block["util_host"] = host[owner]  # a merged run's node of each buffered sample
        buffered = np.zeros((k, self.gpus), dtype=bool)
        buffered[owner, block["util_gpu"]] = True
        block["util_buffered"] = buffered
        # Per-process GPU use: flat (gpu, pid, mem, util) per sample.
        values, owner = chunk.procs
        ok = (values[:, 0] >= 0) & (values[:, 0] < max(self.gpus, 1) + 1024)
        values, owner = values[ok], owner[ok]
        block["procs_t"] = t[owner]
        block["procs_gpu"] = values[:, 0].astype(np.int16)
        block.update(_by_field("procs", self.fields["gpu_proc"],
                               (values[:, 1:] * self.scale["gpu_proc"]).astype(BY_NAME["procs"].dtype)))
        block["procs_host"] = host[owner]
        block.update(chunk.scalars)
        block["host"] = host
        return block

    def flush(self) -> None:
        """Decode what is pending and join the blocks into single arrays (dropping old rows)."""
        self._flush_lines()
        self._flush_pending()
        if not self._blocks:
            return
        self._materialize()
        blocks = [self._cols] + self._blocks
        self._blocks = []
        sizes = self.sizes()
        joined: dict[str, np.ndarray] = {}
        for key, column, _ in self.layout():
            parts = [_widen(b.pop(key), column, sizes) for b in blocks]
            joined[key] = np.concatenate(parts)
            del parts  # each column's blocks go as soon as it is joined: the peak is one copy of one column
        self._percent = None
        self._later.pop(PERCENT, None)
        if self.keep is not None and len(joined["t"]) > self.keep:
            rows = len(joined["t"]) - self.keep
            cut = float(joined["t"][rows])
            newer = {family: joined[time] >= cut for family, time in FAMILY_TIME.items() if family != ROW}
            for key, column, _ in self.layout():
                if column.family == ROW:
                    joined[key] = joined[key][rows:].copy()
                else:
                    joined[key] = joined[key][newer[column.family]]
        self._cols = joined

    def take(self) -> dict[str, np.ndarray]:
        """The columns decoded so far, leaving none behind (``total`` still counts them): the
        columnar form is built a chunk at a time while a run is written."""
        self.flush()
        self._materialize()
        taken, self._cols = self._cols, self._empty()
        self._percent = None
        self._later.pop(PERCENT, None)
        return taken

    # -- the columnar file -------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the columns alone do not say: widths, a merged run's hosts, rows ever added."""
        return {"cores": self.cores, "gpus": self.gpus, "host_labels": list(self.host_labels),
                "total": self.total, "bad": self.bad}

    @classmethod
    def from_columns(cls, header: Header, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> "Samples":
        """Samples whose columns are ``arrays`` (memory-mapped from the columnar file), checked
        against the layout; ``cpu`` may be whole percents in bytes (``core_percent``), made
        into ``cpu`` when first read. ValueError if anything does not fit."""
        samples = cls(header)
        cores, gpus, labels = state.get("cores"), state.get("gpus"), state.get("host_labels")
        if type(cores) is not int or type(gpus) is not int or cores < 0 or gpus < 0 or not isinstance(labels, list) \
                or not all(isinstance(x, str) for x in labels) or type(state.get("total")) is not int \
                or type(state.get("bad")) is not int:
            raise ValueError("the columns' state is damaged")
        samples.cores, samples.gpus, samples.host_labels = cores, gpus, labels
        samples.total, samples.bad = state["total"], state["bad"]
        expected = samples.layout()
        if set(arrays) != {key for key, _, _ in expected}:
            raise ValueError("the columns are not those of the layout")
        rows: dict[str, int] = {}
        percent = arrays["cpu"] if arrays["cpu"].dtype == np.uint8 else None
        for key, column, shape in expected:
            array = arrays[key]
            if array.dtype != (np.uint8 if array is percent else np.dtype(column.dtype)) or array.shape[1:] != shape:
                raise ValueError(f"column {key} is not of the layout")
            if rows.setdefault(column.family, array.shape[0]) != array.shape[0]:
                raise ValueError(f"column {key} has {array.shape[0]} rows, not {rows[column.family]}")
        if samples.total < rows[ROW]:
            raise ValueError("fewer rows counted than stored")
        samples._cols = {key: array for key, array in arrays.items() if array is not percent}
        if percent is not None:
            samples._later[PERCENT] = lambda: percent
            samples._later["cpu"] = lambda: percent_to_float(percent)
        return samples

    def core_percent(self) -> np.ndarray | None:
        """Per-core readings as whole percents in bytes (``MISSING_PERCENT`` where missing), a
        quarter of ``cpu``'s memory; None when some reading is not a whole percent (schema 1)."""
        if self._percent is None:
            later = self._later.pop(PERCENT, None)
            percent = later() if later is not None else whole_percents(self._col("cpu"))
            self._percent = np.zeros((0, 0), np.uint8) if percent is None else percent
        return None if self._percent.shape[0] != len(self) else self._percent

    # -- reading ---------------------------------------------------------------------------

    def _materialize(self) -> None:
        for key, _, _ in self.layout():
            if key in self._later:
                self._cols[key] = self._later.pop(key)()

    def _col(self, key: str) -> np.ndarray:
        if self._blocks or self._pending or self._lines:
            self.flush()
        if key in self._later:
            self._cols[key] = self._later.pop(key)()
        return self._cols[key]

    def columns(self) -> dict[str, np.ndarray]:
        """Every array by its key (``t``, ``cpu``, ``gpu.util``…), in ``COLUMNS`` order."""
        return {key: self._col(key) for key, _, _ in self.layout()}

    def __len__(self) -> int:
        return len(self._col("t"))

    def __bool__(self) -> bool:
        return len(self) > 0

    @property
    def dropped(self) -> int:
        """Rows no longer kept (``keep``): row ``i`` here is row ``dropped + i`` of the run."""
        return self.total - len(self)

    def of_host(self, label: str, host: Host | None = None) -> "Samples":
        """One node of a merged run: its rows, buffered samples and per-process readings as
        Samples of their own (each column selected by mask when first read, nothing decoded
        again). ``host``, the node's host object, narrows the core and GPU columns to that
        machine's."""
        self.flush()
        index = self.host_labels.index(label) if label in self.host_labels else -2
        twin = Samples.__new__(Samples)
        twin.__dict__.update(self.__dict__)
        raw = host.raw if host is not None else {}
        cores = host.cpu_count if host is not None and isinstance(raw.get("cpu_count"), int) else self.cores
        gpus = len(host.gpus) if host is not None and isinstance(raw.get("gpus"), list) else self.gpus
        twin.cores, twin.gpus = min(cores, self.cores) if self.cores else cores, min(gpus, self.gpus)
        twin.gpu_mem_total = self.gpu_mem_total[:twin.gpus]
        twin.host_labels, twin.keep, twin.bad = [label], None, 0
        twin._pending, twin._lines, twin._blocks, twin._cols, twin._percent = [], [], [], {}, None
        twin._util = {}
        masks: dict[str, np.ndarray] = {}
        sizes, gpus = twin.sizes(), twin.gpus  # the closures below hold no reference to twin: no cycle keeps it

        def mask(family: str) -> np.ndarray:
            if family not in masks:
                chosen = self._col(FAMILY_HOST[family]) == index
                if family == UTIL:  # buffered samples of GPUs the node does not have
                    chosen &= self._col("util_gpu") < gpus
                masks[family] = chosen
            return masks[family]

        def select(key: str, column: Column) -> Callable[[], np.ndarray]:
            def selected() -> np.ndarray:
                if column.name == FAMILY_HOST[column.family]:
                    return np.zeros(int(mask(column.family).sum()), np.int16)
                array = self._col(key)[mask(column.family)]
                narrow = tuple(slice(0, sizes[d]) for d in column.dims)
                return array[(slice(None), *narrow)] if narrow else array
            return selected

        twin._later = {key: select(key, column) for key, column, _ in twin.layout()}
        if PERCENT in self._later or self._percent is not None:  # the bytes, not four times as much
            def percent() -> np.ndarray | None:
                whole = self.core_percent()
                return None if whole is None else whole[mask(ROW), :sizes["cores"]]

            def cpu() -> np.ndarray:
                chosen = percent()
                return select("cpu", BY_NAME["cpu"])() if chosen is None else percent_to_float(chosen)

            twin._later[PERCENT] = percent
            twin._later["cpu"] = cpu
        twin.total = int(mask(ROW).sum())
        return twin

    def _group(self, group: str, name: str) -> np.ndarray:
        if name in self.fields[group]:
            return self._col(f"{GROUP_COLUMN[group]}.{name}")
        column = BY_NAME[GROUP_COLUMN[group]]
        rows = len(self._col(FAMILY_TIME[column.family]))
        return np.full((rows, *(self.sizes()[d] for d in column.dims)), np.nan)

    def sys(self, name: str) -> np.ndarray:
        """A system reading by name (``freq_mhz``, ``mem_used``…), NaN where not recorded."""
        if name == "mem_total" and name not in self.fields["sys"]:
            return np.full(len(self), self.mem_total)
        return self._group("sys", name)

    def proc(self, name: str) -> np.ndarray:
        """The workload tree's reading by name (``cpu``, ``rss``, ``threads``, ``count``)."""
        return self._group("proc", name)

    def gpu(self, name: str) -> np.ndarray:
        """A GPU reading by name as samples × GPUs; ``mem_total`` comes from the header in schema 2."""
        if name == "mem_total" and name not in self.fields["gpu"]:
            totals = (self.gpu_mem_total + [math.nan] * self.gpus)[:self.gpus]
            return np.where(self.gpu_present[:, None], np.array(totals, float)[None, :], np.nan)
        return self._group("gpu", name)

    def procs(self, name: str) -> np.ndarray:
        return self._group("gpu_proc", name)

    @property
    def gpu_fields(self) -> list[str]:
        names = list(self.fields["gpu"])
        return names if "mem_total" in names else names + ["mem_total"]

    def util(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """GPU ``g``'s utilization over time: the driver's buffered samples where the sample
        carried some, the polled value elsewhere, in time order."""
        made_from = (len(self.util_t), self.total)  # the rows it was made from: more as the run grows
        known = self._util.get(g)
        if known is not None and known[0] == made_from:
            return known[1]
        polled = ~self.util_buffered[:, g] & self.gpu_present if g < self.util_buffered.shape[1] else self.gpu_present
        values = self.gpu("util")[:, g] if g < self.gpus else np.full(len(self), np.nan)
        polled = polled & ~np.isnan(values)
        mine = np.flatnonzero(self.util_gpu == g)  # indexes, not a mask: two takes of a fraction of the rows
        t = np.concatenate([self.util_t[mine], self.t[polled]])
        v = np.concatenate([self.util_value[mine], values[polled]])
        ok = ~(np.isnan(t) | np.isnan(v))
        if not ok.all():
            t, v = t[ok], v[ok]
        order = np.argsort(t, kind="stable")  # polls can overlap by a sample; two sorted runs: a merge
        series = t[order], v[order]
        self._util[g] = (made_from, series)
        return series

    # -- records, for tests and small tools (never a hot path) ------------------------------

    def record(self, i: int) -> dict[str, Any]:
        """Sample ``i`` in the schema-1 layout (named fields), NaN readings left out as null."""
        def num(x: Any) -> Any:
            x = float(x)
            return None if math.isnan(x) else (int(x) if x.is_integer() and abs(x) < 2**53 else x)

        out: dict[str, Any] = {"type": "sample", "t": float(self.t[i]),
                               "cpu": [num(c) for c in self.cpu[i]], "cpu_total": num(self.cpu_total[i])}
        sys = {n: num(self.sys(n)[i]) for n in self.fields["sys"]}
        out["freq_mhz"] = sys.get("freq_mhz")
        out["mem"] = {"used": sys.get("mem_used"), "total": num(self.sys("mem_total")[i]),
                      "swap_used": sys.get("mem_swap_used"), "swap_total": sys.get("mem_swap_total")}
        proc = [self.proc(n)[i] for n in self.fields["proc"]]
        out["proc"] = None if np.isnan(proc).all() else {n: num(v) for n, v in zip(self.fields["proc"], proc)}
        if self.gpu_present[i]:
            gpus = []
            t_i = float(self.t[i])
            for g in range(self.gpus):
                entry: dict[str, Any] = {"index": g, **{n: num(self.gpu(n)[i, g]) for n in self.gpu_fields}}
                if self.util_buffered[i, g]:
                    sel = (self.util_gpu == g) & (np.abs(self.util_t - t_i) < 1e9)
                    # buffered samples belong to the poll that drained them: those since the previous poll
                    prev = float(self.t[i - 1]) if i > 0 else -math.inf
                    sel &= (self.util_t > prev) & (self.util_t <= t_i + 1e-9)
                    entry["util_samples"] = [[float(a), num(b)] for a, b in zip(self.util_t[sel], self.util_value[sel])]
                sel = (self.procs_gpu == g) & (self.procs_t == t_i)
                rows = np.stack([self.procs(n)[sel] for n in self.fields["gpu_proc"]], axis=1) \
                    if self.fields["gpu_proc"] else np.zeros((int(sel.sum()), 0))
                entry["procs"] = [{n: num(v) for n, v in zip(self.fields["gpu_proc"], row)} for row in rows]
                gpus.append(entry)
            out["gpus"] = gpus
        for key in ("recorder_cpu", "watcher_cpu", "gpus_t"):
            value = num(self._col(key)[i])
            if value is not None:
                out[key] = value
        host = int(self._col("host")[i])
        if host >= 0:
            out["host"] = self.host_labels[host]
        return out

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self.record(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self.record(index)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.record(i) for i in range(len(self)))


# The plain columns as properties (``samples.t``, ``samples.util_gpu``…); a field group's
# columns are read by name (``samples.gpu("util")``).
for _column in COLUMNS:
    if _column.group is None:
        setattr(Samples, _column.name, property(lambda self, key=_column.name: self._col(key)))
del _column


def _host_index(labels: list[str], label: Any) -> int:
    """Where ``label`` is in ``labels`` (added at the end when new); -1 for no host."""
    if not isinstance(label, str):
        return -1
    if label not in labels:
        labels.append(label)
    return labels.index(label)


def _by_field(name: str, fields: list[str], array: np.ndarray) -> dict[str, np.ndarray]:
    """A group's array (rows × … × fields) as one array per field, ``name.field``."""
    return {f"{name}.{field}": array[..., j] for j, field in enumerate(fields)}


def _gpu_matrix(gpu_rows: list[Any], gpus: int, width: int) -> np.ndarray:
    gpu_rows = [r if isinstance(r, list) else [] for r in gpu_rows]
    if any(len(g) < width for r in gpu_rows for g in r if isinstance(g, list)):  # trailing nulls trimmed
        gpu_rows = [[g + [None] * (width - len(g)) if isinstance(g, list) and len(g) < width else g
                     for g in r] for r in gpu_rows]
    return _matrix(gpu_rows, (gpus, width)) if gpus else np.full((len(gpu_rows), 0, width), np.nan)


def _widen(array: np.ndarray, column: Column, sizes: dict[str, int]) -> np.ndarray:
    """Pad a block decoded before more cores or GPUs were seen."""
    pad = [(0, 0)] + [(0, sizes[d] - n) for d, n in zip(column.dims, array.shape[1:])]
    if any(after for _, after in pad):
        return np.pad(array, pad, constant_values=column.fill)
    return array


def whole_percents(cpu: np.ndarray) -> np.ndarray | None:
    """Per-core readings as bytes (``MISSING_PERCENT`` where missing) when every one is a whole
    percent, as schema 2 stores them: a quarter of the memory, exact. None otherwise."""
    percent = np.empty(cpu.shape, np.uint8)
    for start in range(0, len(cpu), PERCENT_BLOCK):  # a block at a time: no float copy of it all
        block = cpu[start:start + PERCENT_BLOCK]
        missing = np.isnan(block)
        values = np.where(missing, 0, block)
        if ((values < 0) | (values >= MISSING_PERCENT) | (values != np.floor(values))).any():
            return None
        part = values.astype(np.uint8)
        part[missing] = MISSING_PERCENT
        percent[start:start + PERCENT_BLOCK] = part
    return percent


def percent_to_float(percent: np.ndarray) -> np.ndarray:
    """Per-core bytes back to ``cpu``'s floats, NaN where missing."""
    out = percent.astype(BY_NAME["cpu"].dtype)
    out[percent == MISSING_PERCENT] = np.nan
    return out


def _triples(lists: list[Any], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample flat lists of ``width``-tuples as one (rows, width) array, and each row's sample."""
    counts = np.array([len(x) // width if x.__class__ is list else 0 for x in lists], dtype=np.int64)
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(lists)), counts)
    if not total:
        return np.zeros((0, width)), owner
    flat = itertools.chain.from_iterable(x[: len(x) - len(x) % width] for x in lists if x.__class__ is list)
    try:
        array = np.fromiter(flat, dtype=float, count=total * width)
    except (TypeError, ValueError):
        flat = itertools.chain.from_iterable(x[: len(x) - len(x) % width] for x in lists if x.__class__ is list)
        array = np.array([_float(x) for x in flat], dtype=float)
    return array.reshape(-1, width), owner


def _numbers(spans: Any) -> np.ndarray:
    """The numbers of many comma-separated spans (None and empty spans skipped), null as NaN."""
    joined = b",".join(s for s in spans if s)
    values = orjson.loads(b"[" + joined + b"]")
    try:  # all numbers (the common case): a third faster than np.array on a list
        return np.fromiter(values, dtype=float, count=len(values))
    except TypeError:  # a null among them
        return np.array(values, dtype=float)


def _counts(spans: Any) -> np.ndarray:
    return np.array([s.count(b",") + 1 if s else 0 for s in spans], dtype=np.int64)


def _ragged_gpu_rows(gpu_s: Any, k: int, gpus: int, width: int) -> np.ndarray | None:
    """The ``gpu`` arrays of a chunk whose per-GPU rows differ in length (trailing nulls left out
    by the writer) as samples × GPUs × fields, padded with NaN: one split per line, then one flat
    parse and one scatter for the whole chunk. At least ``gpus`` GPUs wide."""
    rows = [span[1:-1].split(b"],[") if span else [] for span in gpu_s]
    per_line = np.array([len(r) for r in rows], dtype=np.int64)
    flat_rows = [row for r in rows for row in r]
    lengths = np.array([row.count(b",") + 1 if row else 0 for row in flat_rows], dtype=np.int64)
    if (lengths > width).any():
        return None
    gpu = np.full((k, max(gpus, int(per_line.max(initial=0))), width), np.nan)
    if not flat_rows:
        return gpu
    values = _numbers(flat_rows)
    line = np.repeat(np.arange(k), per_line)
    index = np.arange(len(flat_rows)) - np.repeat(np.cumsum(per_line) - per_line, per_line)
    owner = np.repeat(np.arange(len(flat_rows)), lengths)
    column = np.arange(len(values)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    gpu[line[owner], index[owner], column] = values
    return gpu


def _decode_lines(lines: list[bytes], fields: dict[str, list[str]], cores: int, gpus: int,
                  labels: list[str]) -> _Decoded | None:
    """A chunk of schema-2 sample lines as arrays, or None if one is not in the writer's form
    (``SAMPLE_LINE``). ``cores``, ``gpus`` and ``labels``: the widths and a merged run's hosts
    seen before; the chunk's own come back with its arrays."""
    matches = [SAMPLE_LINE.fullmatch(line) for line in lines]
    if None in matches:
        return None
    spans = dict(zip(SPANS, zip(*(m.groups() for m in matches))))
    k = len(lines)
    try:
        t = _numbers(spans["t"])
        counts = _counts(spans["cpu"])
        width = int(counts[0])
        if (counts != width).any() or width < cores or len(t) != k or np.isnan(t).any():
            return None
        cpu = _numbers(spans["cpu"]).astype(np.float32).reshape(k, width)
        groups = {}
        for group in ("sys", "proc"):
            width = len(fields[group])
            counts = _counts(spans[group])
            if ((counts != width) & (counts != 0)).any() or (group == "sys" and (counts == 0).any()):
                return None
            array = np.full((k, width), np.nan)
            array[counts == width] = _numbers(spans[group]).reshape(-1, width)
            groups[group] = array
        gpu_s = spans["gpu"]
        present = np.array([s is not None for s in gpu_s], dtype=bool)
        width = len(fields["gpu"])
        rows = np.array([s.count(b"[") if s else 0 for s in gpu_s], dtype=np.int64)
        per_gpu = _counts(gpu_s)   # values per line: the commas inside rows and between them, plus one
        lengths = np.where(rows > 0, per_gpu // np.maximum(rows, 1), 0)
        if present.any() and len(set(rows[present])) == 1 and (per_gpu[present] == rows[present] * lengths[present]).all() \
                and (lengths[present] <= width).all():
            # Every line's rows have one length (the writer trims only the nulls common to all
            # rows): the lines of each length are parsed as one flat array.
            used = int(rows[present][0])
            gpu = np.full((k, max(gpus, used), width), np.nan)
            for length in set(lengths[present].tolist()):
                chosen = np.flatnonzero(present & (lengths == length))
                flat = _numbers(gpu_s[i].replace(b"[", b"").replace(b"]", b"") for i in chosen)
                gpu[chosen, :used, :length] = flat.reshape(len(chosen), used, length)
        else:  # rows of different lengths in one line (an older writer trimmed each row)
            gpu = _ragged_gpu_rows(gpu_s, k, gpus, width)
            if gpu is None:
                return None
        flats = []
        for key, width in (("gpu_util", 3), ("gpu_procs", len(fields["gpu_proc"]) + 1)):
            counts = _counts(spans[key])
            if (counts % width).any():
                return None
            flats.append((_numbers(spans[key]).reshape(-1, width), np.repeat(np.arange(k), counts // width)))
        scalars = {key: _numbers(s or b"null" for s in spans[key]) for key in ("recorder_cpu", "watcher_cpu", "gpus_t")}
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None
    labels = list(labels)
    known: dict[bytes | None, int] = {None: -1}
    try:
        for span in dict.fromkeys(spans["host"]):  # in file order: indexes as the record decoder gives them
            if span is not None:
                known[span] = _host_index(labels, span.decode())  # no escape matches the pattern: the text as is
    except UnicodeDecodeError:
        return None
    host = np.array([known[span] for span in spans["host"]], dtype=np.int16)
    return _Decoded(t, cpu, np.full(k, np.nan), groups, present, gpu, flats[0], flats[1], scalars,
                    host, cpu.shape[1], gpu.shape[1], labels)
