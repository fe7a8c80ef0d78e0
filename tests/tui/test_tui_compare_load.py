"""The comparison view says when other programs took the cores unequally in A and B: the
headline's second line and the load beside the notes, driven by Pilot on runs made here from
rules (tests/unit/test_compare_load.py's), whose figures are known by construction."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from devicewatch.tui.app import DashboardApp, DashboardSettings
from devicewatch.tui.compare import CompareScreen
from tests.conftest import first_frame, until
from tests.tui.test_tui_compare import text_of
from tests.unit.test_compare_load import run


@pytest.mark.asyncio
@pytest.mark.parametrize("presenter", [False, True])
async def test_a_pair_whose_background_load_differed_says_so_on_screen(tmp_path, presenter):
    # A: other programs 0.1 core, 5 s; B: 0.9, 6 s (see test_compare_load: the load may be the difference)
    app = DashboardApp(DashboardSettings(presenter=presenter),
                       compare=(run(tmp_path / "a.jsonl", 190.0, 5.0), run(tmp_path / "b.jsonl", 110.0, 6.0)))
    async with app.run_test(size=(160, 45)) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await until(pilot, lambda: screen.comparison is not None and screen.query(".cmp-table"))
        headline = text_of(screen, "#cmp-headline").splitlines()
        assert headline[0].startswith("B took 20% longer (6.00s vs 5.00s) over the epochs")
        assert headline[-1] == ("other programs took 0.1 cores in A and 0.9 in B (of 2): "
                                "the difference may be theirs, not the change's")
        notes = text_of(screen, "#cmp-notes").splitlines()
        assert notes[-1] == "load: other programs took 0.1 of 2 cores during A and 0.9 during B"
