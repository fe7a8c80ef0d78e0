"""tf.data's wait, measured by the TensorFlow hooks (``zero_code/tf_hooks.py``) in unmodified
scripts recorded as a user would: Keras's ``Model.fit`` on TensorFlow, and a training loop of
one's own (a ``tf.function`` step under a ``GradientTape``). Each script is run for real; its
batches are made by a tf.data map that sleeps (``scripts/tf_data.py``), so what the loop waits
is known: 750 training samples in batches of 32, 24 batches an epoch, the last one of 14.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile

from conftest import ROOT
from test_safety import run_instrumented, run_plain
from test_scripts import record

SCRIPTS = Path(__file__).parent / "scripts"
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}
BATCHES = 24
# TensorFlow's own log lines begin with absl's stamp: severity, date, time and thread id. Where
# its oneDNN notice is printed whatever TF_CPP_MIN_LOG_LEVEL says (CPUs with AVX-512), two runs
# differ there with or without devicewatch: stderr is compared without the stamps.
ABSL_STAMP = re.compile(rb"^([IWEF])\d{4} [\d:.]+ +\d+ ", re.MULTILINE)


def unstamped(stderr: bytes) -> bytes:
    return ABSL_STAMP.sub(rb"\1 ", stderr)


pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(autouse=True)
def _frameworks():
    pytest.importorskip("tensorflow")
    pytest.importorskip("keras")


def script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(SCRIPTS / name), *args]


def data_phases_lie_inside_train_phases(out: Path) -> list[analysis.Phase]:
    run = runfile.load(out)
    every = analysis.phases(run)
    trains = {p.epoch: p for p in every if p.name == "train"}
    data = [p for p in every if p.name == "data"]
    assert all(trains[p.epoch].start <= p.start and p.end <= trains[p.epoch].end and p.lane == "main" for p in data)
    return data


def test_keras_fit_waiting_on_a_slow_tf_data_map_is_input_bound(tmp_path):
    # each batch takes 0.2 s to make, one after the other; a step of the model takes a few ms
    fit_waiting_on_a_slow_map_is_input_bound(tmp_path, ENV)


def fit_waiting_on_a_slow_map_is_input_bound(tmp_path: Path, env: dict[str, str], *keras: str) -> None:
    """``scripts/tf_keras_fit.py`` (by Keras 3, or KERAS ``--keras2``) whose map makes each of an
    epoch's batches in 0.2 s, one after the other, recorded: input-bound, its wait the map's."""
    out, report = record(tmp_path, *script("tf_keras_fit.py", *keras, "--delay", "0.2"), env=env)
    rows = report["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2]
    for row in rows:
        metrics = row["metrics"]
        assert metrics["steps"] == BATCHES and "val_loss" in metrics, row
        assert metrics["data_wait_s"] > 0.5 * row["total"], row
        assert metrics["data_wait_s"] < BATCHES * 0.2 + 0.5, row  # no more than the map slept, give or take
    data = data_phases_lie_inside_train_phases(out)
    assert sum(p.duration for p in data) > 0.5 * sum(row["total"] for row in rows)
    assert report["verdict"]["label"] == "input-bound", report["verdict"]
    assert report["data_wait"]["source"] == "metric"
    assert report["instrumentation"].startswith("active in 1 process") and "tensorflow" in report["instrumentation"]


def test_keras_fit_on_an_in_memory_pipeline_waits_little(tmp_path):
    out, report = record(tmp_path, *script("tf_keras_fit.py"), env=ENV)
    rows = report["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2]
    for row in rows:
        assert row["metrics"]["steps"] == BATCHES and row["metrics"]["data_wait_s"] >= 0, row
    assert report["data_wait"]["share"] < 0.25, report["data_wait"]
    assert report["verdict"]["label"] != "input-bound", report["verdict"]


def test_keras_fit_with_several_steps_per_execution_claims_no_figures(tmp_path):
    """The batches are taken inside the compiled loop of steps: neither the wait nor the steps
    are measured, and none is claimed (no data_wait_s of 0, no step count that is a count of calls)."""
    out, report = record(tmp_path, *script("tf_keras_fit.py", "--delay", "0.05", "--steps-per-execution", "4"),
                         env=ENV)
    rows = report["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2]
    for row in rows:
        assert row["train"] > 0 and row["validate"] > 0 and "val_loss" in row["metrics"], row
        assert not {"data_wait_s", "steps", "steps_per_s"} & set(row["metrics"]), row
    assert report["data_wait"] is None


def test_a_custom_training_loop_gets_epochs_phases_steps_and_its_wait(tmp_path):
    out, report = record(tmp_path, *script("tf_custom_loop.py", "--delay", "0.05"), env=ENV)
    rows = report["epochs"]
    assert [row["epoch"] for row in rows] == [1, 2]
    for row in rows:
        assert row["unit"] == "epoch" and row["train"] > 0 and row["validate"] > 0, row
        metrics = row["metrics"]
        # one step a call of the traced train step; the wait of every batch of the pass
        assert metrics["steps"] == BATCHES and metrics["steps_per_s"] > 0, row
        assert BATCHES * 0.05 * 0.5 < metrics["data_wait_s"] < BATCHES * 0.05 + 0.5, row
    run = runfile.load(out)
    begins = [(e["name"], e["epoch"], e.get("source")) for e in run.events if e["kind"] == "phase_begin"
              and e["name"] != "data"]
    assert begins == [("train", 1, "auto"), ("validate", 1, "auto"), ("train", 2, "auto"), ("validate", 2, "auto")]
    assert data_phases_lie_inside_train_phases(out)
    assert [e["state"] for e in run.events if e["kind"] == "instrument" and e["state"] == "error"] == []


@pytest.mark.parametrize("name", ["tf_keras_fit.py", "tf_custom_loop.py"])
def test_the_scripts_print_the_same_losses_and_weights_byte_for_byte(tmp_path, name):
    """Keras's fit takes its batches another way under the hooks: the same arithmetic, to the
    bit (the weights' digest), the last batch of each pass smaller than the others included."""
    command = script(name)
    plain = run_plain(tmp_path, command, ENV)
    instrumented, sent = run_instrumented(tmp_path, command, ENV)
    assert plain.returncode == instrumented.returncode == 0, instrumented.stderr[-2000:]
    assert instrumented.stdout == plain.stdout and unstamped(instrumented.stderr) == unstamped(plain.stderr)
    assert b"weights" in plain.stdout
    figures = [e["metrics"] for e in sent if e["kind"] == "epoch"]
    assert len(figures) == 2 and all(f["steps"] == BATCHES and "data_wait_s" in f for f in figures), figures


FAILING_LOOP = """
import tensorflow as tf
from tensorflow.python.data.ops.iterator_ops import OwnedIterator
from devicewatch.integrations.zero_code import tf_hooks

class Loop:
    def fetch(self, *args):
        raise RuntimeError("the loop's own bookkeeping broke")
    exhausted = endless = backward = step = finish = lambda self, *args: None

class Voice:
    def say_left_out(self):
        pass

class Process:
    live, armed, loop, voice, errors = True, [], Loop(), Voice(), []
    def error(self, framework, hook, exc):
        self.errors.append((framework, hook, str(exc)))
    def replace(self, owner, name, new):
        setattr(owner, name, new)
    def on_disarm(self, undo):
        pass

original = OwnedIterator.__next__
process = Process()
tf_hooks.arm(tf, process, "tensorflow")
data = tf.data.Dataset.range(5)
print([int(x) for x in data], [int(x) for x in data])
print(process.errors, OwnedIterator.__next__ is original)
"""


def test_a_hook_that_fails_is_reported_once_put_back_and_the_batches_come_out_unchanged():
    """Our bookkeeping raising inside ``__next__``: said once, TensorFlow's ``__next__`` back in
    place, every batch as it would have been (run in a process of its own: it patches TensorFlow)."""
    result = subprocess.run([sys.executable, "-c", FAILING_LOOP], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **ENV})
    assert result.returncode == 0, result.stderr[-2000:]
    batches, errors = result.stdout.splitlines()
    assert batches == "[0, 1, 2, 3, 4] [0, 1, 2, 3, 4]"
    assert errors == "[('tensorflow', 'timed next', \"the loop's own bookkeeping broke\")] True"


def test_tensorflow_imported_without_a_training_step_names_what_its_hooks_look_for(tmp_path):
    """A script that imports TensorFlow but never takes a gradient or steps an optimizer (it
    only prints Keras-style epoch lines): the reason names TensorFlow's training as its row says."""
    from devicewatch.integrations.zero_code import frameworks

    code = "import tensorflow as tf\nfor e in (1, 2):\n    tf.ones(3) * 2\n    print(f'Epoch {e}/2')\n"
    out, _ = record(tmp_path, sys.executable, "-c", code, env=ENV)
    reason = runfile.load(out).end.instrument["reason"]
    # TensorFlow imports Keras 3 (its tf.keras) as it loads: both are named
    assert reason == ("keras, tensorflow imported in 1 process, but its hooks saw no training step "
                      f"({frameworks.training_steps()}); the epochs were read from the workload's output instead")
    assert "no GradientTape gradient or optimizer step of TensorFlow" in reason
