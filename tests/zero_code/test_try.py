"""``devicewatch try``: real trials of an unchanged script, and the advice and prediction they rest on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devicewatch import analysis, trials
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
    # no CUDA in the process: its batches' copy is not probed, and pinned memory is not advised
    assert advice.copy_of(run) is None and all(a["knob"] != "pin_memory" for a in said["advice"] + said["held_back"])


NEXT_ITER = Path(__file__).parent / "round3" / "next_iter.py"


@pytest.mark.slow
def test_try_on_a_loop_that_takes_a_new_iterator_every_step_picks_a_variant_that_helps_as_predicted(tmp_path):
    # next(iter(train_loader)) every step with 2 workers: each step starts them anew and shuts
    # the dropped iterator's down. One operator thread, as the rows of test_round3.py run it: a tiny
    # model's step stays steady on a shared machine.
    out = tmp_path / "trials"
    result = run_devicewatch(["try", "--steps", "12", "--warmup", "5", "--out", str(out), "--json", "--",
                              sys.executable, str(NEXT_ITER)], tmp_path, env={"OMP_NUM_THREADS": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    said = json.loads(result.stdout)
    base, picked = said["variants"][0], said["variants"][1]
    assert said["advice"][0]["knob"] == "num_workers" and said["advice"][0]["value"] == 0
    assert picked["label"] == "num_workers=0" and picked["varied"] == ["num_workers 2 → 0"]
    # the dropped iterators' teardown was timed in the window of the script as written
    run = runfile.load(base["run_file"])
    assert advice.trial_of(run)["teardown_s"] > 0
    ratio = picked["steps_per_s"] / base["steps_per_s"]
    assert ratio >= 1.3, said["headline"]
    assert picked["predicted_steps_per_s"] == pytest.approx(picked["steps_per_s"], rel=0.25), said["headline"]
    assert said["headline"].startswith("num_workers=0: ")


@pytest.mark.slow
def test_try_measures_the_candidate_it_held_back_before_saying_that_no_variant_helps(tmp_path):
    # two workers decoding items keep both cores of its affinity busy and the loop waits on them:
    # no core for more workers, and persistent workers, which save only each epoch's start-up,
    # are predicted under 1.1x, so the advice names nothing; try measures them all the same
    out = tmp_path / "trials"
    command = ["taskset", "-c", "0,1", sys.executable, "-m", "devicewatch", "try", "--steps", "30", "--warmup", "5",
               "--out", str(out), "--json", "--", sys.executable, str(TRIAL_SCRIPTS / "busy_workers.py")]
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    said = json.loads(result.stdout)
    assert [a["knob"] for a in said["advice"]] == [None] and "persistent_workers=true is predicted" in \
        said["advice"][0]["why"]
    assert [a["knob"] for a in said["held_back"]] == ["persistent_workers"]
    base, tried = said["variants"]
    assert tried["label"] == "persistent_workers=true" and tried["steps_per_s"] and tried["predicted_steps_per_s"]
    ratio = tried["steps_per_s"] / base["steps_per_s"]
    if ratio < 1.05:
        assert said["headline"] == (f"no variant helps: measured persistent_workers=true {ratio:.2f}× the steps/s of "
                                    f"the script as written ({base['steps_per_s']:.1f})")
    else:   # the machine's load moved between the trials
        assert said["headline"].startswith("persistent_workers=true: ")


def test_try_refuses_bad_input_in_one_line(tmp_path):
    for args, said in ((["--vary", "workers=2"], "unknown knob"), (["--vary", "num_workers=two"], "whole number"),
                       (["--steps", "0"], "at least 1"), ([], "needs a command")):
        result = run_devicewatch(["try", *args, "--out", str(tmp_path / "t"), *(["--", "true"] if args else [])],
                                 tmp_path)
        assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


def setup_run(tmp_path: Path, share: float, workers: int, threads: int = 2, label_cpu: float = 40.0,
              copy: dict | None = None) -> runfile.Run:
    """A trial of a loop that waited SHARE of 2 s on a DataLoader of WORKERS workers: 100 steps;
    its first training batch's COPY to the GPU timed where given."""
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
    if copy is not None:
        records.append({"type": "event", "t": 0.1, "kind": "instrument", "state": "copy", **copy})
    return runfile.load(write_run(tmp_path / "run.jsonl", sorted(records, key=lambda r: r["t"])))


def test_an_input_bound_loop_without_workers_is_told_to_use_the_free_cores(tmp_path):
    run = setup_run(tmp_path, share=0.75, workers=0)
    (first,) = analysis.run_figures(run).advised
    assert (first.knob, first.value) == ("num_workers", 2)
    assert "0 workers" in first.why and "75%" in first.why
    # a step of 20 ms: 15 ms waiting on one loader, 5 ms of compute; the process kept 0.8 of a
    # core busy throughout, so loading took 0.8 of a core while waiting and the compute
    # (0.8 - 0.75·0.8)/0.25 = 0.8. Two workers: the longest of 5 ms (compute), 7.5 ms (two
    # loaders) and (5·0.8 + 15·0.8)/2 = 8 ms (all its CPU work, 20 ms × 0.8, on 2 cores) -> 125/s
    assert first.predicted_steps_per_s == pytest.approx(1000 / 8, rel=1e-3)


def test_a_loop_that_does_not_wait_gets_no_loader_advice(tmp_path):
    run = setup_run(tmp_path, share=0.05, workers=0, label_cpu=100.0)
    advised = analysis.run_figures(run).advised
    assert all(a.knob != "num_workers" for a in advised)
    assert advised[-1].knob is None and "the model itself is the cost" in advised[-1].why


def restarting_trial(path: Path, steps_per_s: float, share: float, workers: int = 2,
                     worker_batch_s: float | None = 0.05) -> runfile.Run:
    """A trial's run of a loop that takes a new iterator over a DataLoader of WORKERS workers
    every step, at STEPS_PER_S, waiting SHARE of 2 s (a quarter of it in ``__next__``)."""
    steps = int(steps_per_s * 2)
    metrics = {"steps": steps, "data_wait_s": 2.0 * share, "loader_wait_s": 0.5 * share, "iterators": steps}
    if worker_batch_s is not None:
        metrics["worker_batch_s"] = worker_batch_s
    records = [{"type": "sample", "t": i / 10, "cpu": [30.0, 30.0], "cpu_total": 30.0, "proc": {"cpu": 60.0}}
               for i in range(21)]
    records += [
        {"type": "event", "t": 0.0, "kind": "phase_begin", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": 0.0, "kind": "instrument", "state": "setup", "threads": 1,
         "loader": {"num_workers": workers, "pin_memory": False, "persistent_workers": False,
                    "prefetch_factor": None, "batch_size": 16}},
        {"type": "event", "t": 2.0, "kind": "instrument", "state": "trial", "stage": "done", "steps": steps,
         "seconds": 2.0, "steps_per_s": steps_per_s, "data_wait_s": 2.0 * share, "data_wait_share": share},
        {"type": "event", "t": 2.0, "kind": "epoch", "epoch": 1, "unit": "segment", "source": "auto", "metrics": metrics},
        {"type": "event", "t": 2.0, "kind": "phase_end", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
    ]
    write_run(path, records, end={"type": "end", "t": 2.0, "status": "trial", "exit_code": None, "signal": None,
                                  "duration": 2.0, "reason": "the trial's window was measured: ended on purpose"})
    return runfile.load(path)


def measured_set(tmp_path: Path, measured: dict[str, float]) -> trials.TrialSet:
    """The set ``try`` runs without --vary on a loop that takes a new iterator every step (10
    steps/s, waiting 80%), each variant's trial measuring the steps/s MEASURED gives its label."""
    def runner(command: list[str], variant: trials.Variant, budget: dict, path: str) -> runfile.Run:
        if variant.knob is None:
            return restarting_trial(Path(path), 10.0, 0.8)
        return restarting_trial(Path(path), measured[variant.label], 0.5, workers=0 if variant.value == 0 else 2)

    tmp_path.mkdir()
    return trials.run_set(["python", "train.py"], [trials.Variant()], trials.budget_of(None, 2.0, 3), str(tmp_path),
                          runner)


def test_the_candidates_held_back_are_measured_when_the_advised_variant_does_not_help(tmp_path):
    # a step of 0.1 s: 0.02 s of compute, a batch of 0.05 s in a worker. Without workers:
    # 1/0.07 = 14.3/s (1.43x), advised; persistent workers wait for 2 batches read ahead a worker
    # and the batch: 0.02 + 3 x 0.05 > the step, 1.0x, held back
    trial_set = measured_set(tmp_path / "a", {"num_workers=0": 10.2, "persistent_workers=true": 15.0})
    assert [a.label for a in trial_set.advice] == ["num_workers=0"]
    assert [a.label for a in trial_set.held] == ["persistent_workers=true"]
    assert [r.variant.label for r in trial_set.results] == ["as written", "num_workers=0", "persistent_workers=true"]
    assert trial_set.results[1].predicted_steps_per_s == pytest.approx(1 / 0.07, rel=1e-3)
    assert trial_set.headline().startswith("persistent_workers=true: 1.5× the steps/s of the script as written")
    # none helps: the headline says each variant it measured
    trial_set = measured_set(tmp_path / "b", {"num_workers=0": 10.2, "persistent_workers=true": 9.9})
    assert trial_set.headline() == ("no variant helps: measured num_workers=0 1.02×, persistent_workers=true 0.99× "
                                    "the steps/s of the script as written (10.0)")
    assert json.loads((tmp_path / "b" / "trials.json").read_text())["held_back"][0]["knob"] == "persistent_workers"
    assert trials.load_set(str(tmp_path / "b" / "trials.json"))[0].headline() == trial_set.headline()
    # the advised variant helps: nothing further is measured
    trial_set = measured_set(tmp_path / "c", {"num_workers=0": 14.0})
    assert [r.variant.label for r in trial_set.results] == ["as written", "num_workers=0"]


def test_a_set_measures_no_more_candidates_than_its_budget_and_names_those_left():
    base = trials.TrialResult(trials.Variant(), "a.jsonl", "trial", steps_per_s=10.0)
    held = [advice.Advice("num_workers", n, "more workers", 10.5, 1.05) for n in (1, 3, 4, 5)]
    trial_set = trials.TrialSet(["python", "train.py"], {}, [base], held=held)
    variants = [trials.Variant(), trials.Variant("num_workers", 1)]
    assert trials.further(trial_set, variants) == [trials.Variant("num_workers", 3)]
    variants += [trials.Variant("num_workers", 3), trials.Variant("num_workers", 4)]
    assert len(variants) - 1 == trials.FROM_ADVICE and trials.further(trial_set, variants) == []
    results = [base] + [trials.TrialResult(v, "v.jsonl", "trial", steps_per_s=10.1) for v in variants[1:]]
    assert trials.headline(results, held=held).endswith("; not measured: num_workers=5")


def test_pinned_memory_is_advised_with_a_prediction_where_the_copy_to_the_gpu_was_timed(tmp_path):
    # a step of 20 ms, 10 ms of it the loop's own; a batch copied in 6 ms from pageable memory,
    # 2 ms from pinned, pinned in 1 ms: without workers the loop pins it itself, 20 - 4 + 1 = 17 ms
    run = setup_run(tmp_path, share=0.5, workers=0, copy={"bytes": 1 << 24, "pageable_s": 0.006,
                                                          "pinned_s": 0.002, "pin_s": 0.001})
    (pinned,) = [a for a in analysis.run_figures(run).advised if a.knob == "pin_memory"]
    assert pinned.value is True and pinned.predicted_steps_per_s == pytest.approx(1000 / 17, rel=1e-3)
    assert "6 ms a batch, 2 ms from pinned memory" in pinned.why and "in the loop, without loader workers" in pinned.why
    # a copy that saves under a tenth of the step is held back, with its predicted gain said
    small = {"bytes": 1 << 20, "pageable_s": 0.0004, "pinned_s": 0.0002, "pin_s": 0.0001}
    run = setup_run(tmp_path, share=0.5, workers=0, copy=small)
    assert all(a.knob != "pin_memory" for a in analysis.run_figures(run).advised)
    assert [a.label for a in analysis.run_figures(run).held_back] == ["pin_memory=true"]
    # no copy timed (the script does not use CUDA, or no GPU): pin_memory is not advised at all
    run = setup_run(tmp_path, share=0.5, workers=0)
    assert all(a.knob != "pin_memory" for a in analysis.run_figures(run).advised + analysis.run_figures(run).held_back)


def test_a_trials_others_are_read_in_its_window_not_in_the_calibration_after_it(tmp_path):
    # 2 s of window with the machine at the workload's own 0.4 cores, then 1 s of the first
    # trial's calibration during which other programs filled both cores: the window's others are
    # none (read over the last 2 s before the event, they would be half a core and more)
    records = [{"type": "sample", "t": i / 10, "cpu": [100.0, 100.0] if i > 20 else [20.0, 20.0],
                "cpu_total": 100.0 if i > 20 else 20.0, "proc": {"cpu": 40.0}} for i in range(31)]
    records += [
        {"type": "event", "t": 0.0, "kind": "phase_begin", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
        {"type": "event", "t": 3.0, "kind": "instrument", "state": "trial", "stage": "done", "steps": 20,
         "seconds": 2.0, "steps_per_s": 10.0, "calibration_s": 1.0,
         "calibrated": [{"knob": "threads", "value": 1, "steps": 10, "seconds": 0.9, "steps_per_s": 11.1}]},
        {"type": "event", "t": 3.0, "kind": "phase_end", "name": "train", "epoch": 1, "lane": "main", "source": "auto"},
    ]
    run = runfile.load(write_run(tmp_path / "run.jsonl", records))
    result = trials.result_of(analysis.run_figures(run), trials.Variant())
    assert result.steps_per_s == 10.0 and result.others_cores is not None and result.others_cores < 0.05, result


class FakeTorch:
    """What Knobs.set_threads touches of torch: its operator threads."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n


def test_a_variant_that_is_the_scripts_own_value_is_said_as_not_applied_not_as_a_change(monkeypatch):
    from devicewatch.integrations.zero_code.knobs import Knobs

    monkeypatch.setenv("OMP_NUM_THREADS", "")
    said: list[dict] = []
    knobs = Knobs({"threads": 1, "num_workers": 0}, say=lambda kind, **f: said.append(f))
    knobs.set_threads(FakeTorch(1), setattr)                                 # taskset -c 0: PyTorch runs 1 already
    knobs.loader_made({"dataset": object(), "num_workers": 0, "pin_memory": False})
    assert not [f for f in said if f["state"] == "varied"]            # no "threads 1 → 1"
    knobs.at_exit()
    assert sorted(f["reason"] for f in said if f["state"] == "not_applied") == \
        ["PyTorch already ran 1 operator thread", "the script's DataLoader already has num_workers=0"]
    # a value that differs is a change, said once
    said.clear()
    changed = Knobs({"threads": 1}, say=lambda kind, **f: said.append(f))
    changed.set_threads(FakeTorch(2), setattr)
    changed.at_exit()
    assert [(f["state"], f.get("was"), f.get("now")) for f in said] == [("varied", 2, 1)]
