"""Text from a run file made inert before any view shows it or any export writes it.

A recording is untrusted input: it travels with bug reports and between students. Whatever a
name, log line, metric key or header field holds, it must reach the screen as the characters
it is, never as a terminal command (escape sequences set titles, rewrite the screen, write
files through some terminals), never as markup (rich and Textual read ``[...]``), and never
reach a spreadsheet as a formula. Every view passes run-file strings through here; this is
the one place that knows how. No Textual import: the core and the dashboard both use it.
"""

from __future__ import annotations

import re
from typing import Any

# ESC or CSI introduced sequences: CSI (ESC [ … final), OSC/DCS/SOS/PM/APC strings up to BEL or
# ST (or the end of the text, so an unterminated one cannot swallow what a view adds after it),
# and two-character escapes.
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b.?", re.S)
# What is left that a terminal acts on, or that reorders what is shown (bidirectional
# overrides, as in "Trojan Source"): shown as a visible escape instead.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")   # OWASP CSV injection


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch == "\t":
        return " "
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(value: Any, newlines: bool = False) -> str:
    """``value`` as plain text: escape sequences removed, other control characters made
    visible (``\\x07``); with ``newlines``, line breaks are kept (for multi-line views)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    text = _SEQUENCE.sub("", text)
    if newlines:
        return "\n".join(_CONTROL.sub(_visible, line) for line in text.split("\n"))
    return _CONTROL.sub(_visible, text)


_SGR = re.compile(r"\x1b\[[0-9;:]*m")   # select graphic rendition: colours, bold, underline


def inert_keeping_colours(value: Any) -> str:
    """``value`` made inert as ``inert`` does, but for its colour and style sequences (SGR),
    kept for a view that draws them as a terminal would (the workload's output panel)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    kept = _SGR.findall(text)
    parts = [inert(part) for part in _SGR.split(text)]
    return "".join(part + sgr for part, sgr in zip(parts, kept + [""]))


def markup(value: Any) -> str:
    """``value`` for a place that reads rich or Textual markup (border titles, notify)."""
    text = re.sub(r"(\\*)\[", lambda m: m.group(1) * 2 + "\\[", inert(value))
    return text + "\\" if text.endswith("\\") and not text.endswith("\\\\") else text


def csv_cell(value: Any) -> Any:
    """A CSV cell no spreadsheet reads as a formula: text starting with = + - @ tab or CR gets
    a leading apostrophe (numbers stay numbers)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def inert_table(table: Any) -> Any:
    """A rich Table with every text in it (title, headers, cells) made inert, in place: each
    becomes a rich ``Text``, which no console, rich's or Textual's, reads as markup."""
    from rich.text import Text

    def plain(value: Any) -> Any:
        return Text(inert(value)) if isinstance(value, str) else value

    table.title = plain(table.title)
    for column in table.columns:
        column.header = plain(column.header)
        column._cells = [plain(cell) for cell in column._cells]
    return table
