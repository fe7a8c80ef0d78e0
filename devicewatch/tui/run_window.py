"""The run screen's time window: which seconds of the run its charts show, and how its keys move them.

Pure (no Textual, no model): the window is a width in seconds (``WINDOWS``, None for the whole
run) and an offset from the newest data, and a live view's end advances in steps, so that
between steps only the newest columns of a chart change and only their cells are repainted.
"""

from __future__ import annotations

import math

import numpy as np

from .drawing import View

WINDOWS: list[float | None] = [10, 30, 60, 120, 300, 600, 1800, None]  # seconds; None: whole run
VIEW_STEPS = 20  # a live view's end advances in steps of 1/20 of the window


def nice_top(value: float, floor: float = 1.0) -> float:
    """A round axis maximum at or above ``value`` (1, 2, 5 × 10^n)."""
    if not math.isfinite(value) or value <= floor:
        return floor
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exponent >= value:
            return step * exponent
    return 10 * exponent


def visible_max(t: np.ndarray, values: np.ndarray, view: View) -> float:
    """The largest reading in the window (0 where it holds none)."""
    lo, hi = np.searchsorted(t, view.t0, "left"), np.searchsorted(t, view.t1, "right")
    part = values[lo:hi]
    part = part[~np.isnan(part)]
    return float(part.max()) if part.size else 0.0


def view_of(latest: float, window: float | None, pan_offset: float, growing: bool) -> View:
    """The seconds shown of a run whose newest data is at ``latest``: the last ``window`` of
    them ending ``pan_offset`` before it (or the whole run), in steps while the run grows."""
    if window is None:
        # Following the whole run: the end moves in steps of 1/VIEW_STEPS of the run so far.
        end = max(latest, 1.0)
        if not growing:
            return View(0.0, end)
        step = nice_top(end / VIEW_STEPS, 0.1)
        return View(0.0, math.ceil(end / step) * step, math.floor(latest / step) * step)
    end = max(latest - pan_offset, window)
    if not growing or pan_offset:
        return View(max(end - window, 0.0), end)
    # The window slides in steps of 1/VIEW_STEPS of its width, not every tick.
    step = window / VIEW_STEPS
    end = max(math.ceil(latest / step) * step, window)
    return View(end - window, end, max(math.floor(latest / step) * step, end - window))


def zoomed(window: float | None, step: int, latest: float | None) -> float | None:
    """The window after a zoom key: ``step`` -1 in (from the whole run, to the window below the
    run's length ``latest``), 1 out, 0 the whole run."""
    if step == 0:
        return None
    index = WINDOWS.index(window)
    if step < 0 and window is None and latest is not None:
        index = next((i for i, w in enumerate(WINDOWS) if w is not None and w >= latest), len(WINDOWS) - 1)
    return WINDOWS[min(max(index + step, 0), len(WINDOWS) - 1)]


def panned(window: float, pan_offset: float, direction: int, latest: float) -> float:
    """The offset after a pan key: ``direction`` -1 half a window earlier, 1 later, 0 the end."""
    if direction == 0:
        return 0.0
    return min(max(pan_offset - direction * window / 2, 0.0), max(latest - window, 0.0))
