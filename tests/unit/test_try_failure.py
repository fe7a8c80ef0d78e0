"""``devicewatch try`` on a script that fails, and on one that ends before its window is full:
real scripts, the real recorder, the exit status, the terminal, trials.json and the view."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devicewatch import trials

ROOT = Path(__file__).resolve().parents[2]
SHORT_LOOP = ROOT / "tests" / "zero_code" / "trial_scripts" / "short_loop.py"
STEPS, WARMUP, WINDOW_S = 40, 5, 60


def devicewatch_try(tmp_path: Path, *script_args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    """``devicewatch try`` of the short loop, a window of WINDOW_S seconds (far more than its
    steps take), without the view; its result and its trials.json."""
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env["PYTHONPATH"] = str(ROOT)
    out = tmp_path / "trials"
    result = subprocess.run([sys.executable, "-m", "devicewatch", "try", "--seconds", str(WINDOW_S),
                             "--warmup", str(WARMUP), "--out", str(out), "--no-view", "--",
                             sys.executable, str(SHORT_LOOP), str(STEPS), *script_args],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return result, json.loads((out / "trials.json").read_text())


@pytest.mark.slow
def test_a_script_that_fails_makes_try_fail_and_shows_its_error(tmp_path):
    result, saved = devicewatch_try(tmp_path, "fail")
    assert result.returncode == 1, result.stdout + result.stderr
    (base,) = saved["variants"]   # no variant is tried beside a script that fails
    # its own ending, not one on purpose: the exit code of its traceback
    assert base["status"] == "failed" and base["failed"] == "exit code 1"
    assert base["error_lines"][0] == "Traceback (most recent call last):"
    assert base["error_lines"][-1] == f"ValueError: batch {STEPS} has 31 features, the model takes 32"
    assert saved["stopped"] == "the script as written failed (exit code 1), so no variant was tried"
    assert saved["advice"] == []   # nothing is advised from a run that failed
    assert saved["headline"] == ("the script as written failed (exit code 1): "
                                 f"ValueError: batch {STEPS} has 31 features, the model takes 32")
    # the terminal: the failure as the trial ends, and its last lines on stderr under the table
    out = result.stdout
    assert "  the script failed (exit code 1): ValueError: batch 40 has 31 features" in out
    assert "as written: the script failed (exit code 1); its last lines on stderr:" in out
    assert '    |     raise ValueError(f"batch {index} has 31 features, the model takes 32")' in out
    assert "advice:" not in out   # nothing is advised from a run that failed


@pytest.mark.slow
def test_a_window_the_script_cut_short_is_said_with_the_seconds_measured(tmp_path):
    result, saved = devicewatch_try(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    base = saved["variants"][0]
    assert base["status"] == "ok" and base["failed"] is None and base["error_lines"] == []
    # the window began after the warm-up's steps and ended with the script: the rest measured
    window = base["window"]
    assert window["cut_short"] is True and window["steps"] == STEPS - WARMUP
    assert 0 < window["seconds"] < WINDOW_S
    said = f"{window['seconds']:.2g} s of the {WINDOW_S} s window measured ({STEPS - WARMUP} steps): the script ended first"
    assert f"  {said}" in result.stdout and f"  as written: {said}" in result.stdout
    assert f"{WINDOW_S} seconds measured" not in result.stdout.split("trial 1/")[1]


def test_a_failed_trial_and_a_cut_window_come_back_from_trials_json(tmp_path):
    failed = trials.TrialResult(trials.Variant("threads", 1), "t.jsonl", "failed", steps_per_s=5.0,
                                failed="killed by SIGSEGV", error_lines=["Fatal Python error: Segmentation fault"],
                                window_steps=12, window_seconds=2.4, cut_short=True)
    base = trials.TrialResult(trials.Variant(), "b.jsonl", "trial", steps_per_s=4.0, window_steps=60,
                              window_seconds=15.0)
    trials.save(trials.TrialSet(["python", "x.py"], {"warmup": 5, "steps": None, "seconds": 15.0}, [base, failed]),
                str(tmp_path))
    loaded, _folder = trials.load_set(str(tmp_path / trials.TRIALS_FILE))
    back = loaded.results[1]
    assert (back.failed, back.error_lines, back.window_steps, back.window_seconds, back.cut_short) \
        == ("killed by SIGSEGV", ["Fatal Python error: Segmentation fault"], 12, 2.4, True)
    assert loaded.results[0].window_text(loaded.budget) is None   # a full window says nothing
    assert back.window_text(loaded.budget) == "2.4 s of the 15 s window measured (12 steps): the script ended first"
    # a failed variant is no winner, however many steps a second it made before it failed
    assert loaded.headline() == "as written: 4.0 steps/s; the script failed with threads=1"
    assert trials.failed(loaded.results) == [back]
    text = trials.table_text(loaded.results, loaded.budget)
    assert "  threads=1: the script failed (killed by SIGSEGV); its last lines on stderr:" in text
    assert "    | Fatal Python error: Segmentation fault" in text
    assert "  threads=1: 2.4 s of the 15 s window measured (12 steps): the script ended first" in text


@pytest.mark.asyncio
async def test_the_trials_view_shows_the_failure_and_the_window_cut_short(tmp_path):
    pytest.importorskip("textual")
    from devicewatch.tui.app import DashboardApp, DashboardSettings
    from tests.conftest import until

    failed = trials.TrialResult(trials.Variant("threads", 1), str(tmp_path / "gone.jsonl"), "failed",
                                failed="exit code 1", error_lines=["Traceback (most recent call last):",
                                                                   "ValueError: batch 40 has 31 features"],
                                window_steps=12, window_seconds=2.4, cut_short=True)
    base = trials.TrialResult(trials.Variant(), str(tmp_path / "gone-too.jsonl"), "trial", steps_per_s=4.0)
    trials.save(trials.TrialSet(["python", "x.py"], {"warmup": 5, "steps": None, "seconds": 15.0}, [base, failed]),
                str(tmp_path))
    app = DashboardApp(DashboardSettings(), trial_set=trials.load_set(str(tmp_path / trials.TRIALS_FILE)))
    async with app.run_test(size=(100, 30)) as pilot:
        def table() -> str:
            widget = app.screen.query_one("#trials-table")
            return " ".join("".join(strip.text for strip in widget._lay_out(widget.size.width)).split())

        await until(pilot, lambda: "failed" in table())
        assert "failed (exit code 1)" in table()
        notes = app.screen.query_one("#trials-notes").text.plain
        assert "threads=1: 2.4 s of the 15 s window measured (12 steps): the script ended first" in notes
        assert "threads=1: the script failed (exit code 1); its last lines on stderr:" in notes
        assert "  | ValueError: batch 40 has 31 features" in notes


@pytest.mark.asyncio
async def test_a_short_terminal_keeps_the_failure_and_says_what_notes_it_left_out(tmp_path):
    # 80×24 with more notes than the rows left under the table: the failed script's lines stay,
    # whole, and a last line counts the notes left out (the view once hid them all).
    pytest.importorskip("textual")
    from devicewatch.tui.app import DashboardApp, DashboardSettings
    from devicewatch.tui.kept_lines import KeptFooter
    from tests.conftest import until

    error = ["Traceback (most recent call last):", '  File "train.py", line 40, in <module>',
             "    loss = model(x).sum()", "ValueError: batch 40 has 31 features"]
    failed = trials.TrialResult(trials.Variant("threads", 1), str(tmp_path / "gone.jsonl"), "failed",
                                failed="exit code 1", error_lines=error, window_steps=12, window_seconds=2.4,
                                cut_short=True, varied=[f"set torch.set_num_threads(1) in process {i}" for i in range(8)])
    base = trials.TrialResult(trials.Variant(), str(tmp_path / "gone-too.jsonl"), "trial", steps_per_s=4.0)
    trials.save(trials.TrialSet(["python", "x.py"], {"warmup": 5, "steps": None, "seconds": 15.0}, [base, failed]),
                str(tmp_path))
    app = DashboardApp(DashboardSettings(), trial_set=trials.load_set(str(tmp_path / trials.TRIALS_FILE)))
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.screen.query_one("#trials-notes")
        await until(pilot, lambda: "more notes" in panel.text.plain and panel.display)
        notes = panel.text.plain
        assert panel.display and "more notes: a taller terminal shows them" in notes
        assert "threads=1: the script failed (exit code 1); its last lines on stderr:" in notes
        assert "  | ValueError: batch 40 has 31 features" in notes
        assert panel.region.bottom <= app.screen.query_one(KeptFooter).region.y   # all of it on the screen
