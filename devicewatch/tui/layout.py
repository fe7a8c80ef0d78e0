"""What each screen holds, declared once, and what gives way on a small terminal.

A screen is a tree of parts (its panels and the charts and lines inside them), each with the
rows and columns it needs to be shown whole and the order in which it gives way. Before each
layout the screen asks ``fit`` which parts the terminal holds whole: while the parts' needs
exceed the screen, the part that gives way first is hidden. What is shown gets its minimum
size from the same table (``apply``), so a chart is never laid out shorter than it draws whole
and the stylesheet shares out only what is left. As dolphie declares each graph once
(``GraphSpec``) and nvitop picks its panels by the terminal's size (full or compact), here a
run on a 80×24 terminal loses its bottom row before its all-cores chart loses a row. The run
screen's tree is made from its declarations (``run_parts``), the others are declared here.

Pure but for ``apply`` (no Textual import above it), so that the table is tested by size.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

STAYS = 0   # ``gives_way`` of a part that is shown at any size (the status line, the quit key)


@dataclass(frozen=True)
class Part:
    """One widget of a screen (``id``, without ``#``): the rows and columns it needs of its own
    to be shown whole (borders included; a part whose height follows its text says so by the
    screen's ``measured`` rows at fit time), its parts stacked (or side by side where
    ``across``), and ``gives_way``: 0 stays, else parts give way in increasing order."""

    id: str
    rows: int = 0
    columns: int = 0
    gives_way: int = STAYS
    presenter: bool = True          # shown in presenter mode
    across: bool = False            # its parts side by side
    parts: tuple[Part, ...] = field(default_factory=tuple)

    def walk(self) -> Iterator[Part]:
        yield self
        for part in self.parts:
            yield from part.walk()


Measured = Mapping[str, "int | tuple[int | None, int | None]"]


def own(part: Part, measured: Measured) -> tuple[int, int]:
    """PART's own rows and columns: as declared, or as MEASURED at fit time: rows alone where
    the part's height follows its text (the stylesheet gives it ``height: auto``), or the
    least rows and columns it needs (None where the declared figure holds)."""
    found = measured.get(part.id)
    if found is None:
        return part.rows, part.columns
    rows, columns = (found, None) if isinstance(found, int) else found
    return (part.rows if rows is None else rows), (part.columns if columns is None else columns)


def need(part: Part, hidden: set[str], measured: Measured) -> tuple[int, int]:
    """The rows and columns PART needs with the parts in HIDDEN gone; a part's size in MEASURED
    (its text as laid out, a count of GPUs' charts) replaces the declared one."""
    shown = [need(p, hidden, measured) for p in part.parts if p.id not in hidden]
    own_rows, own_columns = own(part, measured)
    if not shown:
        return own_rows, own_columns
    if part.across:
        return own_rows + max(r for r, _ in shown), max(own_columns, sum(c for _, c in shown))
    return own_rows + sum(r for r, _ in shown), max([own_columns, *(c for _, c in shown)])


def fit(screen: Part, width: int, height: int, presenter: bool = False,
        measured: Measured | None = None, absent: set[str] | None = None) -> set[str]:
    """The ids of SCREEN's parts to hide at WIDTH × HEIGHT: those presenter mode leaves out,
    those ABSENT (what this run has not: a GPU panel without GPUs), then, while the parts side
    by side need more columns than the screen has, the one of them that gives way first, and
    while the rest needs more rows, the part that gives way first (the lowest ``gives_way``;
    of two, the later in the table)."""
    measured = measured or {}
    hidden = {p.id for p in screen.walk() if presenter and not p.presenter} | set(absent or ())
    beside = {child.id for p in screen.walk() if p.across for child in p.parts}
    for axis, may_go in ((1, beside), (0, None)):
        limit = (height, width)[axis]
        while need(screen, hidden, measured)[axis] > limit:
            candidates = [(p.gives_way, -i, p.id) for i, p in enumerate(_shown(screen, hidden))
                          if p.gives_way != STAYS and (may_go is None or p.id in may_go)]
            if not candidates:
                break
            hidden.add(min(candidates)[2])
    return hidden


def _shown(part: Part, hidden: set[str]) -> Iterator[Part]:
    if part.id in hidden:
        return
    yield part
    for child in part.parts:
        yield from _shown(child, hidden)


Plan = dict[str, tuple[bool, int, int]]   # a part's id: whether it is shown, its least rows and columns


def plan(layout: Part, hidden: set[str], measured: Measured | None = None) -> Plan:
    """What ``apply`` gives each part: shown or not, and the least size a part shown needs
    whole (its own and its shown parts'; none in rows where its height follows its text)."""
    measured = measured or {}
    out: Plan = {}
    for part in layout.walk():
        if part is layout:
            continue
        if part.id in hidden:
            out[part.id] = (False, 0, 0)
            continue
        rows, columns = need(part, hidden, measured)
        out[part.id] = (True, 0 if isinstance(measured.get(part.id), int) else rows, columns)
    return out


def apply(screen: Any, layout: Part, hidden: set[str], measured: Measured | None = None,
          governed: set[str] | None = None, applied: Plan | None = None) -> Plan:
    """Show and hide SCREEN's widgets as ``fit`` said, and give each part shown the least size
    it needs whole as ``min-height``/``min-width``, so the stylesheet shares out only the rest.
    GOVERNED: the ids whose display the table decides (default: all); a part the screen shows
    or hides for reasons of its own (no GPU data) is left to it. Only what differs from APPLIED
    (the plan applied last) is touched: each change lays the screen out again. Returns the plan."""
    wanted = plan(layout, hidden, measured)
    changed = {key: value for key, value in wanted.items() if applied is None or applied.get(key) != value}
    if not changed:
        return wanted
    widgets = {w.id: w for w in screen.walk_children(with_self=False) if w.id in changed}  # one walk, no selectors
    for key, (shown, rows, columns) in changed.items():
        widget = widgets.get(key)
        if widget is None:
            continue
        if (governed is None or key in governed) and widget.display != shown:
            widget.display = shown
        if not shown:
            continue
        if rows and getattr(widget.styles.min_height, "cells", None) != rows:
            widget.styles.min_height = rows
        if columns and getattr(widget.styles.min_width, "cells", None) != columns:
            widget.styles.min_width = columns
    return wanted


# -- the screens -----------------------------------------------------------------------------

FOOTER = Part("footer", rows=1)

# The run screen's tree (live, finished, a replay) is made from its declared parts, each with
# its widget and its chart's input: ``run_parts.LAYOUT``.

# The comparison (and presenter mode's): the headline stays with what explains it and what other
# programs took; the figures panel keeps its first table's header and three rows; the heat
# strips give way first (both sides together), then the phase lanes, the line that says how the
# axes align, and the notes (what differed between the runs); the charts themselves last.
def _compare_side(key: str) -> Part:
    return Part(f"cmp-{key}", rows=2, columns=30, parts=(
        Part(f"cmp-verdict-{key}", rows=1),
        Part(f"cmp-cores-{key}", rows=3, gives_way=1),
        Part(f"cmp-utils-{key}", rows=4),    # a GPU's utilization (or all cores'), 4 rows each
        Part(f"cmp-lanes-{key}", rows=1, gives_way=2),
    ))


COMPARE = Part("compare", parts=(
    Part("cmp-headline", rows=1),
    Part("cmp-notes", rows=1, gives_way=4),
    Part("cmp-align", rows=1, gives_way=3),
    Part("cmp-charts", across=True, gives_way=5, parts=(_compare_side("a"), _compare_side("b"))),
    Part("cmp-tables", rows=2 + 3),
    FOOTER,
))

# The trials of ``devicewatch try``: the variants' table stays whole; the charts (which scroll)
# give way first, then the plan line, then the notes (what was varied, why a trial was not
# measured).
TRIALS = Part("trials", parts=(
    Part("trials-headline", rows=1),
    Part("trials-plan", rows=1, gives_way=2),
    Part("trials-table", rows=2 + 2),
    Part("trials-notes", rows=1, gives_way=3),
    Part("trials-charts", rows=2 + 5, gives_way=1),
    FOOTER,
))

# A job's nodes followed live (``replay DIR``): the title and the nodes' rows (which scroll, at
# most 45% of the height) stay; the stragglers' lines give way first, then the rank lanes.
JOB = Part("job", parts=(
    Part("job-title", rows=1),
    Part("job-nodes-box", rows=1),
    Part("job-epochs", rows=2, gives_way=1),
    Part("job-lanes-box", rows=1 + 3, gives_way=2),
    FOOTER,
))

