"""The compositor's cut lines: only the places a frame writes, without asking the widgets hidden
behind others for theirs.

To write a frame, Textual's compositor goes through every widget under the changed area, front
to back, asks each for its lines and cuts each changed line at every place where two widgets
meet on it; the front-most piece at each place is kept. Then it writes, of each changed line,
the places its changed spans meet. Two kinds of pieces were cut for nothing: those of the places
on a changed line that no span meets (a chart's newest columns share their lines with the rest
of the chart, its other parts, and the panels beside it), and those of the widgets behind (the
screen, the row, the panel and the chart that hold a chart's part).

``render_partial_update`` is Textual's, giving ``_cut`` the places the spans meet; ``render_chops``
(Textual's ``Compositor._render_chops`` with ``_get_renders`` inside it: a whole screen, a
screenshot) gives it every place on the lines rendered. ``_cut`` cuts a widget's line only where
a place wanted on it is still empty, and does not ask a widget with no such place. The pieces kept
are the same: the same widget gives each place its piece, cut from the same line.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip

_textual_render_chops = Compositor._render_chops
_textual_render_partial_update = Compositor.render_partial_update


def render_chops(self: Compositor, crop: Region, is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
    """Every place on the lines rendered, as Textual's: a whole screen (a full update, a
    screenshot), or the lines given."""
    cuts = self.cuts
    return _cut(self, crop, lambda y: cuts[y][:-1] if is_rendered_line(y) else [])


def render_partial_update(self: Compositor) -> ChopsUpdate | None:
    """Textual's: the changed area since the last frame, as the terminal is sent it; with
    pieces cut only for the places the changed spans meet (the only ones it writes)."""
    update_regions = self._dirty_regions.copy()
    self._dirty_regions.clear()
    if not update_regions:
        return None
    crop = Region.from_union(update_regions).intersection(self.size.region)
    spans = list(self._regions_to_spans(update_regions))
    cuts = self.cuts
    written: dict[int, list[int]] = {}
    for y, x1, x2 in spans:
        line = cuts[y]
        # What ``ChopsUpdate`` writes of a line: each place not wholly left or right of the span.
        written.setdefault(y, []).extend(x for x, end in pairwise(line) if not (x > x2 or end <= x1))
    for y, places in written.items():
        if len(places) > 1:
            written[y] = sorted(set(places))
    chops = _cut(self, crop, lambda y: written.get(y, []))
    return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in cuts])


def _cut(self: Compositor, crop: Region, wanted_places: Callable[[int], list[int]]) -> Sequence[Mapping[int, Strip]]:
    cuts = self.cuts
    chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
    # Each line's places still to be given a piece (the cuts they begin at, in order): a widget
    # asks whether any lies within its columns with one bisection, not by listing its cuts.
    empty_at: dict[int, list[int]] = {}
    crop_overlaps = crop.overlaps
    for widget, (region, clip) in self.visible_widgets.items():   # front to back
        if not crop_overlaps(clip):
            continue
        if Region.contains_region(clip, region):
            shown, asked = region, Region(0, 0, region.width, region.height)
        else:
            x, y, width, height = Region.intersection(region, clip)
            if not (width and height):
                continue
            shown, asked = Region(x, y, width, height), Region(x - region.x, y - region.y, width, height)
        first_cut, last_cut = shown.column_span
        wanted = []   # (row in the widget's lines, screen line, its places' range in the empty ones)
        for row, y in enumerate(shown.line_range):
            empty = empty_at.get(y)
            if empty is None:
                empty = empty_at[y] = list(wanted_places(y))
            i = bisect_left(empty, first_cut)
            if i < len(empty) and empty[i] < last_cut:
                wanted.append((row, y, i, bisect_left(empty, last_cut, i)))
        if not wanted:
            continue
        strips = widget.render_lines(asked)
        x0 = shown.x
        for row, y, i, j in wanted:
            if row >= len(strips):   # fewer lines than rows: Textual's zip stops there too
                break
            line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
            pieces = dict(zip(line_cuts, strips[row].divide([cut - x0 for cut in line_cuts[1:]])))
            chops_line, empty = chops[y], empty_at[y]
            left = []
            for cut in empty[i:j]:
                piece = chops_line[cut] = pieces.get(cut)
                if piece is None:   # a line shorter than the widget: a widget behind gives it
                    left.append(cut)
            empty[i:j] = left
    return chops  # type: ignore[return-value]  # Textual's own annotation: places left empty are None


def install() -> None:
    """Put ``render_chops`` and ``render_partial_update`` in Textual's place (once; calling again
    changes nothing)."""
    Compositor._render_chops = render_chops  # type: ignore[method-assign]
    Compositor.render_partial_update = render_partial_update  # type: ignore[method-assign]


def textual_render_chops(compositor: Compositor, crop: Region,
                         is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
    """Textual's own, for a test to compare with."""
    return _textual_render_chops(compositor, crop, is_rendered_line)


def textual_render_partial_update(compositor: Compositor) -> ChopsUpdate | None:
    """Textual's own, for a test to compare with."""
    return _textual_render_partial_update(compositor)
