"""The sample table: every column of a run's samples declared once, and the line it is stored in.

Each ``Column`` says what a reader gets (its NumPy dtype, the sizes after the row axis, its
row family) and where it comes from: the key of the sample line that stores it (``wire``),
the key of the probe's record it is read from (``probe``) and how its value is written
(``codec``). From ``COLUMNS`` come the order of a sample line's keys and the pattern that
cuts a chunk of lines into arrays (``SAMPLE_LINE``), the writer's encoder (``Encoder``), the
decoders (``decode.py``), the columns a run's ``Samples`` hold and the columnar file's layout
(``columnar.py``), and ``devicewatch merge``'s block encoder.

A plain column (a number per sample, ``NUMBER``; or one whole number per core, ``PER_CORE``)
needs nothing but its line here: every codec handles it. The compound ones (``sys`` and
``proc`` by the header's field lists, a row per GPU, the driver's buffered samples, the
processes on the GPUs, a merged run's host) each have their own step in each codec, named by
their ``codec``. Which fields a ``sys``/``proc``/``gpu``/``gpu_proc`` row holds is not known
here: the writer takes the lists from the probes and puts them in the header (``fields``,
``scale``, ``digits``); the reader takes them from the header.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Schema 1 wrote every field by name in every sample; these are the fields it had, so that a
# schema-1 sample decodes into the same columns as a schema-2 one (values kept exact).
V1_FIELDS = {"sys": ("freq_mhz", "mem_used", "mem_total", "mem_swap_used", "mem_swap_total"),
             "proc": ("cpu", "rss", "threads", "count"),
             "gpu": ("util", "mem_util", "mem_used", "mem_total", "power_w", "temp_c", "sm_clock_mhz",
                     "sm_active", "sm_occupancy", "tensor_active", "dram_active", "pcie_tx", "pcie_rx"),
             "gpu_proc": ("pid", "mem", "util", "mem_util")}

# The row families: a column has one row per sample, per buffered driver sample, or per
# reading of a process on a GPU. Each family has its own time and host column.
ROW, UTIL, PROCS = "row", "util", "procs"
FAMILY_TIME = {ROW: "t", UTIL: "util_t", PROCS: "procs_t"}
FAMILY_HOST = {ROW: "host", UTIL: "util_host", PROCS: "procs_host"}

# The sizes after the row axis, and what bounds each on one node of a merged run.
DIM_BOUND = {"cores": "cores", "gpus": "gpus", "clock_cores": "cores"}

# How a column's value is written in a sample line.
TIME = "time"          # ``t``: the row's time, as the recorder took it
NUMBER = "number"      # one number per sample (``digits`` decimals, or as given); the key left out when missing
PER_CORE = "per_core"  # one whole number per core: ``[46,100]``; left out when missing unless required
GROUP = "group"        # the header's field group ``group`` in its order: ``[2596,622,0,0]``
GPU_ROWS = "gpu_rows"  # a row per GPU of ``fields.gpu``: ``[[87,41,2048],[90,40,2048]]``
BUFFERED = "buffered"  # the driver's buffered samples: flat ``gpu, dt ms, value`` triples
GPU_PROCS = "gpu_procs"  # processes on the GPUs: flat ``gpu, *fields.gpu_proc`` tuples
TEXT = "text"          # a merged run's node: ``"node 1"``
DERIVED = "derived"    # not stored in a schema-2 line: made by the reader

_NUM = rb"(-?[0-9][0-9.eE+-]*)"
_LIST = rb"\[([-0-9.eE+,nul]*)\]"
# Each codec's value as the writer writes it, one capture group (``SAMPLE_LINE``).
PATTERNS = {TIME: _NUM, NUMBER: _NUM, PER_CORE: _LIST, GROUP: rb"(?:\[([-0-9.eE+,nul]*)\]|null)",
            GPU_ROWS: rb"\[((?:\[[-0-9.eE+,nul]*\],?)*)\]",
            BUFFERED: _LIST, GPU_PROCS: _LIST, TEXT: rb'"([^"\\\x00-\x1f]*)"'}


@dataclass(frozen=True)
class Column:
    """One column of a run's samples: its NumPy dtype, its row family, the sizes after the row
    axis (widened when a later sample shows more), and, for a header field group (``sys``,
    ``proc``, ``gpu``, ``gpu_proc``), one array per field of the group. ``wire``: the sample
    line's key it is stored under; ``probe``: the probe record's key it is read from;
    ``codec``: how it is written; ``digits``: a ``NUMBER``'s decimals (None: as given);
    ``required``: in every sample line."""

    name: str
    dtype: str
    family: str = ROW
    dims: tuple[str, ...] = ()
    group: str | None = None
    wire: str | None = None
    codec: str = DERIVED
    probe: str | None = None
    digits: int | None = None
    required: bool = False
    note: str = field(default="", compare=False)

    @property
    def fill(self) -> Any:
        """What stands for a value not recorded (a core or GPU a sample did not have)."""
        kind = np.dtype(self.dtype).kind
        return False if kind == "b" else (-1 if kind == "i" else np.nan)

    @property
    def line_key(self) -> str:
        """The sample line's key of a column stored under one (every plain column)."""
        if self.wire is None:
            raise ValueError(f"{self.name} is not stored in a sample line")
        return self.wire

    @property
    def probe_key(self) -> str:
        """The probe record's key of a column read from one (every plain column)."""
        if self.probe is None:
            raise ValueError(f"{self.name} is not read from a probe")
        return self.probe

    def keys(self, fields: dict[str, list[str]]) -> list[str]:
        """The names its arrays are kept under: the column's, or ``gpu.util``, ``gpu.mem_used``…"""
        if self.group is None:
            return [self.name]
        return [f"{self.name}.{field}" for field in fields[self.group]]


def _plain(name: str, dtype: str, codec: str, dims: tuple[str, ...] = (), digits: int | None = None,
           required: bool = False, note: str = "") -> Column:
    """A column stored under its own name, read from the probe's record by its own name."""
    return Column(name, dtype, dims=dims, wire=name, codec=codec, probe=name, digits=digits, required=required,
                  note=note)


# In the order of a sample line's keys (each key where its first column is).
COLUMNS = (
    _plain("t", "f8", TIME, required=True, note="s since the run started"),
    _plain("cpu", "f4", PER_CORE, ("cores",), required=True, note="% busy per core"),
    Column("cpu_total", "f8", note="% of all cores: stored in schema 1, the mean of cpu since"),
    Column("sys", "f8", group="sys", wire="sys", codec=GROUP, required=True, note="the machine: frequency, memory"),
    Column("proc", "f8", group="proc", wire="proc", codec=GROUP, probe="proc", required=True,
           note="the workload's process tree"),
    Column("gpu_present", "?", wire="gpu", codec=GPU_ROWS, probe="gpus", note="the sample holds a GPU poll"),
    # GPU readings and per-process use in single precision: a day of 8 GPUs is 0.4 GB less,
    # and every stored value (whole MiB, tenths of a percent) is exact in it or near enough.
    Column("gpu", "f4", dims=("gpus",), group="gpu", wire="gpu", codec=GPU_ROWS, probe="gpus"),
    Column("util_buffered", "?", dims=("gpus",), wire="gpu_util", codec=BUFFERED,
           note="the sample carried buffered samples of that GPU"),
    Column("util_t", "f8", UTIL, wire="gpu_util", codec=BUFFERED, note="the driver's buffered utilization samples"),
    Column("util_gpu", "i2", UTIL, wire="gpu_util", codec=BUFFERED),
    Column("util_value", "f8", UTIL, wire="gpu_util", codec=BUFFERED),
    Column("procs_t", "f8", PROCS, wire="gpu_procs", codec=GPU_PROCS, note="processes on the GPUs"),
    Column("procs_gpu", "i2", PROCS, wire="gpu_procs", codec=GPU_PROCS),
    Column("procs", "f4", PROCS, group="gpu_proc", wire="gpu_procs", codec=GPU_PROCS),
    _plain("gpus_t", "f8", NUMBER, note="a slow GPU poll: the sample time it was asked for"),
    _plain("recorder_cpu", "f8", NUMBER, digits=1, note="the recorder's own CPU, % of one core"),
    _plain("watcher_cpu", "f8", NUMBER, digits=1, note="a dashboard following the run, % of one core"),
    _plain("cpu_mhz", "f4", PER_CORE, ("clock_cores",), note="each core's clock, MHz, once a second where offered"),
    Column("host", "i2", wire="host", codec=TEXT, probe="host", note="index into host_labels; -1 in one node's run"),
    Column("util_host", "i2", UTIL, wire="host", codec=TEXT),
    Column("procs_host", "i2", PROCS, wire="host", codec=TEXT),
)
BY_NAME = {column.name: column for column in COLUMNS}
GROUP_COLUMN = {column.group: column.name for column in COLUMNS if column.group}  # "gpu_proc" -> "procs"
# The columns every codec handles alike, in line order.
PLAIN = tuple(column for column in COLUMNS if column.codec in (TIME, NUMBER, PER_CORE))
PER_CORE_COLUMNS = tuple(column for column in PLAIN if column.codec == PER_CORE)

# MIG readings (GPM per GPU instance, rare) are kept by name in the line after the processes,
# and not decoded into columns.
MIG_KEY, MIG_AFTER = "gpu_mig", "gpu_procs"


def _line_keys() -> tuple[str, ...]:
    keys = list(dict.fromkeys(column.wire for column in COLUMNS if column.wire is not None))
    keys.insert(keys.index(MIG_AFTER) + 1, MIG_KEY)
    return tuple(keys)


LINE_KEYS = _line_keys()
REQUIRED = frozenset(column.wire for column in COLUMNS if column.required)
CODEC_OF = {column.wire: column.codec for column in COLUMNS if column.wire is not None}
SAMPLE_PREFIX = b'{"type":"sample",'
# A sample exactly as the writer writes it: such lines are decoded a chunk at a time, the
# spans of each array cut out by this pattern and all the numbers of one kind parsed in one
# call (one flat JSON array), which skips a dict and a list per sample. Any other line (MIG
# readings, a host name with an escape, damage) sends its chunk through the record-by-record path.
SPANS = tuple(key for key in LINE_KEYS if key != MIG_KEY)  # SAMPLE_LINE's groups
SAMPLE_LINE = re.compile(rb'\{"type":"sample"' + b"".join(
    (rb',"%s":%s' if key in REQUIRED else rb'(?:,"%s":%s)?') % (key.encode(), PATTERNS[CODEC_OF[key]])
    for key in SPANS) + rb"\}")


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


def compact(value: Any, scale: int, digits: int = 1) -> Any:
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


def flat(record: dict[str, Any]) -> dict[str, Any]:
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


def valid_sample(record: dict[str, Any]) -> bool:
    """A sample whose time is a finite number and whose per-core list, if any, is a list: any
    other damage is read as missing values, this is a bad line."""
    t: Any = record.get("t")
    return t.__class__ in (int, float) and math.isfinite(t) and record.get("cpu", []).__class__ is list


def encode_plain(column: Column, value: Any) -> Any:
    """A plain column's value as its line stores it; None where the key is left out."""
    if column.codec == PER_CORE:
        if not isinstance(value, list):
            return [] if column.required else None
        return [round(c) if isinstance(c, (int, float)) and math.isfinite(c) else None for c in value]
    if value is None:
        return None
    return value if column.digits is None else compact(value, 1, column.digits)


class Encoder:
    """Turns a sample as the probes return it (named fields, nested) into a schema-2 record."""

    def __init__(self, fields: dict[str, list[str]], scale: dict[str, list[int]],
                 digits: dict[str, list[int]] | None = None):
        self.fields = fields
        self.scale = {k: scale.get(k, [1] * len(f)) for k, f in fields.items()}
        self.digits = {k: (digits or {}).get(k, [1] * len(f)) for k, f in fields.items()}

    def _row(self, group: str, values: dict[str, Any]) -> list[Any]:
        return [compact(values.get(name), s, d)
                for name, s, d in zip(self.fields[group], self.scale[group], self.digits[group])]

    def encode(self, record: dict[str, Any]) -> dict[str, Any]:
        t = record["t"]
        values: dict[str, Any] = {}
        for column in PLAIN:
            value = encode_plain(column, record.get(column.probe_key))
            if value is not None:
                values[column.line_key] = value
        values["sys"] = self._row("sys", flat(record))
        proc = record.get(BY_NAME["proc"].probe_key)
        values["proc"] = self._row("proc", proc) if isinstance(proc, dict) else None
        gpus = record.get(BY_NAME["gpu"].probe_key)
        if isinstance(gpus, list):
            entries = [g if isinstance(g, dict) else {} for g in gpus]
            values["gpu"] = trim_common_nulls([self._row("gpu", g) for g in entries])
            util = [x for g, e in enumerate(entries) for stamp, value in (e.get("util_samples") or ())
                    for x in (g, round((stamp - t) * 1000), compact(value, 1))]
            if util:
                values["gpu_util"] = util
            procs = [x for g, e in enumerate(entries) for p in (e.get("procs") or ()) if isinstance(p, dict)
                     for x in (g, *self._row("gpu_proc", p))]
            if procs:
                values["gpu_procs"] = procs
            mig = [{"gpu": g, **instance} for g, e in enumerate(entries) for instance in (e.get("mig") or ())
                   if isinstance(instance, dict)]
            if mig:
                values[MIG_KEY] = mig
        host = record.get(BY_NAME["host"].probe_key)
        if isinstance(host, str):  # a merged run: which node's machine this is
            values["host"] = host
        # In LINE_KEYS order, the order the chunked decoder's pattern expects.
        return {"type": "sample", **{key: values[key] for key in LINE_KEYS if key in values}}


@dataclass
class Chunk:
    """Samples as their lines store them (the header's units and field order, NaN where a line
    has null or nothing), one row per sample: what the decoders make of a chunk of lines or
    records, and what a writer that encodes samples from arrays (``devicewatch merge``) hands
    over with its lines, so their columns are made without decoding the lines again."""

    plain: dict[str, np.ndarray]           # each ``PLAIN`` column by its key: ``t``, ``cpu`` (samples × cores)…
    sys: np.ndarray                        # samples × the header's ``sys`` fields
    proc: np.ndarray                       # samples × ``proc`` fields (a row of NaN: ``null``)
    present: np.ndarray                    # the sample holds a GPU poll (``gpu``)
    gpu: np.ndarray                        # samples × GPUs × ``gpu`` fields
    util: tuple[np.ndarray, np.ndarray]    # ``gpu_util`` as (gpu, time, value) rows, and each row's sample
    procs: tuple[np.ndarray, np.ndarray]   # ``gpu_procs`` as (gpu, *fields) rows, and each row's sample
    host: list[str | None]                 # each sample's ``host``
    cpu_total: np.ndarray | None = None    # schema 1 stored it
    util_offsets: bool = True              # the buffered samples' times as ms from ``t`` (schema 2), or absolute

    @property
    def t(self) -> np.ndarray:
        return self.plain["t"]

    def __len__(self) -> int:
        return len(self.plain["t"])
