"""The advice beside the verdict, the trials view (a saved set, and trials run from the run
screen's ``t``), driven by Pilot on run files written here whose figures are known by
construction, and one real ``devicewatch try`` of an unchanged script."""

from __future__ import annotations

import json
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from devicewatch import analysis, trials  # noqa: E402
from devicewatch.analysis import advice  # noqa: E402
from devicewatch.runformat import runfile  # noqa: E402
from devicewatch.trials import load_set as load_trials  # noqa: E402
from devicewatch.errors import UsageError  # noqa: E402
from devicewatch.live.source import open_replay  # noqa: E402
from devicewatch.tui import panels  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.tui.charts import AreaChart  # noqa: E402
from devicewatch.tui.dialogs import ConfirmTrials  # noqa: E402
from devicewatch.tui.run_screen import RunScreen  # noqa: E402
from devicewatch.tui.trials_screen import TrialsScreen, run_trial_beside  # noqa: E402
from tests.conftest import command, devicewatch, until, write_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SLEEPY = ROOT / "tests" / "zero_code" / "trial_scripts" / "sleepy_dataset.py"
CPU_RUN = ROOT / "tests" / "fixtures" / "demo-cpu.jsonl"
SCRIPT = ["python", "train.py"]


def trial_records(steps_per_s: float, share: float, workers: int = 0, cpu: float = 40.0,
                  measured: bool = True, seconds: float = 2.0, varied: dict[str, Any] | None = None,
                  not_applied: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A trial of a loop that read a DataLoader of WORKERS workers and waited SHARE of its
    measured window of SECONDS at STEPS_PER_S; the process kept CPU % of one core busy on
    each of 2 cores' worth of samples (``proc.cpu`` = 2 × CPU)."""
    n = int(round(seconds * 10))
    records: list[dict[str, Any]] = [
        {"type": "sample", "t": round(i / 10, 3), "cpu": [cpu, cpu], "cpu_total": cpu, "proc": {"cpu": 2 * cpu}}
        for i in range(n + 1)]
    records += [
        {"type": "event", "t": 0.0, "kind": "phase_begin", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": 0.0, "kind": "instrument", "state": "setup", "threads": 2,
         "loader": {"num_workers": workers, "pin_memory": False, "persistent_workers": False,
                    "prefetch_factor": None, "batch_size": 16}},
        {"type": "event", "t": 0.2, "kind": "phase_begin", "name": "data", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": round(0.2 + seconds * share, 3), "kind": "phase_end", "name": "data", "epoch": 1,
         "lane": "main", "source": "auto"},
        {"type": "event", "t": seconds, "kind": "phase_end", "name": "train", "epoch": 1, "lane": "main",
         "source": "auto"},
    ]
    for knob, (was, now) in (varied or {}).items():
        records.append({"type": "event", "t": 0.0, "kind": "instrument", "state": "varied", "knob": knob,
                        "was": was, "now": now})
    for knob, reason in (not_applied or {}).items():
        records.append({"type": "event", "t": 0.0, "kind": "instrument", "state": "not_applied", "knob": knob,
                        "reason": reason})
    if measured:
        steps = int(round(steps_per_s * seconds))
        records += [
            {"type": "event", "t": seconds, "kind": "instrument", "state": "trial", "stage": "done", "steps": steps,
             "seconds": seconds, "steps_per_s": steps_per_s, "data_wait_s": seconds * share,
             "data_wait_share": share},
            {"type": "event", "t": seconds, "kind": "epoch", "epoch": 1, "source": "auto",
             "metrics": {"steps": steps, "data_wait_s": seconds * share}}]
    else:
        records.append({"type": "event", "t": seconds, "kind": "instrument", "state": "trial", "stage": "unmeasured",
                        "reason": "the script ended before its warm-up was over"})
    return sorted(records, key=lambda r: r["t"])


def write_trial(path: Path, status: str = "trial", reason: str = "the trial's window was measured: ended on purpose",
                **shape: Any) -> runfile.Run:
    records = trial_records(**shape)
    last = max(r["t"] for r in records)
    write_run(path, records, header={"workload": {"name": None, "args": [], "command": SCRIPT}},
              end={"type": "end", "t": last, "status": status, "exit_code": None, "signal": None, "duration": last,
                   "reason": reason})
    return runfile.load(path)


# Three variants of one script: as written (10 steps/s, waiting 75%), num_workers=2 (25/s,
# waiting 20%), and num_workers=4 whose trial ended before it was measured.
VARIANTS = [trials.Variant(), trials.Variant("num_workers", 2), trials.Variant("num_workers", 4)]


def saved_set(folder: Path) -> Path:
    """The three trials' files and their trials.json, as ``devicewatch try`` writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    shapes = [dict(steps_per_s=10.0, share=0.75),
              dict(steps_per_s=25.0, share=0.2, workers=2, cpu=70.0, varied={"num_workers": (0, 2)}),
              dict(steps_per_s=0.0, share=0.0, workers=4, measured=False, varied={"num_workers": (0, 4)},
                   not_applied={"prefetch_factor": "needs workers"})]
    trial_set = trials.TrialSet(SCRIPT, trials.budget_of(None, 2.0, 3))
    base = None
    for i, (variant, shape) in enumerate(zip(VARIANTS, shapes)):
        path = Path(trials.trial_path(str(folder), i + 1, variant))
        run = write_trial(path, **shape)
        predicted = advice.predict(base, variant.knob, variant.value) if base and variant.knob else None
        trial_set.results.append(trials.result_of(analysis.run_figures(run), variant, predicted))
        if i == 0:
            base = analysis.run_figures(run).baseline
            trial_set.advice = analysis.run_figures(run).advised
    return Path(trials.save(trial_set, str(folder)))


def text_of(screen: Any, selector: str) -> str:
    widget = screen.query_one(selector)
    if hasattr(widget, "text") and not callable(widget.text):
        return widget.text.plain
    return "\n".join(strip.text for strip in widget._lay_out(widget.size.width))


# -- the advice beside the verdict -----------------------------------------------------------

@pytest.mark.asyncio
@pytest.mark.parametrize("size,presenter", [((200, 50), False), ((100, 30), False), ((100, 30), True)])
async def test_the_advice_is_a_line_under_the_verdict_and_t_offers_to_try_it(tmp_path, size, presenter):
    run = write_trial(tmp_path / "run.jsonl", steps_per_s=10.0, share=0.75)
    (expected,) = analysis.run_figures(run).advice
    assert expected.knob == "num_workers"   # input-bound, no workers, 2 cores (tests/zero_code/test_try.py)
    app = DashboardApp(DashboardSettings(presenter=presenter), open_replay(str(tmp_path / "run.jsonl")))
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.screen.model is not None and app.screen.model.verdict is not None)
        await pilot.pause(0.2)
        screen = app.screen
        assert screen.model.advice == [expected]
        panel = screen.query_one("#verdict")
        lines = panel.text.plain.split("\n")
        assert lines[0].startswith("verdict: input-bound")
        assert lines[1] == f"advice: {advice.text(expected)}  (t: try it)"
        # each line wraps at words where the screen is narrower than it, onto at most MAX_ROWS
        # rows: every word shown whole, none cut at the panel's edge
        width = size[0] - 2   # the panel's padding
        rows = [line.plain for line in panel._lines]
        assert len(rows) == panel.size.height <= 2 * panels.LinesPanel.MAX_ROWS
        assert all(len(row) <= width for row in rows)
        words = " ".join(rows).split()
        assert words == " ".join(lines).split() or words[-1].endswith("…")
        if len(lines[1]) <= width:
            assert panel.size.height == 2
        assert screen.check_action("try_advice", ()) is True
        assert "Try the advice" in {b.binding.description for b in screen.active_bindings.values() if b.enabled}


@pytest.mark.asyncio
async def test_no_advice_and_no_t_for_a_run_the_instrumentation_did_not_watch():
    app = DashboardApp(DashboardSettings(), open_replay(str(CPU_RUN)))
    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: app.screen.model is not None and app.screen.model.verdict is not None)
        screen = app.screen
        assert screen.model.advice == []
        assert "advice" not in screen.query_one("#verdict").text.plain
        assert screen.query_one("#verdict").size.height == 1
        assert not screen.check_action("try_advice", ())


# -- the trials view of a saved set ----------------------------------------------------------

def trials_app(path: Path, presenter: bool = False) -> DashboardApp:
    return DashboardApp(DashboardSettings(presenter=presenter), trial_set=load_trials(path))


def drawn(app: DashboardApp) -> bool:
    charts = list(app.screen.query(AreaChart))
    return isinstance(app.screen, TrialsScreen) and any(c.rebuilds for c in charts)


@pytest.mark.asyncio
async def test_a_saved_set_shows_every_variant_its_notes_and_a_cpu_chart_each(tmp_path):
    path = saved_set(tmp_path / "try")
    trial_set, _folder = load_trials(path)
    app = trials_app(path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: drawn(app))
        screen = app.screen
        # the headline of the set: 25/10 = 2.5x; data wait 75% -> 20%
        headline = text_of(screen, "#trials-headline")
        assert headline == trial_set.headline()
        assert headline.startswith("num_workers=2: 2.5× the steps/s of the script as written")
        assert "data wait 75% → 20%" in headline
        table = text_of(screen, "#trials-table").splitlines()
        assert table[0].split() == ["variant", "steps/s", "predicted", "data", "wait", "cores", "busy", "others",
                                    "GPU", "busy", "verdict"]
        rows = {line.split()[0]: line.split() for line in table[1:]}
        assert set(rows) == {"as", "num_workers=2", "num_workers=4"}
        assert rows["as"][2:5] == ["10.0", "-", "75%"]
        predicted = trial_set.results[1].predicted_steps_per_s
        assert rows["num_workers=2"][1:4] == ["25.0", f"{predicted:.1f}", "20%"]
        assert rows["num_workers=4"][1:3] == ["not", "measured"]
        notes = text_of(screen, "#trials-notes")
        assert "num_workers=2: num_workers 0 → 2" in notes
        assert "num_workers=4: not applied: prefetch_factor: needs workers" in notes
        assert "num_workers=4: not measured: the script ended before its warm-up was over" in notes
        # one chart per variant, each titled with its figure, all three drawn from their files
        charts = list(screen.query(AreaChart))
        assert [c.border_title for c in charts] == ["as written: 10.0 steps/s · 01-as-written.jsonl",
                                                    "num_workers=2: 25.0 steps/s · 02-num_workers=2.jsonl",
                                                    "num_workers=4: not measured · 03-num_workers=4.jsonl"]
        await until(pilot, lambda: all(c.rebuilds for c in charts))
        # the workload's CPU as a share of every core: 2 x 40 % of one core on 2 cores = 40 %,
        # and 2 x 70 % = 70 % in the second: that many of the plot's rows are full, the top one empty
        for chart, level in zip(charts, (0.4, 0.7)):
            text = chart.text()
            plot = text[:-1]   # the last row is the time axis
            assert text[0].startswith("  100%") and set(text[0][6:]) <= {" "}
            full = sum(1 for row in plot if "█" in row[6:])
            assert abs(full - level * len(plot)) <= 1, (full, len(plot), text)
        assert not screen.check_action("stop", ())   # nothing runs


@pytest.mark.asyncio
async def test_a_saved_set_whose_run_file_is_gone_still_shows_its_row_and_says_why(tmp_path):
    path = saved_set(tmp_path / "try")
    (tmp_path / "try" / "02-num_workers=2.jsonl").unlink()
    app = trials_app(path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: drawn(app))
        assert "25.0" in text_of(app.screen, "#trials-table")
        assert "num_workers=2: no chart: " in text_of(app.screen, "#trials-notes")


def test_compare_takes_a_folder_of_try_or_its_trials_json(tmp_path, capsys):
    path = saved_set(tmp_path / "try")
    trial_set, folder = load_trials(path)
    assert folder == str(tmp_path / "try")
    assert [r.variant for r in trial_set.results] == VARIANTS
    for given in (str(tmp_path / "try"), str(path)):
        assert command("compare", [given, "--text"]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[-1] == trial_set.headline()
        assert "num_workers=4: not measured: the script ended before its warm-up was over" in out
    assert command("compare", [str(path), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert [v["label"] for v in said["variants"]] == ["as written", "num_workers=2", "num_workers=4"]
    assert said["headline"] == trial_set.headline()
    # the folder moved: its run files are found beside trials.json
    moved = tmp_path / "moved"
    (tmp_path / "try").rename(moved)
    moved_set, _ = load_trials(moved / "trials.json")
    assert all(Path(r.path).parent == moved and Path(r.path).exists() for r in moved_set.results)


def test_a_foreign_trials_json_is_one_line_and_exit_2(tmp_path):
    folder = tmp_path / "try"
    folder.mkdir()
    (folder / "trials.json").write_text('{"command": ["x"], "budget": {}, "variants": [{"steps_per_s": "fast"}]}')
    with pytest.raises(UsageError, match="is not the trials.json of devicewatch try"):
        load_trials(folder / "trials.json")
    result = devicewatch("compare", str(folder))
    assert result.returncode == 2 and "not the trials.json" in result.stderr and "Traceback" not in result.stderr


# -- t: trials run from the run screen -------------------------------------------------------

class FakeRecorder:
    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled") -> None:
        self.reason = self.reason or reason
        self.cancelled.set()


class FakeRunner:
    """Stands in for the recorder: each trial waits until the test lets it go (or it is
    cancelled), then writes a small trial file: as written 10 steps/s, a variant 20 steps/s."""

    def __init__(self) -> None:
        self.go = [threading.Event() for _ in range(4)]
        self.calls: list[tuple[list[str], trials.Variant, dict[str, Any], str]] = []
        self.recorders: list[FakeRecorder] = []

    def __call__(self, command: list[str], variant: trials.Variant, budget: dict[str, Any], path: str,
                 started: Any) -> runfile.Run:
        index = len(self.calls)
        self.calls.append((command, variant, budget, path))
        recorder = FakeRecorder()
        self.recorders.append(recorder)
        started(recorder)
        while not (self.go[index].wait(0.05) or recorder.cancelled.is_set()):
            pass
        if recorder.cancelled.is_set():
            return write_trial(Path(path), status="cancelled", reason=recorder.reason or "cancelled",
                               steps_per_s=0.0, share=0.0, measured=False)
        return write_trial(Path(path), steps_per_s=10.0 if variant.knob is None else 20.0,
                           share=0.75 if variant.knob is None else 0.3)


def try_app(tmp_path: Path, runner: Any) -> DashboardApp:
    """The run screen of a finished run of SCRIPT whose advice names num_workers=2."""
    write_trial(tmp_path / "run.jsonl", steps_per_s=10.0, share=0.75)
    settings = DashboardSettings(runs_dir=str(tmp_path / "runs"))
    return DashboardApp(settings, open_replay(str(tmp_path / "run.jsonl")), trial_runner=runner)


async def confirm_trials(app: DashboardApp, pilot: Any) -> None:
    await until(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.check_action("try_advice", ()))
    await pilot.press("t")
    await until(pilot, lambda: isinstance(app.screen, ConfirmTrials))
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, TrialsScreen))


@pytest.mark.asyncio
async def test_t_asks_first_then_runs_the_script_and_the_advised_variant_showing_each_result(tmp_path):
    runner = FakeRunner()
    app = try_app(tmp_path, runner)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.check_action("try_advice", ()))
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, ConfirmTrials))
        plan = app.screen.plan
        # what will run, how many times, for how long, where: trials.plan_text's own words
        assert "will run `python train.py` 2 times: as written, num_workers=2." in plan
        assert "a warm-up of 10 optimizer steps, then 10 seconds measured" in plan
        await pilot.press("escape")           # no: nothing runs
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert not runner.calls and not (tmp_path / "runs").exists()
        await confirm_trials(app, pilot)
        screen = app.screen
        await until(pilot, lambda: len(runner.calls) == 1)
        await until(pilot, lambda: "trial 1/2: as written running" in text_of(screen, "#trials-headline"))
        assert "running…" in text_of(screen, "#trials-table") and "waiting" in text_of(screen, "#trials-table")
        command_, variant, budget, path = runner.calls[0]
        assert command_ == SCRIPT and variant == trials.Variant()
        assert budget == {"warmup": 10, "steps": None, "seconds": 10.0}
        folder = Path(path).parent
        assert folder.parent == tmp_path / "runs" and folder.name.startswith("try-")
        runner.go[0].set()
        await until(pilot, lambda: "trial 2/2: num_workers=2 running" in text_of(screen, "#trials-headline"))
        # the first result is in; the variant's prediction rests on it
        assert runner.calls[1][1] == trials.Variant("num_workers", 2)
        table = text_of(screen, "#trials-table")
        assert "10.0" in table and "75%" in table
        base = analysis.run_figures(runfile.load(runner.calls[0][3])).baseline
        predicted = advice.predict(base, "num_workers", 2)
        assert f"predicted {predicted:.1f} steps/s" in text_of(screen, "#trials-headline")
        runner.go[1].set()
        await until(pilot, lambda: not screen.trials_running)
        assert text_of(screen, "#trials-headline").startswith("num_workers=2: 2.0× the steps/s")
        saved = json.loads((folder / "trials.json").read_text())
        assert [v["steps_per_s"] for v in saved["variants"]] == [10.0, 20.0]
        assert saved["stopped"] is None
        # escape goes back to the run screen once the trials are over
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_escape_or_ctrl_c_stops_the_trials_keeping_what_was_measured(tmp_path, key):
    runner = FakeRunner()
    app = try_app(tmp_path, runner)
    async with app.run_test(size=(100, 30)) as pilot:
        await confirm_trials(app, pilot)
        screen = app.screen
        runner.go[0].set()
        await until(pilot, lambda: len(runner.calls) == 2)
        await pilot.press(key)
        await until(pilot, lambda: not screen.trials_running)
        assert runner.recorders[1].reason == "stopped from the dashboard"
        folder = Path(runner.calls[0][3]).parent
        saved = json.loads((folder / "trials.json").read_text())
        assert saved["stopped"] == "stopped after 2 of 2 trials: stopped from the dashboard"
        assert [v["status"] for v in saved["variants"]] == ["trial", "cancelled"]
        assert saved["variants"][0]["steps_per_s"] == 10.0
        assert "stopped after 2 of 2 trials" in text_of(screen, "#trials-notes")
        assert isinstance(app.screen, TrialsScreen)   # the view stays, with what was measured


@pytest.mark.asyncio
async def test_stopped_in_the_first_trial_the_view_says_so_and_the_variant_was_not_run(tmp_path):
    runner = FakeRunner()
    app = try_app(tmp_path, runner)
    async with app.run_test(size=(100, 30)) as pilot:
        await confirm_trials(app, pilot)
        screen = app.screen
        await until(pilot, lambda: len(runner.calls) == 1)
        await pilot.press("escape")
        await until(pilot, lambda: not screen.trials_running)
        assert len(runner.calls) == 1   # the variant never started
        # not "nothing to try": the trials were stopped before the variant ran
        assert text_of(screen, "#trials-headline") == "stopped after 1 of 2 trials: stopped from the dashboard"
        table = text_of(screen, "#trials-table")
        assert "not run" in table and "not measured" in table


@pytest.mark.asyncio
async def test_quit_during_the_trials_stops_them_and_quits_once_the_set_is_saved(tmp_path):
    runner = FakeRunner()
    app = try_app(tmp_path, runner)
    async with app.run_test(size=(100, 30)) as pilot:
        await confirm_trials(app, pilot)
        await until(pilot, lambda: len(runner.calls) == 1)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, seconds=10)
    assert runner.recorders[0].reason == "stopped from the dashboard"
    saved = json.loads((Path(runner.calls[0][3]).parent / "trials.json").read_text())
    assert saved["stopped"].startswith("stopped after 1 of 2 trials")


@pytest.mark.asyncio
async def test_t_while_the_run_records_says_so_and_runs_nothing(tmp_path, monkeypatch):
    runner = FakeRunner()
    app = try_app(tmp_path, runner)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.check_action("try_advice", ()))
        screen = app.screen
        # as a live source still recording: two workloads at once would measure each other
        monkeypatch.setattr(type(screen.source), "running", property(lambda self: True))
        await pilot.press("t")
        await pilot.pause(0.3)
        assert isinstance(app.screen, RunScreen) and not runner.calls
        assert any("still recording" in n.message for n in app._notifications)


# -- real trials ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.asyncio
async def test_t_runs_real_trials_of_an_unchanged_script_in_a_thread_beside_the_dashboard(tmp_path, monkeypatch):
    """The recorder in a thread of the dashboard's process (no signal handlers there), the
    script as written and the advised num_workers=2, a short window each."""
    monkeypatch.chdir(tmp_path)   # the script writes training.log where it runs
    record = write_trial(tmp_path / "run.jsonl", steps_per_s=10.0, share=0.75)
    header = dict(record.header.to_json(), workload={"name": None, "args": [], "command": [sys.executable, str(SLEEPY)]})
    write_run(tmp_path / "run.jsonl", trial_records(steps_per_s=10.0, share=0.75), header=header,
              end={"type": "end", "t": 2.0, "status": "ok", "exit_code": 0, "signal": None, "duration": 2.0,
                   "reason": "the workload finished"})
    short = trials.budget_of(15, None, 3)

    def runner(command: list[str], variant: trials.Variant, budget: dict[str, Any], path: str, started: Any):
        return run_trial_beside(command, variant, short, path, started, interval=0.1, gpu=False)

    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs")), open_replay(str(tmp_path / "run.jsonl")),
                       trial_runner=runner)
    async with app.run_test(size=(100, 30)) as pilot:
        await confirm_trials(app, pilot)
        screen = app.screen
        await until(pilot, lambda: any(r.model is not None and r.state == "running" for r in screen.rows), 30)
        await until(pilot, lambda: not screen.trials_running, seconds=55)
        results = screen.trial_set.results
        assert [r.status for r in results] == ["trial", "trial"], [r.note for r in results]
        assert results[1].varied == ["num_workers 0 → 2"]
        assert all(r.steps_per_s for r in results)
        assert all(c.rebuilds for c in screen.query(AreaChart))
    assert (tmp_path / "training.log").exists()
