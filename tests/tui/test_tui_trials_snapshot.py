"""A snapshot of the trials view at 100×30 on a set written here from literal run files (three
variants: one faster, one not measured).

Update after an intended change of look with
``pytest tests/tui/test_tui_trials_snapshot.py --snapshot-update`` and inspect the SVG under
tests/tui/__snapshots__/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from devicewatch.trials import load_set as load_trials  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.charts import AreaChart  # noqa: E402
from tests.conftest import until  # noqa: E402
from tests.tui.test_tui_trials import saved_set  # noqa: E402


async def charts_drawn(pilot) -> None:
    await until(pilot, lambda: all(c.rebuilds for c in pilot.app.screen.query(AreaChart))
                and bool(pilot.app.screen.query(AreaChart)))
    await pilot.pause(0.3)


def test_trials_view_of_a_saved_set(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # relative: the folder shown is fixed
    path = saved_set(Path("try"))
    app = DashboardApp(DashboardSettings(), trial_set=load_trials(path))
    assert snap_compare(app, terminal_size=(100, 30), run_before=charts_drawn)
