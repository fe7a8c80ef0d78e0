"""The data wait of each epoch: its share in the epochs panel and in the comparison's table."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.geometry import Region  # noqa: E402

from devicewatch import analysis, runfile  # noqa: E402
from devicewatch.live.source import open_replay  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from tests.conftest import first_frame, until, write_run  # noqa: E402

SIZE = (200, 50)


def _phase(t: float, kind: str, name: str, epoch: int) -> dict:
    return {"type": "event", "t": t, "kind": kind, "name": name, "epoch": epoch, "lane": "main"}


def waiting_run(path, data_seconds: tuple[float, float] = (2.0, 1.0), metric: float | None = 2.5):
    """Two epochs of 10 s of training. Epoch 1 waits on its data inside train (data phases of
    ``data_seconds``); epoch 2 says how long it waited in its metrics (``data_wait_s``)."""
    records = [{"type": "sample", "t": t / 2, "cpu": [50.0, 50.0], "cpu_total": 50.0} for t in range(1, 41)]
    records += [_phase(0.0, "phase_begin", "train", 1), _phase(1.0, "phase_begin", "data", 1),
                _phase(1.0 + data_seconds[0], "phase_end", "data", 1),
                _phase(5.0, "phase_begin", "data", 1), _phase(5.0 + data_seconds[1], "phase_end", "data", 1),
                _phase(10.0, "phase_end", "train", 1),
                _phase(10.0, "phase_begin", "train", 2), _phase(20.0, "phase_end", "train", 2)]
    if metric is not None:
        records.append({"type": "event", "t": 20.0, "kind": "epoch", "epoch": 2, "metrics": {"data_wait_s": metric}})
    return write_run(path, sorted(records, key=lambda r: r["t"]))


def test_the_share_is_the_metric_else_the_data_phases_over_the_epoch(tmp_path):
    rows = analysis.epochs(runfile.load(waiting_run(tmp_path / "w.jsonl")))
    assert [r.total for r in rows] == [10.0, 10.0]
    # Epoch 1: 2 s + 1 s of data phases in 10 s; epoch 2: 2.5 s by its metric, no data phase.
    assert [r.data_wait_share for r in rows] == [pytest.approx(0.3), pytest.approx(0.25)]
    unmeasured = analysis.epochs(runfile.load(waiting_run(tmp_path / "u.jsonl", metric=None)))[1]
    assert unmeasured.data_wait_share is None


@pytest.mark.asyncio
async def test_the_epochs_panel_shows_each_epochs_data_wait(tmp_path):
    app = DashboardApp(DashboardSettings(), open_replay(str(waiting_run(tmp_path / "w.jsonl"))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and "wait" in str(app.screen.query_one("#epochs").render()))
        lines = str(app.screen.query_one("#epochs").render()).splitlines()
        assert "wait: share of the epoch waiting on data" in lines[0] + lines[1]
        assert [line.split("wait")[-1].strip() for line in lines if line.strip()[:1].isdigit()] == ["30%", "25%"]


@pytest.mark.asyncio
async def test_the_comparison_views_epoch_table_shows_the_data_wait(tmp_path):
    a = runfile.load(waiting_run(tmp_path / "a.jsonl"))
    b = runfile.load(waiting_run(tmp_path / "b.jsonl", data_seconds=(0.5, 0.5), metric=1.0))
    app = DashboardApp(DashboardSettings(), compare=(a, b))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        table = app.screen.query(".cmp-table").first()
        strips = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        rendered = "\n".join("".join(s.text for s in strip) for strip in strips)
        # epoch 1: 30% in A, 10% in B (1 s of data phases); epoch 2: 25% and 10% (the metric)
        assert "data wait" in rendered and "30% → 10%" in rendered and "25% → 10%" in rendered, rendered
