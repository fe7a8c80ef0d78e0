"""The per-core panel shows each core's clock on ``f``, and says so where the run has none."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch.live.source import open_replay  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from tests.conftest import until, write_run  # noqa: E402

SIZE = (200, 50)


def clock_run(path: Path, clocked: bool) -> Path:
    """Two cores, 3 s; where ``clocked``, core 0 at 1500 MHz and core 1 at 3000 MHz, read once a second."""
    samples = [{"type": "sample", "t": round(i * 0.1, 3), "cpu": [30.0, 60.0], "cpu_total": 45.0,
                **({"cpu_mhz": [1500.0, 3000.0]} if clocked and i % 10 == 1 else {})} for i in range(1, 31)]
    return write_run(path, samples, header={"host": {"cpu_model": "test", "cpu_count": 2, "gpus": []}})


def legend(app) -> str:
    return str(app.screen.query_one("#heat-legend").render())


@pytest.mark.asyncio
async def test_f_shows_each_cores_clock_held_between_readings(tmp_path):
    app = DashboardApp(DashboardSettings(), open_replay(str(clock_run(tmp_path / "run.jsonl", True))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "2 cores" in legend(app))
        model = app.screen.model
        # read at 0.1, 1.1 and 2.1 s and held in between: every row has both cores' clocks
        assert model.cpu_mhz.values.shape == (30, 2) and (model.cpu_mhz.values == [1500.0, 3000.0]).all()
        await pilot.press("f")
        await until(pilot, lambda: "MHz" in legend(app))
        assert "3000 MHz" in legend(app) and app.screen.query_one("#cpu-panel").border_title == "CPU: every core, clock"
        # core 0 runs at half the run's highest clock: the heat scale's middle, core 1 at its top
        assert app.screen.query_one("#cores").data.cpu[-1].tolist() == [50.0, 100.0]
        await pilot.press("f")
        await until(pilot, lambda: "2 cores" in legend(app))


@pytest.mark.asyncio
async def test_f_on_a_run_without_a_clock_says_it_was_not_recorded(tmp_path):
    app = DashboardApp(DashboardSettings(), open_replay(str(clock_run(tmp_path / "run.jsonl", False))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "2 cores" in legend(app))
        assert app.screen.model.cpu_mhz is None
        await pilot.press("f")
        await until(pilot, lambda: "not recorded" in legend(app))
        assert app.screen.query_one("#cpu-panel").border_title == "CPU: every core, % busy"
