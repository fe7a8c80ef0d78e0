"""The dashboard, driven by Pilot on recorded and synthetic runs, plus its one-line refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

from rich.text import Text

import pytest

pytest.importorskip("textual")

from textual.content import Content  # noqa: E402

from devicewatch.runformat import runfile  # noqa: E402
from devicewatch.runformat import writer as runwriter  # noqa: E402
from devicewatch.registry import Target  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.home_screen import HomeScreen, OptionError, arguments_from  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from devicewatch.live.source import LiveSource, open_replay, run_file_name  # noqa: E402
from tests.conftest import first_frame, until  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CPU_RUN = FIXTURES / "demo-cpu.jsonl"
GPU_RUN = FIXTURES / "gpu-synthetic.jsonl"          # schema 1, as an older devicewatch wrote it
GPU_RUN_V2 = FIXTURES / "gpu-synthetic-v2.jsonl"    # the same run as this writer writes it
SIZE = (200, 50)

GPU_EPOCHS = 3
TRAIN_S, VALIDATE_S = 4.0, 1.0       # per epoch
TRAIN_UTIL, VALIDATE_UTIL = 95, 10   # GPU utilization in each phase


def make_gpu_run(path: Path) -> Path:
    """A synthetic one-GPU run: busy while training, a dip in every validation (Fig. 1's picture)."""
    host = {"hostname": "synthetic", "cpu_model": "synthetic", "cpu_count": 4, "mem_total": 2**34,
            "gpus": [{"index": 0, "name": "Synthetic GPU", "uuid": None, "mem_total": 16 * 2**30}],
            "gpu_driver": "0", "gpu_reason": None}
    writer = runwriter.RunWriter(path, {"devicewatch": "test", "started": "2026-01-01T00:00:00+00:00",
                                      "started_unix": 0.0, "interval": 0.1, "host": host,
                                      "workload": {"name": "synthetic", "args": [], "command": ["synthetic"]}})
    writer.write({"type": "gpu_status", "t": 0.0, "available": True, "reason": None, "devices": 1})
    writer.write({"type": "event", "t": 0.0, "kind": "run_info", "info": {"epochs": GPU_EPOCHS, "device": "cuda"}})
    epoch_s = TRAIN_S + VALIDATE_S
    spans = []
    for e in range(GPU_EPOCHS):
        start = e * epoch_s
        spans += [("train", e + 1, start, start + TRAIN_S), ("validate", e + 1, start + TRAIN_S, start + epoch_s)]
    records = []
    for name, epoch, start, end in spans:
        records.append((start, {"type": "event", "t": start, "kind": "phase_begin", "name": name, "epoch": epoch, "lane": "main"}))
        records.append((end, {"type": "event", "t": end, "kind": "phase_end", "name": name, "epoch": epoch, "lane": "main"}))
    total = GPU_EPOCHS * epoch_s
    for i in range(1, int(round(total / 0.1)) + 1):
        t = round(i * 0.1, 4)
        in_train = (t - 0.05) % epoch_s < TRAIN_S
        util = TRAIN_UTIL if in_train else VALIDATE_UTIL
        gpu = {"index": 0, "util": util, "mem_util": util // 2, "mem_used": 6 * 2**30, "mem_total": 16 * 2**30,
               "power_w": 250.0 if in_train else 90.0, "temp_c": 60, "sm_clock_mhz": 1500, "procs": []}
        records.append((t, {"type": "sample", "t": t, "cpu": [30.0, 10.0, 5.0, 5.0], "cpu_total": 12.5,
                            "proc": {"cpu": 110.0, "rss": 2**31, "threads": 8, "count": 1},
                            "recorder_cpu": 0.8, "watcher_cpu": 2.0, "gpus": [gpu]}))
    for _t, record in sorted(records, key=lambda r: r[0]):
        writer.write(record)
    writer.write({"type": "end", "t": total, "status": "ok", "exit_code": 0, "signal": None,
                  "duration": total, "reason": "the workload finished"})
    writer.close()
    return path


def test_gpu_fixture_is_what_the_generator_writes(tmp_path):
    assert make_gpu_run(tmp_path / "g.jsonl").read_text() == GPU_RUN_V2.read_text()


def replay_app(path: Path, **settings) -> DashboardApp:
    return DashboardApp(DashboardSettings(**settings), open_replay(str(path)))


def plain(app: DashboardApp, widget_id: str) -> str:
    return str(app.screen.query_one(f"#{widget_id}").render())


@pytest.mark.asyncio
async def test_replay_of_a_recorded_cpu_run_shows_every_panel():
    run = runfile.load(CPU_RUN)
    app = replay_app(CPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert "FINISHED" in plain(app, "status")
        # No GPU in this recording: one line says why, in the recorder's own words, and the
        # GPU half gives its space to the CPU panel, which carries the phase lanes.
        assert run.gpu_status[0].reason in plain(app, "no-gpu")
        assert not screen.query_one("#gpu-panel").display
        assert screen.query_one("#cpu-lanes").display
        assert screen.query_one("#cpu-panel").size.width > SIZE[0] * 0.9
        assert not screen.gpu_charts
        # One heat row per core at 200x50, cores from the header.
        cores = screen.query_one("#cores")
        assert cores.rebuilds >= 1
        assert any(f"cpu{c}" in row for c in range(run.cores) for row in cores.text())
        assert screen.model.epochs_total == 3
        assert "3/3 done" in plain(app, "progress")
        assert plain(app, "verdict").startswith("verdict: " + screen.model.verdict.label)
        log_lines = [str(line) for line in screen.query_one("#log").lines]
        assert log_lines == [r.line for r in run.logs]


@pytest.mark.asyncio
async def test_gpu_replay_shows_util_chart_and_the_validation_dip():
    app = replay_app(GPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and app.screen.gpu_charts)
        screen = app.screen
        assert len(screen.gpu_charts) == 1
        assert "Synthetic GPU" in screen.gpu_charts[0].border_title
        assert not screen.query_one("#gpu-reason").display
        assert screen.query_one("#gpu-mem-power").display
        # Mean utilization (4 s at 95 %, 1 s at 10 %) = 78 % < 80 %, and every dip falls in
        # validation: the analysis calls it validation-bound.
        assert screen.model.verdict.label == "validation-bound"
        chart = screen.gpu_charts[0]
        rows = chart.text()
        bottom, top = rows[-2], rows[0]  # the last row is the time axis
        assert "█" in bottom and " " in top[8:]  # full at the bottom, gaps (dips) near the top


@pytest.mark.asyncio
async def test_keys_zoom_pause_yscale_presenter_help_and_marker():
    app = replay_app(CPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert screen.window is None  # a replay opens on the whole run
        await pilot.press("plus")
        assert screen.window is not None and screen.window >= 10
        first = screen.window
        await pilot.press("plus")
        assert screen.window < first
        await pilot.press("minus", "0")
        assert screen.window is None
        await pilot.press("y")
        assert not screen.fixed_y and "y auto" in plain(app, "status")
        await pilot.press("space")
        assert screen.paused and "PAUSED" in plain(app, "status")
        await pilot.press("space")
        assert not screen.paused
        await pilot.press("p")
        await pilot.pause(0.2)
        assert app.presenter and not screen.query_one("#bottom").display
        await pilot.press("p")
        await pilot.pause(0.2)
        assert screen.query_one("#bottom").display
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert app.screen.query("HelpPanel")
        await pilot.press("m")
        assert screen.model.local_markers and screen.model.all_markers


@pytest.mark.asyncio
async def test_a_replay_opens_alone_and_escape_leads_to_the_home_screen(tmp_path):
    """A replay from the command line builds no home screen before its first frame; escape
    (the run closed) then shows it, as it would after a run started from the home screen."""
    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs")), open_replay(str(CPU_RUN)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        assert isinstance(app.screen, RunScreen)
        assert not any(isinstance(s, HomeScreen) for s in app.screen_stack)
        source = app.screen.source
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HomeScreen) and len(app.screen_stack) == 2
        assert source.follower._file.closed and len(source.run.samples)  # closed, what was read kept


@pytest.mark.asyncio
async def test_home_screen_lists_workloads_with_an_options_form(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "2026-01-01T00-00-00-demo.jsonl").write_text(CPU_RUN.read_text())
    app = DashboardApp(DashboardSettings(runs_dir=str(runs)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, HomeScreen)
        assert screen.current is not None and screen.current.name == "demo"
        assert screen.query_one("#opt-epochs").value == "5"
        assert screen.recent == [runs / "2026-01-01T00-00-00-demo.jsonl"]
        await pilot.press("R")
        await pilot.pause(0.3)
        assert isinstance(app.screen, RunScreen) and not app.screen.source.live


def test_form_arguments_are_checked_by_the_workloads_parser():
    from devicewatch import registry

    parser = registry.get("demo").parser
    assert arguments_from(parser, {"epochs": "2", "batch": "256"}) == ["--epochs", "2"]
    with pytest.raises(OptionError):
        arguments_from(registry.get("demo").parser, {"epochs": "two"})


@pytest.mark.asyncio
async def test_live_run_is_recorded_into_the_runs_folder_and_stop_cancels_it(tmp_path):
    runs = tmp_path / "runs"
    from devicewatch import registry

    source = LiveSource(str(runs), registry.resolve(["demo", "--epochs", "1000", "--samples", "2000"]))
    app = DashboardApp(DashboardSettings(runs_dir=str(runs)), source, tick=0.1)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(300):
            await pilot.pause(0.1)
            if app.screen.model is not None and app.screen.model.epoch_rows:
                break
        assert app.screen.model.epoch_rows, "the workload's first epoch should have arrived"
        assert "LIVE" in plain(app, "status")
        await pilot.press("s")
        for _ in range(300):
            await pilot.pause(0.1)
            if source.run.finished:
                break
        await pilot.pause(0.2)
        assert source.run.end.status == "cancelled"
        assert "CANCELLED" in plain(app, "status")
        assert source.process.wait(timeout=30) is not None  # it prints its summary, then exits
    files = list(runs.glob("*-demo.jsonl"))
    assert files == [source.path]
    assert runfile.load(files[0]).end.status == "cancelled"


@pytest.mark.asyncio
async def test_a_recorder_that_dies_shows_an_error(tmp_path):
    source = LiveSource(str(tmp_path), Target(None, [], [sys.executable, "-c", "import time; time.sleep(60)"]))
    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path)), source, tick=0.1)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            await pilot.pause(0.1)
            if app.screen.model is not None and app.screen.model.run.samples:
                break
        import psutil

        workload = psutil.Process(source.process.pid).children(recursive=True)
        os.kill(source.process.pid, signal.SIGKILL)
        for _ in range(100):
            await pilot.pause(0.1)
            if source.error:
                break
        await pilot.pause(0.3)
        assert "SIGKILL" in source.error
        assert "ERROR" in plain(app, "status")
    for process in workload:  # the killed recorder could not end the workload it started
        process.kill()


@pytest.mark.parametrize("content, expected", [
    (None, "no such file"),
    ('{"type": "something else"}\n', "is not a devicewatch run file"),
])
def test_bad_replay_file_is_one_line_and_exit_2(tmp_path, content, expected):
    path = tmp_path / "run.jsonl"
    if content is not None:
        path.write_text(content)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "devicewatch", "replay", str(path)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr
    assert "Traceback" not in done.stderr


def test_run_file_names_are_timestamped_and_never_overwrite(tmp_path):
    first = run_file_name(str(tmp_path), "python -c", now=0.0)
    assert first.name.endswith("-python-c.jsonl") and first.parent == tmp_path
    first.write_text("")
    assert run_file_name(str(tmp_path), "python -c", now=0.0).name.endswith("-python-c-2.jsonl")


@asynccontextmanager
async def replay_log():
    """A replay's dashboard at its first frame, and its output panel."""
    app = replay_app(CPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        yield pilot, app.screen.query_one("#log")


@pytest.mark.asyncio
async def test_the_output_panel_follows_the_end_keeps_its_newest_lines_and_stays_where_scrolled():
    async with replay_log() as (pilot, log):
        log.max_lines = 50
        log.write_lines([f"line {i}" for i in range(120)])
        await pilot.pause(0.1)
        assert list(log.lines) == [f"line {i}" for i in range(70, 120)]  # the newest 50
        assert log.scroll_y == log.max_scroll_y > 0                    # following the end
        last = "".join(s.text for s in log.render_line(log.scrollable_content_region.height - 1)._segments)
        assert last.startswith("line 119")
        log.scroll_to(y=0, animate=False, immediate=True)
        log.write_lines(["one more\tline"])
        await pilot.pause(0.1)
        assert log.scroll_y == 0 and log.lines[-1] == "one more        line"  # scrolled back: it stays there
        assert log.vertical_scrollbar.window_virtual_size == len(log.lines)


@pytest.mark.asyncio
async def test_a_text_panel_repaints_only_the_lines_that_changed_and_wraps_as_a_static():
    from textual.app import App
    from textual.geometry import Region
    from textual.widgets import Static

    from devicewatch.tui.panels import TextPanel

    text = Text("first line\nsecond line that is long enough to be folded at the panel's edge\nthird")

    class Both(App):
        CSS = "TextPanel, Static { width: 30; padding: 0 1; }"

        def compose(self):
            yield TextPanel(text, id="panel")
            yield Static(text, id="static")

    app = Both()
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause(0.1)
        panel, static = app.query_one("#panel"), app.query_one("#static")
        assert panel.size == static.size and panel.size.height == 5  # the long line folds in three
        lines = ["".join(s.text for s in panel.render_line(y)) for y in range(5)]
        assert lines == ["".join(s.text for s in static.render_line(y)) for y in range(5)]
        before = list(panel._strips)
        wrapped = list(panel._lines)
        repainted: list[tuple] = []
        refresh = panel.refresh
        panel.refresh = lambda *regions, **kw: (repainted.append(regions), refresh(*regions, **kw))[1]
        panel.update(Text("first line\nsecond line that is long enough to be folded at the panel's edge\nTHIRD"))
        assert [a is b for a, b in zip(before, panel._strips)] == [True, True, True, True, False]
        # the changed line's whole row, padding included (``-left``: the regions are the content's)
        left, outer = panel.content_offset.x, panel.outer_size.width
        assert left == 1 and repainted == [(Region(-1, 4, outer, 1),)]
        # only the changed line was wrapped again: the others' wrapped lines are the same objects
        assert [a is b for a, b in zip(wrapped, panel._lines)] == [True, True, True, True, False]


@pytest.mark.asyncio
async def test_the_output_panel_keeps_the_drawn_lines_of_a_few_screens_not_of_all_it_holds():
    from devicewatch.tui.output_panel import STRIPS_KEPT

    async with replay_log() as (pilot, log):
        log.write_lines([f"line {i}" for i in range(1500)])
        await pilot.pause(0.1)
        for top in range(0, 1500, 20):   # scrolled through from the first line to the last
            log.scroll_to(y=top, animate=False, immediate=True)
            for y in range(log.size.height):
                log.render_line(y)
        assert len(log._strips) == STRIPS_KEPT < 1500
        assert "".join(s.text for s in log.render_line(0)._segments).rstrip() == log.lines[log.scroll_y]


@pytest.mark.asyncio
async def test_what_exists_at_the_first_frame_is_frozen_out_of_the_collector():
    import gc

    from devicewatch.tui.app import YOUNG_OBJECTS_PER_COLLECTION

    gc.unfreeze()
    threshold = gc.get_threshold()
    gc.set_threshold(700, *threshold[1:])
    try:
        app = replay_app(CPU_RUN)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: first_frame(app))
            await pilot.pause(0.1)
            assert gc.get_freeze_count() > 10_000   # the modules, styles and the run: not walked again
            assert gc.get_threshold() == (YOUNG_OBJECTS_PER_COLLECTION, *threshold[1:])
    finally:
        gc.set_threshold(*threshold)


@pytest.mark.asyncio
async def test_drawing_frames_leaves_no_line_to_the_collector():
    # The compositor divides every line under a changed area where widgets meet; Textual kept a
    # line divided at its own length in its own cache, a cycle only the collector freed (a
    # hundred thousand objects a minute live). Zooming redraws every chart and frame.
    import gc

    from textual.strip import Strip

    app = replay_app(CPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        await pilot.pause(0.1)
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for key in ("+", "+", "-", "left", "right"):
                await pilot.press(key)
                await pilot.pause(0.1)
            gc.collect()
            cyclic = [item for item in gc.garbage if isinstance(item, Strip)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert app.screen.query_one("#cpu-total").rebuilds > 1
        assert not cyclic


@pytest.mark.asyncio
async def test_on_a_short_screen_the_bottom_row_gives_way_and_the_all_cores_chart_keeps_its_rows():
    app = replay_app(CPU_RUN)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: first_frame(app))
        await pilot.pause(0.1)
        total, bottom = app.screen.query_one("#cpu-total"), app.screen.query_one("#bottom")
        assert total.content_region.height >= 5      # an axis row and at least four of levels
        assert bottom.size.height < 15
    async with replay_app(CPU_RUN).run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(pilot.app))
        assert pilot.app.screen.query_one("#bottom").size.height == 15   # a tall screen: as it was


@pytest.mark.asyncio
async def test_a_chart_part_hands_over_the_lines_textual_would_make_of_it(monkeypatch):
    from textual.filter import ANSIToTruecolor
    from textual.widget import Widget

    from devicewatch.tui import drawing
    from devicewatch.tui.charts import ChartPart

    def texts(strips):
        return [[(s.text, s.style) for s in strip] for strip in strips]

    app = replay_app(CPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        await pilot.pause(0.1)
        parts = [p for p in app.screen.query(ChartPart) if p.size.area]
        assert len(parts) >= 4
        for part in parts:
            whole = part.size.region
            for crop in (whole, whole.crop_size((max(1, whole.width // 2), whole.height)).translate((1, 0))):
                crop = crop.intersection(whole)
                ours = part.render_lines(crop)
                part._styles_cache.clear()
                assert texts(ours) == texts(Widget.render_lines(part, crop))
        monkeypatch.setattr(drawing, "_TERMINAL_STYLES", {0})   # a terminal colour drawn: the filter is back
        part = parts[0]
        assert any(isinstance(f, ANSIToTruecolor) for f in part.get_line_filters())
        part._styles_cache.clear()
        assert texts(part.render_lines(part.size.region)) == texts(Widget.render_lines(part, part.size.region))
        part.styles.padding = (0, 1)   # a style that changes the lines: Textual's way again
        await pilot.pause(0.1)
        assert not part._plain()
        assert texts(part.render_lines(part.size.region)) == texts(Widget.render_lines(part, part.size.region))


@pytest.mark.asyncio
async def test_unchanged_widgets_hand_the_compositor_their_last_lines_and_changed_ones_new_lines():
    from textual.widget import Widget

    from devicewatch.tui.kept_lines import KeptLines

    def texts(strips):
        return [strip.text for strip in strips]

    app = replay_app(CPU_RUN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app))
        await pilot.pause(0.1)
        screen = app.screen
        # The kept containers are still Textual's: laid out side by side or stacked by its CSS.
        top = screen.query_one("#top")
        assert isinstance(top, KeptLines) and top.styles.layout.name == "horizontal"
        assert screen.query_one("#cpu-panel").styles.layout.name == "vertical"
        kept = [w for w in screen.query(KeptLines) if w.size.area] + [screen]
        assert len(kept) >= 8
        for widget in kept:
            whole = widget.size.region
            first = widget.render_lines(whole)
            assert widget.render_lines(whole) is first   # unchanged: the same lines
            widget._styles_cache.clear()
            assert texts(first) == texts(Widget.render_lines(widget, whole))
        status = screen.query_one("#status")
        before = status.render_lines(status.size.region)
        status.update(Text("another status line"))
        after = status.render_lines(status.size.region)
        assert after is not before and after[0].text.startswith("another status line")
        # A smaller crop, or the panel's new width, is rendered again too.
        assert len(status.render_lines(status.size.region.crop_size((10, 1)))[0].text) == 10
        await pilot.resize_terminal(SIZE[0] - 20, SIZE[1])
        await pilot.pause(0.2)
        assert len(status.render_lines(status.size.region)[0].text) == status.size.width == SIZE[0] - 20


@pytest.mark.asyncio
@pytest.mark.parametrize("size,presenter", [((200, 50), False), ((100, 30), False), ((100, 30), True)])
async def test_text_panels_draw_their_lines_as_textual_draws_them(size, presenter):
    from textual.visual import Visual

    from devicewatch.tui.panels import TextPanel

    def drawn(strip):
        return list(strip), strip.cell_length

    app = replay_app(CPU_RUN)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: first_frame(app))
        if presenter:
            await pilot.press("p")
        await pilot.pause(0.2)
        panels = [p for p in app.screen.query(TextPanel) if p._lines and p.size.width]
        assert {"status", "progress", "verdict", *(() if presenter else ("epochs",))} <= {p.id for p in panels}
        for panel in panels:
            style, width = panel.visual_style, panel.size.width
            for line in panel._lines:
                assert drawn(panel._line_strip(line, width, style)) == drawn(Visual.to_strips(panel, line, width, 1, style)[0])
        # Their text is wrapped as Textual wraps it, a line that fits included.
        for panel in panels:
            for width in (panel.size.width, 30, 12):
                ours = panel._wrap(panel.text, width)
                textual = [c for line in panel.text.split("\n", allow_blank=True)
                           for c in Content.from_rich_text(line, app.console).wrap(width)]
                assert [(c.plain, c.spans) for c in ours] == [(c.plain, c.spans) for c in textual]
        # The same text at the same width again: its lines as given before; grown since, wrapped again.
        status = app.screen.query_one("#status", TextPanel)
        text = Text("first line\nsecond line")
        lines = status._wrap(text, 40)
        assert status._wrap(text, 40) is lines and [c.plain for c in lines] == ["first line", "second line"]
        text.append("\nthird line")
        assert [c.plain for c in status._wrap(text, 40)] == ["first line", "second line", "third line"]
        text.stylize("bold", 0, 5)
        assert status._wrap(text, 40)[0].spans and not lines[0].spans
        assert [c.plain for c in status._wrap(text, 6)][:2] == ["first", "line"]
        # Where the panel aligns or pads its text, or the text is clickable, Textual's own way.
        clickable = Content.from_markup("[@click=app.bell]ring[/] the bell")
        status.styles.text_align = "center"
        for line in (status._lines[0], clickable):
            style = status.visual_style
            assert drawn(status._line_strip(line, status.size.width, style)) == \
                drawn(Visual.to_strips(status, line, status.size.width, 1, style)[0])
        status.styles.text_align = "left"
        assert drawn(status._line_strip(clickable, 40, status.visual_style)) == \
            drawn(Visual.to_strips(status, clickable, 40, 1, status.visual_style)[0])


@pytest.mark.asyncio
async def test_the_output_panels_scrollbars_are_rendered_again_only_when_the_bar_they_draw_changes():
    from textual.widget import Widget

    from devicewatch.tui.kept_lines import KeptScrollBar, KeptScrollBarCorner

    def drawn(strips):
        return [list(strip) for strip in strips]

    def textuals(bar):   # what Textual renders of the bar as it stands
        bar._styles_cache.clear()
        return drawn(Widget.render_lines(bar, bar.size.region))

    async with replay_log() as (pilot, log):
        bar = log.vertical_scrollbar
        assert isinstance(bar, KeptScrollBar) and isinstance(log.horizontal_scrollbar, KeptScrollBar)
        assert isinstance(log.scrollbar_corner, KeptScrollBarCorner)
        log.write_lines([f"line {i}" for i in range(30)])   # a thumb of a few cells, at the end
        await pilot.pause(0.1)
        first = bar.render_lines(bar.size.region)
        assert bar.render_lines(bar.size.region) is first
        assert drawn(first) == textuals(bar)
        # Lines until the thumb has moved: drawn again, as Textual draws it.
        shown = bar._drawn()
        for i in range(100):
            log.write_lines([f"more {i}"])
            if bar._drawn() != shown:
                break
        await pilot.pause(0.1)
        moved = bar.render_lines(bar.size.region)
        assert moved is not first and drawn(moved) != drawn(first) and drawn(moved) == textuals(bar)
        # A new colour reaches it through a style update.
        log.styles.scrollbar_color = "red"
        await pilot.pause(0.1)
        recoloured = bar.render_lines(bar.size.region)
        assert drawn(recoloured) != drawn(moved) and drawn(recoloured) == textuals(bar)
        # Following the end of a long log, a line more moves the thumb by less than an eighth of
        # a cell: the sizes it reflects changed, the bar it draws did not, its lines are kept.
        log.write_lines([f"line {i}" for i in range(400)])
        await pilot.pause(0.1)
        long, shown = bar.render_lines(bar.size.region), bar._drawn()
        log.write_lines(["one more"])
        await pilot.pause(0.1)
        assert bar.window_virtual_size == log.virtual_size.height and bar._drawn() == shown
        assert bar.render_lines(bar.size.region) is long


@pytest.mark.asyncio
async def test_lines_that_scroll_up_a_row_keep_their_styled_rows_and_are_drawn_as_textual_draws_them():
    from textual._styles_cache import StylesCache

    from devicewatch.tui.kept_lines import RowsByContent
    from devicewatch.tui.panels import EpochBars

    def drawn(strips):
        return [list(strip) for strip in strips]

    def textuals(widget):   # a styles cache of Textual's own, with nothing kept
        return drawn(StylesCache().render_widget(widget, widget.size.region))

    async with replay_log() as (pilot, log):
        assert isinstance(log._styles_cache, RowsByContent)
        log.write_lines([f"line {i}" for i in range(100)])
        await pilot.pause(0.1)
        before = log.render_lines(log.size.region)
        assert drawn(before) == textuals(log)
        # A line more: every line moves up a row; all but the newest are the rows styled before.
        log.write_lines(["one more"])
        await pilot.pause(0.1)
        after = log.render_lines(log.size.region)
        assert after is not before and drawn(after) == textuals(log)
        newest = next(y for y, row in enumerate(after) if "one more" in row.text)
        assert newest > 5 and after[newest] is not before[newest] and "line 99" in after[newest - 1].text
        assert all(after[y] is before[y + 1] for y in range(1, newest))   # below the top border
        assert after[0] is before[0]   # the top border, title and all
        # A new title reaches the top border; its text, or another title of the same text.
        log.border_title = "another title"
        await pilot.pause(0.1)
        titled = log.render_lines(log.size.region)
        assert "another title" in titled[0].text and drawn(titled) == textuals(log)
        log.border_title = "[b]another[/] title"
        await pilot.pause(0.1)
        bold = log.render_lines(log.size.region)
        assert drawn(bold[:1]) != drawn(titled[:1]) and drawn(bold) == textuals(log)
        # What else styles a row reaches it: new colours, a tint.
        log.styles.background = "darkred"
        await pilot.pause(0.1)
        recoloured = log.render_lines(log.size.region)
        assert drawn(recoloured) != drawn(after) and drawn(recoloured) == textuals(log)
        log.styles.tint = "blue 30%"
        await pilot.pause(0.1)
        tinted = log.render_lines(log.size.region)
        assert drawn(tinted) != drawn(recoloured) and drawn(tinted) == textuals(log)
        # The epochs panel gaining a row: its rows move up, and are kept the same way.
        epochs = pilot.app.screen.query_one("#epochs", EpochBars)
        lines = [f"{n:>4} row of the epoch {n}" for n in range(40)]
        epochs.update("\n".join(lines[:20]))
        await pilot.pause(0.1)
        first = epochs.render_lines(epochs.size.region)
        epochs.update("\n".join(lines[1:21]))
        await pilot.pause(0.1)
        second = epochs.render_lines(epochs.size.region)
        assert drawn(second) == textuals(epochs) and drawn(second) != drawn(first)
        assert sum(second[y] is first[y + 1] for y in range(len(second) - 1)) >= epochs.size.height - 4


def test_rows_are_kept_by_their_line_only_with_the_styles_cache_it_was_written_for(monkeypatch):
    from textual._styles_cache import StylesCache

    from devicewatch.tui import kept_lines
    from devicewatch.tui.panels import TextPanel

    assert kept_lines.rows_by_content_fits()
    other = type("OtherCache", (StylesCache,), {"render_line": lambda self, styles, y, size, crop: None})
    assert not kept_lines.rows_by_content_fits(other)
    assert isinstance(TextPanel()._styles_cache, kept_lines.RowsByContent)
    monkeypatch.setattr(kept_lines, "ROWS_BY_CONTENT", False)
    cache = TextPanel()._styles_cache
    assert type(cache) is StylesCache


@pytest.mark.asyncio
async def test_the_output_panel_goes_on_following_the_output_after_the_terminal_shrinks():
    async with replay_log() as (pilot, log):
        log.write_lines([f"line {i}" for i in range(100)])
        await pilot.pause(0.1)
        assert log.is_vertical_scroll_end
        await pilot.resize_terminal(100, 30)   # a smaller panel: the same first line shown, not the end
        await pilot.pause(0.2)
        log.write_lines([f"later {i}" for i in range(5)])
        await pilot.pause(0.1)
        assert log.is_vertical_scroll_end and log.lines[-1] == "later 4"


@pytest.mark.asyncio
async def test_a_live_chart_cuts_its_settled_columns_while_its_window_fills_and_joins_them_when_full():
    """While a live window fills, its new columns fall among the settled ones: those are cut into
    parts, and a new column repaints only the part it falls in; once the newest step falls in the
    narrow live part, one settled part again. Every part shown holds its columns of the grid."""
    import numpy as np
    from textual.app import App

    from devicewatch.render.palette import NORMAL
    from devicewatch.tui.charts import FILLING_PARTS, AreaChart
    from devicewatch.tui.drawing import AXIS, AreaInput, View

    class One(App):
        CSS = "AreaChart { width: 100; height: 8; }"

        def compose(self):
            yield AreaChart(id="chart")

    def shown_parts(chart):
        return [p for p in chart._settled if p.display]

    def holds_the_grid(chart):
        texts = chart.text()
        parts = [*shown_parts(chart), chart._live]
        assert [p.x0 for p in parts] == [0, *(p.x1 for p in parts[:-1])] and parts[-1].x1 == 100   # side by side
        for part in parts:
            assert [strip.text for strip in part._strips] == [row[part.x0:part.x1] for row in texts]
            assert part.size.width == part.x1 - part.x0

    t = np.arange(0, 200, 0.1)
    values = 50 + 40 * np.sin(t)

    def data(version, view, upto):
        return AreaInput(view, version, NORMAL, t[t <= upto], values[t <= upto], 100.0, "%")

    app = One()
    async with app.run_test(size=(120, 10)) as pilot:
        chart = app.query_one(AreaChart)
        chart.data = data(1, View(0.0, 60.0, 18.0), 19.0)   # 19 s of a 60 s window: filling
        await pilot.pause(0.1)
        assert len(shown_parts(chart)) == FILLING_PARTS > 1
        holds_the_grid(chart)
        repainted = {}
        for part in chart._parts:
            part.refresh = lambda *regions, _part=part, **kw: repainted.setdefault(_part, regions)
        chart.data = data(2, View(0.0, 60.0, 18.0), 19.6)   # new columns at about a third
        column = AXIS + int((100 - AXIS) * 19.6 / 60)   # the newest sample's, in the chart's 100 columns
        newest = [p for p in shown_parts(chart) if p.x0 <= column < p.x1]
        assert list(repainted) == newest and len(newest) == 1   # only the part they fall in
        for part in chart._parts:
            del part.refresh
        # The compositor asks every part of the chart for its lines: the unchanged ones hand back
        # the lines they gave last, the one that changed its new lines.
        await pilot.pause(0.1)
        given = {part: part.render_lines(part.size.region) for part in shown_parts(chart)}
        chart.data = data(5, View(0.0, 60.0, 18.0), 20.2)
        changed = [part for part, lines in given.items() if part.render_lines(part.size.region) is not lines]
        assert changed == newest
        assert [s.text for s in changed[0].render_lines(changed[0].size.region)] == [s.text for s in changed[0]._strips]
        chart.data = data(3, View(10.0, 70.0, 66.0), 67.0)   # full: the newest step in the live part
        await pilot.pause(0.1)
        assert shown_parts(chart) == [chart._settled[0]] and not chart._settled[0].styles.inline.has_rule("width")
        holds_the_grid(chart)
        chart.data = data(4, View(0.0, 120.0, 66.0), 67.0)   # zoomed out: filling again, parts shown anew
        await pilot.pause(0.1)
        assert len(shown_parts(chart)) == FILLING_PARTS
        holds_the_grid(chart)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(200, 50), (100, 30)])
async def test_the_compositor_cuts_the_same_pieces_without_asking_the_widgets_behind(size):
    from textual._compositor import Compositor
    from textual.geometry import Region

    from devicewatch.tui.charts import ChartPart
    from devicewatch.tui.chops import (render_chops, render_partial_update, textual_render_chops,
                                       textual_render_partial_update)

    def pieces(chops):
        return [{cut: None if strip is None else (list(strip), strip.cell_length) for cut, strip in line.items()}
                for line in chops]

    app = replay_app(CPU_RUN)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: first_frame(app))
        await pilot.pause(0.2)
        assert Compositor._render_chops is render_chops   # the app put it in Textual's place
        compositor = app.screen._compositor
        width, height = size
        # The whole screen; the newest columns of the charts, a few rows; the status line and a
        # chart's rows together (the changed area spans the screen, its lines are a few).
        cases = [(Region(0, 0, width, height), lambda y: True),
                 (Region(width - 14, 3, 12, 10), lambda y: 3 <= y < 13),
                 (Region(0, 0, width, 12), lambda y: y in (0, 6, 7, 11))]
        for crop, rendered in cases:
            ours = pieces(render_chops(compositor, crop, rendered))
            assert ours == pieces(textual_render_chops(compositor, crop, rendered))
            assert any(piece is not None for line in ours for piece in line.values())
        # A frame's update cuts only the places its changed spans meet: what it sends the
        # terminal is Textual's, byte for byte, for areas that cross many widgets' edges.
        assert Compositor.render_partial_update is render_partial_update
        changed_areas = [[Region(0, 0, width, height)],
                         [Region(width - 14, 3, 12, 10)],
                         [Region(0, 0, width, 1), Region(width // 2, 6, 9, 2), Region(3, 11, width // 3, 1)],
                         [Region(width // 4, 2, 1, height - 4), Region(width // 4 + 2, 5, 30, 3)],
                         # a chart's parts, as they ask (each ends where a neighbour begins)
                         [region for widget, (region, _) in compositor.visible_widgets.items()
                          if isinstance(widget, ChartPart)][:6]]
        for regions in changed_areas:
            compositor._dirty_regions.update(regions)
            ours_update = render_partial_update(compositor)
            compositor._dirty_regions.update(regions)
            textual_update = textual_render_partial_update(compositor)
            assert ours_update is not None and textual_update is not None
            assert ours_update.spans == textual_update.spans
            sent = ours_update.render_segments(app.console)
            assert sent == textual_update.render_segments(app.console) and len(sent) > 100
