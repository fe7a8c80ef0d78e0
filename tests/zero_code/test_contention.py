"""A compute-bound torch loop on a machine it does not own: beside a program that keeps a core
busy its operator threads wait for cores, the verdict says so in figures, the advice names
``threads`` and ``devicewatch try`` measures the gain; alone, none of it (no false alarm).
Real processes throughout: the busy program is a real one, the waiting is the kernel's.
How close each prediction comes is measured by ``bench/bench_contention.py``, not here."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devicewatch import analysis
from devicewatch.analysis import advice
from devicewatch.runformat import runfile

from test_scripts import run_devicewatch

TRIAL_SCRIPTS = Path(__file__).parent / "trial_scripts"
LOOP = str(TRIAL_SCRIPTS / "compute_loop.py")


@pytest.fixture
def busy_program() -> Iterator[subprocess.Popen[bytes]]:
    """Another program that keeps one core busy for as long as the test runs."""
    program = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield program
    finally:
        program.kill()
        program.wait()


@pytest.mark.slow
def test_beside_a_busy_program_the_loop_is_contended_and_try_measures_fewer_threads(tmp_path, busy_program):
    out = tmp_path / "trials"
    result = run_devicewatch(["try", "--seconds", "4", "--warmup", "5", "--out", str(out), "--json", "--", sys.executable,
                              LOOP], tmp_path, timeout=400)
    assert result.returncode == 0, result.stderr[-3000:]
    said = json.loads(result.stdout)
    base, *tried = said["variants"]
    assert base["verdict"] == "contended", base
    run = runfile.load(base["run_file"])
    verdict = analysis.run_figures(run).verdict
    figures = verdict.figures
    # in figures: its threads waited for cores that another program took
    assert figures["waiting_cores"] >= analysis.CONTENDED_WAIT and figures["others_cores"] >= 0.25, figures
    assert "other programs took" in verdict.text and "waited for a core" in verdict.text
    named = analysis.run_figures(run).advised
    # How much fewer threads gain depends on where the scheduler puts the pool's threads beside
    # the busy program (0.8x to 61x measured here): the trial timed the variant's own steps after
    # its window, and that is the prediction, not the model's extrapolation. Where those steps
    # gained too little, fewer threads are held back for what they measured, and said so.
    fewer = [a for a in named + analysis.run_figures(run).held_back if a.knob == "threads"]
    assert fewer and fewer[0].value < 2, named
    assert fewer[0].measured and fewer[0].predicted_from and fewer[0].predicted_gain, fewer
    if named[0].knob is None:
        assert (fewer[0].predicted_gain or 0.0) < advice.MIN_GAIN and "timed in the run" in named[0].why, named
    else:
        assert named[0] == fewer[0], named
    # no --vary: the advice's variant (or the one it held back) was tried, predicted at what the
    # first trial timed of it
    assert [v["label"] for v in tried] == [f"threads={fewer[0].value}"]
    assert tried[0]["predicted_measured"] and tried[0]["predicted_steps_per_s"] == fewer[0].predicted_steps_per_s
    assert tried[0]["steps_per_s"] > 0, said


@pytest.mark.slow
def test_alone_the_same_loop_gets_no_contention_verdict_and_no_threads_advice(tmp_path):
    out = tmp_path / "alone.jsonl"
    result = run_devicewatch(["--record", str(out), "--quiet", "--", sys.executable, LOOP, "6"], tmp_path,
                             timeout=400)
    assert result.returncode == 0, result.stderr[-3000:]
    run = runfile.load(out)
    verdict = analysis.run_figures(run).verdict
    others = verdict.figures.get("others_cores", 0.0)
    if others >= 0.25:  # the precondition, measured: with other programs on the cores it is not alone
        pytest.skip(f"the machine was not quiet: other programs took {others:.2f} cores during the run")
    assert verdict.label != "contended", verdict.text
    assert verdict.figures["waiting_cores"] < analysis.CONTENDED_WAIT, verdict.figures
    assert not any(a.knob == "threads" for a in analysis.run_figures(run).advised)
