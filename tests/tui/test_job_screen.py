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
        await until(pilot, lambda: "rank 1 slowest in" in shown(app, "epochs"))
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
