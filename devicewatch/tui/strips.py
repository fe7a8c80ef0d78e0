"""Cutting a drawn line to a widget's width without making a cycle of it.

Textual's ``Strip.crop_extend`` keeps its result in a cache on the strip; when the strip is
already exactly the width asked for, that result is the strip itself, which then refers to
itself: a cycle only the full collector frees. Every chart line drawn at its widget's width was
one, thousands of strips and their segments a minute, and the full collections they set off
cost more than drawing. ``fit`` hands such a strip back as it is.
"""

from __future__ import annotations

from rich.style import Style
from textual.strip import Strip


def fit(strip: Strip, start: int, end: int, style: Style | None = None) -> Strip:
    """Cells ``[start, end)`` of ``strip``, padded with ``style`` where it is shorter."""
    if start == 0 and strip.cell_length == end:
        return strip
    return strip.crop_extend(start, end, style)
