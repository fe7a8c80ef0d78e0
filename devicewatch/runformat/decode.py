"""The decoders of sample lines and records into ``Chunk``s of arrays, derived from the sample
table (``schema.COLUMNS``): the chunked one for lines exactly in the writer's form, the
record-by-record one for any other (schema 1, MIG readings, damage) and for the writer's own
records. Both give the same arrays for the same samples.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import orjson

from .schema import NUMBER, PLAIN, SAMPLE_LINE, SPANS, TIME, V1_FIELDS, Chunk, flat


def v1_to_rows(record: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 sample in the schema-2 layout, values exact and buffered times absolute."""
    named = flat(record)
    out: dict[str, Any] = {"t": record["t"], "cpu": record.get("cpu") or [], "cpu_total": record.get("cpu_total"),
                           "sys": [named.get(f) for f in V1_FIELDS["sys"]]}
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
    for column in PLAIN[2:]:  # after t and cpu: each by its name, as schema 1 named every field
        out[column.line_key] = record.get(column.probe_key)
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


def _gpu_matrix(gpu_rows: list[Any], gpus: int, width: int) -> np.ndarray:
    gpu_rows = [r if isinstance(r, list) else [] for r in gpu_rows]
    if any(len(g) < width for r in gpu_rows for g in r if isinstance(g, list)):  # trailing nulls trimmed
        gpu_rows = [[g + [None] * (width - len(g)) if isinstance(g, list) and len(g) < width else g
                     for g in r] for r in gpu_rows]
    return _matrix(gpu_rows, (gpus, width)) if gpus else np.full((len(gpu_rows), 0, width), np.nan)


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




def _per_core_rows(rows: list[Any], width: int, dtype: str) -> np.ndarray:
    """Per-core lists of records (None where a record has none) as samples × cores, NaN-padded."""
    present = [row.__class__ is list for row in rows]
    width = max(width, _widest(rows))
    if all(present):
        return _matrix(rows, (width,), dtype)
    out = np.full((len(rows), width), np.nan, dtype)
    chosen = [i for i, p in enumerate(present) if p]
    if chosen:
        out[chosen] = _matrix([rows[i] for i in chosen], (width,), dtype)
    return out


def decode_records(records: list[dict[str, Any]], fields: dict[str, list[str]], widths: dict[str, int],
                   compact: bool = True) -> Chunk:
    """Schema-2 records (or schema-1 ones in their layout, ``v1_to_rows``) as a chunk of arrays;
    ``widths``: the sizes seen before (the chunk is at least as wide)."""
    plain: dict[str, np.ndarray] = {}
    for column in PLAIN:
        key = column.line_key
        if column.codec == TIME:
            plain[column.name] = np.array([r[key] for r in records], dtype=float)
        elif column.codec == NUMBER:
            plain[column.name] = np.array([_float(r.get(key)) for r in records])
        else:
            plain[column.name] = _per_core_rows([r.get(key) for r in records], widths[column.dims[0]], column.dtype)
    groups = {}
    for group in ("sys", "proc"):
        width = len(fields[group])
        nan_row = [None] * width
        groups[group] = _matrix([r.get(group) or nan_row for r in records], (width,))
    gpu_rows = [r.get("gpu") for r in records]
    present = np.array([isinstance(r, list) for r in gpu_rows], dtype=bool)
    gpus = max(widths["gpus"], _widest(gpu_rows))
    gpu = _gpu_matrix(gpu_rows, gpus, len(fields["gpu"]))
    util = _triples([r.get("gpu_util") for r in records], 3)
    procs = _triples([r.get("gpu_procs") for r in records], len(fields["gpu_proc"]) + 1)
    host = [r.get("host") if isinstance(r.get("host"), str) else None for r in records]
    cpu_total = None if compact else np.array([_float(r.get("cpu_total")) for r in records])
    return Chunk(plain, groups["sys"], groups["proc"], present, gpu, util, procs, host, cpu_total, compact)


def _per_core_spans(spans: Any, k: int, width: int, dtype: str, required: bool) -> np.ndarray | None:
    """A per-core key's spans (None where a line has no such key) as samples × cores, or None
    where the lines that have it do not all have one length."""
    if not required and all(s is None for s in spans):   # a reading taken now and then (clocks)
        return np.full((k, width), np.nan, dtype)
    counts = _counts(spans)
    present = np.array([s is not None for s in spans], dtype=bool)
    if required and not present.all():
        return None
    lengths = set(counts[present].tolist())
    if len(lengths) > 1:
        return None
    used = lengths.pop() if lengths else 0
    out = np.full((k, max(width, used)), np.nan, dtype)
    if used:
        out[present, :used] = _numbers(spans).reshape(-1, used)
    return out


def decode_lines(lines: list[bytes], fields: dict[str, list[str]], widths: dict[str, int]) -> Chunk | None:
    """A chunk of schema-2 sample lines as arrays, or None if one is not in the writer's form
    (``SAMPLE_LINE``). ``widths``: the sizes seen before (the chunk is at least as wide)."""
    matches = [SAMPLE_LINE.fullmatch(line) for line in lines]
    if None in matches:
        return None
    spans = dict(zip(SPANS, zip(*(m.groups() for m in matches if m is not None))))
    k = len(lines)
    gpus = widths["gpus"]
    try:
        plain: dict[str, np.ndarray] = {}
        for column in PLAIN:
            span = spans[column.line_key]
            if column.codec == TIME:
                t = _numbers(span)
                if len(t) != k or np.isnan(t).any():
                    return None
                plain[column.name] = t
            elif column.codec == NUMBER:
                plain[column.name] = _numbers(s or b"null" for s in span)
            else:
                array = _per_core_spans(span, k, widths[column.dims[0]], column.dtype, column.required)
                if array is None:
                    return None
                plain[column.name] = array
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
        # What none of the lines holds (no GPU poll, no buffered or per-process readings: every
        # line of a machine without GPUs) is made empty at once, not parsed from nothing: a live
        # dashboard decodes five lines at each poll, where each array call counts.
        if not present.any():
            gpu = np.full((k, gpus, width), np.nan)
        else:
            rows = np.array([s.count(b"[") if s else 0 for s in gpu_s], dtype=np.int64)
            per_gpu = _counts(gpu_s)   # values per line: the commas inside rows and between them, plus one
            lengths = np.where(rows > 0, per_gpu // np.maximum(rows, 1), 0)
            if len(set(rows[present])) == 1 and (per_gpu[present] == rows[present] * lengths[present]).all() \
                    and (lengths[present] <= width).all():
                # Every line's rows have one length (the writer trims only the nulls common to all
                # rows): the lines of each length are parsed as one flat array.
                used = int(rows[present][0])
                gpu = np.full((k, max(gpus, used), width), np.nan)
                for length in set(lengths[present].tolist()):
                    chosen = np.flatnonzero(present & (lengths == length))
                    flat_values = _numbers(gpu_s[i].replace(b"[", b"").replace(b"]", b"") for i in chosen)
                    gpu[chosen, :used, :length] = flat_values.reshape(len(chosen), used, length)
            else:  # rows of different lengths in one line (an older writer trimmed each row)
                ragged = _ragged_gpu_rows(gpu_s, k, gpus, width)
                if ragged is None:
                    return None
                gpu = ragged
        flats = []
        for key, width in (("gpu_util", 3), ("gpu_procs", len(fields["gpu_proc"]) + 1)):
            if not any(spans[key]):
                flats.append((np.zeros((0, width)), np.zeros(0, np.int64)))
                continue
            counts = _counts(spans[key])
            if (counts % width).any():
                return None
            flats.append((_numbers(spans[key]).reshape(-1, width), np.repeat(np.arange(k), counts // width)))
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None
    names: dict[bytes | None, str | None] = {None: None}
    try:
        for span in dict.fromkeys(spans["host"]):
            if span is not None:
                names[span] = span.decode()  # no escape matches the pattern: the text as is
    except UnicodeDecodeError:
        return None
    host = [names[span] for span in spans["host"]]
    return Chunk(plain, groups["sys"], groups["proc"], present, gpu, flats[0], flats[1], host)
