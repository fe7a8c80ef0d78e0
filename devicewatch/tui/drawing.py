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
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Hashable, Sequence

import numpy as np
from rich.segment import Segment
from rich.style import Style

from ..phase_kinds import KINDS
from ..render.palette import PRESENTER, Palette

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
# Segments by (text, style number): a shaded row is mostly one-cell runs of a few looks, the
# same few hundred segments drawn again at every window step (a lookup costs a third of making one).
_SEGMENTS: dict[tuple[str, int], Segment] = {}
SEGMENTS_KEPT = 8192
_TERMINAL_STYLES: set[int] = set()   # styles with a colour of the terminal's palette, or dim


def style_id(style: Style | None) -> int:
    """The number of ``style``; equal styles share one (the table only grows with new looks)."""
    if style is None:
        return 0
    found = _STYLE_IDS.get(style)
    if found is None:
        found = _STYLE_IDS[style] = len(_STYLES)
        _STYLES.append(style)
        if style.dim or any(colour is not None and colour.triplet is None for colour in (style.color, style.bgcolor)):
            _TERMINAL_STYLES.add(found)
    return found


def truecolor_only() -> bool:
    """Whether every style drawn so far is in exact colours, without dim: cells Textual's
    conversion of terminal colours (and dim) to exact ones would give back unchanged."""
    return not _TERMINAL_STYLES


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

    def repeats(self) -> list[bool]:
        """For each row, whether it holds the same cells as the row above."""
        if self.rows < 2:
            return [False] * self.rows
        same = (self.styles[1:] == self.styles[:-1]).all(axis=1) & (self.chars[1:] == self.chars[:-1]).all(axis=1)
        return [False, *same.tolist()]

    def row(self, y: int, before: Row | None = None, x0: int = 0) -> Row:
        """Row ``y``'s runs of one style (where each begins) and their segments, neighbouring
        cells of one style merged into one segment. With ``before``, that row as it was drawn when only
        cells from ``x0`` on have changed since: the runs that end before ``x0`` are kept, with
        their segments, and only the rest are built (from the run holding the cell left of
        ``x0``, which the first changed cell may now join)."""
        return self.rows_at([(y, before, x0)])[0]

    def rows_at(self, wanted: Sequence[tuple[int, Row | None, int]]) -> list[Row]:
        """``row(y, before, x0)`` for each of ``wanted``, all read out of the arrays at once: each
        row's characters as one string and where its runs of one style begin, so the walk goes
        from run to run, not cell to cell; each run's segment is the one made before for the
        same text and style (``_SEGMENTS``). A window step's whole rows cost half what they did."""
        if not wanted:
            return []
        ys = [y for y, _, _ in wanted]
        styles = self.styles[ys]
        width = styles.shape[1]
        # Each row as one string (a cell holding no character reads as NUL within it).
        texts = np.ascontiguousarray(self.chars[ys]).view(f"<U{max(width, 1)}").ravel().tolist()
        row_of, edge = (styles[:, 1:] != styles[:, :-1]).nonzero()
        edges = (edge + 1).tolist()   # where a run begins after a row's first cell, row after row
        bounds = row_of.searchsorted(np.arange(len(ys) + 1)).tolist()
        style_rows = styles.tolist()
        out = []
        for i, (_, before, x0) in enumerate(wanted):
            if before is None or x0 <= 0 or not before.starts:
                starts: list[int] = []
                segments: list[Segment] = []
                start = 0
            else:
                keep = max(bisect_right(before.starts, x0 - 1) - 1, 0)
                starts, segments, start = before.starts[:keep], before.segments[:keep], before.starts[keep]
            if start < width:
                text, cells = texts[i], style_rows[i]
                row_edges = edges[bounds[i]:bounds[i + 1]]
                later = row_edges[bisect_right(row_edges, start):]
                runs = [start, *later]
                holes = "\0" in text
                for a, b in zip(runs, [*later, width]):
                    starts.append(a)
                    key = (text[a:b].replace("\0", "") if holes else text[a:b], cells[a])
                    segment = _SEGMENTS.get(key)
                    if segment is None:
                        if len(_SEGMENTS) >= SEGMENTS_KEPT:
                            _SEGMENTS.clear()
                        segment = _SEGMENTS[key] = Segment(key[0], _STYLES[key[1]])
                    segments.append(segment)
            out.append(Row(starts, segments))
        return out

    def changes(self, before: Grid | None) -> list[tuple[int, int, int]] | None:
        """``(row, x0, x1)`` for each row whose cells ``[x0, x1)`` differ from ``before``; None
        when the two grids are not the same shape (everything changed)."""
        if before is None or before.chars.shape != self.chars.shape:
            return None
        differ = (self.chars != before.chars) | (self.styles != before.styles)
        rows = differ.any(axis=1).nonzero()[0]
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
    return (state != before.state).any(axis=0).nonzero()[0]


def _put(grid: Grid, y: int, x: int, text: str, style: Style | None) -> None:
    """Write ``text`` into row ``y`` from column ``x`` (cut at the grid's edge)."""
    text = text[:max(grid.width - x, 0)]
    grid.chars[y, x:x + len(text)] = list(text)
    grid.styles[y, x:x + len(text)] = style_id(style)


def _label(grid: Grid, y: int, text: str, style: Style) -> None:
    _put(grid, y, 0, text[:AXIS - 1].rjust(AXIS - 1) + " ", style)


_TAIL = re.compile(r"([-_:. ]?)([^-_:. ]*)$")
# The short forms training code itself uses, for a lane's name too long for its column: a word
# cut at the column ("valida") reads as a mistake on a projector; "val" does not.
_LETTERS = re.compile(r"[A-Za-z]+")
_SHORT = {"validate": "val", "validation": "val", "evaluate": "eval", "evaluation": "eval",
          "training": "train", "checkpoint": "ckpt", "dataloader": "loader",
          "prefetch": "fetch", "optimizer": "optim", "forward": "fwd", "backward": "bwd"}
_WORDS = re.compile(r"[^-_:. ]+")


def _compact(name: str) -> str:
    """A name's words as their first letters, its numbers whole: ``rank 10 train`` → ``r10t``."""
    return "".join(word if word.isdigit() else word[0] for word in _WORDS.findall(name))


def lane_labels(lanes: Sequence[str], width: int = AXIS - 1) -> list[str]:
    """Each lane's name in WIDTH columns, no two alike: a name that fits as it is; a longer one
    first with its words' usual short forms (``validate-0`` → ``val-0``), then keeping its last
    part (``prefetcher-3`` → ``pref-3``), which is what tells lanes apart most
    often; names still alike so are made of their words' first letters and their numbers
    (``rank 10 train`` → ``r10t``), and any left alike get their place among them (``~2``)."""
    labels = []
    for name in lanes:
        if len(name) <= width:
            labels.append(name)
            continue
        name = _LETTERS.sub(lambda word: _SHORT.get(word.group(0).lower(), word.group(0)), name)
        if len(name) <= width:
            labels.append(name)
            continue
        sep, tail = _TAIL.search(name).groups()  # type: ignore[union-attr]  # the pattern matches any string
        keep = width - len(sep) - len(tail)
        labels.append(name[:keep] + sep + tail if tail and keep >= 2 else name[:width])
    for step in (0, 1):
        groups: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            groups.setdefault(label, []).append(i)
        for members in groups.values():
            if len(members) < 2:
                continue
            for k, i in enumerate(members, 1):
                if step == 0 and len(_compact(lanes[i])) <= width:
                    labels[i] = _compact(lanes[i])
                elif step == 1:
                    mark = f"~{k}"
                    labels[i] = lanes[i][:width - len(mark)] + mark
    return labels


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


def clamp(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``np.clip(values, low, high)`` without its Python wrapper, which costs more than the work
    on a chart's few hundred values."""
    return np.minimum(np.maximum(values, low), high)


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours begins: ``np.r_[True, values[1:] != values[:-1]]``
    without ``np.r_``, which costs more than the comparison itself on a chart's few hundred columns."""
    starts = np.empty(values.size, dtype=bool)
    starts[:1] = True
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return starts.nonzero()[0]


def per_column(t: np.ndarray, values: np.ndarray, view: View, width: int, fill: bool = True) -> np.ndarray:
    """Mean of ``values`` (rows, or rows × k) in each of ``width`` time columns; NaN where none.

    With ``fill``, a column without a sample between two that have one repeats the previous
    value: a window shorter than one sample per column still draws a continuous line.
    """
    shape = (width,) + values.shape[1:]
    out = np.full(shape, np.nan)
    if width <= 0 or t.size == 0:
        return out
    lo = int(t.searchsorted(view.t0, "left"))
    hi = int(t.searchsorted(view.t1, "right"))
    if hi <= lo:
        return out
    cols = clamp(view.columns(t[lo:hi], width), 0, width - 1)
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
    visible = (b >= a).nonzero()[0]
    if not visible.size:
        return owner
    a, b = a[visible], b[visible]
    lengths = b - a + 1
    before = lengths.cumsum() - lengths   # cells of the spans before each
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
