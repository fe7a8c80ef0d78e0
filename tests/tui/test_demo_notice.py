"""The demo's line on a busy machine (``commands.demo.Load``) is on its first run's screen,
under the progress bar, at every size: a real story of one short run, read back from the
terminal as Textual composes it."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from devicewatch import registry
from devicewatch.commands.demo import Load
from devicewatch.tui.app import DashboardApp, DashboardSettings
from devicewatch.tui.run_screen import RunScreen
from tests.conftest import until
from tests.tui.test_every_screen import SIZES, screen_lines


@pytest.mark.asyncio
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_first_run_of_the_story_says_what_holds_its_cores(tmp_path, size, presenter):
    notice = Load(2, 2, 1.6).line()
    assert notice is not None
    runs = tmp_path / "runs"
    story = [registry.resolve(["demo", "--epochs", "1", "--samples", "500"])]
    app = DashboardApp(DashboardSettings(runs_dir=str(runs), gpu=False, presenter=presenter), story=story,
                       story_notice=notice, tick=0.2)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.model is not None, 30)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        wanted = " ".join(notice.split())
        await until(pilot, lambda: wanted in " ".join(" ".join(screen_lines(app)).split()), 30)
        assert wanted in " ".join(" ".join(screen_lines(app)).split())
        await until(pilot, lambda: screen.model.run.finished, 120)   # nothing left running
        assert screen.model.run.finished
