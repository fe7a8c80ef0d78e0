"""Unmodified training scripts recorded as a user would (``devicewatch --record F -- python
script.py``): what ``devicewatch report --json`` shows of their epochs and phases.

The scripts (``scripts/``) know nothing of devicewatch. Each test reads the report the way a
user would see it, and the events behind it where the report cannot tell (which process sent
what).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from devicewatch import analysis, phase_source
from devicewatch.runformat import runfile

from conftest import ROOT, devicewatch

SCRIPTS = Path(__file__).parent / "scripts"

pytestmark = pytest.mark.slow


def record(tmp_path: Path, *command: str, timeout: float = 240, env: dict[str, str] | None = None) -> tuple[Path, dict]:
    """Record COMMAND (run in TMP_PATH, where frameworks may leave their logs), then its report."""
    out = tmp_path / "run.jsonl"
    result = run_devicewatch(["--record", str(out), "--quiet", "--", *command], tmp_path, env, timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    report = devicewatch("report", str(out), "--json")
    assert report.returncode == 0, report.stderr
    return out, json.loads(report.stdout)


def run_devicewatch(args: list[str], cwd: Path, env: dict[str, str] | None = None,
                    timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python -m devicewatch ARGS`` as conftest's ``devicewatch`` runs it, with ENV added."""
    full = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    full.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "devicewatch", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


def assert_every_epoch_trains_and_validates(report: dict, epochs: int) -> None:
    rows = report["epochs"]
    assert [row["epoch"] for row in rows] == list(range(1, epochs + 1))
    for row in rows:
        assert row["train"] > 0 and row["validate"] > 0, row
        assert row["metrics"]["steps"] > 0, row


def auto_events(path: Path) -> list[dict]:
    return [e for e in runfile.load(path).events if e.get("source") == "auto"]


def test_a_language_model_without_a_dataloader(tmp_path):
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "language_model.py"))
    assert_every_epoch_trains_and_validates(report, 2)
    # weights updated by hand: its steps are its backward passes, 4000 tokens / 8 rows / 12 a slice
    assert [row["metrics"]["steps"] for row in report["epochs"]] == [42, 42]
    assert report["phases"]["train"]["seconds"] > report["phases"]["validate"]["seconds"]
    assert auto_events(out) and all(e["kind"] != "oversize" for e in runfile.load(out).events)


def test_a_lightning_module_with_a_default_trainer(tmp_path):
    pytest.importorskip("lightning")
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "lightning_module.py"))
    assert_every_epoch_trains_and_validates(report, 2)
    # 256 samples in batches of 16: 16 optimizer steps an epoch, counted by the torch hooks
    # beside Lightning's own metrics, in the same epoch event
    for row in report["epochs"]:
        assert row["metrics"]["steps"] == 16 and {"train_loss", "val_loss", "data_wait_s"} <= set(row["metrics"])
    run = runfile.load(out)
    begins = [(e["name"], e["epoch"]) for e in run.events if e["kind"] == "phase_begin"]
    assert begins == [("train", 1), ("validate", 1), ("train", 2), ("validate", 2)]  # one callback, not two
    states = [(e["state"], e.get("framework")) for e in run.events if e["kind"] == "instrument"]
    assert states == [("loaded", None), ("armed", "torch"), ("armed", "lightning"), ("setup", None)]


def test_keras_fit_with_validation_data(tmp_path):
    pytest.importorskip("keras")
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "keras_fit.py"),
                         env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    rows = report["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2]
    assert all(row["train"] > 0 and row["validate"] > 0 and "val_loss" in row["metrics"] for row in rows)
    # The callback's phases, not the "Epoch 1/2" lines of Keras's output: the phases the run shows
    # are all the callback's, and the recorder wrote no printed epoch once the workload had said it
    # reports its phases. (Its events and its output come through two pipes read by two threads:
    # on a loaded machine an "Epoch 1/2" line can be read before the run info sent just before it,
    # and that first printed phase is in the file, left out by every view; phase_source.)
    run = runfile.load(out)
    assert {p.attrs.get("source") for p in analysis.phases(run)} == {"auto"}
    speaks = next(i for i, e in enumerate(run.events) if phase_source.speaks_for_its_phases(e))
    assert not any(phase_source.is_printed(e) for e in run.events[speaks:])
    assert {e.get("source") for e in run.events if e["kind"] == "phase_begin"} <= {"auto", phase_source.PRINTED}


def test_a_loop_waiting_on_a_slow_dataset(tmp_path):
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "slow_dataset.py"))
    assert_every_epoch_trains_and_validates(report, 2)
    run = runfile.load(out)
    data = [p for p in analysis.phases(run) if p.name == "data"]
    for row in report["epochs"]:
        # 8 batches of 8 samples at 0.03 s each: at least 1.92 s waited in each epoch's training
        assert row["metrics"]["data_wait_s"] >= 8 * 8 * 0.03
        assert row["metrics"]["data_wait_s"] > 0.5 * row["total"], row
        drawn = [p for p in data if p.epoch == row["epoch"]]
        assert sum(p.duration for p in drawn) > 0.5 * row["total"]
        assert row["metrics"]["steps"] == 8
    # every data phase lies inside its epoch's train phase, in the same lane
    trains = {p.epoch: p for p in analysis.phases(run) if p.name == "train"}
    assert all(trains[p.epoch].start <= p.start and p.end <= trains[p.epoch].end and p.lane == "main" for p in data)
    # the verdict names the input, and the report says what instrumented the run
    assert report["verdict"]["label"] == "input-bound" and "DataLoader" in report["verdict"]["text"]
    assert run.end.instrument == {"active": True, "processes": 1, "frameworks": ["torch"]}
    assert report["instrumentation"] == "active in 1 process (torch)"


def test_dataloader_workers_send_nothing(tmp_path):
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "slow_dataset.py"), "--workers", "2", "--epochs", "1")
    assert [row["epoch"] for row in report["epochs"]] == [1]
    senders = {e["pid"] for e in runfile.load(out).events}
    assert len(senders) == 1  # the training process alone; its two workers imported torch too
    assert report["epochs"][0]["metrics"]["steps"] == 8


def test_hugging_face_trainer(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "hf_trainer.py"), str(tmp_path / "trainer"),
                         env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert_every_epoch_trains_and_validates(report, 2)
    for row in report["epochs"]:
        # 128 samples in batches of 8: 16 steps; the Trainer's logged loss and its evaluation beside them
        assert row["metrics"]["steps"] == 16 and {"loss", "eval_loss"} <= set(row["metrics"]), row


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_lightning_ddp_under_torchrun_shows_phases_per_rank_after_merge(tmp_path):
    """Two torchrun nodes of one CPU rank each (gloo), each recorded by its own recorder."""
    pytest.importorskip("lightning")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    nodes = []
    for rank in (0, 1):
        command = [sys.executable, "-m", "devicewatch", "--record", str(tmp_path / f"node{rank}.jsonl"), "--quiet",
                   "--", sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(rank),
                   "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", str(port),
                   str(SCRIPTS / "lightning_ddp.py")]
        nodes.append(subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
    for node in nodes:
        _, err = node.communicate(timeout=240)
        assert node.returncode == 0, err[-3000:]
    merged = tmp_path / "merged.jsonl"
    result = devicewatch("merge", str(tmp_path / "node0.jsonl"), str(tmp_path / "node1.jsonl"), "-o", str(merged))
    assert result.returncode == 0, result.stderr
    phases = analysis.phases(runfile.load(merged))
    for rank in (0, 1):
        mine = sorted((p.epoch, p.name) for p in phases if p.lane == f"rank {rank}")
        assert mine == [(1, "train"), (1, "validate"), (2, "train"), (2, "validate")], rank
