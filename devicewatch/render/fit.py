"""Tables that fit a width: the columns that do not fit move to a further table (the key
columns repeated) instead of being squeezed, a number is never cut to "…", and text wraps.

``report`` and ``compare --text`` lay out every table through ``fit``; a table with many
columns at 80 columns becomes two or three tables of whole numbers rather than one of
``epo…`` and ``0.…``.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.table import Table

DEFAULT_WIDTH = 100    # when neither a terminal nor COLUMNS says: fits most terminals and logs
NARROWEST = 40         # below this nothing useful fits; lay out as if this wide
WRAP_WIDTH = 16        # the least a wrapping text column is given when columns are placed
PER_CORE_TEXT_LIMIT = 16  # more cores than this: per-core columns only in --json


def output_width(requested: int | None = None) -> int:
    """The width to lay text out at: REQUESTED (an option), else the terminal's, else COLUMNS
    (a pipe or a file has no width of its own), else DEFAULT_WIDTH."""
    if requested:
        return max(NARROWEST, requested)
    if sys.stdout.isatty():
        return max(NARROWEST, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    try:
        return max(NARROWEST, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return DEFAULT_WIDTH


@dataclass
class Column:
    """One column: its header, its cells as text, and whether it may wrap (words, names,
    commands); a column that may not (numbers) is always drawn whole."""

    header: str
    cells: list[str] = field(default_factory=list)
    justify: str = "right"
    wrap: bool = False

    def width(self) -> int:
        """The width this column needs: a number's whole width; text at most WRAP_WIDTH (rich
        gives it more where the table has room, and wraps it where not)."""
        natural = max([cell_len(self.header), *map(cell_len, self.cells)])
        return min(natural, WRAP_WIDTH) if self.wrap else natural


def _drawn(widths: list[int]) -> int:
    """Width of a boxed rich table with these column widths: a space either side of each
    cell, a rule between and around them."""
    return sum(w + 3 for w in widths) + 1


def fit(title: str, key: list[Column], columns: list[Column], width: int) -> list[Table]:
    """Tables holding KEY then as many of COLUMNS as fit in WIDTH, in order; each further
    table repeats KEY, goes on where the previous one stopped, and is titled by TITLE's words
    before any parenthesis, "continued"."""
    width = max(NARROWEST, width)
    key_widths = [c.width() for c in key]
    groups: list[list[Column]] = []
    used = _drawn(key_widths)
    for column in columns:
        need = column.width() + 3
        if groups and groups[-1] and used + need <= width:
            groups[-1].append(column)
            used += need
        else:
            groups.append([column])
            used = _drawn(key_widths) + need
    tables = []
    for i, group in enumerate(groups or [[]]):
        table = Table(title=title if i == 0 else f"{title.split(' (')[0]}, continued", title_justify="left")
        for column in [*key, *group]:
            table.add_column(column.header, justify=column.justify,  # type: ignore[arg-type]  # rich's justify is a Literal; ours is one of its values
                             no_wrap=not column.wrap, overflow="fold")
        rows = max([len(c.cells) for c in [*key, *group]] or [0])
        for r in range(rows):
            table.add_row(*[c.cells[r] if r < len(c.cells) else "" for c in [*key, *group]])
        tables.append(table)
    return tables
