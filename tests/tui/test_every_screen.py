"""Every screen whole at 80×24, 100×30 and 200×50: what is on the terminal, read back.

The snapshots keep the look; this test keeps the truth. It opens each screen (home, a live run
and the same run finished, a replay, a comparison, the comparison in presenter mode, a saved set
of trials) on real recordings at each size, reads the screen as the terminal would show it (the
compositor's lines, and where each widget landed), and fails on what a projector would turn into
a wrong reading: a figure cut ("0.9" for 0.9306, "+0.6…"), a word cut at a panel's edge, a widget
its panel cut off (a chart that lost its rows, a sentence its last line), a table with rows that
shows only its header, and a footer without the quit key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from textual.containers import ScrollableContainer  # noqa: E402
from textual.widget import Widget  # noqa: E402
from textual.widgets import Footer, Static  # noqa: E402

from devicewatch import registry  # noqa: E402
from devicewatch.live.source import LiveSource, open_replay  # noqa: E402
from devicewatch.runformat import runfile  # noqa: E402
from devicewatch.trials import load_set  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.charts import AreaChart  # noqa: E402
from devicewatch.tui.output_panel import OutputLog  # noqa: E402
from devicewatch.tui.panels import RenderedTable, TextPanel  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from tests.conftest import first_frame, until  # noqa: E402
from tests.tui.test_tui_trials import saved_set  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SIZES = [(80, 24), (100, 30), (200, 50)]
BORDERS = "│┃║╎╏┆┇┊┋"
RULES = "─━═╍╌┄┅┈┉"
CUT_FIGURE = re.compile(r"[0-9][0-9.,:%]*…")       # "+0.6…", "0.…"
CUT_WORD = re.compile(r"[A-Za-z]…")                # "vali…", "predict…"
QUIT = re.compile(r"(^|\s)q Quit(\s|$)")


def screen_lines(app: Any) -> list[str]:
    """The screen as the terminal shows it, a string per row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _scrolled(widget: Widget) -> bool:
    """Whether WIDGET sits in a container that scrolls it (cut there is scrolling, not loss)."""
    return any(isinstance(node, ScrollableContainer) for node in widget.ancestors)


def _table_first_row(table: RenderedTable) -> int | None:
    """The line of TABLE's first data row (after its header), or None if it has no rows."""
    lines = [strip.text for strip in table._lay_out(table.size.width)]
    rule = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("┡", "├"))), None)
    if rule is not None:
        body = [i for i, line in enumerate(lines[rule + 1:], rule + 1) if line.strip()[:1] == "│"]
        return body[0] if body else None
    rows = [i for i, line in enumerate(lines) if line.strip()]
    return rows[1] if len(rows) > 1 else None   # a table without rules: its header, then its rows


def text_rows(widget: Static | TextPanel) -> int:
    """The rows WIDGET's text takes at its width, blank rows after it left out."""
    width = widget.content_region.width
    if not isinstance(widget, TextPanel):
        return widget.get_content_height(widget.content_region.size, widget.app.size, width)
    lines = [line.plain for line in widget._wrapped(width)]
    while lines and not lines[-1].strip():
        lines.pop()
    return len(lines)


def problems(app: Any) -> list[str]:
    """What on the screen now is cut, missing or empty, each said with the row it is on."""
    found: list[str] = []
    lines = screen_lines(app)
    for y, line in enumerate(lines):
        for match in CUT_FIGURE.finditer(line):
            found.append(f"row {y}: a figure cut: {match.group()!r} in {line.strip()!r}")
        for match in CUT_WORD.finditer(line):
            after = line[match.end():match.end() + 2].strip()
            if after and after[0] in RULES:   # a panel's title, shortened by its border
                continue
            found.append(f"row {y}: a word cut: {match.group()!r} in {line.strip()!r}")
    footer = [line for line in lines[-1:] if line.strip()]
    if app.screen.query(Footer) and not any(QUIT.search(line) for line in footer):
        found.append(f"no quit key in the footer: {lines[-1].strip()!r}")
    visible = app.screen._compositor.visible_widgets
    for widget, (region, clip) in visible.items():
        if not widget.display or region.area == 0:
            continue
        name = f"{type(widget).__name__}#{widget.id or '-'}"
        if isinstance(widget, RenderedTable):
            first = _table_first_row(widget)
            shown = clip.intersection(region)
            if first is not None and region.y + first >= shown.y + shown.height:
                found.append(f"{name}: a table with rows shows none of them")
        if isinstance(widget, OutputLog):
            width = widget.content_region.width
            top = int(widget.scroll_y)
            for line in widget.lines[top:top + widget.content_region.height]:
                if len(line.rstrip()) > width:
                    found.append(f"{name}: a line cut at the panel's edge: {line.rstrip()!r}")
                    break
            continue
        shown = clip.intersection(region)
        if region.x < clip.x or region.right > clip.right:   # no panel here scrolls sideways
            found.append(f"{name}: cut at its panel's side: {region.width} columns shown as {shown.width}")
        if _scrolled(widget) or isinstance(widget, ScrollableContainer):
            continue
        if region.y < clip.y or region.bottom > clip.bottom:
            found.append(f"{name}: cut by its panel: {region.height} rows shown as {shown.height}")
        if isinstance(widget, (Static, TextPanel)) and widget.content_region.height < text_rows(widget):
            found.append(f"{name}: its text cut after {widget.content_region.height} rows")
    return found


async def look(app: Any, size: tuple[int, int], ready: Any) -> list[str]:
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: ready(app), 20)
        assert ready(app), "the screen never drew"
        return await settled_problems(pilot)


async def settled_problems(pilot: Any) -> list[str]:
    """What is wrong on the screen once its layout has settled: a busy machine lays a screen out
    again a few frames later (its text measured at the widths it got), so what is wrong is what
    is still wrong after a few seconds."""
    await pilot.pause(0.3)
    await until(pilot, lambda: not problems(pilot.app), 5)
    return problems(pilot.app)


def compared(presenter: bool) -> DashboardApp:
    a, b = runfile.load(FIXTURES / "pipeline-serial.jsonl"), runfile.load(FIXTURES / "pipeline-overlapped.jsonl")
    return DashboardApp(DashboardSettings(presenter=presenter), compare=(a, b))


def charts_drawn(app: Any) -> bool:
    charts = list(app.screen.query(AreaChart))
    return bool(charts) and all(chart.rebuilds for chart in charts)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", ["replay-overlapped", "replay-gpu", "replay-gpu-presenter", "compare",
                                  "compare-presenter", "trials", "home"])
async def test_every_screen_is_whole(name, size, tmp_path, monkeypatch):
    if name == "replay-overlapped":
        app = DashboardApp(DashboardSettings(), open_replay(str(FIXTURES / "pipeline-overlapped.jsonl")))
        ready = first_frame
    elif name.startswith("replay-gpu"):
        app = DashboardApp(DashboardSettings(presenter=name.endswith("presenter")),
                           open_replay(str(FIXTURES / "gpu-synthetic.jsonl")))
        ready = first_frame
    elif name.startswith("compare"):
        app, ready = compared(presenter=name.endswith("presenter")), first_frame
    elif name == "trials":
        monkeypatch.chdir(tmp_path)
        app, ready = DashboardApp(DashboardSettings(), trial_set=load_set(saved_set(Path("try")))), charts_drawn
    else:
        app, ready = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs"))), lambda app: True
    found = await look(app, size, ready)
    assert not found, "\n".join(found)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_live_run_is_whole_while_it_records_and_when_it_has_finished(size, tmp_path):
    """A real workload recorded now: the screen while its epochs come in, and once it has ended."""
    runs = tmp_path / "runs"
    target = registry.resolve(["demo", "--epochs", "3", "--samples", "3000"])
    source = LiveSource(str(runs), target, interval=0.1, gpu=False)
    app = DashboardApp(DashboardSettings(runs_dir=str(runs), gpu=False), source, tick=0.2)
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: screen.model is not None and len(screen.model.epoch_rows) >= 1
                    and first_frame(app), 60)
        assert screen.model is not None and screen.model.epoch_rows, "the first epoch never came"
        live = await settled_problems(pilot)
        await until(pilot, lambda: screen.model.run.finished, 120)
        assert screen.model.run.finished
        found = [f"live: {p}" for p in live] + [f"finished: {p}" for p in await settled_problems(pilot)]
        assert not found, "\n".join(found)
