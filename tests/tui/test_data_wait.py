"""The data wait of each epoch: its share in the epochs panel and in the comparison's table."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.geometry import Region  # noqa: E402

from devicewatch import analysis  # noqa: E402
from devicewatch.analysis import wording  # noqa: E402
from devicewatch.runformat import runfile
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
    rows = analysis.run_figures(runfile.load(waiting_run(tmp_path / "w.jsonl"))).epoch_rows
    assert [r.total for r in rows] == [10.0, 10.0]
    # Epoch 1: 2 s + 1 s of data phases in 10 s; epoch 2: 2.5 s by its metric, no data phase.
    assert [r.data_wait_share for r in rows] == [pytest.approx(0.3), pytest.approx(0.25)]
    unmeasured = analysis.run_figures(runfile.load(waiting_run(tmp_path / "u.jsonl", metric=None))).epoch_rows[1]
    assert unmeasured.data_wait_share is None


@pytest.mark.asyncio
async def test_the_epochs_panel_shows_each_epochs_data_wait(tmp_path):
    app = DashboardApp(DashboardSettings(), open_replay(str(waiting_run(tmp_path / "w.jsonl"))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and "wait" in str(app.screen.query_one("#epochs").render()))
        lines = str(app.screen.query_one("#epochs").render()).splitlines()
        legend = " ".join(" ".join(lines[:3]).split())
        assert f"(seconds: loop + no phase; {wording.DATA_WAIT_LEGEND})" in legend, legend
        # Each epoch's loop is its train phase, 10 s: epoch 1 waited 3 s of it (its data phases),
        # epoch 2 2.5 s (its metric). The loop stands for the train and data phases, so the
        # figures add up to the total ("=") and the data wait is the row's one data figure.
        rows = [line for line in lines if line.strip()[:1].isdigit()]
        assert [line.split("s = ")[1] for line in rows] == ["10.0 + 0.0  data wait 3.00s 30%",
                                                            "10.0 + 0.0  data wait 2.50s 25%"]


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
        assert "data wait A → B" in rendered, rendered
        assert "3.00s 30% → 1.00s 10%" in rendered and "2.50s 25% → 1.00s 10%" in rendered, rendered


# -- segments, a loop that mostly waited, a data wait not measured --------------------------------

def test_the_epochs_panel_shows_segments_with_their_steps_and_why_no_data_wait(tmp_path):
    from devicewatch.tui.panels import epoch_bars
    from tests.unit.test_units_and_wait import segment_run

    run = segment_run(tmp_path / "s.jsonl")
    found = analysis.run_figures(run).unmeasured
    lines = epoch_bars(analysis.epochs(run, analysis.phases(run)), 60, 10, found.text).plain.splitlines()
    # Figures " = 2.0 + 0.5 + 0.0  250 steps" (29 wide) leave a 60 - 12 - 29 = 19-cell bar:
    # 7.6 cells a second of the longest 2.5 s, train 15 and validate 4 (the total is padded
    # to 4). No loop column: nothing measured a wait.
    assert lines == ["█ train  █ validate  █ no phase   (seconds)",
                     *[f"{k:>4} {'█' * 19}  2.5s = 2.0 + 0.5 + 0.0  250 steps" for k in (1, 2, 3)],
                     "data wait: not measured — the training loop read no DataLoader or tf.data dataset"]


def test_the_epochs_panel_shows_a_waiting_loop_as_a_loop_that_waited(tmp_path):
    from devicewatch.tui.panels import epoch_bars
    from tests.unit.test_units_and_wait import waiting_run

    rows = analysis.run_figures(waiting_run(tmp_path / "w.jsonl")).epoch_rows
    lines = epoch_bars(rows, 100, 10).plain.splitlines()
    # Epoch 1: data 2.2 s, train 0.1 s, validate 0.2 s; its loop 2.3 s waited 2.2 s (96%): the
    # loop, validate and no phase add up to its 2.5 s, and the data wait is its one data figure
    # (not the data phase's seconds beside it).
    assert [line.split("s = ")[1] for line in lines[1:]] == [
        "2.3 + 0.2 + 0.0  data wait 2.20s 96%  100 steps",
        "2.0 + 0.5 + 0.0  data wait 0.50s 25%  100 steps"]


def test_the_progress_line_of_a_segment_run_counts_segments_without_a_total(tmp_path):
    from devicewatch.live.model import RunModel
    from devicewatch.tui.panels import progress_text
    from tests.unit.test_units_and_wait import segment_run

    model = RunModel(segment_run(tmp_path / "s.jsonl"))
    model.refresh_phases()
    assert progress_text(model).plain == "segment 3 · 3 done "
    live = RunModel(segment_run(tmp_path / "live.jsonl", finished=False))
    live.refresh_phases()
    # Segment 3 trains (its phase open), two are done.
    assert progress_text(live).plain == "segment 3 · 2 done  now: train"


@pytest.mark.asyncio
async def test_the_run_screen_titles_the_panel_segments_and_says_why_once(tmp_path):
    from tests.unit.test_units_and_wait import segment_run

    path = tmp_path / "s.jsonl"
    segment_run(path)
    app = DashboardApp(DashboardSettings(), open_replay(str(path)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and "segment" in str(app.screen.query_one("#progress").render()))
        panel = app.screen.query_one("#epochs")
        await until(pilot, lambda: "not measured" in str(panel.render()))
        assert panel.border_title == "segments: time per phase"
        text = str(panel.render())
        assert text.count("not measured") == 1 and "250 steps" in text


@pytest.mark.asyncio
async def test_the_comparison_view_titles_segments_and_says_why_a_side_has_no_wait(tmp_path):
    from tests.unit.test_units_and_wait import segment_run

    a = segment_run(tmp_path / "a.jsonl")
    b = segment_run(tmp_path / "b.jsonl", wait=0.5)
    app = DashboardApp(DashboardSettings(), compare=(a, b))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and app.screen.query(".cmp-table"))
        table = app.screen.query(".cmp-table").first()
        strips = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        rendered = "\n".join("".join(s.text for s in strip) for strip in strips)
        assert rendered.startswith("Segments (Δ = B − A;"), rendered
        # B waited 0.5 s of each 2 s loop: 25%; A read no loader, said once under the table.
        assert "- → 0.50s 25%" in rendered and "250 / 250" in rendered
        assert rendered.count("not measured") == 1
        assert "A: data wait: not measured — the training loop read no DataLoader or tf.data dataset" \
            in " ".join(rendered.split())


def _many_epochs_run(path, epochs: int):
    """EPOCHS epochs of 2 s (0.5 s of data inside 1.5 s of training, 0.5 s of validation), each
    with its steps: rows whose figures are wider than a narrow epochs panel."""
    records = [{"type": "sample", "t": t / 10, "cpu": [50.0, 50.0], "cpu_total": 50.0} for t in range(1, 20 * epochs + 1)]
    for e in range(1, epochs + 1):
        start = 2.0 * (e - 1)
        records += [_phase(start, "phase_begin", "train", e), _phase(start + 0.2, "phase_begin", "data", e),
                    _phase(start + 0.7, "phase_end", "data", e), _phase(start + 1.5, "phase_end", "train", e),
                    _phase(start + 1.5, "phase_begin", "validate", e), _phase(start + 2.0, "phase_end", "validate", e),
                    {"type": "event", "t": start + 2.0, "kind": "epoch", "epoch": e, "metrics": {"steps": 1200}}]
    return write_run(path, sorted(records, key=lambda r: r["t"]))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(200, 50), (100, 30)])
async def test_the_epochs_panel_keeps_the_newest_epoch_in_sight_when_its_rows_wrap(tmp_path, size):
    # At 200×50 the panel is 55 columns: "  12 ████████  2.0s: 1.0 + 0.5 + 0.0  loop  1.5s data
    # wait 0.50s 33%  1200 steps" takes two lines. Rows chosen for one line each pushed the newest
    # epochs below the panel's last line: a live demo showed epoch 15 while 19 were done.
    app = DashboardApp(DashboardSettings(), open_replay(str(_many_epochs_run(tmp_path / "m.jsonl", 40))))
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: first_frame(app) and "data wait" in str(app.screen.query_one("#epochs").render()))
        await pilot.pause(0.1)
        panel = app.screen.query_one("#epochs")
        region = panel.region
        shown = [strip.text[1:-1] for strip in panel.render_lines(Region(0, 0, region.width, region.height))[1:-1]]
        numbers = [line.split()[0] for line in shown if line.strip()[:1].isdigit() and "█" in line]
        assert any(len(line) > panel.size.width for line in panel.text.plain.splitlines())   # rows that wrap
        assert numbers and numbers[-1] == "40", "\n".join(shown)   # the newest row, on the last lines
        assert shown[0].lstrip().startswith("█ train"), "\n".join(shown)   # the legend first
