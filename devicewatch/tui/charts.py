"""The chart widgets: each owns its input and draws it with a pure function of ``drawing``.

A chart's ``data`` is a reactive holding its typed input (``AreaInput``, ``LinesInput``,
``HeatInput``, ``LanesInput``); inputs compare equal when they would draw the same grid, so
setting an equal one does nothing. A new input, or a new size, draws a new grid; the chart
keeps the previous one and repaints only the cells that differ (a live chart whose window did
not move changes in its newest columns alone, and repainting whole lines is most of what a
frame costs). ``render_line`` returns strips built once per changed row.
"""

from __future__ import annotations

from typing import Callable, ClassVar, Generic, TypeVar

from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from .drawing import (AXIS, AreaInput, ChartInput, Grid, HeatInput, LanesInput, LinesInput, Row, draw_area,
                      draw_heat, draw_lanes, draw_lines)

InputT = TypeVar("InputT", bound=ChartInput)


class Chart(Widget, Generic[InputT]):
    """Base: draws ``data`` at the widget's size whenever either changes."""

    DEFAULT_CSS = "Chart { height: 1fr; }"
    draw: ClassVar[Callable[..., Grid]]

    data: reactive[InputT | None] = reactive(None, repaint=False, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self._grid: Grid | None = None
        self._strips: list[Strip] = []
        self._rows: list[Row] = []
        self._drawn_size: tuple[int, int] | None = None
        self.rebuilds = 0   # grids drawn: a test's sign that the chart has drawn

    def watch_data(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width, height = self.size
        data = self.data
        if data is None or width <= AXIS or height <= 0:
            return
        grid = type(self).draw(data, width, height)
        changes = grid.changes(self._grid) if self._drawn_size == (width, height) else None
        self._grid, self._drawn_size = grid, (width, height)
        self.rebuilds += 1
        if changes is None:
            self._rows = [grid.row(y) for y in range(grid.rows)]
            self._strips = [Strip(row.segments, width) for row in self._rows]
            self.refresh()
            return
        for y, x0, x1 in changes:  # a live chart changes in its newest columns: only they are built
            row = self._rows[y] = grid.row(y, self._rows[y], x0)
            self._strips[y] = Strip(row.segments, width)
            self.refresh(Region(x0, y, x1 - x0, 1))

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y].crop_extend(0, self.size.width, None)
        return Strip.blank(self.size.width)


class AreaChart(Chart[AreaInput]):
    """One series as a filled area of eighth blocks over phase shading, with epoch lines."""

    draw = staticmethod(draw_area)


class LineChart(Chart[LinesInput]):
    """Several series as braille lines, one colour each, on a shared y scale."""

    draw = staticmethod(draw_lines)


class HeatStrip(Chart[HeatInput]):
    """Every CPU core over time: whole rows per core when there are few, two cores per row
    (half blocks) or groups of cores averaged when there are many."""

    draw = staticmethod(draw_heat)


class PhaseLanes(Chart[LanesInput]):
    """One row per lane: which phase runs when, coloured like the shading of the charts."""

    draw = staticmethod(draw_lanes)
