"""``devicewatch try``: real trials of an unchanged script, and the advice and prediction they rest on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from devicewatch.analysis import advice
from devicewatch.runformat import runfile

from conftest import write_run
from test_scripts import run_devicewatch

TRIAL_SCRIPTS = Path(__file__).parent / "trial_scripts"


@pytest.mark.slow
def test_try_measures_the_variant_the_advice_names_against_the_script_as_written(tmp_path):
    out = tmp_path / "trials"
    result = run_devicewatch(["try", "--steps", "40", "--warmup", "5", "--out", str(out), "--json", "--",
                              sys.executable, str(TRIAL_SCRIPTS / "sleepy_dataset.py")], tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    said = json.loads(result.stdout)
    # told before the first trial: what runs, how often, for how long, and that the script writes
    assert "will run" in result.stderr and "warm-up of 5 optimizer steps, then 40 optimizer steps" in result.stderr
    assert "whatever it writes" in result.stderr
    variants = said["variants"]
    # no --vary: the first trial's advice names the variant (input-bound, no workers, 2 cores)
    assert [v["label"] for v in variants] == ["as written", "num_workers=2"]
    base, tried = variants
    assert base["status"] == tried["status"] == "trial" and base["predicted_steps_per_s"] is None
    assert tried["varied"] == ["num_workers 0 → 2"]
    assert base["data_wait_share"] > 0.5 and base["verdict"] == "input-bound"
    # 16 items of 4 ms sleep a batch: two workers load two batches at once (sleeping needs no core)
    assert tried["steps_per_s"] > 1.3 * base["steps_per_s"]
    assert tried["predicted_steps_per_s"] > base["steps_per_s"]
    assert said["headline"].startswith("num_workers=2: ")
    # the recordings, the set, and the script's own file: each trial ran it in the working folder
    assert sorted(p.name for p in out.iterdir()) == ["01-as-written.jsonl", "01-as-written.jsonl.columns",
                                                     "02-num_workers=2.jsonl", "02-num_workers=2.jsonl.columns",
                                                     "trials.json"] or (out / "trials.json").exists()
    assert (tmp_path / "training.log").exists()
    # a trial's end is no crash: the report says it was ended on purpose
    run = runfile.load(variants[0]["run_file"])
    assert run.end.status == "trial" and not any("Traceback" in log.line for log in run.logs)
    assert run.end.instrument["active"] is True


def test_try_refuses_bad_input_in_one_line(tmp_path):
    for args, said in ((["--vary", "workers=2"], "unknown knob"), (["--vary", "num_workers=two"], "whole number"),
                       (["--steps", "0"], "at least 1"), ([], "needs a command")):
        result = run_devicewatch(["try", *args, "--out", str(tmp_path / "t"), *(["--", "true"] if args else [])],
                                 tmp_path)
        assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


def setup_run(tmp_path: Path, share: float, workers: int, threads: int = 2, label_cpu: float = 40.0) -> runfile.Run:
    """A trial of a loop that waited SHARE of 2 s on a DataLoader of WORKERS workers: 100 steps."""
    records = [{"type": "sample", "t": i / 10, "cpu": [label_cpu, label_cpu], "cpu_total": label_cpu,
                "proc": {"cpu": 2 * label_cpu}} for i in range(21)]
    records += [
        {"type": "event", "t": 0.0, "kind": "phase_begin", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": 0.0, "kind": "instrument", "state": "setup", "threads": threads,
         "loader": {"num_workers": workers, "pin_memory": False, "persistent_workers": False,
                    "prefetch_factor": None, "batch_size": 16}},
        # a wait long enough to hold samples: what the process used while it waited
        {"type": "event", "t": 0.2, "kind": "phase_begin", "name": "data", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": 1.7, "kind": "phase_end", "name": "data", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": 2.0, "kind": "instrument", "state": "trial", "stage": "done", "steps": 100,
         "seconds": 2.0, "steps_per_s": 50.0, "data_wait_s": 2.0 * share, "data_wait_share": share},
        {"type": "event", "t": 2.0, "kind": "epoch", "epoch": 1, "source": "auto",
         "metrics": {"steps": 100, "data_wait_s": 2.0 * share}},
        {"type": "event", "t": 2.0, "kind": "phase_end", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
    ]
    return runfile.load(write_run(tmp_path / "run.jsonl", sorted(records, key=lambda r: r["t"])))


def test_an_input_bound_loop_without_workers_is_told_to_use_the_free_cores(tmp_path):
    run = setup_run(tmp_path, share=0.75, workers=0)
    (first,) = advice.advise(run)
    assert (first.knob, first.value) == ("num_workers", 2)
    assert "0 workers" in first.why and "75%" in first.why
    # a step of 20 ms: 15 ms waiting on one loader, 5 ms of compute on one core; loading took 0.8
    # of a core while waiting (the process's 80%). Two workers: the longest of 5 ms (compute),
    # 7.5 ms (two loaders) and (5·1 + 15·0.8)/2 = 8.5 ms (all the CPU work on 2 cores) -> 117.6/s
    assert first.predicted_steps_per_s == pytest.approx(1000 / 8.5, rel=1e-3)


def test_a_loop_that_does_not_wait_gets_no_loader_advice(tmp_path):
    run = setup_run(tmp_path, share=0.05, workers=0, label_cpu=100.0)
    advised = advice.advise(run)
    assert all(a.knob != "num_workers" for a in advised)
    assert advised[-1].knob is None and "the model itself is the cost" in advised[-1].why
