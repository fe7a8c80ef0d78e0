"""What the zero-code instrumentation costs a step of Keras 2's ``fit`` (``tf_keras``).

Under the TensorFlow hooks Keras 2's step is handed each batch taken by the iterator's own op in
eager Python, where the wait is timed (``zero_code/tf_hooks.py``, docs/zero-code.md#tfdata),
instead of taking it inside its compiled step, and each call of the step is counted. The
workload is the worst case for that: a tiny model (20 inputs, 16 hidden, batches of 32 from
numpy arrays), well under a millisecond a step, recorded by ``devicewatch --record`` with the
instrumentation on.

Whole runs differ here by far more than the figure (the machine is shared), so it comes from one
run that alternates, as ``bench_zero_code`` does: every BURST steps a batch callback switches
the hooks off (Keras 2's own compiled step, which takes its batch itself, and TensorFlow's own
``Function.__call__``) or on, and the bursts are timed apart, by wall time and by the process's
CPU time (all its threads, tf.data's too); neighbouring bursts are paired (one of each kind,
each kind as often first) and the figure is the median over the pairs. The callback says it
takes Keras's logs as tensors, or Keras would copy each batch's to numpy for it. The first
epoch (where the functions are traced) is left out. ``--runs`` repeats it to show the spread,
each time with a control run that keeps the hooks on in both kinds of burst (what the method
reads when there is nothing to find). ``python -m bench.bench_zero_code`` runs it too.

    python -m bench.bench_keras2_fetch [--runs 3] [--epochs 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIT = """
import statistics, sys, time
import numpy as np
import tf_keras as keras
from devicewatch.integrations.zero_code import tf_hooks

epochs, control = int(sys.argv[1]), sys.argv[2] == "control"
BURST, STEPS = 50, 600   # steps an epoch: a whole number of pairs of bursts, no smaller last batch
from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function
hooks = tf_hooks._HOOKS
if hooks is None:
    raise SystemExit("the TensorFlow hooks are not armed: run this under devicewatch --record")
counted_call = Function.__call__   # the hook that counts a marked tf.function's calls; TensorFlow's own under it
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(STEPS * 32, 20)).astype("float32")
y = (x[:, 0] > 0).astype("int64")
model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
bursts = []   # (hooked, seconds, CPU seconds) of each burst after the first epoch: 1 with 2, 3 with 4, ...


class Alternate(keras.callbacks.Callback):
    _supports_tf_logs = True   # else Keras copies every batch's logs to numpy for it: a cost the bare fit has not

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch, self.fetched, self.began = epoch, None, None

    def close(self):
        if self.fetched is not None and self.epoch > 0:
            bursts.append((self.fetched, time.perf_counter() - self.began[0], time.process_time() - self.began[1]))

    def on_train_batch_begin(self, batch, logs=None):
        if batch % BURST == 0:
            self.close()
            n = batch // BURST   # on, off, off, on, on, off, ...: each kind as often first as second
            self.fetched = (n % 2 == 0) == ((n // 2) % 2 == 0)
            hooked = self.fetched or control   # the control keeps the hooks in both kinds of burst
            hooks.eager_fetch_on = hooked
            Function.__call__ = counted_call if hooked else counted_call.__wrapped__
            self.began = time.perf_counter(), time.process_time()

    def on_epoch_end(self, epoch, logs=None):
        self.close()
        self.fetched = None
        hooks.eager_fetch_on = True
        Function.__call__ = counted_call


model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, callbacks=[Alternate()])
pairs = list(zip(bursts[0::2], bursts[1::2]))
seconds = {kind: sum(t for hooked, t, _ in bursts if hooked == kind) for kind in (False, True)}
counted = {kind: BURST * sum(hooked == kind for hooked, _, _ in bursts) for kind in (False, True)}
figures = [counted[False] / seconds[False], counted[True] / seconds[True]]
for clock in (1, 2):  # wall time, then the process's CPU time (all its threads: tf.data's too)
    figures.append(statistics.median(a[clock] / b[clock] if a[0] else b[clock] / a[clock] for a, b in pairs))
    figures.append(BURST / statistics.median(burst[clock] for burst in bursts if not burst[0]))
print(*figures)
"""


def record(script: Path, out: Path, epochs: int, mode: str) -> dict[str, tuple[float, float]]:
    """One recorded run: {clock: (slowdown, bare steps/s)} (``bench_zero_code.alternation``)."""
    from bench.paired_bursts import alternation

    env = {k: v for k, v in os.environ.items() if k not in ("DEVICEWATCH_EVENTS", "DEVICEWATCH_INSTRUMENT")}
    env.update(PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    command = [sys.executable, "-m", "devicewatch", "--record", str(out), "--quiet", "--", sys.executable,
               str(script), str(epochs), mode]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"the recorded fit failed: {(result.stderr or result.stdout)[-2000:]}")
    from devicewatch.runformat import runfile

    logs = [log.line for log in runfile.load(out).logs if log.stream == "stdout"]
    return alternation([float(v) for v in logs[-1].split()])


def runs(count: int, epochs: int) -> tuple[list[dict[str, tuple[float, float]]], list[dict[str, tuple[float, float]]]]:
    """COUNT alternating runs and their controls, each line printed as it comes."""
    from bench.paired_bursts import line

    with tempfile.TemporaryDirectory(prefix="bench-keras2-") as tmp:
        folder = Path(tmp)
        script = folder / "fit.py"
        script.write_text(FIT)
        hooked, controls = [], []
        for run in range(count):
            hooked.append(record(script, folder / f"alternate-{run}.jsonl", epochs, "alternate"))
            print(f"Keras 2 run {run + 1}: {line(hooked[-1])}", flush=True)
            controls.append(record(script, folder / f"control-{run}.jsonl", epochs, "control"))
            print(f"Keras 2 control {run + 1}, hooked both ways: {line(controls[-1])}", flush=True)
    return hooked, controls


def installed() -> bool:
    return importlib.util.find_spec("tf_keras") is not None


def main() -> None:
    from bench.paired_bursts import summary

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="alternating runs (default 3)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs of 600 steps a run, the first left out (default 4)")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first is left out")
    if not installed():
        raise SystemExit("Keras 2 (tf_keras) is not installed: `make setup` installs it")
    hooked, controls = runs(args.runs, args.epochs)
    print()
    print(f"Keras 2's fit, hooked vs bare, {args.runs} runs alternating every 50 steps (budget +5%):")
    print(summary("hooked", hooked))
    print(summary("control (hooked both ways)", controls))


if __name__ == "__main__":
    main()
