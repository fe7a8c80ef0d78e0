"""The workload's output panel: the workload's terminal, as far as a panel of lines can be one.

Its lines with their colours, the line not yet ended redrawn in place (a ``\r`` bar), the view
following the end unless scrolled back; in typing mode, the keys go to the workload as a
terminal would send them (``key_bytes``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from .kept_lines import KeptLines, KeptRows, KeptScrollbars
from .strips import fit

STRIPS_KEPT = 256  # drawn lines kept: a few screens of the tallest panel

_CONTROL = re.compile("[\u0000-\u0014]")
# Keys as a terminal sends them, for the keys Textual names rather than gives as a character.
_KEY_BYTES = {"enter": "\r", "tab": "\t", "backspace": "\x7f", "delete": "\x1b[3~", "up": "\x1b[A",
              "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D", "home": "\x1b[H", "end": "\x1b[F",
              "pageup": "\x1b[5~", "pagedown": "\x1b[6~", "shift+tab": "\x1b[Z"}


def key_bytes(key: str, character: str | None) -> str | None:
    """What a terminal would send for KEY (Textual's name), or None for a key it sends nothing for."""
    if key in _KEY_BYTES:
        return _KEY_BYTES[key]
    if key.startswith("ctrl+") and len(key) == 6 and key[5].isalpha():
        return chr(ord(key[5]) - ord("a") + 1)   # ctrl+c is \x03: the workload's terminal makes it SIGINT
    return character if character and (character.isprintable() or character == " ") else None


def styled_line(line: str) -> Text:
    """An output line (made inert but for its colours) as a terminal draws it: rich reads the
    colour sequences (SGR) and drops any other escape sequence; control characters show as �."""
    line = _CONTROL.sub("\ufffd", line.expandtabs())
    return Text.from_ansi(line, no_wrap=True, end="") if "\x1b" in line else Text(line, no_wrap=True, end="")


class OutputLog(ScrollView, KeptLines, KeptScrollbars, KeptRows, can_focus=True):
    """The workload's output, as its terminal shows it: every line kept (up to ``max_lines``)
    with its colours, the line not yet ended last (a bar redrawn in place), the view following
    the end unless scrolled back; scrollbars, wheel and keys, selection, as Textual's ``Log``.

    Typing mode (``typing``) makes the panel the workload's terminal: keys go to the workload
    (``Typed``), Escape gives them back to the dashboard.

    Textual's ``Log`` grows its virtual size through a reactive that lays the whole screen out
    again, twice a write (once more when a worker thread has measured the new lines), and draws
    every visible line again on each frame. Here a write sets the size and the scrollbars
    directly (the scrollbars are always shown, so nothing else can move) and repaints this
    panel alone, and each line is drawn once.
    """

    ALLOW_SELECT = True
    DEFAULT_CSS = """
    OutputLog {
        background: $surface;
        color: $text;
        overflow: scroll;
        &:focus { background-tint: $foreground 5%; }
    }
    """

    class Typed(Message):
        """Keys typed into the workload's terminal, as the terminal would send them."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Sized(Message):
        """The panel's text area changed size: the workload's terminal is that size."""

        def __init__(self, rows: int, columns: int) -> None:
            super().__init__()
            self.rows, self.columns = rows, columns

    def __init__(self, max_lines: int = 2000, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self._lines: list[Text] = []     # the rows shown: the output's lines wrapped at the panel's width
        self._written: list[Text] = []   # the output's lines as written, wrapped again at a new width
        self._wrap_width = 0
        self._open: Text | None = None   # the line not yet ended, drawn after the others
        self._dropped = 0      # lines no longer kept: line i here is line dropped + i of the output
        self._width = 0
        # Drawn lines by line number of the output: the ones on screen and a few screens of
        # scrollback, not all ``max_lines`` (each drawn line holds its segments and caches).
        self._strips: LRUCache[int, Strip] = LRUCache(STRIPS_KEPT)
        # Each line as shown (cut to the panel at its scroll), by line number: a line that only
        # moved up a row is handed back as the same strip, and its styled row is kept with it.
        self._shown: LRUCache[int, tuple[Strip, tuple[object, ...], Strip]] = LRUCache(STRIPS_KEPT)
        self._blank: tuple[tuple[object, ...], Strip] | None = None
        self.typing = False
        # Whether the panel shows the newest line, and keeps doing so: scrolled to the end, not
        # away from it (a smaller panel after a resize is not the user scrolling up).
        self._following = True
        self._rendering: tuple[Style, int] | None = None   # the panel's style and width while its lines are rendered

    @property
    def lines(self) -> Sequence[str]:
        return [line.plain for line in self._lines]

    @property
    def open_line(self) -> str | None:
        return None if self._open is None else self._open.plain

    def write_lines(self, lines: Iterable[str], open_line: str | None = None) -> None:
        """Append LINES; OPEN_LINE (the line not yet ended, or None) replaces the one before."""
        following = self._following or self.is_vertical_scroll_end
        new = [styled_line(part) for line in lines for part in line.splitlines()]
        opened = None if open_line is None else styled_line(open_line.splitlines()[-1] if open_line.strip("\n") else "")
        if not new and (opened is None) == (self._open is None) and \
                (opened is None or self._open is None or opened.plain == self._open.plain):
            return
        self._strips.discard(self._dropped + len(self._lines))   # where the open line was drawn
        self._written = (self._written + new)[-self.max_lines:]
        rows = [row for line in new for row in self._wrap(line)]
        self._lines += rows
        self._open = opened
        if len(self._lines) > self.max_lines:
            drop = len(self._lines) - self.max_lines
            del self._lines[:drop]
            self._dropped += drop
        self._strips.discard(self._dropped + len(self._lines))
        widths = [row.cell_len for row in rows] + ([opened.cell_len] if opened is not None else [])
        self._width = max([self._width, *widths])
        self._resize()
        if following and not self.is_vertical_scrollbar_grabbed:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def _wrap(self, line: Text) -> list[Text]:
        """LINE as the rows a terminal of the panel's width shows it: wrapped at words, a word
        longer than a row folded (a figure at the edge is not cut: "accuracy 0.9" of 0.9306)."""
        width = self._wrap_width
        if width <= 0 or line.cell_len <= width:
            return [line]
        return list(line.wrap(self.app.console, width, overflow="fold", no_wrap=False))

    def _rewrap(self) -> None:
        """The rows again at the panel's new width, from the lines as written."""
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._wrap_width:
            return
        self._wrap_width = width
        if not any(line.cell_len > width for line in self._written) and \
                not any(row.cell_len > width for row in self._lines) and len(self._lines) == len(self._written):
            return   # every line fits, as before
        self._lines = [row for line in self._written for row in self._wrap(line)][-self.max_lines:]
        self._dropped = 0
        self._strips.clear()
        self._shown.clear()
        self._width = max([0, *(row.cell_len for row in self._lines)])
        self._resize()
        if self._following:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def _count(self) -> int:
        return len(self._lines) + (self._open is not None)

    def _resize(self) -> None:
        """The virtual size without the layout its reactive asks for; the scrollbars to match."""
        size = Size(self._width, self._count())
        self.set_reactive(Widget.virtual_size, size)
        width, height = self.container_size
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.window_virtual_size = size.height
            self.vertical_scrollbar.window_size = height - self.scrollbar_size_horizontal
        if self.show_horizontal_scrollbar:
            self.horizontal_scrollbar.window_virtual_size = size.width
            self.horizontal_scrollbar.window_size = width - self.scrollbar_size_vertical

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._shown.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The panel's style walks every ancestor's styles, its size up to the screen: worked out
        # once per render, not once per line.
        self._rendering = (self.rich_style, self.size.width)
        try:
            return super().render_lines(crop)
        finally:
            self._rendering = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        style, width = self._rendering or (self.rich_style, self.size.width)
        if index >= self._count():
            if self._blank is None or self._blank[0] != (width, style):
                self._blank = ((width, style), Strip.blank(width, style))
            return self._blank[1]
        strip = self._strip(index, style)
        cut = (scroll_x, width, style, index)   # the index is in the line's offsets: it moves as lines are dropped
        shown = self._shown.get(self._dropped + index)
        if shown is not None and shown[0] is strip and shown[1] == cut:
            return shown[2]
        line = fit(strip, scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)
        self._shown.set(self._dropped + index, (strip, cut, line))
        return line

    def _strip(self, index: int, style: Style) -> Strip:
        selection = self.text_selection
        key = self._dropped + index
        if selection is None and (kept := self._strips.get(key)) is not None:
            return kept
        line = self._lines[index] if index < len(self._lines) else self._open
        assert line is not None
        text = line.copy()
        text.stylize_before(style)
        if selection is not None and (span := selection.get_span(index)) is not None:
            start, end = span
            text.stylize(self.screen.get_component_rich_style("screen--selection"), start,
                         len(text) if end == -1 else end)
        strip = Strip(text.render(self.app.console), text.cell_len)
        if selection is None:
            self._strips.set(key, strip)
        return strip

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        shown = self.lines if self._open is None else [*self.lines, self._open.plain]
        return selection.extract("\n".join(shown)), "\n"

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._following = self.is_vertical_scroll_end

    def on_resize(self, event: events.Resize) -> None:
        self._rewrap()
        if self._following and not self.is_vertical_scroll_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        width, height = self.scrollable_content_region.size
        if width > 0 and height > 0:
            self.post_message(self.Sized(height, width))

    def start_typing(self) -> None:
        """Typing mode: the keys go to the workload until Escape (or the run's end)."""
        self.typing = True
        self.border_subtitle = "typing into the workload · Esc to stop"
        self.focus()

    def stop_typing(self) -> None:
        if self.typing:
            self.typing = False
            self.border_subtitle = ""

    def on_key(self, event: events.Key) -> None:
        """In typing mode every key is the workload's but Escape, which ends typing mode."""
        if not self.typing:
            return
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            self.stop_typing()
            return
        text = key_bytes(event.key, event.character)
        if text is not None:
            self.post_message(self.Typed(text))

    def on_paste(self, event: events.Paste) -> None:
        if self.typing:
            event.stop()
            self.post_message(self.Typed(event.text))
