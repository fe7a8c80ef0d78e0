"""The one downsampler: fewer points, with each bucket's minimum and maximum kept so that a
dip (a GPU idling for half a second in an hour) survives being drawn on 100 columns.
"""

from __future__ import annotations

import numpy as np

from .. import nanmath


def minmax(t: np.ndarray, v: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """At most two points per time bucket (its minimum and maximum, in time order)."""
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    if len(t) <= 2 * buckets or buckets < 1:
        return t, v
    width = (t[-1] - t[0]) / buckets or 1.0
    index = np.minimum(((t - t[0]) / width).astype(np.int64), buckets - 1)
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    ends = np.r_[starts[1:], len(t)]
    keep = np.zeros(len(t), dtype=bool)
    for lo, hi in zip(starts, ends):
        keep[lo + int(np.argmin(v[lo:hi]))] = True
        keep[lo + int(np.argmax(v[lo:hi]))] = True
    return t[keep], v[keep]


def minmax_rows(t: np.ndarray, columns: list[np.ndarray], factor: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Rows on one time axis, every ``factor`` rows folded into two: the first carries each
    column's minimum over the bucket (at the bucket's first time), the second its maximum (at
    its last time). For a live history whose columns share ``t``; NaN readings are ignored."""
    n = len(t) // factor * factor
    if factor < 2 or n == 0:
        return t, columns
    out_t = np.empty(2 * (n // factor))
    buckets = t[:n].reshape(-1, factor)
    out_t[0::2], out_t[1::2] = buckets[:, 0], buckets[:, -1]
    folded = []
    for column in columns:
        shaped = column[:n].reshape((-1, factor) + column.shape[1:])
        out = np.empty((2 * (n // factor),) + column.shape[1:], dtype=column.dtype)
        out[0::2] = nanmath.nanmin(shaped, axis=1)  # an all-NaN bucket stays NaN
        out[1::2] = nanmath.nanmax(shaped, axis=1)
        folded.append(out)
    if n < len(t):
        out_t = np.concatenate([out_t, t[n:]])
        folded = [np.concatenate([f, c[n:]]) for f, c in zip(folded, columns)]
    return out_t, folded


def minmax_rows_bytes(column: np.ndarray, factor: int, missing: int) -> np.ndarray:
    """``minmax_rows`` of one column of bytes in which ``missing`` (above every reading) marks a
    missing one: the same rows, still bytes, with no float copy of the whole column made (per-core
    percents of a day of 64 cores are 55 MB as bytes, 442 MB as floats). A bucket of missing
    readings folds to ``missing``, as NaN folds to NaN."""
    n = len(column) // factor * factor
    if factor < 2 or n == 0:
        return column
    shaped = column[:n].reshape((-1, factor) + column.shape[1:])
    low = shaped.min(axis=1)  # a missing reading is above every real one: left out unless all are
    high = np.where(shaped == missing, 0, shaped).max(axis=1).astype(column.dtype)
    high[low == missing] = missing
    out = np.empty((2 * len(low),) + column.shape[1:], dtype=column.dtype)
    out[0::2], out[1::2] = low, high
    return np.concatenate([out, column[n:]]) if n < len(column) else out


