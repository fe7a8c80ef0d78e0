"""Widgets that hand the compositor the lines they gave it last, until they change.

Textual's compositor asks every widget under a frame's changed area for all its lines, whether
or not the widget changed: a live run's frame changes a few columns of the charts, and the
screen, its rows and panels and every text line beside them are rendered again, each line
through the styles cache (its filters applied and cropped anew). Their lines change only when
the widget is refreshed (its content, a scroll, a style, a selection, a new size: ``_set_dirty``,
where Textual's own line cache is told too), or when the part asked for or the app's line
filters do: until then the last lines are handed back as they were.

A widget takes ``KeptLines`` after its Textual class (``class Panel(Vertical, KeptLines)``): Textual
reads a widget's default CSS along its first bases only. ``KeptHorizontal``, ``KeptVertical``
and ``KeptFooter`` are Textual's own.
"""

from __future__ import annotations

from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer


class KeptLines(Widget):
    """A widget whose rendered lines are kept from one frame to the next while it is unchanged."""

    _kept: tuple[tuple[Region, tuple[int, ...]], list[Strip]] | None = None

    def _set_dirty(self, *regions: Region) -> None:
        self._kept = None
        super()._set_dirty(*regions)

    def render_lines(self, crop: Region) -> list[Strip]:
        key = (crop, tuple(map(id, self.get_line_filters())))   # a new size is a refresh
        kept = self._kept
        if kept is not None and kept[0] == key:
            return kept[1]
        strips = super().render_lines(crop)
        self._kept = (key, strips)
        return strips


class KeptHorizontal(Horizontal, KeptLines):
    """``Horizontal`` whose lines are kept while unchanged."""


class KeptVertical(Vertical, KeptLines):
    """``Vertical`` whose lines are kept while unchanged."""


class KeptFooter(Footer, KeptLines):
    """``Footer`` whose lines are kept while unchanged (a child of the screen, it is asked for
    them at every frame, whatever changed)."""
