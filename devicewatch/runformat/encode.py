"""Sample lines made from a ``Chunk`` of values a block at a time, byte for byte as the writer's
``Encoder`` writes each record: what ``devicewatch merge`` writes a day of samples with, from
the nodes' columns, without a dict per sample. Derived from the sample table like the
decoders: a plain column (``schema.PLAIN``) needs nothing here.

The values are rounded as the encoder rounds them (``as_stored``: Python's ``round``, not
NumPy's) and turned into JSON one array at a time (``rows_json``, ``scalars_json``…), whole
numbers as integers, as the encoder's values come out of ``orjson``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import orjson

from .schema import (
    BY_NAME,
    LINE_KEYS,
    MIG_KEY,
    NUMBER,
    PER_CORE,
    PLAIN,
    TIME,
    Chunk,
    Encoder,
    compact,
    flat,
    trim_common_nulls,
)

PLAIN_BY_KEY = {column.wire: column for column in PLAIN}


class SampleEncoder(Encoder):
    """The sample table's ``Encoder`` made once for a run's field lists: each field's place in
    the probe's record, its scale and decimals, and the line's key order worked out up front,
    the common values (an int, a finite float) stored without a call. The recorder encodes
    every sample on its sampling thread, ten a second: the table's encoder, which looks all
    of that up again for each value, was the largest part of writing one. The records it
    makes are the table's, key for key and value for value (``Encoder.encode``)."""

    def __init__(self, fields: dict[str, list[str]], scale: dict[str, list[int]],
                 digits: dict[str, list[int]] | None = None):
        super().__init__(fields, scale, digits)
        self._specs = {group: tuple(zip(names, self.scale[group], self.digits[group]))
                       for group, names in fields.items()}
        # A ``sys`` field is found where ``schema.flat`` finds it: ``mem_used`` in ``mem``.
        self._sys = tuple((name, tuple((name[:i], name[i + 1:]) for i, c in enumerate(name) if c == "_"), s, d)
                          for name, s, d in self._specs["sys"])
        plain = {column.line_key: (column.probe_key, column.line_key, column.codec, column.digits, column.required)
                 for column in PLAIN}
        compound = ("sys", "proc", "gpu", "gpu_util", "gpu_procs", MIG_KEY)
        cut = LINE_KEYS.index("sys")
        head, tail = LINE_KEYS[:cut], tuple(key for key in LINE_KEYS[cut:] if key in plain)
        # The line's keys in the order this encoder writes them: else the table's own encoder.
        self._fast = LINE_KEYS == (*head, *compound, *tail, "host") and all(key in plain for key in head)
        self._head = tuple(plain[key] for key in head if key in plain)
        self._tail = tuple(plain[key] for key in tail)
        self._proc_key = BY_NAME["proc"].probe_key
        self._gpu_key = BY_NAME["gpu"].probe_key
        self._host_key = BY_NAME["host"].probe_key

    def _stored_row(self, values: dict[str, Any], specs: tuple[tuple[str, int, int], ...]) -> list[Any]:
        """``Encoder._row``: each field's value as stored (``schema.compact``)."""
        row = []
        for name, scale, digits in specs:
            value: Any = values.get(name)
            kind = value.__class__
            if kind is int:
                row.append(value if scale == 1 else round(value / scale))
            elif kind is float and scale == 1 and value - value == 0.0:  # finite
                value = round(value, digits)
                row.append(int(value) if value.is_integer() else value)
            else:
                row.append(compact(value, scale, digits))
        return row

    def _row(self, group: str, values: dict[str, Any]) -> list[Any]:
        return self._stored_row(values, self._specs[group])

    def _sys_row(self, record: dict[str, Any]) -> list[Any]:
        """``sys`` as ``Encoder`` reads it from ``flat(record)``, without flattening the record:
        a nested value wins over a top-level one, as there (two nested ones: flattened)."""
        found: dict[str, Any] = {}
        for name, splits, _, _ in self._sys:
            hits = 0
            for outer, inner in splits:
                nested = record.get(outer)
                if isinstance(nested, dict) and inner in nested:
                    found[name] = nested[inner]
                    hits += 1
            if hits > 1:   # which wins depends on the record's key order: as ``flat`` decides
                return self._row("sys", flat(record))
            if not hits and name in record:
                found[name] = record[name]
        return self._stored_row(found, self._specs["sys"])

    def encode(self, record: dict[str, Any]) -> dict[str, Any]:
        """A sample as the probes return it, as ``Encoder.encode`` stores it."""
        if not self._fast:
            return super().encode(record)
        t = record["t"]   # none: a KeyError, as from the table's encoder
        out: dict[str, Any] = {"type": "sample"}
        self._plain_values(record, self._head, out)
        out["sys"] = self._sys_row(record)
        proc = record.get(self._proc_key)
        out["proc"] = self._stored_row(proc, self._specs["proc"]) if isinstance(proc, dict) else None
        gpus = record.get(self._gpu_key)
        if isinstance(gpus, list):
            self._gpu_values(t, gpus, out)
        self._plain_values(record, self._tail, out)
        host = record.get(self._host_key)
        if isinstance(host, str):  # a merged run: which node's machine this is
            out["host"] = host
        return out

    @staticmethod
    def _plain_values(record: dict[str, Any], columns: tuple[tuple[str, str, str, int | None, bool], ...],
                      out: dict[str, Any]) -> None:
        """The plain columns' values as ``schema.encode_plain`` stores them, a missing one left out."""
        for probe_key, line_key, codec, digits, required in columns:
            value = record.get(probe_key)
            if codec == PER_CORE:
                if not isinstance(value, list):
                    if not required:
                        continue
                    value = []
                else:
                    value = [round(c) if c.__class__ is float and c - c == 0.0
                             else round(c) if isinstance(c, (int, float)) and math.isfinite(c) else None
                             for c in value]
            elif value is None:
                continue
            elif digits is not None:
                value = compact(value, 1, digits)
                if value is None:
                    continue
            out[line_key] = value

    def _gpu_values(self, t: Any, gpus: list[Any], values: dict[str, Any]) -> None:
        """``gpu``, ``gpu_util``, ``gpu_procs`` and ``gpu_mig`` as ``Encoder.encode`` makes them."""
        entries = [g if isinstance(g, dict) else {} for g in gpus]
        gpu_specs, proc_specs = self._specs["gpu"], self._specs["gpu_proc"]
        values["gpu"] = trim_common_nulls([self._stored_row(g, gpu_specs) for g in entries])
        util = [x for g, e in enumerate(entries) for stamp, value in (e.get("util_samples") or ())
                for x in (g, round((stamp - t) * 1000), compact(value, 1))]
        if util:
            values["gpu_util"] = util
        procs = [x for g, e in enumerate(entries) for p in (e.get("procs") or ()) if isinstance(p, dict)
                 for x in (g, *self._stored_row(p, proc_specs))]
        if procs:
            values["gpu_procs"] = procs
        mig = [{"gpu": g, **instance} for g, e in enumerate(entries) for instance in (e.get("mig") or ())
               if isinstance(instance, dict)]
        if mig:
            values[MIG_KEY] = mig


def python_round(values: np.ndarray, digits: int) -> np.ndarray:
    """``round(v, digits)`` of every value exactly as Python rounds a float: to the nearest
    decimal of the value's exact binary expansion, ties to even. NumPy's ``round`` scales first,
    and the scaling's own rounding can tip a value lying within an ulp of a tie the other way
    (``round(0.15, 1)`` is 0.1, ``np.round(0.15, 1)`` 0.2); those few, and values too large for
    the scaling to be exact, are rounded by Python."""
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0 ** digits
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values * scale  # off the exact product by half an ulp at most
        out = np.rint(scaled) / scale
        doubt = np.isfinite(values) & ~((np.abs(scaled) < 2.0 ** 50)
                                        & (np.abs(scaled - np.floor(scaled) - 0.5) > np.abs(np.spacing(scaled))))
    for i in np.flatnonzero(doubt):
        out.flat[i] = round(float(values.flat[i]), digits)
    return out


def as_stored(values: np.ndarray, scale: int, digits: int) -> np.ndarray:
    """Readings as the writer's encoder stores them (``samples.Encoder``), NaN for null: divided
    by their scale and rounded to a whole number, or rounded to ``digits`` decimals."""
    out = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if scale != 1:
            out = np.rint(out / scale)
        else:
            fraction = np.isfinite(out) & (np.floor(out) != out)
            if fraction.any():
                out = out.copy()
                out[fraction] = python_round(out[fraction], digits)
        infinite = np.isinf(out)
    if infinite.any():
        out = np.where(infinite, np.nan, out)
    return out


# Whole numbers from this size on are written by ``repr`` in exponent form (``1e+16``): the
# shortcut below, which writes a whole number as its float without the ``.0``, stops there.
REPR_EXPONENT = 1e16


def _whole(values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (np.floor(values) == values)


def as_python(values: np.ndarray, exact_below: float = 2.0 ** 63) -> list[Any]:
    """Values as the encoder leaves them for JSON (nested lists, as ``tolist``): whole numbers as
    ints, others as floats, NaN and infinities as None. ``exact_below``: whole numbers from this
    size on stay floats (as a reader's record gives them, which the encoder keeps as they are;
    and beyond 64 bits, which ``orjson`` cannot write as ints)."""
    with np.errstate(invalid="ignore"):
        whole = _whole(values) & (np.abs(values) < min(exact_below, 2.0 ** 63))
    out = values.astype(object)
    out[whole] = values[whole].astype(np.int64).tolist()
    out[~np.isfinite(values)] = None
    return out.tolist()


def array_json(values: np.ndarray, exact_below: float = 2.0 ** 63) -> bytes | None:
    """``values`` as one JSON array the way the encoder's values make it (see ``as_python``), in
    one ``orjson`` call: on ints where all are whole, else on the floats, a whole number's text
    being its float's without the ``.0`` (a negative zero a zero). None where a whole number is
    too large for that."""
    whole = _whole(values)
    with np.errstate(invalid="ignore"):
        if (whole & (np.abs(values) >= min(exact_below, REPR_EXPONENT))).any():
            return None
    if whole.all():  # the common case: ints are written several times faster than floats
        return orjson.dumps(values.astype(np.int64), option=orjson.OPT_SERIALIZE_NUMPY)
    text = orjson.dumps(values + 0.0, option=orjson.OPT_SERIALIZE_NUMPY)
    return text.replace(b".0,", b",").replace(b".0]", b"]")


def rows_json(values: np.ndarray) -> list[bytes]:
    """Each row of ``values`` (samples × …, two or three axes) in JSON without the row's own
    brackets, as the encoder's values make it (see ``as_python``)."""
    if not len(values):
        return []
    text = array_json(values) if all(values.shape) else None
    if text is None:
        return [orjson.dumps(row)[1:-1] for row in as_python(values)]
    if values.ndim == 2:  # [[1,2],[3,4]]
        return text[2:-2].split(b"],[")
    return text[2:-2].replace(b"]],[[", b"]\n[").split(b"\n")  # [[[1,2],[3,4]],[[5,6],[7,8]]]


def scalars_json(values: np.ndarray, exact_below: float = 2.0 ** 63) -> list[bytes]:
    """Each value in JSON as the encoder's value makes it (see ``as_python``), NaN as null."""
    if not len(values):
        return []
    text = array_json(values, exact_below)
    if text is None:
        return [orjson.dumps(value) for value in as_python(values, exact_below)]
    return text[1:-1].split(b",")


def flat_rows_json(values: np.ndarray, owner: np.ndarray, k: int) -> list[bytes]:
    """Each of ``k`` samples' rows of ``values`` (rows × fields, in sample order; ``owner``: each
    row's sample) as one flat JSON list without its brackets (``gpu_util``, ``gpu_procs``)."""
    bounds = np.searchsorted(owner, np.arange(k + 1)) * values.shape[1]
    flat = values.reshape(-1)
    if not len(flat):
        return [b""] * k
    text = array_json(flat)
    if text is None:
        numbers = [orjson.dumps(value) for value in as_python(flat)]
        bounds = bounds.tolist()
        return [b",".join(numbers[a:b]) for a, b in itertools.pairwise(bounds)]
    text = text[1:-1]  # cut between the numbers
    commas = np.flatnonzero(np.frombuffer(text, np.uint8) == ord(","))
    starts = np.concatenate([[0], commas + 1])
    ends = np.concatenate([commas, [len(text)]])
    first, last = bounds[:-1], bounds[1:] - 1
    cuts = zip(starts[np.minimum(first, len(flat) - 1)].tolist(), ends[np.maximum(last, 0)].tolist(),
               (last >= first).tolist())
    return [text[a:b] if some else b"" for a, b, some in cuts]


def ranges(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The indexes ``start[i] … start[i] + count[i] - 1`` for every i, one after another."""
    total = int(count.sum())
    before = np.cumsum(count) - count
    return np.repeat(start - before, count) + np.arange(total)


def chunk_lines(chunk: Chunk, written: dict[str, np.ndarray]) -> list[bytes]:
    """The sample lines holding ``chunk``, byte for byte as the writer's encoder writes the
    records: keys in ``LINE_KEYS`` order, a GPU row's trailing nulls common to all rows left
    out. ``written``: per sample, whether an optional ``NUMBER`` key is written (a value that
    is not finite is written as null), and ``proc`` whether the process row is (else null).
    Each array of the chunk becomes JSON at once, and the lines are joined in one go."""
    k = len(chunk)
    if not k:
        return []

    def where(flags: list[bool], text: bytes) -> list[bytes]:
        return [text if flag else b"" for flag in flags]

    def values(flags: list[bool], texts: list[bytes]) -> list[bytes]:
        return [text if flag else b"" for flag, text in zip(flags, texts)]

    def listed(key: bytes, texts: list[bytes]) -> list[list[bytes]]:
        """``,"key":[…]`` where a text is not empty."""
        return [[b',"' + key + b'":[' if text else b"" for text in texts], texts, [b"]" if text else b"" for text in texts]]

    pieces: list[list[bytes]] = [[b'{"type":"sample"'] * k]
    for key in LINE_KEYS:
        name = key.encode()
        column = PLAIN_BY_KEY.get(key)
        if column is not None and column.codec == TIME:
            times = orjson.dumps(chunk.plain[column.name], option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")
            pieces += [[b',"' + name + b'":'] * k, times]
        elif column is not None and column.codec == PER_CORE:
            array = chunk.plain[column.name]
            flags = [True] * k if column.required else (~np.isnan(array).all(axis=1)).tolist() if array.shape[1] else [False] * k
            pieces += [where(flags, b',"' + name + b'":['), values(flags, rows_json(array)), where(flags, b"]")]
        elif column is not None and column.codec == NUMBER:
            flags = written[column.name].tolist()
            exact_below = 2.0 ** 53 if column.digits is None else 2.0 ** 63  # as read (a reader's record), or as rounded
            pieces += [where(flags, b',"' + name + b'":'), values(flags, scalars_json(chunk.plain[column.name], exact_below))]
        elif key == "sys":
            pieces += [[b',"sys":['] * k, rows_json(chunk.sys), [b"]"] * k]
        elif key == "proc":
            has = written["proc"].tolist()
            proc = rows_json(chunk.proc)
            pieces += [[b',"proc":[' if h else b',"proc":null' for h in has], values(has, proc), where(has, b"]")]
        elif key == "gpu":
            present = chunk.present.tolist()
            gpu = [b""] * k
            if any(present):
                width = chunk.gpu.shape[2]
                known = (~np.isnan(chunk.gpu)).any(axis=1)
                keep = np.where(known.any(axis=1), width - np.argmax(known[:, ::-1], axis=1), 0)
                for length in np.unique(keep[chunk.present]).tolist():
                    chosen = np.flatnonzero(chunk.present & (keep == length))
                    for j, rows in zip(chosen.tolist(), rows_json(chunk.gpu[chosen, :, :length])):
                        gpu[j] = rows
            pieces += [where(present, b',"gpu":['), gpu, where(present, b"]")]
        elif key == "gpu_util":
            pieces += listed(name, flat_rows_json(*chunk.util, k))
        elif key == "gpu_procs":
            pieces += listed(name, flat_rows_json(*chunk.procs, k))
        elif key == "host":
            labels = {label: b',"host":' + orjson.dumps(label) for label in set(chunk.host) if label is not None}
            pieces.append([labels.get(label, b"") if label is not None else b"" for label in chunk.host])
        elif key != MIG_KEY:  # MIG readings are not in the columns: never written from them
            raise ValueError(f"no block encoding for the line key {key!r}")
    pieces.append([b"}\n"] * k)
    interleaved: list[bytes] = [b""] * (k * len(pieces))
    for i, column_pieces in enumerate(pieces):
        interleaved[i::len(pieces)] = column_pieces
    return b"".join(interleaved).split(b"\n")[:-1]


def join_chunks(parts: list[tuple[np.ndarray, Chunk]], k: int) -> Chunk:
    """Several chunks of one block as one, row ``at[i]`` of each part at row i."""
    first = parts[0][1]
    plain = {}
    for column in PLAIN:
        widest = max(part.plain[column.name].shape[1:] for _, part in parts)
        plain[column.name] = np.full((k, *widest), np.nan)
    gpus = max(part.gpu.shape[1] for _, part in parts)
    gpu = np.full((k, gpus, first.gpu.shape[2]), np.nan)
    system, proc = np.empty((k, first.sys.shape[1])), np.empty((k, first.proc.shape[1]))
    present = np.empty(k, bool)
    host: list[Any] = [None] * k
    util, procs = [], []
    for at, part in parts:
        system[at], proc[at], present[at] = part.sys, part.proc, part.present
        for name, array in part.plain.items():
            index: Any = (at, *(slice(0, n) for n in array.shape[1:]))
            plain[name][index] = array
        gpu[at, :part.gpu.shape[1]] = part.gpu
        for j, label in zip(at.tolist(), part.host):
            host[j] = label
        util.append((part.util[0], at[part.util[1]]))
        procs.append((part.procs[0], at[part.procs[1]]))

    def rows(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        values = np.concatenate([v for v, _ in pieces])
        owner = np.concatenate([o for _, o in pieces])
        order = np.argsort(owner, kind="stable")
        return values[order], owner[order]

    return Chunk(plain, system, proc, present, gpu, rows(util), rows(procs), host)
