"""Strips that die when they are dropped: Textual's strip caches without a strip inside its own.

A Textual ``Strip`` keeps what it was cut into in caches of its own. Two of them can hold the
strip itself: ``divide`` at the strip's own length gives ``[strip]``, and ``crop_extend`` to the
strip's own width gives the strip. Kept in its own cache, such a strip is a cycle that reference
counting cannot free: it waits for the collector with its segments and seven caches. The
compositor divides every line of every widget under a frame's changed area at the cuts where
widgets meet, and a widget's line between two neighbouring cuts is divided at its own length:
every new line of a live dashboard became cyclic garbage, a hundred thousand objects a minute,
and the collections they set off cost a fifth of the dashboard's time.

``mend_strip_cycles`` makes those two cases hand the strip back without caching it (what they
return is unchanged); ``fit`` is ``crop_extend`` for the lines drawn here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.style import Style
from textual.strip import Strip

_textual_divide = Strip.divide
_textual_crop_extend = Strip.crop_extend


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    cell_length = self.cell_length
    kept = [cut for cut in cuts if cut <= cell_length]
    if kept == [cell_length]:
        return [self]
    return _textual_divide(self, kept)


def _crop_extend(self: Strip, start: int, end: int, style: Style | None) -> Strip:
    if start <= 0 and end == self.cell_length:
        return self
    return _textual_crop_extend(self, start, end, style)


def mend_strip_cycles() -> None:
    """Install the two cases above on Textual's ``Strip`` (once; calling again changes nothing)."""
    Strip.divide = _divide  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend  # type: ignore[method-assign]


def fit(strip: Strip, start: int, end: int, style: Style | None = None) -> Strip:
    """Cells ``[start, end)`` of ``strip``, padded with ``style`` where it is shorter."""
    if start == 0 and strip.cell_length == end:
        return strip
    return strip.crop_extend(start, end, style)
