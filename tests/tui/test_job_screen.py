"""The job screen, driven by Pilot on a job's folder whose node files grow while it is open."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("textual")

from textual.widgets import Static  # noqa: E402

from devicewatch.live.job import JobModel  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.job_screen import JobScreen  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from tests.conftest import until  # noqa: E402

from job_nodes import NodeWriter, epoch  # noqa: E402

QUIET = 120.0   # seconds without growth that make a node silent here: more than a busy machine's pauses


def shown(app: DashboardApp, part: str) -> str:
    return str(app.screen.query_one(f"#job-{part}", Static).render())


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(200, 50), (100, 30)])
async def test_the_job_screen_follows_a_folder_as_its_nodes_write(tmp_path, size):
    a, b = NodeWriter(tmp_path, 0, 1000.0, 50.0, cores=64), NodeWriter(tmp_path, 1, 1000.0, 70.0, cores=64)
    a.sample(0.1, list(range(64)))
    b.sample(0.1, [100] * 64)
    app = DashboardApp(DashboardSettings(), job=JobModel(folder=tmp_path, silent_after=QUIET))
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        assert isinstance(screen, JobScreen)
        await until(pilot, lambda: "node" in shown(app, "nodes"))
        assert "node0 " in shown(app, "nodes") and "node1 " in shown(app, "nodes")   # no rank has spoken: the files
        epoch(a, 1, 0.2, 1.0)
        epoch(b, 1, 0.2, 1.4)
        a.phase("phase_begin", 1.8, 2)
        b.phase("phase_begin", 2.2, 2)
        await until(pilot, lambda: "rank 1 the straggler in" in shown(app, "epochs"))
        nodes, lanes = shown(app, "nodes"), shown(app, "lanes")
        assert "node 0" in nodes and "node 1" in nodes and "rank 0" in nodes and "rank 1" in nodes
        assert "rank 0 node 0" in lanes and "rank 1 node 1" in lanes
        assert "mostly losing its time in train" in shown(app, "epochs") and "rank 1 (node 1) last" in shown(app, "epochs")
        assert all(len(line) <= size[0] for line in lanes.splitlines())
        for part in ("nodes", "epochs", "lanes"):   # every panel has rows of its own at this size
            assert app.screen.query_one(f"#job-{part}").region.height > 0, part
        # node 1's recorder goes away: its file stops growing
        long_ago = time.time() - QUIET - 5
        os.utime(b.path, (long_ago, long_ago))
        a.sample(0.2, [50] * 64)
        await until(pilot, lambda: "silent since" in shown(app, "nodes"))
        assert "running" in shown(app, "nodes").splitlines()[0]
        # into one node: its own run on the run screen
        await pilot.press("j", "enter")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert isinstance(app.screen, RunScreen) and app.screen.source.path == b.path
        await pilot.press("escape")   # back to the job
        await until(pilot, lambda: isinstance(app.screen, JobScreen))
        assert isinstance(app.screen, JobScreen)


def short_waits_job(folder):
    """Two ranks: train 0–6 s with a 0.02 s data wait nested in it each second, validate 6–9 s;
    rank 1 ends each phase 0.02 s after rank 0 (noise, under the 0.1 s floor)."""
    for rank, late in ((0, 0.0), (1, 0.02)):
        node = NodeWriter(folder, rank, 1000.0, 50.0 + rank)
        node.sample(0.1, [10, 20, 30, 40])
        node.phase("phase_begin", 0.0, 1)
        for second in range(6):
            node.phase("phase_begin", second + 0.5, 1, name="data")
            node.phase("phase_end", second + 0.52, 1, name="data")
        node.phase("phase_end", 6.0 + late, 1)
        node.phase("phase_begin", 6.0 + late, 1, name="validate")
        node.phase("phase_end", 9.0 + late, 1, name="validate")
        node.end(9.0 + late)


def lane_runs(lanes: str, rank: int) -> list[tuple[str, int]]:
    """A rank's lane as (glyph, cells) runs."""
    line = next(line for line in lanes.splitlines() if line.startswith(f"rank {rank} "))
    cells = line.split("│", 1)[1]
    runs: list[tuple[str, int]] = []
    for glyph in cells:
        if runs and runs[-1][0] == glyph:
            runs[-1] = (glyph, runs[-1][1] + 1)
        else:
            runs.append((glyph, 1))
    return runs


@pytest.mark.asyncio
async def test_two_sizes_show_the_same_phases_and_the_same_straggler_line(tmp_path):
    """Each stretch of a lane shows the phase that held most of it, at any width: six 0.02 s
    waits inside a 6 s train paint no cell of their own at 100 or at 200 columns (a cell is
    about 0.12 s and 0.05 s there: a wait holds under half of one), and train holds 6/9 of the
    lane at both. The 0.02 s spread is no straggler at either size."""
    short_waits_job(tmp_path)
    seen = {}
    for size in ((100, 30), (200, 50)):
        app = DashboardApp(DashboardSettings(), job=JobModel(folder=tmp_path, silent_after=QUIET))
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda app=app: "no straggler" in shown(app, "epochs"))
            seen[size] = (lane_runs(shown(app, "lanes"), 0), shown(app, "epochs"))
    for size, (runs, epochs) in seen.items():
        assert [glyph for glyph, _ in runs] == ["█", "▓"], (size, runs)
        cells = sum(n for _, n in runs)
        assert abs(runs[0][1] - cells * 6 / 9) <= 1, (size, runs)
        assert "no straggler in 1 epoch: all ranks' work ended within the noise floor (0.1 s or 2%)" in epochs
        assert "epoch   1  no straggler: within 0.02 s (noise floor 0.18 s)" in epochs, epochs   # 2% of 9.02 s
    assert seen[(100, 30)][1].splitlines()[1] == seen[(200, 50)][1].splitlines()[1]
