"""The chart widgets: each owns its input and draws it with a pure function of ``drawing``.

A chart's ``data`` is a reactive holding its typed input (``AreaInput``, ``LinesInput``,
``HeatInput``, ``LanesInput``); inputs compare equal when they would draw the same grid, so
setting an equal one does nothing. A new input, or a new size, draws a new grid; the chart
keeps the previous one and repaints only the cells that differ.

Textual repaints a changed line of a widget whole, and its cost grows with the line's Segments
(a shaded chart has a run of one style per phase it shows, a heat strip one per cell). New
samples change only the newest few columns, so a chart shows its grid in tiles side by side:
its label columns, then the plot in ``TILES`` parts of nearly equal width (once it shows a
live window: a replay draws each chart in one part). A tick repaints the lines of the one or
two tiles holding the changed columns, wherever they are in the window (a live window still
filling, a whole run growing, or a full window between two of its steps); the rest of the chart
is not touched. The tiles' widths change only with the chart's.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar
from collections.abc import Callable

from textual.app import ComposeResult
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from .drawing import (AXIS, AreaInput, ChartInput, Grid, HeatInput, LanesInput, LinesInput, Row, draw_area,
                      draw_heat, draw_lanes, draw_lines)

InputT = TypeVar("InputT", bound=ChartInput)

# Tiles of the plot: more make a tick's repainted lines shorter (fewer Segments for the compositor
# to cut and the terminal to be sent), but every frame asks each widget its lines.
TILES = 8


class ChartPart(Widget):
    """Columns of a chart's grid, as strips built once per changed row."""

    DEFAULT_CSS = "ChartPart { height: 1fr; width: 1fr; }"

    def __init__(self, classes: str | None = None):
        super().__init__(classes=classes)
        self.x0 = self.x1 = 0   # the chart's grid columns shown
        self._rows: list[Row] = []
        self._strips: list[Strip] = []

    def show(self, grid: Grid, x0: int, x1: int, changes: list[tuple[int, int, int]] | None) -> None:
        """Show columns ``[x0, x1)`` of ``grid``; ``changes`` (row, from, to) since the last
        grid, or None when everything may have (new size, new part of the grid)."""
        part, width = grid.columns(x0, x1), x1 - x0
        if changes is None or (x0, x1) != (self.x0, self.x1) or len(self._rows) != grid.rows:
            self.x0, self.x1 = x0, x1
            self._rows = [part.row(y) for y in range(part.rows)]
            self._strips = [Strip(row.segments, width) for row in self._rows]
            self.refresh()
            return
        regions = []
        for y, a, b in changes:
            a, b = max(a, x0) - x0, min(b, x1) - x0
            if a < b:  # only the changed columns' runs are built again
                row = self._rows[y] = part.row(y, self._rows[y], a)
                self._strips[y] = Strip(row.segments, width)
                regions.append(Region(a, y, b - a, 1))
        if regions:  # one region: Textual repaints a changed line of the tile whole anyway
            self.refresh(Region.from_union(regions))

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y].crop_extend(0, self.size.width, None)
        return Strip.blank(self.size.width)


class Chart(Widget, Generic[InputT]):
    """Base: draws ``data`` at the widget's size whenever either changes."""

    DEFAULT_CSS = "Chart { height: 1fr; layout: horizontal; }"
    draw: ClassVar[Callable[..., Grid]]
    # Whether ``draw`` takes the previous grid and draws only the columns that changed.
    draws_changes: ClassVar[bool] = False

    data: reactive[InputT | None] = reactive(None, repaint=False, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self._grid: Grid | None = None
        self._drawn_size: tuple[int, int] | None = None
        self._edges: list[int] = []
        # One part until the chart first shows a live window; then its label columns and TILES
        # parts of the plot (a replay never pays for the widgets: dozens of charts open at once).
        self._tiles = [ChartPart()]
        self.rebuilds = 0   # grids drawn: a test's sign that the chart has drawn

    def compose(self) -> ComposeResult:
        yield from self._tiles

    def watch_data(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def tile_edges(self, width: int) -> list[int]:
        """Where the parts of the chart begin and end: the whole grid in one part, or the labels
        and then the plot in ``TILES`` parts."""
        if len(self._tiles) == 1:
            return [0, width]
        plot = max(width - AXIS, 0)
        return [0, *(AXIS + plot * i // TILES for i in range(TILES + 1))]

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
        if data.view.live_from is not None and len(self._tiles) == 1:
            more = [ChartPart() for _ in range(TILES)]
            self._tiles += more
            self.mount_all(more)
        edges = self.tile_edges(width)
        if edges != self._edges and len(self._tiles) > 1:  # a layout pass: only when the tiled chart's width changed
            self._edges = edges
            for tile, x0, x1 in zip(self._tiles, edges, edges[1:]):
                tile.styles.width = x1 - x0
        for tile, x0, x1 in zip(self._tiles, edges, edges[1:]):
            tile.show(grid, x0, x1, changes)

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
