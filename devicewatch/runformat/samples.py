"""A run's samples as columns: NumPy arrays decoded a chunk at a time, never a dict per sample.

A one-hour recording of 64 cores and 8 GPUs at 10 Hz holds 36,000 samples; as Python dicts
they cost hundreds of megabytes and seconds to build. Here records are decoded in chunks
straight into arrays (``t``, ``cpu`` as samples × cores, ``gpu(field)`` as samples × GPUs,
the driver's buffered utilization samples as their own ``(t, gpu, value)`` columns), so
analysis, report, export and the dashboard work on arrays and never on one dict per sample.

The columns are declared once, in ``schema.COLUMNS``: decoding (``decode.py``), joining,
trimming, selecting one node of a merged run, the accessors and the columnar file
(``columnar.py``) all follow it.

A little over 500 lines, on purpose: ``Samples`` is one object whose paths (lines and records
pending, blocks, columns made when first read, widths, a node's selection) share its state;
cut in two, each half would reach into the other's.
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Callable, Iterator

import numpy as np
import orjson

from .. import nanmath
from .decode import decode_lines, decode_records, v1_to_rows
from .header import Header, Host
from .percent import PERCENT, percent_to_float, whole_percents
from .schema import (
    BY_NAME,
    COLUMNS,
    DIM_BOUND,
    FAMILY_HOST,
    FAMILY_TIME,
    GROUP_COLUMN,
    NUMBER,
    PER_CORE_COLUMNS,
    PLAIN,
    ROW,
    UTIL,
    V1_FIELDS,
    Chunk,
    Column,
    valid_sample,
)

CHUNK = 4096  # samples decoded into arrays at a time: bounds the Python objects alive at once
# Flushes a column's new rows wait to be joined until it is read: a column nobody reads (a
# followed run's GPU columns on a machine without GPUs) is joined with all the others this often.
JOIN_EVERY = 64


class Samples:
    """Every sample of a run as columns; row ``i`` of each row column is sample ``i``.

    ``t`` (s), ``cpu`` (samples × cores, %), ``cpu_total``, ``sys(field)``, ``proc(field)``,
    ``gpu(field)`` (samples × GPUs), ``gpu_present`` (whether the sample had GPU readings),
    ``recorder_cpu``, ``watcher_cpu``; the driver's buffered utilization samples as
    ``util_t``, ``util_gpu``, ``util_value`` with ``util_buffered`` (samples × GPUs) saying
    which samples carried some; per-process GPU use as ``procs(field)`` with ``procs_t`` and
    ``procs_gpu``. Memory values are bytes whatever the file stored. ``COLUMNS`` lists them.

    ``keep`` bounds the rows kept (the newest ``keep`` to twice as many), for a view that follows
    a run for days; ``total`` counts every row ever added, so a reader can tell which rows are new.
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
        # The sizes after the row axis (``schema.DIM_BOUND``): cores, GPUs, cores with a clock reading.
        self.widths = dict.fromkeys(DIM_BOUND, 0)
        self.cores = host.cpu_count
        self.gpus = len(host.gpus)
        self.keep = keep
        self._layout: tuple[tuple[tuple[str, int], ...], list[tuple[str, Column, tuple[int, ...]]],
                            dict[str, tuple[Column, tuple[int, ...]]]] | None = None
        self.host_labels: list[str] = []   # a merged run's hosts; ``host`` holds indexes into it
        self.total = 0          # rows ever added (kept or dropped)
        self._pending: list[dict[str, Any]] = []
        self._lines: list[bytes] = []    # schema-2 sample lines not decoded yet (``add_line``)
        self.bad = 0                     # of those, lines that were not samples (the reader counts them)
        self._blocks: list[dict[str, np.ndarray]] = []
        self._cols: dict[str, np.ndarray] = self._empty()
        self._unjoined: dict[str, list[np.ndarray]] = {}   # by key: rows flushed after ``_cols[key]``
        self._flushes_unjoined = 0   # flushes since every column was joined
        # Columns made when first asked for: a node's rows of a merged run, per-core percents
        # stored as bytes (the columnar file).
        self._later: dict[str, Callable[[], Any]] = {}
        self._percent: np.ndarray | None = None
        # Each GPU's ``util`` series with the rows it was made from: the dashboard's model and
        # the analysis both ask for it (a day of 8 GPUs: 0.4 s each time).
        self._util: dict[int, tuple[tuple[int, int], tuple[np.ndarray, np.ndarray]]] = {}

    # -- the layout --------------------------------------------------------------------------

    @property
    def cores(self) -> int:
        return self.widths["cores"]

    @cores.setter
    def cores(self, value: int) -> None:
        self.widths["cores"] = value

    @property
    def gpus(self) -> int:
        return self.widths["gpus"]

    @gpus.setter
    def gpus(self, value: int) -> None:
        self.widths["gpus"] = value

    def sizes(self) -> dict[str, int]:
        return dict(self.widths)

    def layout(self) -> list[tuple[str, Column, tuple[int, ...]]]:
        """Every array of these samples: its key, its column and its shape after the row axis
        (made again only when a width changed: a live run's every poll asks for it)."""
        widths = tuple(self.widths.items())
        if self._layout is None or self._layout[0] != widths:
            sizes = self.sizes()
            layout = [(key, column, tuple(sizes[d] for d in column.dims))
                      for column in COLUMNS for key in column.keys(self.fields)]
            self._layout = (widths, layout, {key: (column, shape) for key, column, shape in layout})
        return self._layout[1]

    def _shape_of(self) -> dict[str, tuple[Column, tuple[int, ...]]]:
        """``layout`` by key: each array's column and shape after the row axis."""
        self.layout()
        assert self._layout is not None
        return self._layout[2]

    def _empty(self) -> dict[str, np.ndarray]:
        return {key: np.zeros((0, *shape), column.dtype) for key, column, shape in self.layout()}

    # -- building --------------------------------------------------------------------------

    def add(self, record: dict[str, Any]) -> None:
        """A sample record as read (schema 1 or 2) or as the writer encoded it."""
        if self._lines:  # rows stay in the order they came
            self._flush_lines()
        self._pending.append(record if self.compact else v1_to_rows(record))
        if len(self._pending) >= CHUNK:
            self._flush_pending()

    def _flush_pending(self) -> None:
        if self._pending:
            self._blocks.append(self._block(decode_records(self._pending, self.fields, self.widths, self.compact)))
            self.total += len(self._pending)
            self._pending = []

    def add_line(self, line: bytes) -> None:
        """A schema-2 sample line as read, decoded later with the others of its chunk."""
        if self._pending:  # rows stay in the order they came
            self._flush_pending()
        self._lines.append(line)
        if len(self._lines) >= CHUNK:
            self._flush_lines()

    def _flush_lines(self) -> None:
        if not self._lines:
            return
        lines, self._lines = self._lines, []
        decoded = decode_lines(lines, self.fields, self.widths)
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
            if not isinstance(record, dict) or not valid_sample(record):
                self.bad += 1
                continue
            records.append(record)
        if records:
            self._blocks.append(self._block(decode_records(records, self.fields, self.widths)))
            self.total += len(records)

    def add_chunk(self, chunk: Chunk) -> None:
        """Samples given as their lines store them, in file order: the columns that reading
        those lines would give, made straight from the values."""
        self._flush_lines()  # what came before, first
        self._flush_pending()
        if len(chunk):
            self._blocks.append(self._block(chunk))
            self.total += len(chunk)

    def _block(self, chunk: Chunk) -> dict[str, np.ndarray]:
        """One chunk's columns (bytes, absolute times, one array per field) from its arrays as read."""
        for column in PER_CORE_COLUMNS:
            dim = column.dims[0]
            self.widths[dim] = max(self.widths[dim], chunk.plain[column.name].shape[1])
        self.gpus = max(self.gpus, chunk.gpu.shape[1])
        sizes = self.sizes()
        t = chunk.t
        k = len(t)
        host = np.array([_host_index(self.host_labels, label) for label in chunk.host], dtype=np.int16)
        block: dict[str, np.ndarray] = {}
        for column in PLAIN:
            block[column.name] = _widen(chunk.plain[column.name].astype(column.dtype, copy=False), column, sizes)
        cpu = block["cpu"]
        cpu_total = np.full(k, np.nan) if chunk.cpu_total is None else chunk.cpu_total
        missing = np.isnan(cpu_total)
        if missing.any() and self.cores:
            cpu_total[missing] = np.round(nanmath.nanmean(cpu[missing], axis=1), 1)
        block["cpu_total"] = cpu_total
        for group in ("sys", "proc"):
            block.update(_by_field(group, self.fields[group], getattr(chunk, group) * self.scale[group]))
        block["gpu_present"] = chunk.present
        gpu = _widen(chunk.gpu, BY_NAME["gpu"], sizes)
        gpu = gpu * self.scale["gpu"] if self.gpus else gpu
        block.update(_by_field("gpu", self.fields["gpu"], gpu.astype(BY_NAME["gpu"].dtype)))
        # Buffered driver samples: flat (gpu, time, value) triples per sample, in file order.
        values, owner = chunk.util
        if len(values):   # (none on a machine without GPUs: nothing to check)
            gpu_index = values[:, 0]
            ok = (gpu_index >= 0) & (gpu_index < self.gpus) & (gpu_index == np.floor(gpu_index))
            values, owner = values[ok], owner[ok]
        block["util_gpu"] = values[:, 0].astype(np.int16)
        block["util_t"] = np.round(t[owner] + values[:, 1] / 1000.0, 4) if chunk.util_offsets else values[:, 1]
        block["util_value"] = values[:, 2]
        block["util_host"] = host[owner]  # a merged run's node of each buffered sample
        buffered = np.zeros((k, self.gpus), dtype=bool)
        buffered[owner, block["util_gpu"]] = True
        block["util_buffered"] = buffered
        # Per-process GPU use: flat (gpu, pid, mem, util) per sample.
        values, owner = chunk.procs
        if len(values):
            ok = (values[:, 0] >= 0) & (values[:, 0] < max(self.gpus, 1) + 1024)
            values, owner = values[ok], owner[ok]
        block["procs_t"] = t[owner]
        block["procs_gpu"] = values[:, 0].astype(np.int16)
        block.update(_by_field("procs", self.fields["gpu_proc"],
                               (values[:, 1:] * self.scale["gpu_proc"]).astype(BY_NAME["procs"].dtype)))
        block["procs_host"] = host[owner]
        block["host"] = host
        return block

    def flush(self) -> None:
        """Decode what is pending; each column's new rows are joined to it when it is next read
        (``_joined``), every column's when old rows are dropped."""
        self._flush_lines()
        self._flush_pending()
        if not self._blocks:
            return
        self._materialize()
        # A followed run's poll adds a few rows to forty-odd columns, of which a live view reads
        # a dozen: joining each at every poll was a third of the poll.
        for block in self._blocks:
            for key, array in block.items():
                self._unjoined.setdefault(key, []).append(array)
        self._blocks = []
        self._flushes_unjoined += 1
        if self._flushes_unjoined >= JOIN_EVERY:   # a column never read holds a bounded list
            self._join_all()
        self._percent = None
        self._later.pop(PERCENT, None)
        # Kept rows are trimmed to ``keep`` once there are twice as many: a followed run's poll
        # joins a few new rows to them, and a trim at every poll copied every column once more.
        if self.keep is not None and len(self._joined("t")) > 2 * self.keep:
            self._join_all()
            joined = self._cols
            rows = len(joined["t"]) - self.keep
            cut = float(joined["t"][rows])
            newer = {family: joined[time] >= cut for family, time in FAMILY_TIME.items() if family != ROW}
            for key, column, _ in self.layout():
                if column.family == ROW:
                    joined[key] = joined[key][rows:].copy()
                else:
                    joined[key] = joined[key][newer[column.family]]

    def _joined(self, key: str) -> np.ndarray:
        """Column ``key`` with the rows flushed since it was last read, as wide as the layout."""
        array = self._cols[key]
        parts = self._unjoined.pop(key, None)
        if parts is None:   # no rows since (the widths grow only with new rows: every column gets some)
            return array
        column, shape = self._shape_of()[key]
        depth = 1 + len(shape)   # a part as wide as the layout needs no padding (nearly always)
        sizes = self.sizes()
        pieces = [part if part.shape[1:depth] == shape else _widen(part, column, sizes) for part in [array, *parts]]
        del parts  # the peak is one copy of one column
        array = self._cols[key] = np.concatenate(pieces)
        return array

    def _join_all(self) -> None:
        self._materialize()
        for key, _, _ in self.layout():
            self._joined(key)
        self._flushes_unjoined = 0

    def take(self) -> dict[str, np.ndarray]:
        """The columns decoded so far, leaving none behind (``total`` still counts them): the
        columnar form is built a chunk at a time while a run is written."""
        self.flush()
        self._join_all()
        taken, self._cols = self._cols, self._empty()
        self._percent = None
        self._later.pop(PERCENT, None)
        return taken

    # -- the columnar file -------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the columns alone do not say: widths, a merged run's hosts, rows ever added."""
        return {"cores": self.cores, "gpus": self.gpus, "widths": dict(self.widths),
                "host_labels": list(self.host_labels), "total": self.total, "bad": self.bad}

    @classmethod
    def from_columns(cls, header: Header, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> Samples:
        """Samples whose columns are ``arrays`` (memory-mapped from the columnar file), checked
        against the layout; ``cpu`` may be whole percents in bytes (``core_percent``), made
        into ``cpu`` when first read. ValueError if anything does not fit."""
        samples = cls(header)
        widths, labels = state.get("widths"), state.get("host_labels")
        if not isinstance(widths, dict) or set(widths) != set(DIM_BOUND) \
                or any(type(n) is not int or n < 0 for n in widths.values()) or not isinstance(labels, list) \
                or not all(isinstance(x, str) for x in labels) or type(state.get("total")) is not int \
                or type(state.get("bad")) is not int:
            raise ValueError("the columns' state is damaged")
        samples.widths, samples.host_labels = dict(widths), labels
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
        return self._joined(key)

    def __getattr__(self, name: str) -> np.ndarray:
        """A column that is not a field group's by its name (``samples.t``, ``samples.util_gpu``,
        ``samples.cpu_mhz``…: every one ``COLUMNS`` declares); a field group's columns are read
        by field (``samples.gpu("util")``)."""
        column = BY_NAME.get(name)
        if column is None or column.group is not None:
            raise AttributeError(name)
        return self._col(name)

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

    def of_host(self, label: str, host: Host | None = None) -> Samples:
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
        bounds = {"cores": min(cores, self.cores) if self.cores else cores, "gpus": min(gpus, self.gpus)}
        twin.widths = {dim: bounds[bound] if dim == bound else min(self.widths[dim], bounds[bound])
                       for dim, bound in DIM_BOUND.items()}
        twin.gpu_mem_total = self.gpu_mem_total[:twin.gpus]
        twin.host_labels, twin.keep, twin.bad = [label], None, 0
        twin._pending, twin._lines, twin._blocks, twin._cols, twin._percent = [], [], [], {}, None
        twin._unjoined, twin._flushes_unjoined = {}, 0
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
        for column in PLAIN[2:]:  # after t and cpu: the numbers and per-core lists a probe may leave out
            if column.codec == NUMBER:
                value = num(self._col(column.name)[i])
                if value is not None:
                    out[column.probe_key] = value
            elif not np.isnan(row := self._col(column.name)[i]).all():
                out[column.probe_key] = [num(c) for c in row]
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


def _widen(array: np.ndarray, column: Column, sizes: dict[str, int]) -> np.ndarray:
    """Pad a block decoded before more cores or GPUs were seen."""
    wider = [sizes[d] - n for d, n in zip(column.dims, array.shape[1:])]
    if not any(wider):
        return array   # as wide as the others already (nearly always)
    pad = [(0, 0), *((0, w) for w in wider)] + [(0, 0)] * (array.ndim - 1 - len(wider))  # a field group's axis
    return np.pad(array, pad, constant_values=column.fill)
