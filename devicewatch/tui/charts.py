"""Cheap live charts: Line-API widgets that draw NumPy arrays into cached strips.

A chart is rebuilt only when ``update`` hands it a different key (data version, time window,
size, palette); ``render_line`` then returns a cached ``Strip``. Each chart reduces its data to
one value per screen column with a single ``reduceat`` and draws with block or braille
characters, so a redraw costs microseconds per line instead of a plotting library's layout.
Every chart shares the same time-to-column mapping (``AXIS`` label columns, then the plot), so
charts stacked in one panel line up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from ..render.palette import NORMAL, PRESENTER, Palette
from ..safe_text import inert

AXIS = 7          # columns of y labels left of every plot
EIGHTHS = " ▁▂▃▄▅▆▇█"
BRAILLE_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] in a cell




@dataclass
class View:
    """The time window every chart of a screen draws: ``t0`` to ``t1`` seconds of the run."""

    t0: float
    t1: float
    live: bool = True

    def columns(self, times: np.ndarray, width: int) -> np.ndarray:
        span = max(self.t1 - self.t0, 1e-9)
        return np.floor((times - self.t0) / span * width).astype(int)

    def column(self, time: float, width: int) -> int:
        return int(math.floor((time - self.t0) / max(self.t1 - self.t0, 1e-9) * width))

    def key(self) -> tuple[float, float]:
        return (round(self.t0, 3), round(self.t1, 3))


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
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
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


@dataclass
class Overlay:
    """What is drawn behind and over a time chart: phase shading, epoch lines, markers."""

    spans: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, kind)
    boundaries: list[float] = field(default_factory=list)
    markers: list[float] = field(default_factory=list)

    def key(self) -> tuple[Any, ...]:
        return (len(self.spans), tuple(round(s[1], 2) for s in self.spans[-2:]), len(self.boundaries),
                len(self.markers))

    def columns(self, view: View, width: int, palette: Palette) -> tuple[list[str | None], set[int], set[int]]:
        bg: list[str | None] = [palette.empty_bg] * width
        for start, end, kind in self.spans:
            a, b = max(view.column(start, width), 0), min(view.column(end, width), width - 1)
            if b >= a:
                bg[a:b + 1] = [palette.phase.get(kind, palette.phase["other"])] * (b - a + 1)
        edges = {view.column(b, width) for b in self.boundaries}
        marks = {view.column(m, width) for m in self.markers}
        return bg, {x for x in edges if 0 <= x < width}, {x for x in marks if 0 <= x < width}


def format_seconds(value: float) -> str:
    value = max(value, 0.0)
    if value < 60:
        return f"{value:.0f}s" if value >= 10 or value == int(value) else f"{value:.1f}s"
    minutes, seconds = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes}:{seconds:02d}"
    return f"{minutes // 60}h{minutes % 60:02d}"


def time_axis(view: View, width: int, style: Style) -> Strip:
    """A row of tick labels under a plot: times since the run started."""
    chars = [" "] * width
    ticks = max(2, min(6, width // 14))
    for i in range(ticks):
        x = round(i * (width - 1) / (ticks - 1))
        label = format_seconds(view.t0 + (view.t1 - view.t0) * x / max(width - 1, 1))
        at = min(max(0, x - len(label) // 2), width - len(label))
        if all(c == " " for c in chars[max(at - 1, 0):at + len(label) + 1]):
            chars[at:at + len(label)] = label
    return Strip([Segment(" " * AXIS), Segment("".join(chars), style)], AXIS + width)


class Chart(Widget):
    """Base: caches one Strip per line, rebuilt by ``update`` when its key changes."""

    DEFAULT_CSS = "Chart { height: 1fr; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self._key: Any = None
        self._strips: list[Strip] = []
        self.rebuilds = 0

    @property
    def palette(self) -> Palette:
        return PRESENTER if getattr(self.app, "presenter", False) else NORMAL

    def update(self, key: Any, *args: Any) -> bool:
        """Rebuild if ``key`` (plus size and palette) differs from the last build; True if it did."""
        full_key = (key, self.size.width, self.size.height, self.palette is PRESENTER)
        if full_key == self._key or self.size.width <= AXIS or self.size.height <= 0:
            return False
        size_changed = self._key is None or full_key[1:] != self._key[1:]
        self._key = full_key
        old, self._strips = self._strips, self.build(self.size.width, self.size.height, *args)
        self.rebuilds += 1
        if size_changed or len(old) != len(self._strips):
            self.refresh()
            return True
        # Repaint only the lines that differ: a chart whose view did not move changes in its
        # newest columns alone, and repainting the whole widget is most of a redraw's cost.
        for y, (before, after) in enumerate(zip(old, self._strips)):
            span = _changed_span(list(before), list(after))
            if span is not None:
                self.refresh(Region(span[0], y, span[1] - span[0], 1))
        return True

    def build(self, width: int, height: int, *args: Any) -> list[Strip]:
        raise NotImplementedError

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y].crop_extend(0, self.size.width, None)
        return Strip.blank(self.size.width)

    def on_resize(self) -> None:
        self._key = None
        request = getattr(self.screen, "request_redraw", None)
        if request is not None:  # sizes are known only after layout: draw again at the new size
            request()


def _changed_span(before: list[Segment], after: list[Segment]) -> tuple[int, int] | None:
    """The cells ``[x0, x1)`` of a line that differ between two builds; None if none do."""
    if before == after:
        return None
    head = 0
    x0 = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        x0 += before[head].cell_length
        head += 1
    tail = 0
    right = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        right += before[-1 - tail].cell_length
        tail += 1
    total = max(sum(s.cell_length for s in before), sum(s.cell_length for s in after))
    x1 = total - right
    return (x0, x1) if x1 > x0 else (0, total)


def _label(text: str, style: Style) -> Segment:
    return Segment(text[:AXIS - 1].rjust(AXIS - 1) + " ", style)


def _runs(cells: Sequence[tuple[str, Style]]) -> list[Segment]:
    """Merge neighbouring cells of the same style into one segment."""
    segments: list[Segment] = []
    text, style = "", None
    for char, cell_style in cells:
        if cell_style == style:
            text += char
        else:
            if text:
                segments.append(Segment(text, style))
            text, style = char, cell_style
    if text:
        segments.append(Segment(text, style))
    return segments


def _grid_segments(chars: np.ndarray, style_ids: np.ndarray, styles: list[Style]) -> list[list[Segment]]:
    """Rows of segments from a grid of characters (``<U1``) and of indexes into ``styles``:
    neighbouring cells of equal style merge into one segment, as ``_runs`` does cell by cell."""
    canonical: list[int] = []
    for i, style in enumerate(styles):  # equal styles built from different keys still merge
        canonical.append(next(j for j in range(i + 1) if styles[j] == style))
    ids = np.asarray(canonical, dtype=np.int64)[style_ids]
    width = chars.shape[1]
    rows = []
    for text, row in zip(np.ascontiguousarray(chars, dtype="<U1").view(f"<U{width}").ravel(), ids):
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]]).tolist()
        ends = starts[1:] + [width]
        rows.append([Segment(text[a:b].ljust(b - a), styles[row[a]]) for a, b in zip(starts, ends)])
    return rows


class AreaChart(Chart):
    """One series as a filled area of eighth blocks over phase shading, with epoch lines."""

    def build(self, width: int, height: int, t: np.ndarray, values: np.ndarray, view: View,
              top: float, unit: str, overlay: Overlay, axis: bool = True) -> list[Strip]:
        palette = self.palette
        plot_w = width - AXIS
        rows = height - 1 if axis and height > 2 else height
        col = per_column(t, values, view, plot_w)
        top = top if top > 0 else 1.0
        level = np.where(np.isnan(col), -1, np.clip(np.round(col / top * rows * 8), 0, rows * 8)).astype(int)
        bg, edges, marks = overlay.columns(view, plot_w, palette)
        # Every cell's style is (background column, foreground kind): index = bg * 3 + fg.
        backs = list(dict.fromkeys(bg))
        bg_index = np.array([backs.index(b) for b in bg], dtype=np.int64)
        fg_colours = [palette.area, palette.boundary, palette.marker]
        styles = [Style(color=fg, bgcolor=back) for back in backs for fg in fg_colours]
        is_edge = np.zeros(plot_w, dtype=bool)
        is_edge[list(edges)] = True
        is_mark = np.zeros(plot_w, dtype=bool)
        is_mark[list(marks)] = True
        from_bottom = (rows - 1 - np.arange(rows))[:, None]
        fill = np.where(level >= 0, np.clip(level[None, :] - from_bottom * 8, 0, 8), 0)
        chars = np.array(list(EIGHTHS), dtype="<U1")[fill]
        fg = np.broadcast_to(is_edge.astype(np.int64), (rows, plot_w)).copy()
        chars[(fill == 0) & is_edge[None, :]] = "┊"
        if rows:
            top_mark = (fill[0] == 0) & is_mark
            chars[0, top_mark] = "▼"
            fg[0, top_mark] = 2
        rows_segments = _grid_segments(chars, bg_index[None, :] * 3 + fg, styles)
        axis_style = Style(color=palette.axis)
        strips = []
        for y in range(rows):
            if y == 0:
                label = f"{_fmt(top)}{unit}"
            elif y == rows - 1:
                label = f"0{unit}"
            elif y == rows // 2 and rows >= 5:
                label = f"{_fmt(top / 2)}{unit}"
            else:
                label = ""
            strips.append(Strip([_label(label, axis_style), *rows_segments[y]], width))
        if rows < height:
            strips.append(time_axis(view, plot_w, axis_style))
        return strips


class LineChart(Chart):
    """Several series as braille lines, one colour each, on a shared y scale."""

    def build(self, width: int, height: int, series: list[tuple[np.ndarray, np.ndarray]],
              view: View, top: float, unit: str, axis: bool = True) -> list[Strip]:
        palette = self.palette
        plot_w = width - AXIS
        rows = height - 1 if axis and height > 2 else height
        bits = np.zeros((rows, plot_w), dtype=np.int32)
        owner = np.full((rows, plot_w), -1, dtype=np.int32)
        dots_h = rows * 4
        top = top if top > 0 else 1.0
        for s, (t, values) in enumerate(series):
            col = per_column(t, values, view, plot_w * 2)
            dot = np.where(np.isnan(col), -1, np.clip(np.round(col / top * (dots_h - 1)), 0, dots_h - 1)).astype(int)
            previous = -1
            for x, d in enumerate(dot):
                if d < 0:
                    previous = -1
                    continue
                low, high = (min(previous, d), max(previous, d)) if previous >= 0 else (d, d)
                for level in range(low, high + 1):
                    row_dot = dots_h - 1 - level
                    cy, cx = divmod(row_dot, 4)[0], x // 2
                    bits[cy, cx] |= BRAILLE_BITS[row_dot % 4][x % 2]
                    owner[cy, cx] = s
                previous = d
        axis_style = Style(color=palette.axis)
        colours = [Style(color=palette.lines[i % len(palette.lines)], bgcolor=palette.empty_bg)
                   for i in range(max(len(series), 1))]
        blank = Style(bgcolor=palette.empty_bg)
        chars = np.where(bits > 0, (0x2800 + bits).astype(np.uint32).view("<U1"), " ")
        segments = _grid_segments(chars, np.where(bits > 0, owner + 1, 0), [blank, *colours])
        strips = []
        for y in range(rows):
            label = f"{_fmt(top)}{unit}" if y == 0 else (f"0{unit}" if y == rows - 1 else "")
            strips.append(Strip([_label(label, axis_style), *segments[y]], width))
        if rows < height:
            strips.append(time_axis(view, plot_w, axis_style))
        return strips


class HeatStrip(Chart):
    """Every CPU core over time: two cores per text row (upper and lower half block), or groups
    of cores averaged per half row when there are more cores than half rows."""

    def build(self, width: int, height: int, t: np.ndarray, cpu: np.ndarray, view: View,
              overlay: Overlay) -> list[Strip]:
        palette = self.palette
        plot_w = width - AXIS
        cores = cpu.shape[1] if cpu.ndim == 2 else 0
        rows = max(1, height - 1)
        group = max(1, math.ceil(cores / (rows * 2)))
        halves = math.ceil(cores / group) if cores else 0
        grid = per_column(t, cpu, view, plot_w) if cores else np.full((plot_w, 0), np.nan)
        if group > 1 and cores:
            padded = np.full((plot_w, halves * group), np.nan)
            padded[:, :cores] = grid
            with np.errstate(invalid="ignore"):
                grid = np.nanmean(padded.reshape(plot_w, halves, group), axis=2)
        steps = len(palette.heat) - 1
        level = np.where(np.isnan(grid), -1, np.clip(np.round(grid / 100.0 * steps), 0, steps)).astype(int)
        empty = palette.empty_bg or "#000000"
        colours = [empty, *palette.heat]  # index = level + 1
        axis_style = Style(color=palette.axis)
        strips = []
        if cores and cores <= rows // 2:  # few cores: whole rows each, up to three per core
            per_core = min(3, rows // cores)
            styles = [Style(color=c, bgcolor=palette.empty_bg) for c in colours]
            chars = np.full((cores, plot_w), "█", dtype="<U1")
            segments = _grid_segments(chars, level.T[:cores] + 1, styles)
            for core in range(cores):
                for line in range(per_core):
                    strips.append(Strip([_label(f"cpu{core}" if line == 0 else "", axis_style), *segments[core]], width))
            strips.append(time_axis(view, plot_w, axis_style))
            return strips
        shown = min(rows, math.ceil(halves / 2))
        if shown:
            # Style index = upper level * (len + 1) + lower level, with one extra lower "colour"
            # for a last row whose lower half has no core.
            backs = [*colours, palette.empty_bg]
            styles = [Style(color=fg, bgcolor=back) for fg in colours for back in backs]
            upper = level[:, 0:2 * shown:2].T + 1
            lower = np.full_like(upper, len(backs) - 1)
            lower_part = level[:, 1:2 * shown:2].T + 1
            lower[:lower_part.shape[0]] = lower_part
            chars = np.full(upper.shape, "▀", dtype="<U1")
            segments = _grid_segments(chars, upper * len(backs) + lower, styles)
        for r in range(shown):
            first = 2 * r * group
            last = min((2 * r + 2) * group, cores) - 1
            label = f"{first}-{last}" if last > first else f"{first}"
            if len(label) > AXIS - 1:  # 120-127 does not fit: the first core, the rest follow
                label = f"{first}+"
            strips.append(Strip([_label(label, axis_style), *segments[r]], width))
        strips.append(time_axis(view, plot_w, axis_style))
        return strips

    @staticmethod
    def legend(palette: Palette) -> list[Segment]:
        return [Segment("0% ")] + [Segment("█", Style(color=c)) for c in palette.heat] + [Segment(" 100%")]


class PhaseLanes(Chart):
    """One row per lane: which phase runs when, coloured like the shading of the charts."""

    def build(self, width: int, height: int, lanes: list[str], all_phases: list[Any], view: View,
              overlay: Overlay) -> list[Strip]:
        palette = self.palette
        plot_w = width - AXIS
        axis_style = Style(color=palette.axis)
        _bg, edges, marks = overlay.columns(view, plot_w, palette)
        strips = []
        for lane in lanes[:max(height, 1)]:
            cells: list[tuple[str, Style]] = []
            row: list[str | None] = [palette.empty_bg] * plot_w
            names: list[str] = [" "] * plot_w
            for p in all_phases:
                if p.lane != lane:
                    continue
                a, b = max(view.column(p.start, plot_w), 0), min(view.column(p.end, plot_w), plot_w - 1)
                colour = palette.phase.get(p.kind, palette.phase["other"])
                for x in range(a, b + 1):
                    row[x] = colour
                text = inert(p.name if p.epoch is None else f"{p.name} {p.epoch}")
                if b - a + 1 > len(text) + 1:
                    names[a + 1:a + 1 + len(text)] = text
            for x in range(plot_w):
                if x in edges and names[x] == " ":
                    cells.append(("┊", Style(color=palette.boundary, bgcolor=row[x])))
                elif x in marks:
                    cells.append(("▼", Style(color=palette.marker, bgcolor=row[x])))
                else:
                    cells.append((names[x], Style(color="#ffffff" if palette is PRESENTER else "#d0d0d0",
                                                  bgcolor=row[x])))
            strips.append(Strip([_label(lane, axis_style), *_runs(cells)], width))
        return strips


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.0f}"
    return f"{value:.1f}".rstrip("0").rstrip(".")


class CoalescedRedraw:
    """For screens holding charts: many charts resizing at once ask for one redraw, run after
    the next refresh. The screen defines ``redraw_now``."""

    _redraw_pending = False

    def request_redraw(self) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            self.call_after_refresh(self._pending_redraw)  # type: ignore[attr-defined]

    def _pending_redraw(self) -> None:
        self._redraw_pending = False
        self.redraw_now()

    def redraw_now(self) -> None:
        raise NotImplementedError

