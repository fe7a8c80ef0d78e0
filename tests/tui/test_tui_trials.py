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

from devicewatch import advice, runfile, trials  # noqa: E402
from devicewatch.commands.compare import load_trials  # noqa: E402
from devicewatch.errors import UsageError  # noqa: E402
from devicewatch.live.source import open_replay  # noqa: E402
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
        trial_set.results.append(trials.result_of(run, variant, predicted))
        if i == 0:
            base = advice.baseline(run)
            trial_set.advice = advice.advise(run)
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
    (expected,) = advice.shown(run)
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
        # every wrapped line of the panel is on screen, the advice included
        assert panel.size.height == len(panel._lines) >= 2
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
