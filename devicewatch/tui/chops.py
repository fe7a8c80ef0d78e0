"""The compositor's cut lines, without asking the widgets hidden behind others for theirs.

To write a frame, Textual's compositor goes through every widget under the changed area, front
to back, asks each for its lines and cuts each changed line at every place where two widgets
meet on it; the front-most piece at each place is kept. A live chart's changed line lies under
the screen, the row, the panel and the chart that hold it, whose pieces there are all behind
the chart's: each was asked for its lines and had them cut, for pieces thrown away.

``render_chops`` is Textual's ``Compositor._render_chops`` (with ``_get_renders`` inside it)
that cuts a widget's line only where a place on it is still empty, and does not ask a widget
whose places on the changed lines are all taken. The pieces kept are the same: the same widget
gives each place its piece, cut from the same line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip

_textual_render_chops = Compositor._render_chops


def render_chops(self: Compositor, crop: Region, is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
    cuts = self.cuts
    chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
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
        empty = []   # (row in the widget's lines, screen line, the cuts on it within the widget)
        for row, y in enumerate(shown.line_range):
            if not is_rendered_line(y):
                continue
            line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
            if None in map(chops[y].get, line_cuts[:-1]):
                empty.append((row, y, line_cuts))
        if not empty:
            continue
        strips = widget.render_lines(asked)
        x0 = shown.x
        for row, y, line_cuts in empty:
            if row >= len(strips):   # fewer lines than rows: Textual's zip stops there too
                break
            chops_line = chops[y]
            get = chops_line.get
            for cut, piece in zip(line_cuts, strips[row].divide([cut - x0 for cut in line_cuts[1:]])):
                if get(cut) is None:
                    chops_line[cut] = piece
    return chops  # type: ignore[return-value]  # Textual's own annotation: places left empty are None


def install() -> None:
    """Put ``render_chops`` in Textual's place (once; calling again changes nothing)."""
    Compositor._render_chops = render_chops  # type: ignore[method-assign]


def textual_render_chops(compositor: Compositor, crop: Region,
                         is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
    """Textual's own, for a test to compare with."""
    return _textual_render_chops(compositor, crop, is_rendered_line)
