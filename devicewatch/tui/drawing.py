"""Pure drawing: what a chart shows, as a grid of cells (one character and one style each).

Each chart of the dashboard is a function from a small typed input (a dataclass per chart: the
arrays it plots, the time window, the scale, the overlay, the palette) and a size to a ``Grid``.
No widget and no terminal are involved, so the functions are tested with small literal inputs
and exact expected cells, the way Textual tests its renderables. The widgets in ``charts.py``
turn the rows of a grid into strips and repaint only the cells that differ from the grid before.

Every chart shares one time-to-column mapping (``AXIS`` label columns, then the plot), so charts
stacked in one panel line up. Each reduces its data to one value per column with a single
``reduceat``, so drawing costs the same for a minute and for a day.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Hashable, Sequence

import numpy as np
from rich.segment import Segment
from rich.style import Style

from .. import nanmath
from ..phase_kinds import KINDS
from ..render.palette import NORMAL, PRESENTER, Palette
from ..safe_text import inert

AXIS = 7          # columns of y labels left of every plot
EIGHTHS = np.array(list(" ▁▂▃▄▅▆▇█"), dtype="<U1")
BRAILLE_BITS = np.array([[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]])  # [row][col] in a cell
_EMPTY = np.zeros(0)
_NO_KINDS = np.zeros(0, dtype=np.int64)


def kind_codes(kinds: Sequence[str]) -> np.ndarray:
    """Phase kinds (train, validate, data, copy, or anything else: other) as numbers into KINDS."""
    other = len(KINDS) - 1
    return np.array([KINDS.index(kind) if kind in KINDS else other for kind in kinds], dtype=np.int64)


def _phase_colours(palette: Palette) -> list[str]:
    """The shading colour of each of KINDS."""
    return [palette.phase.get(kind, palette.phase["other"]) for kind in KINDS]


# -- styles: interned, so that the same style has the same number in every grid -------------

_STYLES: list[Style | None] = [None]   # 0: no style of its own
_STYLE_IDS: dict[Style, int] = {}


def style_id(style: Style | None) -> int:
    """The number of ``style``; equal styles share one (the table only grows with new looks)."""
    if style is None:
        return 0
    found = _STYLE_IDS.get(style)
    if found is None:
        found = _STYLE_IDS[style] = len(_STYLES)
        _STYLES.append(style)
    return found


def style_of(number: int) -> Style | None:
    return _STYLES[number]


@dataclass(frozen=True, eq=False)
class Grid:
    """Cells in rows: ``chars`` (one character each) and ``styles`` (``style_id`` numbers).

    A chart that can draw only what changed keeps with its grid what it was drawn from:
    ``frame`` (everything that is not per column: size, look, scale, labels, time axis) and
    ``state`` (a row of numbers per plot column that fixes that column's cells)."""

    chars: np.ndarray
    styles: np.ndarray
    frame: Hashable = None
    state: np.ndarray | None = None

    @staticmethod
    def blank(rows: int, width: int, style: Style | None = None) -> Grid:
        return Grid(np.full((rows, width), " ", dtype="<U1"), np.full((rows, width), style_id(style), dtype=np.int32))

    @property
    def rows(self) -> int:
        return int(self.chars.shape[0])

    @property
    def width(self) -> int:
        return int(self.chars.shape[1]) if self.chars.ndim == 2 else 0

    def columns(self, x0: int, x1: int) -> Grid:
        """Columns ``[x0, x1)`` of every row (a view, not a copy)."""
        return Grid(self.chars[:, x0:x1], self.styles[:, x0:x1])

    def text(self) -> list[str]:
        """Each row's characters: what a test compares."""
        return ["".join(row) for row in self.chars.tolist()]

    def style(self, y: int, x: int) -> Style | None:
        return style_of(int(self.styles[y, x]))

    def runs(self, y: int, start: int = 0) -> list[int]:
        """Where row ``y``'s runs of one style begin, from column ``start`` on."""
        ids = self.styles[y, start:]
        if not ids.size:
            return []
        return [start, *(np.flatnonzero(ids[1:] != ids[:-1]) + (start + 1)).tolist()]

    def segments(self, y: int, starts: list[int] | None = None) -> list[Segment]:
        """Row ``y`` as segments, neighbouring cells of one style merged into one segment
        (``starts``: the row's ``runs``, when known; segments from the first of them on)."""
        if starts is None:
            starts = self.runs(y)
        if not starts:
            return []
        ids = self.styles[y]
        text = "".join(self.chars[y, starts[0]:].tolist())
        first = starts[0]
        ends = starts[1:] + [self.width]
        return [Segment(text[a - first:b - first], _STYLES[ids[a]]) for a, b in zip(starts, ends)]

    def row(self, y: int, before: Row | None = None, x0: int = 0) -> Row:
        """Row ``y``'s runs and segments. With ``before``, that row as it was drawn when only
        cells from ``x0`` on have changed since: the runs that end before ``x0`` are kept, with
        their segments, and only the rest are built (from the run holding the cell left of
        ``x0``, which the first changed cell may now join)."""
        if before is None or x0 <= 0:
            starts = self.runs(y)
            return Row(starts, self.segments(y, starts))
        keep = max(bisect_right(before.starts, x0 - 1) - 1, 0)
        starts = before.starts[:keep] + self.runs(y, before.starts[keep])
        return Row(starts, before.segments[:keep] + self.segments(y, starts[keep:]))

    def changes(self, before: Grid | None) -> list[tuple[int, int, int]] | None:
        """``(row, x0, x1)`` for each row whose cells ``[x0, x1)`` differ from ``before``; None
        when the two grids are not the same shape (everything changed)."""
        if before is None or before.chars.shape != self.chars.shape:
            return None
        differ = (self.chars != before.chars) | (self.styles != before.styles)
        rows = np.flatnonzero(differ.any(axis=1))
        if not rows.size:
            return []
        part = differ[rows]
        first = part.argmax(axis=1)
        last = self.width - part[:, ::-1].argmax(axis=1)
        return list(zip(rows.tolist(), first.tolist(), last.tolist()))


@dataclass(frozen=True)
class Row:
    """One drawn row: where its runs of one style begin, and their segments."""

    starts: list[int]
    segments: list[Segment]


def _changed_columns(before: Grid | None, frame: Hashable, state: np.ndarray) -> np.ndarray | None:
    """The plot columns whose ``state`` differs from ``before``'s; None when ``before`` was
    drawn in another frame (or not at all) and the whole grid must be drawn."""
    if before is None or before.state is None or before.frame != frame or before.state.shape != state.shape:
        return None
    return np.flatnonzero((state != before.state).any(axis=0))


def _put(grid: Grid, y: int, x: int, text: str, style: Style | None) -> None:
    """Write ``text`` into row ``y`` from column ``x`` (cut at the grid's edge)."""
    text = text[:max(grid.width - x, 0)]
    grid.chars[y, x:x + len(text)] = list(text)
    grid.styles[y, x:x + len(text)] = style_id(style)


def _label(grid: Grid, y: int, text: str, style: Style) -> None:
    _put(grid, y, 0, text[:AXIS - 1].rjust(AXIS - 1) + " ", style)


# -- the time window and what lies behind every chart -----------------------------------------

@dataclass(frozen=True)
class View:
    """The time window every chart of a screen draws: ``t0`` to ``t1`` seconds of the run.
    ``live_from``: in a live window, the time from which what it shows still changes (the
    window's newest step); None when nothing in it will."""

    t0: float
    t1: float
    live_from: float | None = None

    def columns(self, times: np.ndarray, width: int) -> np.ndarray:
        span = max(self.t1 - self.t0, 1e-9)
        return np.floor((times - self.t0) / span * width).astype(int)

    def column(self, time: float, width: int) -> int:
        return math.floor((time - self.t0) / max(self.t1 - self.t0, 1e-9) * width)

    def key(self) -> tuple[float, float]:
        return (round(self.t0, 3), round(self.t1, 3))


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours begins: ``np.r_[True, values[1:] != values[:-1]]``
    without ``np.r_``, which costs more than the comparison itself on a chart's few hundred columns."""
    starts = np.empty(values.size, dtype=bool)
    starts[:1] = True
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return np.flatnonzero(starts)


def per_column(t: np.ndarray, values: np.ndarray, view: View, width: int, fill: bool = True) -> np.ndarray:
    """Mean of ``values`` (rows, or rows × k) in each of ``width`` time columns; NaN where none.

    With ``fill``, a column without a sample between two that have one repeats the previous
    value: a window shorter than one sample per column still draws a continuous line.
    """
    shape = (width,) + values.shape[1:]
    out = np.full(shape, np.nan)
    if width <= 0 or t.size == 0:
        return out
    lo = int(np.searchsorted(t, view.t0, "left"))
    hi = int(np.searchsorted(t, view.t1, "right"))
    if hi <= lo:
        return out
    cols = np.clip(view.columns(t[lo:hi], width), 0, width - 1)
    vals = values[lo:hi]
    valid = ~np.isnan(vals)
    starts = _run_starts(cols)
    sums = np.add.reduceat(np.where(valid, vals, 0.0), starts, axis=0)
    counts = np.add.reduceat(valid.astype(float), starts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[cols[starts]] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    if fill:
        first, last = cols[0], cols[-1]
        has = ~np.isnan(out if out.ndim == 1 else out[:, 0])
        index = np.where(has, np.arange(width), 0)
        np.maximum.accumulate(index, out=index)
        filled = out[index]
        inside = np.zeros(width, dtype=bool)
        inside[first:last + 1] = True
        out = np.where((inside & ~has).reshape((width,) + (1,) * (out.ndim - 1)), filled, out)
    return out


@dataclass(frozen=True, eq=False)
class Overlay:
    """What is drawn behind and over a time chart: phase shading (``starts``/``ends``, ``kinds``
    as ``kind_codes``, later spans over earlier ones), epoch lines (``boundaries``) and markers.
    ``version`` changes whenever any of them does (the producer's promise: the arrays are not
    compared)."""

    starts: np.ndarray = field(default_factory=lambda: _EMPTY)
    ends: np.ndarray = field(default_factory=lambda: _EMPTY)
    kinds: np.ndarray = field(default_factory=lambda: _NO_KINDS)
    boundaries: np.ndarray = field(default_factory=lambda: _EMPTY)
    markers: np.ndarray = field(default_factory=lambda: _EMPTY)
    version: Hashable = 0

    @staticmethod
    def of(spans: Sequence[tuple[float, float, str]], boundaries: Sequence[float], markers: Sequence[float],
           version: Hashable = 0) -> Overlay:
        return Overlay(np.array([s[0] for s in spans], float), np.array([s[1] for s in spans], float),
                       kind_codes([s[2] for s in spans]), np.asarray(boundaries, float), np.asarray(markers, float),
                       version)

    def lines_only(self) -> Overlay:
        """Epoch lines and markers without the shading (the charts that show every lane)."""
        return Overlay(boundaries=self.boundaries, markers=self.markers, version=self.version)

    def shading(self, view: View, width: int) -> np.ndarray:
        """For each column, the kind (``kind_codes``) of the last span covering it; -1 where none does."""
        owner = _span_columns(self.starts, self.ends, view, width)
        return np.append(self.kinds, -1)[owner]

    def edges(self, view: View, width: int) -> np.ndarray:
        return _marks(self.boundaries, view, width)

    def marks(self, view: View, width: int) -> np.ndarray:
        return _marks(self.markers, view, width)


def _span_columns(starts: np.ndarray, ends: np.ndarray, view: View, width: int) -> np.ndarray:
    """For each column, the index of the last span that covers it; -1 where none does."""
    owner = np.full(width, -1, dtype=np.int64)
    if not starts.size or width <= 0:
        return owner
    span = max(view.t1 - view.t0, 1e-9)
    a = np.maximum(np.floor((starts - view.t0) / span * width), 0).astype(np.int64)
    b = np.minimum(np.floor((ends - view.t0) / span * width), width - 1).astype(np.int64)
    visible = np.flatnonzero(b >= a)
    if not visible.size:
        return owner
    a, b = a[visible], b[visible]
    lengths = b - a + 1
    before = np.cumsum(lengths) - lengths   # cells of the spans before each
    columns = np.repeat(a - before, lengths) + np.arange(lengths.sum())
    np.maximum.at(owner, columns, np.repeat(visible, lengths))  # later spans (higher index) win
    return owner


def _marks(times: np.ndarray, view: View, width: int) -> np.ndarray:
    """A boolean per column: does one of ``times`` fall into it."""
    out = np.zeros(max(width, 0), dtype=bool)
    if times.size and width > 0:
        span = max(view.t1 - view.t0, 1e-9)
        cols = np.floor((times - view.t0) / span * width).astype(np.int64)
        out[cols[(cols >= 0) & (cols < width)]] = True
    return out


def format_seconds(value: float) -> str:
    value = max(value, 0.0)
    if value < 60:
        return f"{value:.0f}s" if value >= 10 or value == int(value) else f"{value:.1f}s"
    minutes, seconds = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes}:{seconds:02d}"
    return f"{minutes // 60}h{minutes % 60:02d}"


def _fmt(value: float) -> str:
    if value >= 10:
        return f"{value:.0f}"
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _time_axis(grid: Grid, y: int, view: View, style: Style) -> None:
    """A row of tick labels under a plot: times since the run started."""
    width = grid.width - AXIS
    chars = [" "] * width
    ticks = max(2, min(6, width // 14))
    for i in range(ticks):
        x = round(i * (width - 1) / (ticks - 1))
        label = format_seconds(view.t0 + (view.t1 - view.t0) * x / max(width - 1, 1))
        at = min(max(0, x - len(label) // 2), width - len(label))
        if all(c == " " for c in chars[max(at - 1, 0):at + len(label) + 1]):
            chars[at:at + len(label)] = label
    _put(grid, y, AXIS, "".join(chars), style)


# -- the charts' inputs -----------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ChartInput:
    """What one chart draws. Two inputs are equal when they draw the same grid: same
    ``version`` of the arrays (the producer changes it whenever they change; the arrays
    themselves are never compared), same window, scale and look."""

    view: View
    version: Hashable
    palette: Palette

    def signature(self) -> tuple[Any, ...]:
        return (type(self), self.version, self.view.key(), self.palette is PRESENTER)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChartInput) and self.signature() == other.signature()

    __hash__ = None  # type: ignore[assignment]  # mutable inputs compared by value are not hashable


@dataclass(frozen=True, eq=False)
class AreaInput(ChartInput):
    """One series as a filled area over phase shading, with epoch lines and markers."""

    t: np.ndarray
    values: np.ndarray
    top: float
    unit: str
    overlay: Overlay = field(default_factory=Overlay)
    axis: bool = True

    def signature(self) -> tuple[Hashable, ...]:
        return (*super().signature(), self.top, self.unit, self.overlay.version, self.axis)


@dataclass(frozen=True, eq=False)
class LinesInput(ChartInput):
    """Several series (``(t, values)`` each) as braille lines on one y scale."""

    series: tuple[tuple[np.ndarray, np.ndarray], ...]
    top: float
    unit: str
    axis: bool = True

    def signature(self) -> tuple[Hashable, ...]:
        return (*super().signature(), self.top, self.unit, len(self.series), self.axis)


@dataclass(frozen=True, eq=False)
class HeatInput(ChartInput):
    """Every core over time (``cpu``: samples × cores, %), with epoch lines and markers."""

    t: np.ndarray
    cpu: np.ndarray

    def signature(self) -> tuple[Hashable, ...]:
        return (*super().signature(), self.cpu.shape[1:])


@dataclass(frozen=True, eq=False)
class LanesInput(ChartInput):
    """One row per lane: which phase runs when (phase ``i`` from ``starts[i]`` to ``ends[i]``
    in lane ``lanes[lane_of[i]]``, named ``names[i]``, e.g. ``train 3``), with epoch lines and
    markers from ``overlay``."""

    lanes: tuple[str, ...]
    starts: np.ndarray
    ends: np.ndarray
    kinds: np.ndarray            # kind_codes
    names: tuple[str, ...]
    lane_of: np.ndarray
    overlay: Overlay = field(default_factory=Overlay)

    def signature(self) -> tuple[Hashable, ...]:
        return (*super().signature(), self.lanes, self.overlay.version)


# -- the charts -------------------------------------------------------------------------------

_TABLES: dict[tuple[int, str], np.ndarray] = {}


def _styles(palette: Palette, chart: str, make: Any, backs: list[str | None], fores: list[str]) -> np.ndarray:
    """``style_id(make(back, fore))`` for every background and foreground, once per palette."""
    key = (id(palette), chart)
    if key not in _TABLES:
        _TABLES[key] = np.array([[style_id(make(back, fore)) for fore in fores] for back in backs], dtype=np.int32)
    return _TABLES[key]


def _plot_rows(height: int, axis: bool) -> int:
    return height - 1 if axis and height > 2 else height


def draw_area(data: AreaInput, width: int, height: int, before: Grid | None = None) -> Grid:
    """Eighth blocks filled up to each column's mean; the background shaded by the phase, a
    boundary column's empty cells ``┊`` (its blocks in the boundary colour), a marker ``▼`` at
    the top where the area does not reach; y labels at the top, middle and bottom.

    With ``before`` (this chart's previous grid), only the columns whose level, shading, epoch
    line or marker changed are drawn again, into a copy of it, when the frame is the same."""
    palette, view = data.palette, data.view
    plot_w = width - AXIS
    rows = _plot_rows(height, data.axis)
    if plot_w <= 0 or rows <= 0:
        return Grid.blank(height, width)
    col = per_column(data.t, data.values, view, plot_w)
    top = data.top if data.top > 0 else 1.0
    level = np.where(np.isnan(col), -1, np.clip(np.round(col / top * rows * 8), 0, rows * 8)).astype(np.int64)
    state = np.stack([level, data.overlay.shading(view, plot_w), data.overlay.edges(view, plot_w),
                      data.overlay.marks(view, plot_w)])
    frame = ("area", width, height, id(palette), top, data.unit, data.axis, view.t0, view.t1)
    changed = _changed_columns(before, frame, state)
    # Each cell's style is (background: its column's kind + 1, 0 for none; foreground: area, boundary, marker).
    ids = _styles(palette, "area", lambda back, fg: Style(color=fg, bgcolor=back),
                  [palette.empty_bg, *_phase_colours(palette)], [palette.area, palette.boundary, palette.marker])
    if changed is not None:
        assert before is not None
        if not changed.size:
            return before
        grid = Grid(before.chars.copy(), before.styles.copy(), frame, state)
        chars, styles = _area_cells(state[:, changed], rows, ids)
        grid.chars[:rows, AXIS + changed] = chars
        grid.styles[:rows, AXIS + changed] = styles
        return grid
    grid = replace(Grid.blank(height, width), frame=frame, state=state)
    grid.chars[:rows, AXIS:], grid.styles[:rows, AXIS:] = _area_cells(state, rows, ids)
    axis_style = Style(color=palette.axis)
    for y in range(rows):
        if y == 0:
            label = f"{_fmt(top)}{data.unit}"
        elif y == rows - 1:
            label = f"0{data.unit}"
        elif y == rows // 2 and rows >= 5:
            label = f"{_fmt(top / 2)}{data.unit}"
        else:
            label = ""
        _label(grid, y, label, axis_style)
    if rows < height:
        _time_axis(grid, rows, view, axis_style)
    return grid


def _area_cells(state: np.ndarray, rows: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plot cells (characters, style numbers) of the columns whose ``state`` is given:
    level in eighths (-1: no sample), shading kind, epoch line, marker."""
    level, shading, is_edge, is_mark = state[0], state[1], state[2].astype(bool), state[3].astype(bool)
    from_bottom = (rows - 1 - np.arange(rows))[:, None]
    fill = np.where(level >= 0, np.clip(level[None, :] - from_bottom * 8, 0, 8), 0)
    chars = EIGHTHS[fill]
    fg = np.broadcast_to(is_edge.astype(np.int64), fill.shape).copy()
    chars[(fill == 0) & is_edge[None, :]] = "┊"
    top_mark = (fill[0] == 0) & is_mark
    chars[0, top_mark] = "▼"
    fg[0, top_mark] = 2
    return chars, ids[(shading + 1)[None, :], fg]


def draw_lines(data: LinesInput, width: int, height: int) -> Grid:
    """Braille dots, each series joined column to column (a vertical run of dots where it
    jumps), in the series' colour; where two series share a cell, the later one's colour."""
    palette, view = data.palette, data.view
    plot_w = width - AXIS
    rows = _plot_rows(height, data.axis)
    blank = Style(bgcolor=palette.empty_bg)
    grid = Grid.blank(height, width)
    if plot_w <= 0 or rows <= 0:
        return grid
    dots_h = rows * 4
    top = data.top if data.top > 0 else 1.0
    bits = np.zeros((rows, plot_w), dtype=np.int64)
    owner = np.zeros((rows, plot_w), dtype=np.int32)   # style number of the cell's colour
    level = np.arange(dots_h)[:, None]                  # dot rows, from the bottom
    weights = BRAILLE_BITS[::-1]                        # the bottom dot row of a cell first
    for s, (t, values) in enumerate(data.series):
        col = per_column(t, values, view, plot_w * 2)
        dot = np.where(np.isnan(col), -1, np.clip(np.round(col / top * (dots_h - 1)), 0, dots_h - 1)).astype(int)
        previous = np.empty_like(dot)
        previous[0], previous[1:] = -1, dot[:-1]
        joined = (previous >= 0) & (dot >= 0)
        low = np.where(joined, np.minimum(previous, dot), dot)
        high = np.where(joined, np.maximum(previous, dot), dot)
        on = (level >= low[None, :]) & (level <= high[None, :]) & (dot >= 0)[None, :]   # dots_h × 2·plot_w
        # Dot (level, x) lies in cell (rows - 1 - level // 4, x // 2) at bit [3 - level % 4][x % 2].
        cells = on.reshape(rows, 4, plot_w, 2)[::-1]
        series_bits = (cells * weights[None, :, None, :]).sum(axis=(1, 3))
        bits |= series_bits
        colour = style_id(Style(color=palette.lines[s % len(palette.lines)], bgcolor=palette.empty_bg))
        owner = np.where(series_bits > 0, colour, owner)
    chars = np.where(bits > 0, (0x2800 + bits).astype(np.uint32).view("<U1"), " ")
    grid.chars[:rows, AXIS:] = chars
    grid.styles[:rows, AXIS:] = np.where(bits > 0, owner, style_id(blank))
    axis_style = Style(color=palette.axis)
    for y in range(rows):
        _label(grid, y, f"{_fmt(top)}{data.unit}" if y == 0 else (f"0{data.unit}" if y == rows - 1 else ""),
               axis_style)
    if rows < height:
        _time_axis(grid, rows, view, axis_style)
    return grid


def heat_rows(cores: int, height: int) -> tuple[int, int, int]:
    """How ``cores`` fill ``height`` rows (the last is the time axis): rows per core when each
    core has whole rows (up to three), else 0; cores averaged per half row; half rows used."""
    rows = max(1, height - 1)
    if cores and cores <= rows // 2:
        return min(3, rows // cores), 1, cores
    group = max(1, math.ceil(cores / (rows * 2)))
    return 0, group, math.ceil(cores / group) if cores else 0


def draw_heat(data: HeatInput, width: int, height: int, before: Grid | None = None) -> Grid:
    """Every core over time, coloured by the heat scale. A few cores get whole rows each (up
    to three, labelled ``cpu N``); more share a row, upper and lower half block (``▀``), and
    when even that does not fit, groups of cores are averaged per half row (labelled by their
    first and last core). The last row is the time axis.

    With ``before`` (this chart's previous grid), only the columns where a level changed are
    drawn again, into a copy of it, when the frame is the same."""
    palette, view, cpu = data.palette, data.view, data.cpu
    plot_w = width - AXIS
    cores = cpu.shape[1] if cpu.ndim == 2 else 0
    per_core, group, halves = heat_rows(cores, height)
    if plot_w <= 0:
        return Grid.blank(height, width)
    level_grid = per_column(data.t, cpu, view, plot_w) if cores else np.full((plot_w, 0), np.nan)
    if group > 1 and cores:
        padded = np.full((plot_w, halves * group), np.nan)
        padded[:, :cores] = level_grid
        level_grid = nanmath.nanmean(padded.reshape(plot_w, halves, group), axis=2)  # no reading: NaN
    steps = len(palette.heat) - 1
    level = np.where(np.isnan(level_grid), -1, np.clip(np.round(level_grid / 100.0 * steps), 0, steps)).astype(np.int64)
    state = np.ascontiguousarray(level.T)   # a row per core (or group), a column per plot column
    frame = ("heat", width, height, id(palette), cores, view.t0, view.t1)
    changed = _changed_columns(before, frame, state)
    colours = [palette.empty_bg or "#000000", *palette.heat]  # index = level + 1
    shown = 0 if per_core else min(max(1, height - 1), math.ceil(halves / 2))
    if changed is not None:
        assert before is not None
        if not changed.size:
            return before
        grid = Grid(before.chars.copy(), before.styles.copy(), frame, state)
        rows = _heat_styles(state[:, changed], palette, colours, per_core, shown)
        grid.styles[:rows.shape[0], AXIS + changed] = rows
        return grid
    grid = Grid.blank(height, width)
    axis_style = Style(color=palette.axis)
    y = 0
    if per_core:
        grid.chars[:cores * per_core, AXIS:] = "█"
        grid.styles[:cores * per_core, AXIS:] = _heat_styles(state, palette, colours, per_core, shown)
        for core in range(cores):
            for line in range(per_core):
                _label(grid, y, f"cpu{core}" if line == 0 else "", axis_style)
                y += 1
    else:
        if shown:
            grid.chars[:shown, AXIS:] = "▀"
            grid.styles[:shown, AXIS:] = _heat_styles(state, palette, colours, per_core, shown)
        for r in range(shown):
            first = 2 * r * group
            last = min((2 * r + 2) * group, cores) - 1
            label = f"{first}-{last}" if last > first else f"{first}"
            if len(label) > AXIS - 1:  # 120-127 does not fit: the first core, the rest follow
                label = f"{first}+"
            _label(grid, r, label, axis_style)
        y = shown
    if y < height:
        _time_axis(grid, y, view, axis_style)
        y += 1
    return Grid(grid.chars[:y], grid.styles[:y], frame, state)


def _heat_styles(state: np.ndarray, palette: Palette, colours: list[str], per_core: int, shown: int) -> np.ndarray:
    """The style numbers of the heat rows for the columns whose levels (``state``: a row per
    core or group) are given: ``per_core`` rows of ``█`` per core, or ``shown`` rows of ``▀``
    with two cores (or groups) each."""
    if per_core:
        ids = _styles(palette, "heat", lambda back, fg: Style(color=fg, bgcolor=back), [palette.empty_bg], colours)[0]
        return np.repeat(ids[state + 1], per_core, axis=0)
    # Style number [upper level + 1][lower level + 1], with one extra lower "colour" for a
    # last row whose lower half has no core.
    backs = [*colours, palette.empty_bg]
    ids = _styles(palette, "heat halves", lambda back, fg: Style(color=fg, bgcolor=back), backs, colours).T
    upper = state[0:2 * shown:2] + 1
    lower = np.full_like(upper, len(backs) - 1)
    lower_part = state[1:2 * shown:2] + 1
    lower[:lower_part.shape[0]] = lower_part
    return ids[upper, lower]


def heat_legend(palette: Palette) -> list[Segment]:
    return [Segment("0% ")] + [Segment("█", Style(color=c)) for c in palette.heat] + [Segment(" 100%")]


def draw_lanes(data: LanesInput, width: int, height: int) -> Grid:
    """One row per lane (as many as fit), each phase a run of its colour with its name inside
    when it fits; epoch lines ``┊`` where no name is, markers ``▼``."""
    palette, view = data.palette, data.view
    plot_w = width - AXIS
    lanes = data.lanes[:max(height, 1)]
    grid = Grid.blank(len(lanes), width)
    if plot_w <= 0:
        return grid
    axis_style = Style(color=palette.axis)
    text_colour = "#ffffff" if palette is PRESENTER else "#d0d0d0"
    edges, marks = data.overlay.edges(view, plot_w), data.overlay.marks(view, plot_w)
    # Each cell's style is (background: its phase's kind + 1, 0 for none; foreground: name, epoch line, marker).
    ids = _styles(palette, "lanes", lambda back, fg: Style(color=fg, bgcolor=back),
                  [palette.empty_bg, *_phase_colours(palette)], [text_colour, palette.boundary, palette.marker]).T
    span = max(view.t1 - view.t0, 1e-9)
    for y, lane in enumerate(lanes):
        mine = np.flatnonzero(data.lane_of == y)
        starts, ends = data.starts[mine], data.ends[mine]
        owner = _span_columns(starts, ends, view, plot_w)
        colour = np.append(data.kinds[mine] + 1, 0)[owner]   # owner -1 picks the trailing 0: no phase
        names = np.full(plot_w, " ", dtype="<U1")
        a = np.maximum(np.floor((starts - view.t0) / span * plot_w), 0).astype(np.int64)
        b = np.minimum(np.floor((ends - view.t0) / span * plot_w), plot_w - 1).astype(np.int64)
        for j in np.flatnonzero(b > a).tolist():  # a phase is named where its name fits inside it
            text = inert(data.names[mine[j]])
            if b[j] - a[j] + 1 > len(text) + 1:
                names[a[j] + 1:a[j] + 1 + len(text)] = list(text)
        kind = np.zeros(plot_w, dtype=np.int64)  # 0: the phase's name (or a blank), 1: an epoch line, 2: a marker
        line = edges & (names == " ")
        kind[marks & ~line] = 2
        kind[line] = 1
        names[line] = "┊"
        names[kind == 2] = "▼"
        grid.chars[y, AXIS:] = names
        grid.styles[y, AXIS:] = ids[kind, colour]
        _label(grid, y, lane, axis_style)
    return grid


__all__ = [
    "AXIS",
    "NORMAL",
    "PRESENTER",
    "AreaInput",
    "ChartInput",
    "Grid",
    "HeatInput",
    "LanesInput",
    "LinesInput",
    "Overlay",
    "Row",
    "View",
    "draw_area",
    "draw_heat",
    "draw_lanes",
    "draw_lines",
    "format_seconds",
    "heat_legend",
    "per_column",
    "style_id",
    "style_of",
]
