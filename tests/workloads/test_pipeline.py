"""The pipeline workload: every variant on its backends through the recorder, the overlapped
scheme's validation against snapshots of each epoch's weights, Ctrl-C, and bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from devicewatch.runformat import runfile
from tests.conftest import ROOT, devicewatch
from workloads import pipeline
from workloads.pipeline import data as datamod
from workloads.pipeline import schemes

TINY = ["--epochs", "2", "--train-samples", "512", "--val-samples", "256", "--batch", "64", "--threads", "2"]
PAIRS = [(backend, variant) for backend, variants in pipeline.SUPPORTED.items() for variant in variants]


def _phases(run: runfile.Run) -> dict[tuple[str, str], list[int]]:
    """(lane, name) -> epochs of the phases that began and ended, in order."""
    open_phases: dict[tuple[str, str, int], int] = {}
    done: dict[tuple[str, str], list[int]] = {}
    for event in run.events:
        key = (event.get("lane"), event.get("name"), event.get("epoch"))
        if event["kind"] == "phase_begin":
            open_phases[key] = open_phases.get(key, 0) + 1
        elif event["kind"] == "phase_end":
            assert open_phases.get(key), f"phase ended without beginning: {key}"
            open_phases[key] -= 1
            done.setdefault(key[:2], []).append(key[2])
    assert not any(open_phases.values()), f"phases never ended: {open_phases}"
    return done


@pytest.mark.slow
@pytest.mark.parametrize("backend,variant", PAIRS)
def test_each_variant_records_its_lanes_and_phases(tmp_path: Path, backend: str, variant: str) -> None:
    record = tmp_path / "run.jsonl"
    proc = devicewatch("--record", str(record), "pipeline", "--backend", backend, "--variant", variant, *TINY,
                       timeout=170)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = runfile.load(str(record))
    info = next(e["info"] for e in run.events if e["kind"] == "run_info")
    assert (info["variant"], info["backend"], info["threads"], info["epochs"]) == (variant, backend, 2, 2)
    assert info["data"] == "synthetic"
    # conv 1->16 3x3 (160) + conv 16->32 3x3 (4640) + dense 800->64 (51264) + dense 64->10 (650)
    assert info["params"] == 160 + 4640 + 51264 + 650
    phases = _phases(run)
    assert phases[("train", "train")] == [1, 2]
    if variant in ("serial", "overlapped"):
        assert phases[("train", "data")] == [1, 2]
    else:
        assert ("train", "data") not in phases  # the framework's pipeline prepares data inside "train"
    if variant == "overlapped":
        assert phases[("train", "copy")] == [1, 2]
        assert phases[("validate-0", "validate")] == [1, 2]
        assert phases[("validate-1", "validate")] == [1, 2]
    else:
        assert phases[("validate", "validate")] == [1, 2]
    epochs = [e for e in run.events if e["kind"] == "epoch"]
    assert [e["epoch"] for e in epochs] == [1, 2]
    for e in epochs:
        m = e["metrics"]
        assert {"loss", "accuracy", "val_loss", "val_accuracy", "train_s", "validate_s"} <= set(m)
        assert 0 <= m["val_accuracy"] <= 1
        if variant == "overlapped":
            assert m["copy_s"] >= 0 and m["copy_share_pct"] == pytest.approx(100 * m["copy_s"] / m["train_s"], rel=0.01, abs=1e-3)


def _settings(threads: int = 3, epochs: int = 3) -> schemes.Settings:
    return schemes.Settings("overlapped", epochs, threads, batch=32, chunk=65536, seed=0)


def _overlapped_with_snapshots(backend: str, copy_disabled: bool = False) -> tuple[list[dict], list[tuple]]:
    """Run overlapped in this process; return its epochs and, per epoch, a fresh evaluation of
    the weights snapshotted right after that epoch's model copy."""
    d = datamod.synthetic(384, 200, seed=1)
    model = pipeline.build_model(backend, seed=0, intra_threads=1)
    snapshots: dict[int, object] = {}
    if copy_disabled:
        model.copy_into = lambda replica: None
    outcome = schemes.Outcome()
    reporter = schemes.Reporter(3, outcome, echo=lambda line: None)
    schemes.run_overlapped(model, d, _settings(), reporter, threading.Event(),
                           on_copy=lambda epoch: snapshots.__setitem__(epoch, model.snapshot()))
    expected = []
    for epoch in sorted(snapshots):
        batches = ((datamod.preprocess_eval(d.x_val[s:s + 50]), d.y_val[s:s + 50]) for s in range(0, 200, 50))
        loss_sum, correct, count = model.evaluate(model.replica_from(snapshots[epoch]), batches)
        expected.append((epoch, loss_sum / count, correct / count))
    return sorted(outcome.epochs, key=lambda m: m["epoch"]), expected


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "tensorflow"])
def test_overlapped_validates_exactly_each_epochs_weights(backend: str) -> None:
    before = set(threading.enumerate())
    reported, expected = _overlapped_with_snapshots(backend)
    assert [m["epoch"] for m in reported] == [1, 2, 3]
    for metrics, (epoch, val_loss, val_accuracy) in zip(reported, expected):
        assert metrics["epoch"] == epoch
        assert metrics["val_accuracy"] == round(val_accuracy, 5)
        assert metrics["val_loss"] == pytest.approx(val_loss, abs=2e-5)
    # the weights moved between epochs, so a stale copy could not pass the checks above
    assert len({round(v, 4) for _, v, _ in expected}) == 3
    leftover = [t for t in threading.enumerate() if t not in before and t.name.startswith("validate")]
    assert leftover == []


@pytest.mark.slow
def test_snapshot_check_catches_a_missing_copy() -> None:
    """The control: replicas that never receive the weights validate the initial model."""
    reported, expected = _overlapped_with_snapshots("torch", copy_disabled=True)
    assert any(m["val_loss"] != pytest.approx(v, abs=2e-5) for m, (_, v, _) in zip(reported, expected))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["overlapped", "dataloader"])
def test_ctrl_c_stops_every_thread_and_worker(variant: str) -> None:
    psutil = pytest.importorskip("psutil")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("DEVICEWATCH_EVENTS", None)
    proc = subprocess.Popen([sys.executable, "-m", "workloads.pipeline", "--variant", variant, "--epochs", "500",
                             "--train-samples", "2000", "--val-samples", "2000", "--threads", "2"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        for line in proc.stdout:  # wait until an epoch has been validated: every thread is running
            if line.startswith("Epoch 1/"):
                break
        children = psutil.Process(proc.pid).children(recursive=True)
        if variant == "dataloader":
            assert children, "the DataLoader should have worker processes"
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == "pipeline: cancelled (SIGINT)"  # workloads.run says how it ended, once
    psutil.wait_procs(children, timeout=10)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize("argv,words", [
    (["--variant", "tfdata", "--backend", "torch"], "does not run on --backend torch"),
    (["--variant", "dataloader", "--backend", "tensorflow"], "does not run on --backend tensorflow"),
    (["--epochs", "0"], "--epochs must be at least 1"),
    (["--threads", "-2"], "--threads must be at least 1"),
    (["--variant", "pipelined"], "invalid choice"),
    (["--frobnicate"], "unrecognized arguments"),
    (["--data", "/nonexistent/mnist.npz"], "/nonexistent/mnist.npz"),
])
def test_bad_input_gives_one_line_and_exit_2(argv: list[str], words: str, capsys: pytest.CaptureFixture) -> None:
    assert pipeline.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def test_npz_without_the_mnist_keys_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.npz"
    np.savez(bad, images=np.zeros((2, 28, 28), np.uint8))
    assert pipeline.main(["--data", str(bad)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "x_train" in err


@pytest.mark.slow
def test_real_data_file_trains_above_chance(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """An .npz in MNIST's layout is read as real data; the glyphs are learnable (chance is 0.1)."""
    d = datamod.synthetic(4000, 500, seed=3)
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=d.x_train, y_train=d.y_train, x_test=d.x_val, y_test=d.y_val)
    summary = tmp_path / "summary.json"
    assert pipeline.main(["--data", str(path), "--variant", "serial", "--epochs", "2",
                          "--summary", str(summary)]) == 0
    import json
    result = json.loads(summary.read_text())
    assert result["data"] == "real"
    assert result["epochs"][-1]["val_accuracy"] > 0.3


def test_shards_are_equal_and_cover_everything() -> None:
    parts = datamod.shards(10, 3)
    assert [(p.start, p.stop) for p in parts] == [(0, 3), (3, 7), (7, 10)]
    assert datamod.shards(4, 4) == [slice(0, 1), slice(1, 2), slice(2, 3), slice(3, 4)]


def test_train_preprocessing_shifts_within_bounds_and_normalizes() -> None:
    raw = np.zeros((64, 28, 28), np.uint8)
    raw[:, 13, 13] = 255  # one bright pixel; after a shift of at most 2 it lies in rows/cols 11..15
    x = datamod.preprocess_train(raw, np.random.default_rng(0))
    assert x.shape == (64, 28, 28) and x.dtype == np.float32
    rows, cols = np.unravel_index(x.reshape(64, -1).argmax(1), (28, 28))
    assert rows.min() >= 11 and rows.max() <= 15 and cols.min() >= 11 and cols.max() <= 15
    assert len(set(zip(rows, cols))) > 1  # the shift is random per sample
    assert x.max() == pytest.approx((1 - datamod.MEAN) / datamod.STD)


def test_listing_imports_no_framework() -> None:
    code = ("import sys, workloads.pipeline as p; p.build_parser(); "
            "print(any(m in sys.modules for m in ('torch', 'tensorflow', 'keras', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == "False", out.stderr


def _openmp_threads() -> int:
    """``omp_get_max_threads()`` of the calling thread: the team an OpenMP operator it runs
    would start (the OpenMP runtime torch loaded, found in this process's maps)."""
    import ctypes

    with open("/proc/self/maps") as maps:
        path = next((line.split()[-1] for line in maps if "libgomp" in line or "libiomp" in line), None)
    if path is None:
        pytest.skip("torch here is not built with OpenMP")
    return int(ctypes.CDLL(path).omp_get_max_threads())


def _threads_of_training_and_validation() -> tuple[int, list[int]]:
    """In a process of its own: OpenMP's number of the training thread and of each validation
    thread, for a model built with --intra-threads 1 and run overlapped with 2 threads."""
    model = pipeline.build_model("torch", seed=0, intra_threads=1)
    seen: list[int] = []
    evaluate = model.evaluate

    def evaluate_and_look(replica, batches):   # runs in the validation pool's threads
        seen.append(_openmp_threads())
        return evaluate(replica, batches)

    model.evaluate = evaluate_and_look
    outcome = schemes.Outcome()
    schemes.run_overlapped(model, datamod.synthetic(128, 64, seed=1), _settings(threads=2, epochs=1), schemes.Reporter(
        1, outcome, echo=lambda line: None), threading.Event())
    return _openmp_threads(), seen


def test_each_validation_thread_runs_its_operators_on_the_training_threads_number() -> None:
    """torch.set_num_threads sets OpenMP's number for its own thread only: a validation thread
    must set it too, or its convolutions run a team of one thread per core beside training.
    Looked at in a fresh process: torch's thread settings are the process's, and the tests
    before this one leave theirs behind."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: OpenMP's default is one thread, as asked")
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        training, seen = pool.apply(_threads_of_training_and_validation)
    assert training == 1            # the training thread, as --intra-threads 1 set it
    assert seen == [1, 1], seen     # each of the 2 validation threads' shards, likewise
