"""A failure is the first thing the dashboard shows: a command that cannot start and a script
that crashes mid-epoch, each run for real under the recorder, at 80×24 (where the
workload's output, and its traceback with it, gives way), 100×30, 200×50 and in presenter mode. The
verdict panel's first line says why, on screen; the epoch the script died in reads partial."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch import registry
from devicewatch.live.source import LiveSource
from devicewatch.tui.app import DashboardApp, DashboardSettings
from devicewatch.tui import run_parts
from devicewatch.tui.panels import EpochBars, TextPanel
from devicewatch.tui.run_screen import RunScreen
from tests.conftest import until

ROOT = Path(__file__).resolve().parents[2]
ERROR = "ValueError: batch 7 has 31 features, the model takes 32"

# Epoch 1 ends; epoch 2 begins and the script raises inside it (its phase never ends).
CRASHING = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from devicewatch import events

def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass

events.run_info(epochs=3)
events.phase_begin("train", 1)
busy(0.6)
events.phase_end("train", 1)
events.epoch_metrics(1, loss=0.5)
events.phase_begin("train", 2)
busy(0.4)
raise ValueError("batch 7 has 31 features, the model takes 32")
"""


def failed_screen(tmp_path: Path, command: list[str], size: tuple[int, int], presenter: bool = False):
    """The dashboard on COMMAND, run for real by a recorder it starts, and that source."""
    runs = str(tmp_path / "runs")
    source = LiveSource(runs, registry.resolve(["--", *command]), interval=0.1, gpu=False)
    app = DashboardApp(DashboardSettings(runs_dir=runs, gpu=False, presenter=presenter), source, tick=0.2)
    return app, source


def verdict_panel(screen: RunScreen) -> TextPanel:
    return screen.query_one("#verdict", TextPanel)


def on_screen(widget, size: tuple[int, int]) -> bool:
    region = widget.region
    return widget.display and region.height > 0 and region.y >= 0 and region.bottom <= size[1] - 1   # above the footer


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_missing_command_says_it_cannot_start_first(tmp_path, size):
    app, source = failed_screen(tmp_path, ["devicewatch-no-such-command"], size)
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: "FAILED TO START" in verdict_panel(screen).text.plain, seconds=60)
        await pilot.pause(0.3)
        lines = verdict_panel(screen).text.plain.splitlines()
        assert lines[0] == " FAILED TO START  cannot start devicewatch-no-such-command: No such file or directory"
        assert "too few samples" not in verdict_panel(screen).text.plain   # not the news
        assert on_screen(verdict_panel(screen), size)
        assert " FAILED TO START " in screen.query_one("#status", TextPanel).text.plain
    source.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("size,presenter", [((80, 24), False), ((100, 30), False), ((100, 30), True),
                                            ((200, 50), False)])
async def test_a_crashing_script_shows_its_exception_first_and_its_epoch_partial(tmp_path, size, presenter):
    script = tmp_path / "crash.py"
    script.write_text(CRASHING)
    app, source = failed_screen(tmp_path, [sys.executable, str(script)], size, presenter)
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await until(pilot, lambda: "FAILED " in verdict_panel(screen).text.plain, seconds=90)
        await pilot.pause(0.5)
        panel = verdict_panel(screen)
        # the traceback reached the workload's terminal (stdout, as the dashboard gives it one),
        # and its exception is the reason
        assert panel.text.plain.splitlines()[0] == f" FAILED  failed (exit code 1): {ERROR}"
        assert on_screen(panel, size)
        if size == (80, 24) or presenter:   # the output, and the traceback in it, gave way: the line says why
            assert not screen._visible(run_parts.LOG)
        assert screen._visible(run_parts.EPOCHS) or size != (200, 50)
        if screen._visible(run_parts.EPOCHS):
            bars = screen.query_one("#epochs", EpochBars)
            await until(pilot, lambda: "partial" in bars.text.plain)
            rows = [line for line in bars.text.plain.splitlines() if line[:5].strip().isdigit()]
            assert [row.split()[0] for row in rows] == ["1", "2"]
            assert not rows[0].endswith("partial") and rows[1].endswith("partial")
        assert screen.model.epochs_done == 1
    source.close()
