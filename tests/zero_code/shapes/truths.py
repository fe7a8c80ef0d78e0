"""The truth of every training-script shape in this folder: what a correct reading of an
unmodified run must find (``tests/zero_code/test_shapes.py`` records each case and compares).

Every number below is worked out from the script itself (dataset sizes, batch sizes,
accumulation, the loop's own rules), never copied from a devicewatch run:

- ``unit``: "epoch" for loops over a dataset, "segment" for step-based training, where a unit
  is the stretch of training between two evaluations.
- ``units``: how many epochs (or segments) the script runs.
- ``steps``: optimizer steps in each unit (per rank for DDP: every rank steps its optimizer
  once per batch of its shard).
- ``validations``: how many validate phases each unit holds, counted over the unit's lanes.
  Validation passes outside every epoch (Lightning's sanity check before training) belong to
  no unit and are not counted.
- ``data_wait``: the share of the training loop spent waiting on input, as a (low, high)
  range, or NOT_MEASURED where the loop's wait cannot be seen.
  ``wait_may_be_unmeasured``: the script's batches are pulled inside a compiled step (Keras
  fit on TensorFlow), where "not measured" is also an honest answer; a measured share must
  still fall in the range.
- ``verdict``: the report's verdict label, only where it is certain: runs that wait on their
  input most of the time are "input-bound" (devicewatch's threshold is a 30% wait).
- ``lanes`` and ``last_rank``: for the torchrun case, one lane per rank, and the rank that
  finishes each epoch last (rank 0: it validates while rank 1 waits at a barrier).

The shares: "low" is (0, 0.3), below the input-bound threshold; all of those scripts keep
their data in memory and spend their loop in the model (measured bare, outside devicewatch,
at 2-10% of the loop: a DataLoader's ``__next__`` timed against the loop). The input-bound
scripts sleep for their "disk" far longer than their model computes, (0.5, 1) of the loop:

- keras_tf_data reads each example in 3 ms, one after the other: 96 ms of sleep a batch of 32
  and ~16 ms of py_function calls, against ~4 ms of model step (measured bare: 100-125 ms a
  step with the slow map, 4 ms with the same data gathered in the graph). Over the run the
  share is lower than each later epoch's ~95%: the first step also traces and compiles the
  model (1-2.5 s on this machine), time in the loop that is no wait: 5.5 s of waiting in
  ~7-8 s of loop, 0.65-0.85.
- dataloader_workers reads each sample in 6 ms: 192 ms a batch of 32 per worker, 96 ms a
  batch with its two workers, against a few ms of a tiny CNN (measured bare: 90-95% of the
  loop in ``__next__``).

Environment: OMP_NUM_THREADS=1 in every case. The suite runs on a shared 2-core machine,
where torch's two spinning OpenMP threads slow a tiny model five-fold as soon as another
program takes a core (a 8 s script took 45 s); one thread keeps each run's time steady. The
scripts do not set it; torchrun sets it for its ranks anyway.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

SHAPES = Path(__file__).resolve().parent

NOT_MEASURED = "not measured"
LOW = (0.0, 0.3)
INPUT_BOUND = (0.5, 1.0)

BASE_ENV = {
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",          # no network: every model is built from a config
    "TRANSFORMERS_OFFLINE": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",    # TensorFlow's start-up chatter
}


@dataclass(frozen=True)
class Case:
    id: str
    script: str
    units: int
    steps: tuple[int, ...]
    validations: tuple[int, ...]
    data_wait: tuple[float, float] | str
    unit: str = "epoch"
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    launcher: tuple[str, ...] = ()          # python -m LAUNCHER... before the script
    wait_may_be_unmeasured: bool = False
    verdict: str | None = None
    lanes: tuple[str, ...] | None = None
    last_rank: tuple[int, ...] | None = None
    note: str = ""

    def command(self, python: str = sys.executable) -> list[str]:
        return [python, *self.launcher, str(SHAPES / self.script), *self.args]

    def environment(self) -> dict[str, str]:
        return {**BASE_ENV, **self.env}

    def __post_init__(self) -> None:
        assert len(self.steps) == self.units and len(self.validations) == self.units, self.id
        assert self.unit in ("epoch", "segment"), self.id


CASES: list[Case] = [
    Case("hf_trainer", "hf_trainer.py", units=3, steps=(24,) * 3, validations=(1,) * 3, data_wait=LOW,
         note="Trainer, eval_strategy='epoch', 3 epochs; 384 samples / batch 16 = 24 steps an epoch"),
    Case("hf_no_trainer", "hf_no_trainer.py", units=3, steps=(20,) * 3, validations=(1,) * 3, data_wait=LOW,
         note="AdamW + get_scheduler, 3 epochs; 320 samples / batch 16 = 20 steps an epoch"),
    Case("accelerate_loop", "accelerate_loop.py", units=3, steps=(40,) * 3, validations=(1,) * 3,
         data_wait=LOW, note="accelerator.prepare(...), 3 epochs; 1280 samples / batch 32 = 40 steps"),
    Case("lightning_fit", "lightning_fit.py", units=3, steps=(20,) * 3, validations=(1,) * 3, data_wait=LOW,
         note="Trainer(max_epochs=3) with its sanity check before training (no epoch's); "
              "640 samples / batch 32 = 20 steps"),
    Case("keras_tf_data", "keras_tf_data.py", units=3, steps=(15,) * 3, validations=(1,) * 3,
         data_wait=INPUT_BOUND, verdict="input-bound",
         note="fit on tf.data whose map sleeps 3 ms an example; 480 / 32 = 15 steps an epoch"),
    Case("keras_torch", "keras_torch.py", units=3, steps=(24,) * 3, validations=(1,) * 3, data_wait=LOW,
         note="KERAS_BACKEND=torch set by the script; 768 / 32 = 24 steps an epoch"),
    Case("tf_keras", "tf_keras.py", units=3, steps=(25,) * 3, validations=(1,) * 3, data_wait=LOW,
         wait_may_be_unmeasured=True,
         note="tf.keras fit on numpy arrays, validation_split=0.2 of 1000: 800 / 32 = 25 steps"),
    Case("tf_custom_loop", "tf_custom_loop.py", units=3, steps=(20,) * 3, validations=(1,) * 3,
         data_wait=LOW,
         note="GradientTape + @tf.function train_step, 3 epochs; 1280 / 64 = 20 steps an epoch"),
    Case("dataloader_workers", "dataloader_workers.py", units=3, steps=(12,) * 3, validations=(1,) * 3,
         data_wait=INPUT_BOUND, verdict="input-bound",
         note="num_workers=2, workers started anew every epoch; 384 / 32 = 12 steps an epoch"),
    Case("dataloader_workers_persistent", "dataloader_workers.py", units=3, steps=(12,) * 3,
         validations=(1,) * 3, data_wait=INPUT_BOUND, verdict="input-bound", args=("--persistent-workers",),
         note="num_workers=2, persistent_workers=True; 384 / 32 = 12 steps an epoch"),
    Case("prefetch_generator", "prefetch_generator.py", units=3, steps=(16,) * 3, validations=(1,) * 3,
         data_wait=LOW, note="a DataPrefetcher one batch ahead; 1024 / 64 = 16 steps an epoch"),
    Case("grad_accum", "grad_accum.py", units=4, steps=(12,) * 4, validations=(2,) * 4, data_wait=LOW,
         note="48 batches of 16 an epoch, a step every 4: 12 steps; validated half-way and at the end; "
              "early stopping (patience 1, min_delta 0.02) stops after epoch 4 of at most 10 "
              "(val loss 0.8286, 0.7097, 0.6712, 0.6599: epoch 4 improves by 0.011 < 0.02)"),
    Case("lm_steps", "lm_steps.py", unit="segment", units=3, steps=(60,) * 3, validations=(1,) * 3,
         data_wait=LOW,
         note="nanoGPT-style, max_iters=180, estimate_loss() every 60 steps: 3 segments of 60 steps; "
              "get_batch() slices a tensor, no DataLoader"),
    Case("torchrun_ddp", "torchrun_ddp.py", units=3, steps=(32,) * 3, validations=(1,) * 3, data_wait=LOW,
         launcher=("-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"),
         lanes=("rank 0", "rank 1"), last_rank=(0, 0, 0),
         note="DDP on gloo, 2 ranks; 2048 samples / 2 ranks / batch 32 = 32 steps per rank and epoch; "
              "rank 0 validates 16384 samples alone while rank 1 waits at dist.barrier()"),
]
