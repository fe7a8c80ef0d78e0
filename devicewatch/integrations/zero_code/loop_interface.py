"""What the loop hears from the hooks and says through its voice, typed once.

The loop (``loop.Loop`` and its parts) never imports torch or TensorFlow: the hooks feed it
observations and hand it a few callables once armed, each typed here, so that a part of the loop
is tested with literal inputs and a hook cannot hand it something it does not expect.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Protocol

from ...loop_figures import UnitFigures

TRAIN, VALIDATE, DATA, WAIT = "train", "validate", "data", "wait"
EPOCH, SEGMENT = "epoch", "segment"   # what a unit of the loop is: a pass over the data, or the stretch between evaluations
LANE = "main"
LOADER, INPUT, OWN = "loader", "input", "own"  # what a sample of the loop's wait was spent on (``Loop.sampled``)
DATALOADER = "DataLoader"  # what the waits timed in a DataLoader's ``__next__`` were spent on

# What the hooks hand the loop once armed (None until then, and in a process whose hooks give none):
CallsWatch = Callable[[], None]              # the hooks watch the trained model's calls from then on
WaitWatch = Callable[[], None]               # starts the watcher that samples the loop's wait
LoopLeft = Callable[[], "bool | None"]       # whether the ``for`` loop around the steps was left (None: unknown)
WorkerBatches = Callable[[], "tuple[float, int]"]   # seconds the loader's workers took making batches, and how many


class Voice(Protocol):
    """Where the loop's phases and figures go (``process_state.Voice``, within the event budget)."""

    def phase(self, kind: str, name: str, epoch: int | None, lane: str, at: float) -> None: ...
    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool: ...
    def epoch(self, epoch: int, figures: UnitFigures, unit: str = EPOCH) -> None: ...
    def setup(self, train_source: Hashable | None) -> None: ...


class StepCounter(Protocol):
    """What counts the loop's optimizer steps beside it (``trial.Trial`` in a trial of ``devicewatch try``)."""

    def step(self, now: float) -> None: ...
