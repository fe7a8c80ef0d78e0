"""The run screen's layout on the machine it shows, the end of a live run, and the demo story."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch import registry  # noqa: E402
from devicewatch.commands import demo  # noqa: E402
from devicewatch.live.source import LiveSource, open_replay  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.compare import CompareScreen  # noqa: E402
from devicewatch.tui.home_screen import HomeScreen, example_recordings  # noqa: E402
from devicewatch.live.model import ordered_lanes  # noqa: E402
from devicewatch.runformat.header import Header  # noqa: E402
from devicewatch.tui.panels import hosts_text  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from tests.conftest import first_frame, until, write_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SIZE = (200, 50)


def lines_of(chart) -> list[str]:
    return chart.text()



def cores_run(path: Path, cores: int, seconds: float = 3.0) -> Path:
    samples = [{"type": "sample", "t": round(i * 0.1, 3), "cpu": [float((c * 7 + i) % 100) for c in range(cores)],
                "cpu_total": 50.0} for i in range(1, int(seconds * 10) + 1)]
    return write_run(path, samples, header={"host": {"cpu_model": "test", "cpu_count": cores, "gpus": [],
                                                     "gpu_reason": "no NVIDIA driver"}})


@pytest.mark.asyncio
async def test_two_cores_get_a_readable_row_each_with_a_scale(tmp_path):
    app = DashboardApp(DashboardSettings(), open_replay(str(cores_run(tmp_path / "two.jsonl", 2))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "2 cores" in str(app.screen.query_one("#heat-legend").render())
                    and any(r.strip().startswith("cpu1") for r in lines_of(app.screen.query_one("#cores"))))
        rows = lines_of(app.screen.query_one("#cores"))
        labelled = [r.strip().split()[0] for r in rows if r.strip().startswith("cpu")]
        assert labelled == ["cpu0", "cpu1"]
        legend = str(app.screen.query_one("#heat-legend").render())
        assert "0%" in legend and "100%" in legend and "2 cores" in legend
        # No GPU: the GPU half is gone, one line says why, the CPU panel has the width.
        assert not app.screen.query_one("#gpu-panel").display
        assert "no NVIDIA driver" in str(app.screen.query_one("#no-gpu").render())
        assert app.screen.query_one("#cpu-panel").size.width >= SIZE[0] - 2


@pytest.mark.asyncio
async def test_128_cores_are_a_dense_strip_of_core_ranges(tmp_path):
    app = DashboardApp(DashboardSettings(), open_replay(str(cores_run(tmp_path / "many.jsonl", 128))))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: any(r.strip()[:1].isdigit() for r in lines_of(app.screen.query_one("#cores"))))
        rows = [r.strip() for r in lines_of(app.screen.query_one("#cores"))]
        labels = [r.split()[0] for r in rows if r and r[0].isdigit() and not r.endswith("s")]
        # Two groups of cores per text row, the rows labelled by their first cores: every core
        # is in the strip, in far fewer rows than cores.
        firsts = [int(label.split("-")[0].rstrip("+")) for label in labels]
        assert firsts[0] == 0 and firsts == sorted(firsts) and 64 <= firsts[-1] <= 127
        assert len(labels) < 32


@pytest.mark.asyncio
async def test_a_replay_does_not_offer_stop_run():
    app = DashboardApp(DashboardSettings(), open_replay(str(FIXTURES / "demo-cpu.jsonl")))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        assert "s" not in app.screen.active_bindings
        assert "0" in app.screen.active_bindings


@pytest.mark.asyncio
async def test_a_live_run_offers_stop_then_shows_the_whole_run_when_it_ends(tmp_path):
    target = registry.resolve(["--", sys.executable, "-c", "import time; time.sleep(2.5)"])
    source = LiveSource(str(tmp_path / "runs"), target, interval=0.1, gpu=False)
    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs"), gpu=False), source, tick=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.0)
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.source.running
        assert screen.window == 60 and "s" in screen.active_bindings
        for _ in range(100):
            await pilot.pause(0.2)
            if screen.model is not None and screen.model.run.finished:
                break
        await pilot.pause(0.5)
        assert screen.model.run.finished
        assert screen.window is None
        assert "window whole run" in str(screen.query_one("#status").render())
        assert "s" not in screen.active_bindings


def test_rank_lanes_are_drawn_in_rank_order_and_hosts_named():
    assert ordered_lanes(["rank 1", "rank 10", "rank 0", "rank 2 validate"]) == \
        ["rank 0", "rank 1", "rank 2 validate", "rank 10"]
    assert ordered_lanes(["main", "validate-0", "validate-1"]) == ["main", "validate-0", "validate-1"]

    class Model:
        host = None

        class run:
            header = Header.parse({"hosts": [{"label": "node 0", "host": {"hostname": "alpha"}},
                                             {"label": "node 1", "host": {"hostname": "beta"}}]})
    assert hosts_text(Model) == "hosts node 0=alpha, node 1=beta"  # type: ignore[arg-type]
    Model.host = "node 1"
    assert hosts_text(Model) == "charts node 1=beta (h: next) · hosts node 0=alpha, node 1=beta"  # type: ignore[arg-type]
    Model.run.header = Header.parse({"host": {"hostname": "solo"}})
    assert hosts_text(Model) == ""  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_gpm_recording_shows_sm_activity_and_the_driver_rate():
    app = DashboardApp(DashboardSettings(), open_replay(str(FIXTURES / "gpu-gpm.jsonl")))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):  # the first redraw, however busy the machine
            await pilot.pause(0.1)
            if getattr(app.screen, "sm_charts", None) and app.screen.sm_charts[0].rebuilds:
                break
        screen = app.screen
        # GPU 0 (an H100) has GPM and draws its SM activity; GPU 1 (an A100) has none: no chart.
        assert [chart.display for chart in screen.sm_charts] == [True, False]
        assert "SM active" in screen.sm_charts[0].border_title
        assert screen.sm_charts[0].rebuilds >= 1
        # The recorder measured the driver's sample periods, 0.1667 s and 0.1 s.
        title = screen.query_one("#gpu-panel").border_title
        assert "GPU 0: driver samples every 167 ms" in title and "GPU 1: driver samples every 100 ms" in title


@pytest.mark.asyncio
async def test_the_home_screen_lists_shipped_recordings_as_examples(tmp_path, monkeypatch):
    shipped = tmp_path / "recordings"
    shipped.mkdir()
    (shipped / "a100-pipeline.jsonl").write_text((FIXTURES / "gpu-synthetic.jsonl").read_text())
    monkeypatch.chdir(tmp_path)
    assert shipped / "a100-pipeline.jsonl" in [p.resolve() for p in example_recordings()]
    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, HomeScreen)
        prompts = [str(screen.query_one("#recent").get_option_at_index(i).prompt)
                   for i in range(screen.query_one("#recent").option_count)]
        assert any("example" in p and "a100-pipeline.jsonl" in p for p in prompts)


@pytest.mark.asyncio
async def test_the_demo_story_runs_serial_then_overlapped_then_compares(tmp_path):
    args = argparse.Namespace(epochs=1, train_samples=256, val_samples=256, device="cpu")
    story = demo.targets(args)
    assert [t.args[:2] for t in story] == [["--variant", "serial"], ["--variant", "overlapped"]]
    settings = DashboardSettings(runs_dir=str(tmp_path / "runs"), interval=0.1, gpu=False)
    app = DashboardApp(settings, story=story, story_pause=0.2, tick=0.2)
    seen: list[str] = []
    announced = []   # the finished run's line saying the next one starts, and the toasts then shown
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):
            await pilot.pause(0.2)
            screen = app.screen
            if isinstance(screen, RunScreen) and "the next run starts" in str(screen.query_one("#progress").render()):
                announced.append(list(app.screen.query("Toast")))
            if isinstance(screen, RunScreen):  # named by its variant once its file is open
                step = f"run {screen.model.run.header.workload.args[1]}" if screen.model else None
            else:
                step = type(screen).__name__
            if step and (not seen or seen[-1] != step):
                seen.append(step)
            if isinstance(screen, CompareScreen):
                break
        assert seen == ["run serial", "run overlapped", "CompareScreen"]
        # Said after the progress bar, not in a toast drawn over the panels' figures and borders.
        assert announced and announced[0] == []
        # The figures follow the charts, worked out in a thread: the headline comes with them.
        await until(pilot, lambda: first_frame(app) and app.story_headline is not None)
        assert app.story_headline and app.story_headline == app.screen.comparison.headline
        assert [p.parent for p in app.story_files] == [tmp_path / "runs"] * 2


@pytest.mark.asyncio
async def test_a_merged_run_charts_one_node_at_a_time(tmp_path):
    """Each node's samples are its own machine's: the charts show node 0's two GPUs, then ``h``
    shows node 1's one GPU and its CPU, never the two nodes' rows interleaved."""
    from tests.conftest import merged_two_gpu_nodes

    out, _a, _b = merged_two_gpu_nodes(tmp_path)
    app = DashboardApp(DashboardSettings(), open_replay(str(out)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "charts node 0" in str(app.screen.query_one("#status").render()))
        screen = app.screen
        assert screen.model.host == "node 0" and "h" in screen.active_bindings
        assert list(screen.model.cpu_total.values) == [20.0, 7.5]
        assert "charts node 0=abox (h: next)" in str(screen.query_one("#status").render())
        assert [c.display for c in screen.gpu_charts] == [True, True]
        await pilot.press("h")
        await until(pilot, lambda: "charts node 1" in str(screen.query_one("#status").render()))
        assert screen.model.host == "node 1"
        assert list(screen.model.cpu_total.values) == [20.0, 30.0, 67.5]
        assert [c.display for c in screen.gpu_charts] == [True, False]
        assert "charts node 1=bbox (h: next)" in str(screen.query_one("#status").render())
        # judged on node 1's own samples: three (node 0's two), too few to tell in the merged run's 2.5 s
        assert screen.model.verdict is not None and screen.model.verdict.text.startswith(
            "too short to judge: the run ended after 2.5 s and 3 samples")
        await pilot.press("h")
        await until(pilot, lambda: screen.model.host == "node 0")
        assert screen.model.host == "node 0"


@pytest.mark.asyncio
async def test_one_nodes_run_offers_no_next_host():
    app = DashboardApp(DashboardSettings(), open_replay(str(FIXTURES / "demo-cpu.jsonl")))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.screen.model is not None)
        assert "h" not in app.screen.active_bindings and app.screen.model.host is None
