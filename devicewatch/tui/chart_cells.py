"""The charts drawn as cells: area, lines, heat strip and lanes, each a pure function from its
typed input (``drawing``) and a size to a ``Grid``, tested cell by cell.

An area chart and a heat strip can be given the grid they drew before: they then draw only the
columns whose per-column figures changed (level, shading, epoch line, marker; each core's
level), and return the grid before unchanged when none did, so the widget repaints nothing.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from rich.segment import Segment
from rich.style import Style

from .. import nanmath
from ..render.palette import NORMAL, PRESENTER, Palette
from ..safe_text import inert
from .drawing import (AXIS, AreaInput, BRAILLE_BITS, ChartInput, EIGHTHS, Grid, HeatInput, LanesInput, LinesInput, Overlay, Row,
                      View, _changed_columns, _fmt, clamp, _label, _phase_colours, _span_columns, _time_axis,
                      format_seconds, lane_labels, per_column, style_id, style_of)

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
    level = np.where(np.isnan(col), -1, clamp(np.rint(col / top * rows * 8), 0, rows * 8)).astype(np.int64)
    state = np.array([level, data.overlay.shading(view, plot_w), data.overlay.edges(view, plot_w),
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
    fill = np.where(level >= 0, clamp(level[None, :] - from_bottom * 8, 0, 8), 0)
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
        dot = np.where(np.isnan(col), -1, clamp(np.rint(col / top * (dots_h - 1)), 0, dots_h - 1)).astype(int)
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
    core has whole rows (up to three), else 0; cores averaged per half row; half rows used.
    A row each is taken as soon as every core has one (two cores in three rows: not one half
    row and two rows left blank)."""
    rows = max(1, height - 1)
    if cores and cores <= rows:
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
    level = np.where(np.isnan(level_grid), -1, clamp(np.rint(level_grid / 100.0 * steps), 0, steps)).astype(np.int64)
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
    labels = lane_labels(lanes)
    for y in range(len(lanes)):
        mine = (data.lane_of == y).nonzero()[0]
        starts, ends = data.starts[mine], data.ends[mine]
        owner = _span_columns(starts, ends, view, plot_w)
        colour = np.append(data.kinds[mine] + 1, 0)[owner]   # owner -1 picks the trailing 0: no phase
        a = np.maximum(np.floor((starts - view.t0) / span * plot_w), 0).astype(np.int64)
        b = np.minimum(np.floor((ends - view.t0) / span * plot_w), plot_w - 1).astype(np.int64)
        # A phase is named where its name fits inside it: a name of one character or more
        # needs three columns or more (its first is the phase's edge). A phase nested in another
        # (a loop's wait inside its training) is named only where a blank parts its name from the
        # one already there, so two names never read as one ("train 1data 1"). A live window
        # holds a hundred phases, most narrower: placed in a list of plain characters, made an
        # array once.
        row = [" "] * plot_w
        named = (b - a > 1).nonzero()[0]
        for j, first, last in zip(mine[named].tolist(), a[named].tolist(), b[named].tolist()):
            text = inert(data.names[j])
            if last - first + 1 > len(text) + 1 and not "".join(row[first:first + len(text) + 2]).strip():
                row[first + 1:first + 1 + len(text)] = text
        names = np.array(row, dtype="<U1")
        kind = np.zeros(plot_w, dtype=np.int64)  # 0: the phase's name (or a blank), 1: an epoch line, 2: a marker
        line = edges & (names == " ")
        kind[marks & ~line] = 2
        kind[line] = 1
        names[line] = "┊"
        names[kind == 2] = "▼"
        grid.chars[y, AXIS:] = names
        grid.styles[y, AXIS:] = ids[kind, colour]
        _label(grid, y, labels[y], axis_style)
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
