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

A scrollbar is refreshed whenever the size it reflects changes (a log's every write), though its
thumb moves by eighths of a cell: ``KeptScrollbars`` gives a scrolled widget scrollbars whose
lines are kept while the bar they draw is the same, and a corner kept like the rest.

A panel of text that scrolls (the workload's output gaining a line, the epochs panel a row) is
refreshed whole, and Textual's styles cache, which keeps a widget's styled lines by their row,
styles every line again, though most only moved up: ``KeptRows`` keeps them by the line drawn
in them instead (``RowsByContent``).
"""

from __future__ import annotations

import inspect
from typing import Any

from rich.segment import Segment, Segments
from textual._styles_cache import StylesCache
from textual.containers import Horizontal, Vertical
from textual.geometry import Region, Size
from textual.scrollbar import ScrollBar, ScrollBarCorner, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeptLines(Widget):
    """A widget whose rendered lines are kept from one frame to the next while it is unchanged."""

    _kept: tuple[tuple[object, ...], list[Strip]] | None = None
    # Whether a refresh forgets the lines; a widget whose key says all that changes them keeps
    # them through refreshes (a scrollbar), and forgets them at a style update only.
    _forget_when_refreshed = True

    def _set_dirty(self, *regions: Region) -> None:
        if self._forget_when_refreshed:
            self._kept = None
        super()._set_dirty(*regions)

    def notify_style_update(self) -> None:
        self._kept = None
        super().notify_style_update()

    def _kept_key(self, crop: Region) -> tuple[object, ...] | None:
        """What the kept lines were rendered for (None: render them, keep nothing)."""
        return (crop, tuple(map(id, self.get_line_filters())))   # a new size is a refresh

    def render_lines(self, crop: Region) -> list[Strip]:
        key = self._kept_key(crop)
        kept = self._kept
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        strips = self._render_unkept(crop)
        self._kept = None if key is None else (key, strips)
        return strips

    def _render_unkept(self, crop: Region) -> list[Strip]:
        """The lines when none are kept: Textual's (a widget that draws its own overrides this)."""
        return super().render_lines(crop)


class KeptHorizontal(Horizontal, KeptLines):
    """``Horizontal`` whose lines are kept while unchanged."""


class KeptVertical(Vertical, KeptLines):
    """``Vertical`` whose lines are kept while unchanged."""


class KeptFooter(Footer, KeptLines):
    """``Footer`` whose lines are kept while unchanged (a child of the screen, it is asked for
    them at every frame, whatever changed), and whose keys are shown whole or not at all: a
    key that does not fit the terminal is left out rather than cut ("? Ke"); the screens list
    Quit first, so it is the last to go."""

    def on_resize(self) -> None:
        self.call_after_refresh(self._whole_keys)

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._whole_keys)

    def _whole_keys(self) -> None:
        keys = list(self.query(FooterKey))
        palette = [key for key in keys if key.has_class("-command-palette")]
        room = self.size.width - sum(key.outer_size.width for key in palette)
        used = 0
        for key in keys:
            if key in palette:
                continue
            used += key.get_content_width(self.size, self.size) + key.styles.gutter.width
            if key.display != (used <= room):
                key.display = used <= room


class KeptScrollBar(ScrollBar, KeptLines):
    """A ``ScrollBar`` whose lines are kept while the bar it draws is unchanged.

    What it draws is worked out by Textual's own renderer (``render`` and the renderable's
    ``__rich_console__`` at the widget's size, as its render does), a few segments; the lines
    Textual renders from them go through the styles cache, which costs ten times that. They are
    kept through the refreshes a new size of what it reflects makes, by that drawing, the part
    asked for, the size and the line filters; a style update (the app's theme, an ancestor's
    colours) forgets them."""

    _forget_when_refreshed = False

    def _drawn(self) -> tuple[Segment, ...] | None:
        """The bar's segments at its size; None for a renderer other than Textual's own."""
        renderable = self.render()
        if type(renderable) is not ScrollBarRender:
            return None
        width, height = self.size
        options = self.app.console_options.update(highlight=False, width=width, height=height)
        drawn: list[Segment] = []
        for part in renderable.__rich_console__(self.app.console, options):
            if not isinstance(part, Segments):
                return None
            drawn += part.segments
        return tuple(drawn)

    def _kept_key(self, crop: Region) -> tuple[object, ...] | None:
        drawn = self._drawn()
        return None if drawn is None else (crop, self.size, tuple(map(id, self.get_line_filters())), drawn)


class KeptScrollBarCorner(ScrollBarCorner, KeptLines):
    """``ScrollBarCorner`` whose lines are kept while unchanged."""


class KeptScrollbars(Widget):
    """A scrolled widget whose scrollbars are ``KeptScrollBar``s and corner kept: made as
    Textual makes its own (a bar hidden until the layout shows it, each started as a child)."""

    def _kept_bar(self, vertical: bool) -> ScrollBar:
        bar = KeptScrollBar(vertical=vertical, name="vertical" if vertical else "horizontal",
                            thickness=self.scrollbar_size_vertical if vertical else self.scrollbar_size_horizontal)
        bar.display = False
        self.app._start_widget(self, bar)
        return bar

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        if self._vertical_scrollbar is None:
            self._vertical_scrollbar = self._kept_bar(vertical=True)
        return self._vertical_scrollbar

    @property
    def horizontal_scrollbar(self) -> ScrollBar:
        if self._horizontal_scrollbar is None:
            self._horizontal_scrollbar = self._kept_bar(vertical=False)
        return self._horizontal_scrollbar

    @property
    def scrollbar_corner(self) -> ScrollBarCorner:
        if self._scrollbar_corner is None:
            self._scrollbar_corner = KeptScrollBarCorner()
            self.app._start_widget(self, self._scrollbar_corner)
        return self._scrollbar_corner


class RowsByContent(StylesCache):
    """Textual's styles cache, which also keeps each styled content row by the strip the widget
    drew in it: a row between the borders and padding is styled from that strip alone (its left
    and right edges, padding, tint and opacity are the same on every such row), so a line that
    moved to another row is handed back as it was styled, not styled again. The top and bottom
    rows (a border and its title: a third of a panel's styling) are kept until their title changes.

    What a styled row depends on besides its strip (the styles, by Textual's key of them, sizes,
    padding, colours, opacity, the ANSI theme) is compared once a render; any change forgets
    every row. A row is found by its strip's identity (the widget hands back the same strip for
    a line it drew before); the rows kept are those of the latest renders, a few screens."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[int, tuple[Strip, Strip]] = {}   # id(drawn strip): (drawn strip, styled row)
        self._rows_for: tuple[object, ...] | None = None
        self._edges: dict[int, tuple[tuple[Any, ...], Strip]] = {}   # top and bottom row: (title, subtitle), row
        self._content_rows = range(0)
        self._content_top = 0   # the first content row: the content's line 0

    def render(self, styles: Any, size: Size, base_background: Any, background: Any, render_content_line: Any,
               filters: Any, border_title: Any, border_subtitle: Any, content_size: Size | None = None,
               padding: Any = None, crop: Region | None = None, opacity: float = 1.0, *args: Any,
               **kwargs: Any) -> list[Strip]:
        content_size = size if content_size is None else content_size
        padding = styles.padding if padding is None else padding
        key = (styles._cache_key, size, content_size, padding, base_background, background, opacity, args,
               tuple(kwargs.items()))
        if key != self._rows_for:
            self._rows_for, self._rows, self._edges = key, {}, {}
            # The rows styled from their strip alone: below the top border and padding, above
            # the bottom ones, within the content, off an outline's top and bottom rows.
            top, bottom = styles.gutter.top, size.height - styles.gutter.bottom
            self._content_top = top
            (outline_top, _), _, (outline_bottom, _), _ = styles.outline
            self._content_rows = range(max(top, 1 if outline_top else 0),
                                       min(bottom, top + content_size.height, size.height - 1 if outline_bottom else size.height))
        if len(self._rows) > 4 * size.height + 64:   # lines scroll through: keep a few screens
            self._rows = {}
        return super().render(styles, size, base_background, background, render_content_line, filters,
                              border_title, border_subtitle, content_size, padding, crop, opacity, *args, **kwargs)

    def render_line(self, styles: Any, y: int, size: Size, content_size: Size, padding: Any, base_background: Any,
                    background: Any, render_content_line: Any, *args: Any) -> Strip:
        if y not in self._content_rows:
            if y not in (0, size.height - 1):   # padding: Textual keeps its one blank row itself
                return super().render_line(styles, y, size, content_size, padding, base_background, background,
                                           render_content_line, *args)
            # The top or bottom edge: its border and title, the same until the title changes (a
            # new title is a new object; its colours and style are compared).
            labels = args[:2]
            kept_edge = self._edges.get(y)
            if kept_edge is not None and all(_same_label(a, b) for a, b in zip(kept_edge[0], labels)):
                return kept_edge[1]
            edge = super().render_line(styles, y, size, content_size, padding, base_background, background,
                                       render_content_line, *args)
            self._edges[y] = (labels, edge)
            return edge
        drawn = render_content_line(y - self._content_top)
        kept = self._rows.get(id(drawn))
        if kept is not None and kept[0] is drawn:
            return kept[1]
        row = super().render_line(styles, y, size, content_size, padding, base_background, background,
                                  lambda _y: drawn, *args)
        self._rows[id(drawn)] = (drawn, row)
        return row


def _same_label(a: Any, b: Any) -> bool:
    """Whether two border labels (title, colour, background, style; or None) draw alike: the
    same title object (Textual compares titles by their text alone), equal colours and style."""
    if a is None or b is None:
        return a is b
    return bool(a[0] is b[0] and a[1:] == b[1:])


# ``RowsByContent`` overrides two methods of Textual's private styles cache: it is used only where
# their parameters are the ones it was written against (tests/tui/test_textual_internals.py names
# them, for the range pyproject allows); elsewhere a widget keeps Textual's own cache.
_RENDER = ("styles", "size", "base_background", "background", "render_content_line", "filters", "border_title",
           "border_subtitle", "content_size", "padding", "crop", "opacity", "ansi_theme", "native_ansi")
_RENDER_LINE = ("styles", "y", "size", "content_size", "padding", "base_background", "background",
                "render_content_line", "border_title", "border_subtitle", "opacity", "ansi_theme", "native_ansi")


def rows_by_content_fits(cache: type[StylesCache] = StylesCache) -> bool:
    """Whether ``cache``'s ``render`` and ``render_line`` take what ``RowsByContent`` passes on."""
    def names(method: Any) -> tuple[str, ...]:
        return tuple(inspect.signature(method).parameters)[1:]
    return names(cache.render) == _RENDER and names(cache.render_line) == _RENDER_LINE


ROWS_BY_CONTENT = rows_by_content_fits()


class KeptRows(Widget):
    """A widget whose styled rows are kept by the line drawn in them (``RowsByContent``): for a
    widget that hands back the same strip for a line it drew before, wherever it now is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if ROWS_BY_CONTENT:
            self._styles_cache = RowsByContent()
