"""Keras 2 (``tf_keras``, and ``tf.keras`` under ``TF_USE_LEGACY_KERAS=1``), armed as its row of
the table: devicewatch's callback on Keras 2's own ``Callback`` in every ``fit``, its batches
taken in eager Python where the TensorFlow hooks time them. The script (``scripts/keras2_fit.py``)
fits 600 samples with ``validation_split=0.25``: 450 / 32 = 15 training steps an epoch (the last
of 2 samples), 3 epochs, one validation each."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile

from test_safety import run_instrumented, run_plain
from test_scripts import record
from test_tf_data import fit_waiting_on_a_slow_map_is_input_bound, unstamped

SCRIPT = Path(__file__).parent / "scripts" / "keras2_fit.py"
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}
LEGACY = {**ENV, "TF_USE_LEGACY_KERAS": "1"}
EPOCHS, STEPS = 3, 15

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(autouse=True)
def _keras2():
    pytest.importorskip("tensorflow", reason="Keras 2 runs on TensorFlow, which is not installed")
    pytest.importorskip("tf_keras", reason="Keras 2 (tf_keras) is not installed: `make setup` installs it")


def assert_read_as_keras2_epochs(out: Path, report: dict) -> None:
    rows = report["epochs"]
    assert [(row["epoch"], row.get("unit")) for row in rows] == [(n, "epoch") for n in range(1, EPOCHS + 1)]
    for row in rows:
        metrics = row["metrics"]
        assert row["train"] > 0 and row["validate"] > 0 and "val_loss" in metrics, row
        assert metrics["steps"] == STEPS and metrics["steps_per_s"] > 0, row
        assert 0 <= metrics["data_wait_s"] < row["train"], row
    phases = analysis.phases(runfile.load(out))
    assert [sum(1 for p in phases if p.name == "validate" and p.epoch == n) for n in range(1, EPOCHS + 1)] == [1] * EPOCHS
    assert report["data_wait"]["source"] == "metric"
    run = runfile.load(out)
    info = [e["info"] for e in run.events if e["kind"] == "run_info"]
    assert info == [{"framework": "tf_keras", "backend": "tensorflow", "epochs": EPOCHS, "steps_per_epoch": STEPS,
                     "params": 20 * 64 + 64 + 64 * 2 + 2}]
    assert all(e.get("source") == "auto" for e in run.events if e["kind"] in ("phase_begin", "epoch"))
    assert [e for e in run.events if e["kind"] == "instrument" and e["state"] == "error"] == []
    assert "tf_keras" in report["instrumentation"] and "tensorflow" in report["instrumentation"]


def test_a_tf_keras_fit_with_validation_split_reads_its_epochs_steps_and_validations(tmp_path):
    out, report = record(tmp_path, sys.executable, str(SCRIPT), env=ENV)
    assert_read_as_keras2_epochs(out, report)


def test_tf_keras_under_the_legacy_switch_reads_the_same(tmp_path):
    """``tf.keras`` with TF_USE_LEGACY_KERAS=1 is Keras 2: importing it imports ``tf_keras``."""
    out, report = record(tmp_path, sys.executable, str(SCRIPT), "--tf-keras", env=LEGACY)
    assert_read_as_keras2_epochs(out, report)


def test_the_script_prints_the_same_losses_and_weights_byte_for_byte(tmp_path):
    """Under the hooks Keras 2's step is handed each batch taken in eager Python: the same
    arithmetic, to the bit (the weights' digest), the smaller last batch of each pass included."""
    command = [sys.executable, str(SCRIPT)]
    plain = run_plain(tmp_path, command, ENV)
    instrumented, sent = run_instrumented(tmp_path, command, ENV)
    assert plain.returncode == instrumented.returncode == 0, instrumented.stderr[-2000:]
    assert instrumented.stdout == plain.stdout and unstamped(instrumented.stderr) == unstamped(plain.stderr)
    assert b"model tf_keras.src.engine.training" in plain.stdout and b"weights" in plain.stdout
    figures = [e["metrics"] for e in sent if e["kind"] == "epoch"]
    assert [f["steps"] for f in figures] == [STEPS] * EPOCHS and all("data_wait_s" in f for f in figures), figures


def test_the_step_is_handed_its_batch_as_the_flat_tensors_of_the_iterator_op(tmp_path):
    """Under the hooks fit calls the step that takes the op's tensors (``keras2_flat``), not the
    slower one of a batch taken by ``next`` (``fetching``), whose figures would be the same."""
    completed, sent = run_instrumented(tmp_path, [sys.executable, str(SCRIPT), "--step-function"], ENV)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert b"train function _Hooks.keras2_flat.<locals>.train_function" in completed.stdout, completed.stdout
    figures = [e["metrics"] for e in sent if e["kind"] == "epoch"]
    assert [f["steps"] for f in figures] == [STEPS] * EPOCHS and all("data_wait_s" in f for f in figures), figures


def test_a_tf_keras_fit_waiting_on_a_slow_tf_data_map_is_input_bound(tmp_path):
    """``scripts/tf_keras_fit.py`` as Keras 3's test has it, fitted by Keras 2: each of the 24
    batches of an epoch takes 0.2 s to make, one after the other; a step takes a few ms."""
    fit_waiting_on_a_slow_map_is_input_bound(tmp_path, ENV, "--keras2")


def test_a_callback_the_script_passed_itself_is_not_added_a_second_time(tmp_path):
    """``integrations.keras2.DevicewatchCallback`` passed by hand, in a lane of its own: its
    events alone, none of an added one (whose events would be ``source: auto`` in lane main)."""
    _, sent = run_instrumented(tmp_path, [sys.executable, str(SCRIPT), "--own-callback"], ENV)
    phases = [(e["kind"], e["name"], e["epoch"], e["lane"], e.get("source")) for e in sent if e["kind"] == "phase_begin"]
    assert phases == [(kind, name, n, "mine", None) for n in range(1, EPOCHS + 1)
                      for kind, name in (("phase_begin", "train"), ("phase_begin", "validate"))]
    assert [e["info"]["framework"] for e in sent if e["kind"] == "run_info"] == ["tf_keras"]
    assert [e["metrics"]["steps"] for e in sent if e["kind"] == "epoch"] == [STEPS] * EPOCHS
