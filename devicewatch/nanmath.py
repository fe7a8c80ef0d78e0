"""NaN-ignoring reductions that give NaN for a slice with no reading, silently.

NumPy's ``nanmean``/``nanmin``/``nanmax`` warn on an all-NaN slice, and silencing that with
``warnings.catch_warnings`` swaps the process-wide filter list: not safe while the comparison is
worked out in a thread beside the dashboard's drawing. These say nothing instead (``np.errstate``
is per thread), and a missing reading stays NaN, which is what every caller wants.
"""

from __future__ import annotations

import numpy as np


def nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    """Mean of the readings along ``axis``; NaN where there is none."""
    present = ~np.isnan(values)
    total = np.where(present, values, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / present.sum(axis=axis)


def nanmin(values: np.ndarray, axis: int) -> np.ndarray:
    """Smallest reading along ``axis``; NaN where there is none (``fmin`` skips NaN)."""
    return _reduce(np.fmin, values, axis)


def nanmax(values: np.ndarray, axis: int) -> np.ndarray:
    """Largest reading along ``axis``; NaN where there is none."""
    return _reduce(np.fmax, values, axis)


def _reduce(ufunc: np.ufunc, values: np.ndarray, axis: int) -> np.ndarray:
    if values.shape[axis] == 0:  # no identity to start from: nothing read is NaN
        return np.full(np.delete(values.shape, axis), np.nan)
    return ufunc.reduce(values, axis=axis)
