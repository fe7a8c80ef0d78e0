"""Strips that die when they are dropped: Textual's strip caches without a strip inside its own.

A Textual ``Strip`` keeps what it was cut into in caches of its own. Two of them can hold the
strip itself: ``divide`` at the strip's own length gives ``[strip]``, and ``crop_extend`` to the
strip's own width gives the strip. Kept in its own cache, such a strip is a cycle that reference
counting cannot free: it waits for the collector with its segments and seven caches. The
compositor divides every line of every widget under a frame's changed area at the cuts where
widgets meet, and a widget's line between two neighbouring cuts is divided at its own length:
every new line of a live dashboard became cyclic garbage, 88,000 objects a minute, and the
collector's passes they set off took an eighth of the dashboard's time (``bench_frames``).

``mend_strip_cycles`` makes those two cases hand the strip back without caching it (what they
return is unchanged), and has a strip make each of its seven caches when it is first used rather
than all of them when it is made: most strips are cut once or never, and the empty caches were
a third of the objects a frame made for the collector to walk. That second part is installed
only if a strip made by Textual holds just what ``_light_init`` sets (its caches are read off
one); ``fit`` is ``crop_extend`` for the lines drawn here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.strip import Strip

_textual_divide = Strip.divide
_textual_crop_extend = Strip.crop_extend
_textual_init = Strip.__init__


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


_LEFT_NONE = {"_render_cache", "_link_ids", "_cell_count"}   # what ``_light_init`` sets to None
_UNSET = object()


def _caches_of_a_new_strip() -> dict[str, int] | None:
    """The caches Textual's ``Strip.__init__`` makes (slot name: size); None unless it sets
    exactly the segments, the length, empty caches and ``_LEFT_NONE`` to None (what
    ``_light_init`` sets, the caches aside)."""
    strip = Strip([], 0)
    caches: dict[str, int] = {}
    left_none = set()
    for name in Strip.__slots__:
        value = getattr(strip, name, _UNSET)
        if name in ("_segments", "_cell_length"):
            continue
        if isinstance(value, FIFOCache) and not len(value):
            caches[name] = value._maxsize
        elif value is None:
            left_none.add(name)
        else:
            return None
    return caches if left_none == _LEFT_NONE else None


_CACHES = _caches_of_a_new_strip()


def _light_init(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    self._segments = list(segments)
    self._cell_length = cell_length
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


def _cache_when_first_used(self: Strip, name: str) -> FIFOCache:
    size = _CACHES.get(name) if _CACHES is not None else None
    if size is None:
        raise AttributeError(name)
    cache: FIFOCache = FIFOCache(size)
    setattr(self, name, cache)
    return cache


def mend_strip_cycles() -> None:
    """Install the above on Textual's ``Strip`` (once; calling again changes nothing)."""
    Strip.divide = _divide  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend  # type: ignore[method-assign]
    if _CACHES is not None:
        Strip.__init__ = _light_init  # type: ignore[method-assign]
        Strip.__getattr__ = _cache_when_first_used  # type: ignore[attr-defined]


def fit(strip: Strip, start: int, end: int, style: Style | None = None) -> Strip:
    """Cells ``[start, end)`` of ``strip``, padded with ``style`` where it is shorter."""
    if start == 0 and strip.cell_length == end:
        return strip
    return strip.crop_extend(start, end, style)
