"""The run screen's declarations (``tui/run_parts.py``): every id used anywhere in ``tui/`` (the
stylesheet, a query, a widget's ``id=``) is declared there or composed by another screen, and
every one declared is composed, of its declared class, and in the layout table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch.live.source import open_replay  # noqa: E402
from devicewatch.tui import layout, run_parts  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from tests.conftest import first_frame, until, write_run  # noqa: E402

TUI = Path(run_parts.__file__).parent
SELECTOR = re.compile(r"[\"'\s,]#([A-Za-z][\w-]*)")          # "#log" in a query, #log in a rule
ID_ARG = re.compile(r"\bid=f?[\"']([^\"'{]*)(\{?)")          # id="log", or id=f"cmp-{label}"'s prefix
COMMENT = re.compile(r"/\*.*?\*/", re.S)
HEX = re.compile(r"[0-9a-fA-F]{3,8}")                         # "#d0d0d0" is a colour, not an id


def used(text: str) -> set[str]:
    """The ids a module or stylesheet selects by: ``#name`` in a selector, a query's string."""
    return {name for name in SELECTOR.findall(" " + COMMENT.sub("", text)) if not HEX.fullmatch(name)}


def composed(text: str) -> tuple[set[str], set[str]]:
    """The ids a module gives widgets, and the prefixes of those it makes with an f-string."""
    ids, prefixes = set(), set()
    for name, formatted in ID_ARG.findall(text):
        (prefixes if formatted else ids).add(name)
    return ids, prefixes


def undeclared(sources: dict[str, str]) -> set[str]:
    """Ids used in SOURCES (module name: text) that neither the run screen declares nor another
    module composes."""
    declared = {piece.id for piece in run_parts.DECLARED}
    ids: set[str] = set()
    prefixes: set[str] = set()
    for name, text in sources.items():
        if name != "run_parts.py":
            found, made = composed(text)
            ids |= found
            prefixes |= made
    wanted = set().union(*(used(text) for text in sources.values()))
    return {name for name in wanted - declared - ids if not any(name.startswith(p) for p in prefixes)}


def sources() -> dict[str, str]:
    """tui's modules and stylesheet, and the other screens' layout tables as selectors (their
    roots are the screens themselves)."""
    found = {path.name: path.read_text() for path in sorted(TUI.glob("*.py")) + [TUI / "app.tcss"]}
    tables = (layout.COMPARE, layout.TRIALS, layout.JOB)
    found["layout tables"] = " ".join(f"#{part.id}" for table in tables for part in list(table.walk())[1:])
    return found


def test_the_checker_finds_an_id_nobody_declares_or_composes():
    assert undeclared({"app.tcss": "#gpu-memory { height: 1; } /* #not-this */",
                       "x.py": 'query_one("#logs")\ncolour = "#d0d0d0"'}) == {"gpu-memory", "logs"}
    assert undeclared({"app.tcss": "#gpu-mem, #cmp-cores-a { }", "x.py": 'Static(id=f"cmp-cores-{side}")'}) == set()


def test_every_id_used_in_tui_is_declared_or_composed_by_another_screen():
    assert undeclared(sources()) == set()


def test_the_run_screen_spells_no_id_of_its_own():
    text = (TUI / "run_screen.py").read_text()
    assert not used(text) and composed(text) == (set(), set())


def test_no_other_module_composes_an_id_the_run_screen_declares():
    """A rule for a declared id is the run screen's: no other screen's widget carries it."""
    declared = {piece.id for piece in run_parts.DECLARED}
    for name, text in sources().items():
        if name != "run_parts.py":
            assert not composed(text)[0] & declared, name


def test_every_declared_piece_is_in_the_layout_table_once():
    laid_out = [part.id for part in run_parts.LAYOUT.walk()][1:]   # the screen itself first
    assert sorted(laid_out) == sorted(piece.id for piece in run_parts.DECLARED)
    assert len(set(laid_out)) == len(laid_out)
    assert run_parts.GOVERNED <= set(laid_out)
    assert {p.id for p in run_parts.TOP_CHARTS + run_parts.BOTTOM_CHARTS} == \
        {"cores", "cpu-total", "cpu-lanes", "lanes", "gpu-mem", "gpu-power", "proc-cpu", "proc-rss"}


@pytest.mark.asyncio
async def test_every_declared_piece_is_composed_with_its_class_and_title(tmp_path):
    samples = [{"type": "sample", "t": round(i * 0.1, 3), "cpu": [10.0, 20.0], "cpu_total": 15.0}
               for i in range(1, 21)]
    path = write_run(tmp_path / "run.jsonl", samples,
                     header={"host": {"cpu_model": "test", "cpu_count": 2, "gpus": [], "gpu_reason": "none"}})
    app = DashboardApp(DashboardSettings(), open_replay(str(path)))
    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        for piece in run_parts.DECLARED:
            widget = screen.query_one(f"#{piece.id}", piece.widget)
            assert type(widget) is piece.widget, piece.id
            parent = next((p for p in run_parts.DECLARED if piece in p.parts), None)
            assert widget.parent is (screen if parent is None else screen.query_one(f"#{parent.id}")), piece.id
        # titles the run does not change (a run without GPUs keeps the CPU panel's and the charts')
        for piece in (run_parts.CPU_PANEL, run_parts.CPU_TOTAL, run_parts.PROC_CPU, run_parts.PROC_RSS):
            assert screen.query_one(f"#{piece.id}").border_title == piece.title
