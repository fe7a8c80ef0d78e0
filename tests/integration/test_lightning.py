"""The Lightning callback under a real Trainer on the CPU, recorded end to end."""

import sys
from pathlib import Path

import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile

from conftest import devicewatch

SCRIPT = Path(__file__).parent / "scripts" / "lightning_fit.py"

pytest.importorskip("lightning")


@pytest.mark.slow
def test_lightning_fit_records_phases_metrics_and_run_info(tmp_path):
    out = tmp_path / "fit.jsonl"
    result = devicewatch("--record", str(out), "--quiet", "--", sys.executable, str(SCRIPT), timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    run = runfile.load(out)
    assert run.end.status == "ok"
    begins = [(e["name"], e["epoch"]) for e in run.events if e["kind"] == "phase_begin"]
    ends = [(e["name"], e["epoch"]) for e in run.events if e["kind"] == "phase_end"]
    # the sanity check's validation batches before training are no epoch's phase
    expected = [("train", 1), ("validate", 1), ("train", 2), ("validate", 2)]
    assert begins == expected and ends == expected
    assert not any(p.open for p in analysis.phases(run))
    (info,) = [e["info"] for e in run.events if e["kind"] == "run_info"]
    assert info["framework"] == "lightning" and info["device"] == "cpu"
    assert info["params"] == 8 + 1 and info["epochs"] == 2
    metrics = [(e["epoch"], sorted(e["metrics"])) for e in run.events if e["kind"] == "epoch"]
    # Lightning's logged metrics, and what the zero-code instrumentation measured under the
    # callback's phases: 64 samples in batches of 16 make 4 optimizer steps an epoch
    figures = ["data_wait_s", "steps", "steps_per_s", "train_loss", "val_loss"]
    assert metrics == [(1, figures), (2, figures)]
    assert [e["metrics"]["steps"] for e in run.events if e["kind"] == "epoch"] == [4, 4]
    # the callback the script passed is the only one: the instrumentation added none
    assert all("source" not in e for e in run.events if e["kind"] in ("phase_begin", "epoch"))
    rows = analysis.epochs(run, analysis.phases(run))
    assert [r.epoch for r in rows] == [1, 2] and all(r.train > 0 and r.validate > 0 for r in rows)
