"""The training workload: the source's model as built, its data, its events under the recorder.

Keras runs go through subprocesses, since Keras fixes its backend once per process."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile
from workloads.training import data
from workloads.training.config import TrainingConfig
from workloads.training.steptimes import percentile, summarize

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--epochs", "2", "--steps-per-epoch", "2", "--val-steps", "1", "--train-samples", "320"]


def conv_params(k: int, c_in: int, c_out: int) -> int:
    return k * k * c_in * c_out + c_out


def dense_params(n_in: int, n_out: int) -> int:
    return n_in * n_out + n_out


# The source's layers: conv 7×7 3→128, conv 3×3 128→256, conv 3×3 256→256, dense 256→200,
# dense 200→100; pooling, flatten and dropout have none. The source states 975,692.
CNN_PARAMS = (conv_params(7, 3, 128) + conv_params(3, 128, 256) + conv_params(3, 256, 256)
              + dense_params(256, 200) + dense_params(200, 100))
DENSE_PARAMS = dense_params(32 * 32 * 3, 256) + dense_params(256, 128) + dense_params(128, 100)


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")


def record(tmp_path: Path, command: list[str]) -> tuple[int, runfile.Run]:
    """Run ``command`` under ``devicewatch --record`` and load the run file it writes."""
    output = tmp_path / "run.jsonl"
    done = subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(output), "--gpu", "off",
                           "--quiet", "--", *command], env=env(), capture_output=True, text=True,
                          timeout=300)
    return done.returncode, runfile.load(output)


def events_of(run: runfile.Run, kind: str) -> list[dict]:
    return [e for e in run.events if e.get("kind") == kind]


def test_source_parameter_count_is_the_sum_of_its_layers():
    assert CNN_PARAMS == 975_692


def test_torch_cnn_as_built_has_the_source_parameters_and_valid_padding():
    torch = pytest.importorskip("torch")
    from workloads.training.torch_run import build_model, count_params

    model = build_model("cnn")
    assert count_params(model) == CNN_PARAMS
    # Parameters do not depend on padding (global pooling follows), the feature map does:
    # valid 7×7 on 32 → 26, pool → 13, valid 3×3 → 11 → 9.
    features = model[:7](torch.zeros(1, 3, 32, 32))
    assert tuple(features.shape) == (1, 256, 9, 9)
    assert tuple(model(torch.zeros(2, 3, 32, 32)).shape) == (2, 100)
    assert count_params(build_model("dense")) == DENSE_PARAMS


def test_steps_per_epoch_of_the_full_set_match_the_source():
    config = TrainingConfig(steps_per_epoch=None)
    train = int(50_000 * 0.85)
    assert config.train_steps(train) == 1329          # ceil(42,500 / 32), as Keras printed
    assert config.validation_steps(train, 50_000 - train) == 235   # ceil(7,500 / 32)
    short = TrainingConfig(steps_per_epoch=50)
    assert short.validation_steps(train, 7_500) == 9   # round(50 · 0.15 / 0.85)


def test_step_time_summary():
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.95) == 5.0
    assert percentile(list(range(1, 101)), 0.95) == 95
    assert summarize([0.010, 0.030]) == {"steps": 2, "step_ms_mean": 20.0, "step_ms_p95": 30.0}


def fake_cifar_batch(n: int) -> dict:
    rng = np.random.default_rng(1)
    return {b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
            b"fine_labels": list(rng.integers(0, 100, size=n)), b"coarse_labels": [0] * n}


def test_reads_the_python_archive_and_its_folder_channel_last(tmp_path):
    raw = fake_cifar_batch(40)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    (folder / "train").write_bytes(pickle.dumps(raw))
    archive = tmp_path / "cifar-100-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="cifar-100-python")
    for path in (archive, folder, tmp_path):
        images, labels = data.read_cifar100_train(str(path))
        assert images.shape == (40, 32, 32, 3)
        # Row layout is R plane, G plane, B plane: pixel (row 1, col 2) green is byte 1024 + 32 + 2.
        assert images[7, 1, 2, 1] == raw[b"data"][7, 1024 + 32 + 2]
        assert list(labels) == list(raw[b"fine_labels"])
    loaded = data.load(str(archive), None)
    assert loaded.source == "real"
    assert (len(loaded.x_train), len(loaded.x_val)) == (34, 6)   # the last 15 % validate
    assert data.to_float(loaded.x_train[:1]).max() <= 1.0


def test_a_broken_archive_is_one_clear_error(tmp_path):
    bad = tmp_path / "cifar-100-python.tar.gz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(data.DataError, match="cannot read CIFAR-100"):
        data.read_cifar100_train(str(bad))


def test_synthetic_data_has_the_source_shape():
    x, y = data.synthetic_cifar(500)
    assert x.shape == (500, 32, 32, 3) and x.dtype == np.uint8
    assert y.min() >= 0 and y.max() < 100


def test_synthetic_data_is_learnable_above_chance():
    pytest.importorskip("torch")
    from workloads.training import torch_run

    config = TrainingConfig(model="dense", epochs=2, steps_per_epoch=None, train_samples=2000)
    history = torch_run.run(config, lambda: data.load(None, 2000), log=lambda line: None)
    # Chance is 1 in 100; five times chance after two short epochs is clear learning.
    assert history[-1]["val_accuracy"] > 0.05
    assert history[-1]["loss"] < history[0]["loss"]


@pytest.mark.slow
@pytest.mark.parametrize("framework_args, framework, backend, cpu_method", [
    (["--framework", "torch", "--device", "cpu", "--cpu-method", "env"], "torch", None, "env"),
    (["--framework", "keras", "--backend", "torch", "--device", "cpu", "--cpu-method", "override"],
     "keras", "torch", "override"),
    (["--framework", "keras", "--backend", "tensorflow"], "keras", "tensorflow", None),
], ids=["torch", "keras-torch", "keras-tensorflow"])
def test_a_tiny_run_reports_phases_and_metrics(tmp_path, framework_args, framework, backend, cpu_method):
    command = [sys.executable, "-m", "workloads.training", *framework_args, *TINY]
    code, run = record(tmp_path, command)
    assert code == 0, [line.line for line in run.logs][-5:]
    # The workload describes the run; on Keras, devicewatch's callback adds what it sees (the
    # backend, the parameters of the built model): merged, later keys winning, as every view reads it.
    assert len(events_of(run, "run_info")) == (2 if framework == "keras" else 1)
    info = analysis.run_info(run)
    assert info["framework"] == framework and info["backend"] == backend
    assert info["cpu_method"] == cpu_method
    assert info["params"] == CNN_PARAMS                       # counted from the model as built
    assert info["data"] == "synthetic" and info["device"].startswith("cpu")
    assert (info["batch_size"], info["epochs"], info["steps_per_epoch"]) == (32, 2, 2)
    if cpu_method == "env":
        assert info["cuda_visible_devices"] == ""
    # A wait of the loop long enough to draw is a ``data`` phase nested in ``train``: whether
    # there is one depends on how busy the machine is, not on the workload; the rest is fixed.
    begins = [(e["name"], e["epoch"]) for e in events_of(run, "phase_begin") if e["name"] != "data"]
    ends = [(e["name"], e["epoch"]) for e in events_of(run, "phase_end") if e["name"] != "data"]
    expected = [("train", 1), ("validate", 1), ("train", 2), ("validate", 2)]
    assert begins == expected and ends == expected
    epochs = events_of(run, "epoch")
    assert [e["epoch"] for e in epochs] == [1, 2]
    for epoch in epochs:
        metrics = epoch["metrics"]
        assert {"loss", "accuracy", "val_loss", "val_accuracy", "step_ms_mean", "step_ms_p95"} <= set(metrics)
        assert metrics["steps"] == 2
        assert 0 < metrics["step_ms_mean"] <= metrics["step_ms_p95"]
        assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["loss"] > 0


@pytest.mark.slow
def test_ddp_with_two_gloo_ranks_reports_a_lane_per_rank(tmp_path):
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    if torchrun is None:
        pytest.skip("torchrun is not installed beside this Python")
    command = [torchrun, "--standalone", "--nproc-per-node", "2", "-m", "workloads.training",
               "--ddp", "--device", "cpu", *TINY]
    code, run = record(tmp_path, command)
    assert code == 0, [line.line for line in run.logs][-5:]
    (info_event,) = events_of(run, "run_info")                # rank 0 describes the run
    assert info_event["info"]["world_size"] == 2 and info_event["info"]["dist_backend"] == "gloo"
    lanes = {(e["lane"], e["name"], e["epoch"]) for e in events_of(run, "phase_end")}
    # the workload's "rank0" lane is given as every rank's lane is named (events.rank_lane)
    assert lanes == {(f"rank {r}", name, epoch) for r in (0, 1)
                     for name in ("train", "validate") for epoch in (1, 2)}
    assert len({e["pid"] for e in events_of(run, "phase_end")}) == 2
    assert [e["epoch"] for e in events_of(run, "epoch")] == [1, 2]   # metrics reduced over ranks


def run_workload(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workloads.training", *args], env=env(),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, says", [
    (["--device", "cuda"], "no CUDA GPU"),
    (["--data", "/nonexistent/cifar-100-python.tar.gz"], "no such file"),
    (["--backend", "tensorflow"], "--framework keras only"),
    (["--ddp"], "torchrun"),
], ids=["cuda-without-gpu", "missing-data", "backend-without-keras", "ddp-without-torchrun"])
def test_bad_input_is_one_line_without_a_traceback(args, says):
    if args[:2] == ["--device", "cuda"]:
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("this machine has a GPU")
    done = run_workload(*args)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_listing_the_workload_imports_no_framework():
    code = ("import sys, workloads.training as w; w.build_parser(); "
            "print(sorted(m for m in ('torch', 'tensorflow', 'keras', 'numpy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
