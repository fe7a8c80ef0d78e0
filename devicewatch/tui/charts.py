"""The chart widgets: each owns its input and draws it with a pure function of ``drawing``.

A chart's ``data`` is a reactive holding its typed input (``AreaInput``, ``LinesInput``,
``HeatInput``, ``LanesInput``); inputs compare equal when they would draw the same grid, so
setting an equal one does nothing. A new input, or a new size, draws a new grid; the chart
keeps the previous one and repaints only the cells that differ. An area chart or heat strip
gives its drawing function the previous grid, which draws only the columns that changed (and
returns the previous grid itself when none did: nothing is repainted).

Textual repaints a changed line whole, and its cost grows with the line's width and its runs of
one style (a shaded chart has hundreds). Once a live window is full, only its newest step changes
from one tick to the next, so a live chart shows its grid in two parts side by side: its newest
columns (``LIVE_PART`` of the plot, more than a step) in a narrow part of their own, the settled
ones beside it. Between two steps of the window only the narrow part's lines are repainted.
The parts keep their widths while the chart is live (resizing them is a layout pass of the
whole screen), so until the window is full the new columns fall among the settled ones: while
they do, the settled columns are cut into ``FILLING_PARTS`` parts, since the compositor writes
a changed line from the first column of its part (the wide part's lines were written whole at
every frame: 2.6 times the bytes of a full window's frames). Once the newest columns fall in the
narrow part, one settled part again (each part is a widget the compositor asks for its lines).
"""

from __future__ import annotations

import math
from typing import ClassVar, Generic, TypeVar
from collections.abc import Callable, Sequence

from textual.app import ComposeResult
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip

from .chart_cells import draw_area, draw_heat, draw_lanes, draw_lines
from .kept_lines import KeptLines
from .drawing import AXIS, AreaInput, ChartInput, Grid, HeatInput, LanesInput, LinesInput, Row, truecolor_only
from .strips import fit

InputT = TypeVar("InputT", bound=ChartInput)

# The share of a live chart's plot in its narrow part: a live window moves in steps of 1/20 of
# its width, so between steps the new columns (and the one they may fill in) fall inside it.
LIVE_PART = 1 / 16
# The parts the settled columns are cut into while a live window fills (its new columns fall
# among them): a changed line is written from its part's first column to the end of the change.
FILLING_PARTS = 4

class ChartPart(KeptLines):
    """Columns of a chart's grid, as strips built once per changed row; their lines kept for
    the compositor while unchanged (a refresh, a style update or another crop forgets them)."""

    DEFAULT_CSS = "ChartPart { height: 1fr; width: 1fr; }"

    def __init__(self, classes: str | None = None):
        super().__init__(classes=classes)
        self.x0 = self.x1 = 0   # the chart's grid columns shown
        self._rows: list[Row | None] = []
        self._strips: list[Strip] = []
        self._plain_styles: tuple[int, bool] | None = None   # ``_plain`` of the styles, by their key

    def show(self, grid: Grid, x0: int, x1: int, changes: list[tuple[int, int, int]] | None) -> None:
        """Show columns ``[x0, x1)`` of ``grid``; ``changes`` (row, from, to) since the last
        grid, or None when everything may have (new size, new part of the grid)."""
        part, width = grid.columns(x0, x1), x1 - x0
        if changes is None or (x0, x1) != (self.x0, self.x1) or len(self._rows) != grid.rows:
            self.x0, self.x1 = x0, x1
            self._rows, self._strips = [None] * part.rows, [Strip.blank(0)] * part.rows
            self._build(part, [(y, 0) for y in range(part.rows)], width)
            self.refresh()
            return
        changed = []   # (row, first, end) of the changed cells inside this part, in order of rows
        for y, a, b in changes:
            a, b = max(a, x0) - x0, min(b, x1) - x0
            if a < b:
                changed.append((y, a, b))
        if not changed:
            return
        self._build(part, [(y, a) for y, a, _ in changed], width)
        # A changed row is repainted across the part's width, one region for each run of changed
        # rows. The terminal is written from the part's first column whatever the region (the
        # compositor does not cut a line's start), but a region that ends inside the part makes
        # it crop the new strip first, a pass over its Segments and a new strip, every frame.
        regions: list[Region] = []
        for y, _, _ in changed:
            last = regions[-1] if regions else None
            if last is not None and last.bottom == y:
                regions[-1] = Region(0, last.y, width, last.height + 1)
            else:
                regions.append(Region(0, y, width, 1))
        self.refresh(*regions)

    def _build(self, part: Grid, rows: list[tuple[int, int]], width: int) -> None:
        """Draw ``rows`` (row, first changed column; in order of rows) of ``part`` again: only
        the changed columns' runs, the runs left of them kept. A row that repeats the one above
        it (a core's three rows, an area's full or empty rows) is that row's strip again: built
        once, and one strip to the compositor's caches."""
        repeats = part.repeats()
        built = part.rows_at([(y, self._rows[y], a) for y, a in rows if not repeats[y]])
        drawn = iter(built)
        for y, _ in rows:   # in order of rows: the row above is drawn when a row is
            if repeats[y]:
                self._rows[y], self._strips[y] = self._rows[y - 1], self._strips[y - 1]
            else:
                row = self._rows[y] = next(drawn)
                self._strips[y] = Strip(row.segments, width)

    def render_line(self, y: int) -> Strip:
        return self._line(y, self.size.width)

    def _line(self, y: int, width: int) -> Strip:
        if y < len(self._strips):
            return fit(self._strips[y], 0, width)
        return Strip.blank(width)

    def _render_unkept(self, crop: Region) -> list[Strip]:
        # The compositor asks every widget under a frame's changed area for all its lines (and
        # every part of a chart whose frame meets it: ``KeptLines`` hands back the last ones
        # while the part is unchanged), and Textual's styles cache makes a new strip of each
        # changed one (for borders, padding, tint and opacity, which a chart part has none of):
        # its drawn strips are handed over as they are, so an unchanged line is the same strip
        # from frame to frame.
        if not self._plain():
            return super()._render_unkept(crop)
        width = self.size.width   # a walk up to the screen each time it is asked
        strips = [self._line(y, width) for y in crop.line_range]
        filters = self.get_line_filters()
        if filters:
            background = self.background_colors[1]
            for line_filter in filters:
                strips = [strip.apply_filter(line_filter, background) for strip in strips]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _plain(self) -> bool:
        """Whether nothing of the widget's styles would change its lines: no border, outline,
        padding, tint, hatch or opacity (``ChartPart`` sets none; a theme or CSS could). Worked
        out again only when the styles change (Textual's key of them), not at every frame:
        each style read is a lookup through Textual's rules."""
        styles = self.styles
        key = styles._cache_key
        if self._plain_styles is None or self._plain_styles[0] != key:
            self._plain_styles = (key, (
                not any(edge for edge, _ in styles.border) and not any(edge for edge, _ in styles.outline)
                and not any(styles.padding) and not styles.tint.a and styles.opacity == 1.0
                and styles.text_opacity == 1.0 and (not styles.has_rule("hatch") or styles.hatch == "none")))
        return self._plain_styles[1] and self.opacity == 1.0   # the ancestors' opacity too

    def get_line_filters(self) -> Sequence[LineFilter]:
        # The app converts terminal colours to exact ones on every repainted line, one Segment at
        # a time (a third of a repaint's cost); a chart's cells are in exact colours already.
        filters = super().get_line_filters()
        if truecolor_only():
            return [f for f in filters if not isinstance(f, ANSIToTruecolor)]
        return filters


class Chart(KeptLines, Generic[InputT]):
    """Base: draws ``data`` at the widget's size whenever either changes."""

    DEFAULT_CSS = """
    Chart { height: 1fr; layout: horizontal; }
    Chart > ChartPart.-live { width: 0; }
    Chart > ChartPart.-filling { display: none; }
    """
    draw: ClassVar[Callable[..., Grid]]
    # Whether ``draw`` takes the previous grid and draws only the columns that changed.
    draws_changes: ClassVar[bool] = False

    data: reactive[InputT | None] = reactive(None, repaint=False, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self._grid: Grid | None = None
        self._drawn_size: tuple[int, int] | None = None
        self.rebuilds = 0   # grids drawn: a test's sign that the chart has drawn
        # The settled columns' parts (all but the first shown only while a live window fills),
        # then the live part.
        self._settled = (ChartPart(), *(ChartPart(classes="-filling") for _ in range(FILLING_PARTS - 1)))
        self._live = ChartPart(classes="-live")
        self._parts = (*self._settled, self._live)
        self._edges: list[int] = []   # the settled parts' columns last laid out

    def compose(self) -> ComposeResult:
        yield from self._parts

    def watch_data(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    @staticmethod
    def _split(data: ChartInput, width: int) -> int:
        """The first column of the narrow part of a live chart; its width when not live."""
        if data.view.live_from is None:
            return width
        return width - min(math.ceil((width - AXIS) * LIVE_PART) + 1, width - AXIS)

    @staticmethod
    def _settled_parts(data: ChartInput, width: int, split: int) -> int:
        """How many parts the settled columns ``[0, split)`` are cut into: ``FILLING_PARTS`` while
        the newest step of a live window begins among them (the window still fills), else one."""
        view = data.view
        if view.live_from is None or AXIS + view.column(view.live_from, width - AXIS) >= split:
            return 1
        return FILLING_PARTS

    def _draw(self) -> None:
        width, height = self.size
        data = self.data
        if data is None or width <= AXIS or height <= 0 or not self.is_mounted:
            return
        same_size = self._drawn_size == (width, height)
        if self.draws_changes and same_size:
            grid = type(self).draw(data, width, height, self._grid)
            if grid is self._grid:  # no visible cell changed
                return
        else:
            grid = type(self).draw(data, width, height)
        changes = grid.changes(self._grid) if same_size else None
        self._grid, self._drawn_size = grid, (width, height)
        self.rebuilds += 1
        split = self._split(data, width)
        count = self._settled_parts(data, width, split)
        edges = [split * k // count for k in range(count + 1)]
        settled_changes = changes
        if edges != self._edges:
            self._lay_out_parts(edges, width)
            settled_changes = None   # a part shown again holds the rows of the last time it was shown
        for k, part in enumerate(self._settled[:count]):
            part.show(grid, edges[k], edges[k + 1], settled_changes)
        self._live.show(grid, split, width, changes)

    def _lay_out_parts(self, edges: list[int], width: int) -> None:
        """Show the settled parts between ``edges`` (the rest hidden) and the live part after
        them: a layout pass, only when the chart goes live or not, its window starts or stops
        filling, or its size changes."""
        self._edges = edges
        count = len(edges) - 1
        for k, part in enumerate(self._settled):
            if k:
                part.set_class(k >= count, "-filling")
            if k < count:
                # One settled part takes what the live part leaves (the CSS's 1fr); several, their columns.
                part.styles.width = edges[k + 1] - edges[k] if count > 1 else None
        self._live.styles.width = width - edges[-1]

    def text(self) -> list[str]:
        """The rows drawn last, as text (what a test reads)."""
        return self._grid.text() if self._grid is not None else []


class AreaChart(Chart[AreaInput]):
    """One series as a filled area of eighth blocks over phase shading, with epoch lines."""

    draw = staticmethod(draw_area)
    draws_changes = True


class LineChart(Chart[LinesInput]):
    """Several series as braille lines, one colour each, on a shared y scale."""

    draw = staticmethod(draw_lines)


class HeatStrip(Chart[HeatInput]):
    """Every CPU core over time: whole rows per core when there are few, two cores per row
    (half blocks) or groups of cores averaged when there are many."""

    draw = staticmethod(draw_heat)
    draws_changes = True


class PhaseLanes(Chart[LanesInput]):
    """One row per lane: which phase runs when, coloured like the shading of the charts."""

    draw = staticmethod(draw_lanes)


class TallLanes(PhaseLanes):
    """Phase lanes as tall as their lanes (the run screen's; the comparison gives both of its
    sides the taller side's height)."""

    def watch_data(self) -> None:
        if self.data is not None:
            self.styles.height = max(1, len(self.data.lanes))
        super().watch_data()
