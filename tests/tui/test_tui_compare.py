"""The dashboard's comparison view, driven by Pilot: on the committed fixtures and on two small
runs written here whose figures are known by construction."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.geometry import Region  # noqa: E402

from devicewatch import compare  # noqa: E402
from devicewatch.runformat import runfile  # noqa: E402
from devicewatch.runformat import writer as runwriter  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.charts import HeatStrip  # noqa: E402
from devicewatch.live.source import previous_run  # noqa: E402
from devicewatch.tui.compare import CompareScreen  # noqa: E402
from devicewatch.tui.home_screen import HomeScreen  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from devicewatch.live.source import open_replay  # noqa: E402
from tests.conftest import first_frame, until  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CPU_RUN = FIXTURES / "demo-cpu.jsonl"
GPU_RUN = FIXTURES / "gpu-synthetic.jsonl"
SIZE = (200, 50)

# Two CPU runs of the same workload, two epochs each (train then validate). A starts its first
# epoch later and trains slower: epochs of 2.5 + 0.5 s in A and 1.5 + 0.5 s in B.
EPOCHS = 2
A_SHAPE = {"lead": 3.0, "train": 2.5, "validate": 0.5}
B_SHAPE = {"lead": 1.0, "train": 1.5, "validate": 0.5}


def write_small_run(path: Path, lead: float, train: float, validate: float, workload: str = "small",
                    started: float = 1000.0) -> Path:
    """A 2-core run: ``lead`` seconds of start-up, then EPOCHS epochs of train and validate."""
    host = {"hostname": "test", "cpu_model": "test", "cpu_count": 2, "mem_total": 2**33, "gpus": [],
            "gpu_driver": None, "gpu_reason": "no GPU in this test"}
    writer = runwriter.RunWriter(path, {"devicewatch": "test", "started": "2026-01-01T00:00:00+00:00",
                                      "started_unix": started, "interval": 0.1, "host": host,
                                      "workload": {"name": workload, "args": [], "command": [workload]}})
    writer.write({"type": "event", "t": 0.0, "kind": "run_info", "info": {"epochs": EPOCHS}})
    records = []
    t = lead
    for epoch in range(1, EPOCHS + 1):
        for name, seconds in (("train", train), ("validate", validate)):
            records.append((t, {"type": "event", "t": t, "kind": "phase_begin", "name": name, "epoch": epoch,
                                "lane": "main"}))
            records.append((t + seconds, {"type": "event", "t": t + seconds, "kind": "phase_end", "name": name,
                                          "epoch": epoch, "lane": "main"}))
            t += seconds
    total = t + 0.5
    for i in range(1, int(round(total / 0.1)) + 1):
        s = round(i * 0.1, 4)
        records.append((s, {"type": "sample", "t": s, "cpu": [80.0, 20.0], "cpu_total": 50.0,
                            "proc": {"cpu": 100.0, "rss": 2**28, "threads": 2, "count": 1}}))
    for _t, record in sorted(records, key=lambda r: r[0]):
        writer.write(record)
    writer.write({"type": "end", "t": total, "status": "ok", "exit_code": 0, "signal": None, "duration": total,
                  "reason": "the workload finished"})
    writer.close()
    return path


@pytest.fixture
def small_pair(tmp_path):
    return (write_small_run(tmp_path / "a.jsonl", **A_SHAPE, started=1000.0),
            write_small_run(tmp_path / "b.jsonl", **B_SHAPE, started=2000.0))


def compare_app(path_a: Path, path_b: Path, presenter: bool = False) -> DashboardApp:
    return DashboardApp(DashboardSettings(presenter=presenter), compare=(runfile.load(path_a), runfile.load(path_b)))


def text_of(screen, selector: str) -> str:
    """What the matching widgets show, as plain text (tables included), one line per row."""
    lines = []
    for widget in screen.query(selector):
        strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
        lines += ["".join(segment.text for segment in strip).strip() for strip in strips]
    return "\n".join(line for line in lines if line)


@pytest.mark.asyncio
async def test_fixtures_open_with_both_titles_headline_notes_and_epoch_deltas():
    app = compare_app(CPU_RUN, GPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        a, b = screen.query_one("#cmp-a"), screen.query_one("#cmp-b")
        assert a.border_title.startswith("A: demo") and "demo-cpu.jsonl" in a.border_title
        assert b.border_title.startswith("B: synthetic") and "gpu-synthetic.jsonl" in b.border_title
        # the headline whole, wrapped at words where it is wider than the screen
        # then the load lines (what other programs took), which never give way
        c = screen.comparison
        said = c.headline + "".join(f"\nload: {line}" for line in compare.load_lines(c))
        assert text_of(screen, "#cmp-headline").split() == said.split()
        notes = text_of(screen, "#cmp-notes")
        assert "different workloads" in notes and "no GPU samples" in notes  # shown, not hidden
        # A has no GPU: its chart says so and draws total CPU; B draws its GPU.
        titles = [c.border_title for c in screen.query(".cmp-util")]
        assert titles[0].startswith("no GPU") and "Synthetic GPU" in titles[1]
        tables = text_of(screen, ".cmp-table")
        assert "Epochs (Δ = B − A; each phase: A / B" in tables and "Idle time and dips" in tables
        # demo-cpu's workload kept 0.3 of 2 cores busy while other programs took 1.7: it waited
        assert "waiting" in text_of(screen, "#cmp-verdict-a")
        assert "validation-bound" in text_of(screen, "#cmp-verdict-b")
        assert all(chart.rebuilds >= 1 for chart in screen.query(".cmp-util"))


@pytest.mark.asyncio
async def test_small_runs_show_the_epoch_deltas_and_speedup(small_pair):
    app = compare_app(*small_pair)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        # Each epoch: A 3.0 s, B 2.0 s; delta -1.00 s, -33 %; over both epochs 6 s against 4 s.
        headline = text_of(screen, "#cmp-headline")
        assert headline.startswith("B finished 33% sooner (4.00s vs 6.00s, 1.50x as fast) over the epochs")
        tables = text_of(screen, ".cmp-table")
        assert tables.count("-1.00s") == EPOCHS and tables.count("-33%") == EPOCHS
        assert "1.50x" in tables
        # Same workload, machine and shape: only the CPU-instead-of-GPU note is left.
        assert text_of(screen, "#cmp-notes") == "note: " + screen.comparison.notes[0]
        assert "total CPU" in screen.comparison.notes[0]


@pytest.mark.asyncio
async def test_the_alignment_key_moves_epoch_k_to_the_same_column(small_pair):
    app = compare_app(*small_pair)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        width = screen.query_one(".cmp-util").size.width - 7

        def columns(epoch: int) -> tuple[int, int]:
            views = screen.views()
            return tuple(views[s].column(screen.epoch_start(s, epoch), width) for s in ("A", "B"))

        assert screen.align == "time"
        a, b = columns(1)
        assert a > b  # A starts its first epoch 2 s later
        await pilot.press("e")
        assert screen.align == "epoch" and "epoch 1 starts at the same x" in text_of(screen, "#cmp-align")
        a, b = columns(1)
        assert a == b
        await pilot.press("right_square_bracket")
        assert screen.epoch == 2
        a, b = columns(2)
        assert a == b
        await pilot.press("right_square_bracket")  # no epoch 3: stays at the last
        assert screen.epoch == 2
        await pilot.press("e")
        assert screen.align == "time" and "shared time axis" in text_of(screen, "#cmp-align")


@pytest.mark.asyncio
async def test_presenter_hides_the_detail_tables(small_pair):
    app = compare_app(*small_pair, presenter=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        details = list(app.screen.query(".cmp-detail"))
        assert details and not any(d.display for d in details)
        await pilot.press("p")
        await pilot.pause(0.1)
        assert all(d.display for d in details)


@pytest.mark.asyncio
async def test_home_screen_marks_two_recordings_and_compares_them(tmp_path, small_pair):
    runs = tmp_path / "runs"
    runs.mkdir()
    newer, older = runs / "2026-01-02-small.jsonl", runs / "2026-01-01-small.jsonl"
    older.write_bytes(small_pair[0].read_bytes())
    newer.write_bytes(small_pair[1].read_bytes())
    os.utime(older, (1, 1))  # the list is newest first: newer, then older
    app = DashboardApp(DashboardSettings(runs_dir=str(runs)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        home = app.screen
        assert isinstance(home, HomeScreen) and home.recent == [newer, older]
        home.query_one("#recent").focus()
        await pilot.press("c")  # nothing marked: a warning, no comparison
        assert app.screen is home
        await pilot.press("down", "x", "up", "x")  # A: older, B: newer
        assert home.marked == [older, newer]
        assert "A" in str(home.query_one("#recent").get_option_at_index(1).prompt)
        await pilot.press("c")
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.comparison.a.run.path == str(older) and screen.comparison.b.run.path == str(newer)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert app.screen is home


def test_previous_run_is_the_newest_earlier_file_of_the_same_workload(tmp_path):
    shape = dict(lead=0.5, train=0.5, validate=0.5)
    oldest = write_small_run(tmp_path / "1.jsonl", **shape, started=100.0)
    previous = write_small_run(tmp_path / "2.jsonl", **shape, started=200.0)
    write_small_run(tmp_path / "3.jsonl", **shape, workload="other", started=250.0)   # other workload
    current = write_small_run(tmp_path / "4.jsonl", **shape, started=300.0)
    write_small_run(tmp_path / "5.jsonl", **shape, started=400.0)                       # later
    (tmp_path / "6.jsonl").write_text("not a run file\n")
    assert previous_run(current) == previous
    assert previous_run(previous) == oldest
    assert previous_run(oldest) is None


@pytest.mark.asyncio
async def test_compare_with_previous_from_a_finished_run(tmp_path):
    shape = dict(lead=0.5, train=0.5, validate=0.5)
    previous = write_small_run(tmp_path / "2026-01-01-small.jsonl", **shape, started=100.0)
    write_small_run(tmp_path / "2026-01-01-other.jsonl", **shape, workload="other", started=150.0)
    current = write_small_run(tmp_path / "2026-01-02-small.jsonl", **shape, started=200.0)
    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path)),
                       open_replay(str(current)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        assert isinstance(app.screen, RunScreen)
        await pilot.press("c")
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.comparison.a.run.path == str(previous) and screen.comparison.b.run.path == str(current)


@pytest.mark.parametrize("name", ["missing.jsonl", "foreign.jsonl"])
def test_bad_file_is_one_line_and_exit_2_before_the_view_opens(tmp_path, name):
    (tmp_path / "foreign.jsonl").write_text('{"type": "something else"}\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("DEVICEWATCH_EVENTS", None)
    done = subprocess.run([sys.executable, "-m", "devicewatch", "compare", str(tmp_path / name), str(CPU_RUN)],
                          env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert ("no such file" if name == "missing.jsonl" else "is not a devicewatch run file") in done.stderr
    assert done.stdout == ""


@pytest.mark.asyncio
async def test_the_charts_come_first_and_the_figures_fill_in_when_worked_out(small_pair, monkeypatch):
    """A day's figures take seconds: the screen draws both runs' charts without them, says they
    are coming, and shows headline, verdicts and tables once the thread has them."""
    from devicewatch import compare

    worked_out = compare.comparison
    release = threading.Event()

    def held_comparison(run_a, run_b):
        assert release.wait(10), "the test never let the comparison go on"
        return worked_out(run_a, run_b)

    monkeypatch.setattr(compare, "comparison", held_comparison)
    app = compare_app(*small_pair)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await until(pilot, lambda: all(s.rebuilds for s in screen.query(HeatStrip)) and screen.query(HeatStrip))
        assert screen.comparison is None
        assert "the figures follow the charts" in text_of(screen, "#cmp-headline")
        assert "judging" in text_of(screen, "#cmp-verdict-a") and not screen.query(".cmp-table")
        assert all(chart.rebuilds >= 1 for chart in screen.query(".cmp-util"))
        release.set()
        await until(pilot, lambda: first_frame(app))
        assert text_of(screen, "#cmp-headline").startswith("B finished 33% sooner")
        assert "judging" not in text_of(screen, "#cmp-verdict-a") and "1.50x" in text_of(screen, ".cmp-table")
        assert not screen.query("#cmp-pending")


@pytest.mark.asyncio
async def test_a_comparison_that_fails_says_so_in_one_line_and_the_charts_stay(small_pair, monkeypatch):
    from devicewatch import compare

    def broken(run_a, run_b):
        raise ValueError("a figure could not be read")

    monkeypatch.setattr(compare, "comparison", broken)
    app = compare_app(*small_pair)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await until(pilot, lambda: "could not" in text_of(screen, "#cmp-headline"))
        assert text_of(screen, "#cmp-headline") == (
            "the figures could not be worked out: ValueError: a figure could not be read")
        assert app.is_running and isinstance(app.screen, CompareScreen)
        assert all(s.rebuilds >= 1 for s in screen.query(HeatStrip))
