"""What taking each batch in eager Python costs a step of Keras 2's ``fit`` (``tf_keras``).

Under the TensorFlow hooks Keras 2's step is handed a batch taken from its iterator in eager
Python, where the wait is timed (``zero_code/tf_hooks.py``, docs/zero-code.md#tfdata), instead
of taking it inside its compiled step. The workload is the worst case for that: a tiny model
(20 inputs, 16 hidden, batches of 32 from numpy arrays), well under a millisecond a step,
recorded by ``devicewatch --record`` with the instrumentation on.

Whole runs differ here by far more than the figure (the machine is shared), so it comes from one
run that alternates, as ``bench_zero_code`` does: every BURST steps a batch callback switches
the fetch off (Keras 2's own compiled step, which takes its batch itself) or on, and the two
kinds of burst are timed apart; neighbouring bursts see the same outside load. The first epoch
(where both functions are traced) is left out. ``--runs`` repeats it to show the spread, each
time with a control run that keeps the fetch on in both kinds of burst (what the method reads
when there is nothing to find).

    python -m bench.bench_keras2_fetch [--runs 3] [--epochs 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIT = """
import sys, time
import numpy as np
import tf_keras as keras
from devicewatch.integrations.zero_code import tf_hooks

epochs, control = int(sys.argv[1]), sys.argv[2] == "control"
BURST, STEPS = 50, 600   # steps an epoch: a whole number of pairs of bursts, no smaller last batch
hooks = tf_hooks._HOOKS
if hooks is None:
    raise SystemExit("the TensorFlow hooks are not armed: run this under devicewatch --record")
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(STEPS * 32, 20)).astype("float32")
y = (x[:, 0] > 0).astype("int64")
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
seconds = {True: 0.0, False: 0.0}


class Alternate(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch, self.fetched, self.began = epoch, None, 0.0

    def close(self):
        if self.fetched is not None and self.epoch > 0:
            seconds[self.fetched] += time.perf_counter() - self.began

    def on_train_batch_begin(self, batch, logs=None):
        if batch % BURST == 0:
            self.close()
            self.fetched = (batch // BURST) % 2 == 0   # the kind of burst; the control fetches in both
            hooks.eager_fetch_on = self.fetched or control
            self.began = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.close()
        self.fetched = None
        hooks.eager_fetch_on = True


model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, callbacks=[Alternate()])
steps = STEPS // 2 * (epochs - 1)
print(f"{steps / seconds[False]:.1f} {steps / seconds[True]:.1f}")
"""


def record(script: Path, out: Path, epochs: int, mode: str) -> tuple[float, float]:
    """One recorded run: (steps/s of Keras 2's own step, steps/s of the fetched step)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DEVICEWATCH_EVENTS", "DEVICEWATCH_INSTRUMENT")}
    env.update(PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    command = [sys.executable, "-m", "devicewatch", "--record", str(out), "--quiet", "--", sys.executable,
               str(script), str(epochs), mode]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"the recorded fit failed: {(result.stderr or result.stdout)[-2000:]}")
    from devicewatch.runformat import runfile

    logs = [log.line for log in runfile.load(out).logs if log.stream == "stdout"]
    own, fetched = (float(v) for v in logs[-1].split())
    return own, fetched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="alternating runs (default 3)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs of 600 steps a run, the first left out (default 4)")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first is left out")
    if importlib.util.find_spec("tf_keras") is None:
        raise SystemExit("Keras 2 (tf_keras) is not installed: `make setup` installs it")
    with tempfile.TemporaryDirectory(prefix="bench-keras2-") as tmp:
        folder = Path(tmp)
        script = folder / "fit.py"
        script.write_text(FIT)
        slowdowns, costs, controls = [], [], []
        for run in range(args.runs):
            own, fetched = record(script, folder / f"alternate-{run}.jsonl", args.epochs, "alternate")
            slowdowns.append(own / fetched - 1)
            costs.append(1e6 / fetched - 1e6 / own)
            print(f"run {run + 1}: {own:6.0f} steps/s Keras 2's own step, {fetched:6.0f} fetched: "
                  f"{100 * slowdowns[-1]:+.1f}%, {costs[-1]:+.1f} µs a step", flush=True)
            first, second = record(script, folder / f"control-{run}.jsonl", args.epochs, "control")
            controls.append(first / second - 1)
            print(f"control {run + 1}: fetched both ways: {100 * controls[-1]:+.1f}%", flush=True)
    print()
    print(f"Keras 2's step with its batch taken in eager Python, {args.runs} runs alternating every 50 steps: "
          + ", ".join(f"{100 * s:+.1f}%" for s in slowdowns)
          + f" (median {100 * statistics.median(slowdowns):+.1f}%); a step costs "
          + ", ".join(f"{c:+.1f}" for c in costs) + f" µs more (median {statistics.median(costs):+.1f} µs)")
    print("the same alternation with the fetch on in both kinds of burst: "
          + ", ".join(f"{100 * c:+.1f}%" for c in controls))


if __name__ == "__main__":
    main()
