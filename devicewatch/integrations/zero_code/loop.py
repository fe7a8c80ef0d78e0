"""What a training loop is doing, inferred from what PyTorch tells the hooks.

``Loop`` is a state machine fed with observations (a batch taken from a DataLoader and how long
the loop waited for it, a DataLoader running out, ``model.train()``/``model.eval()``, a
backward pass, an optimizer step) and speaking through a ``voice`` (phases and epoch metrics).
It never reads a clock or imports torch, so it is tested with literal inputs.

How it reads a loop:

- **Training** is confirmed by the first backward pass or optimizer step; until then nothing is
  said (an inference script, the torchrun agent or a DataLoader worker stays silent). The first
  train phase then begins where training began: the ``model.train()`` call or the first
  training batch before it.
- **Train or validate**: a batch taken with gradients on and the model in training mode is a
  training batch; under ``no_grad``/``inference_mode``, after ``model.eval()``, or from another
  data set than the training one, a validation batch. ``model.eval()`` begins validation at
  once, and training activity (``model.train()``, a training batch, a backward pass, a step)
  ends it.
- **Epochs**: with a DataLoader, an epoch is one pass over the training data set (the loader
  running out, or a new pass beginning), with the validation that follows it; without one, an
  epoch is a stretch of training and the validation after it (the train → validate → train
  turn). Numbered from 1.
- **Data wait**: the time the loop was blocked in the training DataLoader's ``__next__``,
  summed exactly per epoch (``data_wait_s``), and drawn as ``data`` phases inside the train
  phase where a wait is long enough to see (``DataPhases``; waits under DATA_JOINABLE are
  only summed).

When a framework's callback owns the phases (``declare_owner``: Lightning, Keras, Hugging
Face), the loop says no train/validate phase of its own: it follows the callback's phases and
keeps only the data wait and the steps, which the callback adds to its epoch's metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Protocol

TRAIN, VALIDATE, DATA = "train", "validate", "data"
LANE = "main"
DATA_VISIBLE = 0.05     # seconds: a shorter wait is summed but not drawn (half the default sample interval)
DATA_JOINABLE = 0.001   # seconds: a wait shorter than this is only summed (a fast loop's every batch)
DATA_JOIN_GAP = 0.005   # seconds: waits closer than this are drawn as one ...
DATA_JOIN_SHARE = 0.9   # ... while waiting fills this share of the joined span
DATA_PHASE_RATE = 10.0  # data phases a second at most (a token bucket) ...
DATA_PHASE_BURST = 10.0  # ... after a burst of this many; the waits left undrawn still count in data_wait_s
PENDING_DATA_PHASES = 16  # data phases held while training is not yet confirmed


class Voice(Protocol):
    def phase(self, kind: str, name: str, epoch: int | None, lane: str, at: float) -> None: ...
    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool: ...
    def epoch(self, epoch: int, metrics: dict[str, Any]) -> None: ...


@dataclass
class EpochCounts:
    """One epoch's training figures: optimizer steps, backward passes, data wait, train time."""

    steps: int = 0
    backwards: int = 0
    data_wait: float = 0.0
    train_time: float = 0.0
    train_since: float | None = None

    def open_train(self, at: float) -> None:
        if self.train_since is None:
            self.train_since = at

    def close_train(self, at: float) -> None:
        if self.train_since is not None:
            self.train_time += max(0.0, at - self.train_since)
            self.train_since = None

    def metrics(self, now: float, optimizer_seen: bool) -> dict[str, Any]:
        """``steps`` are optimizer steps; a loop that updates its weights by hand (no
        optimizer ever stepped) counts its backward passes instead."""
        seconds = self.train_time + (max(0.0, now - self.train_since) if self.train_since is not None else 0.0)
        steps = self.steps if optimizer_seen else self.backwards
        figures: dict[str, Any] = {"data_wait_s": round(self.data_wait, 6), "steps": steps}
        if seconds > 0:
            figures["steps_per_s"] = round(steps / seconds, 3)
        return figures


class DataPhases:
    """Which waits are drawn as ``data`` phases: drawn when at least DATA_VISIBLE long, at most
    DATA_PHASE_RATE a second. Waits less than DATA_JOIN_GAP apart are drawn as one while they
    fill at least DATA_JOIN_SHARE of it, so a loop that only waits shows one long wait, and a
    fast loop's many tiny waits never add up to a phase that hides its compute. A wait is drawn
    once the next one has begun (it may still join it) or at ``flush``."""

    def __init__(self, voice: Voice):
        self.voice = voice
        self.tokens = DATA_PHASE_BURST
        self.refilled: float | None = None
        self.held: list[Any] | None = None   # [start, end, seconds waited, epoch, lane]
        self.undrawn = 0

    def wait(self, start: float, end: float, epoch: int | None, lane: str) -> None:
        held = self.held
        if held is not None:
            if start - held[1] < DATA_JOIN_GAP and held[2] + end - start >= DATA_JOIN_SHARE * (end - held[0]) \
                    and held[3] == epoch and held[4] == lane:
                held[1] = end
                held[2] += end - start
                return
            if held[1] - held[0] >= DATA_VISIBLE:
                self._draw(held)
        self.held = [start, end, end - start, epoch, lane]

    def flush(self) -> None:
        held, self.held = self.held, None
        if held is not None and held[1] - held[0] >= DATA_VISIBLE:
            self._draw(held)

    def _draw(self, held: list[Any]) -> None:
        start, end, _, epoch, lane = held
        if self.refilled is not None:
            self.tokens = min(DATA_PHASE_BURST, self.tokens + (end - self.refilled) * DATA_PHASE_RATE)
        self.refilled = end
        if self.tokens >= 1 and self.voice.data_phase(start, end, epoch, lane):
            self.tokens -= 1
        else:
            self.undrawn += 1


@dataclass
class Pending:
    """What happened before training was confirmed: since when the loop may have been
    training, and the waits of that stretch."""

    since: float | None = None
    source: Hashable | None = None
    data_wait: float = 0.0
    waits: list[tuple[float, float]] = field(default_factory=list)


class Loop:
    def __init__(self, voice: Voice):
        self.voice = voice
        self.data = DataPhases(voice)
        self.confirmed = False
        self.phase: str | None = None      # the open phase this loop said: train, validate or none
        self.epoch = 0
        self.counts = EpochCounts()
        self.over = False                  # training of this epoch is over: its metrics are out
        self.training_mode = True          # the latest model.train()/eval() of a trained model
        self.optimizer_seen = False
        self.train_source: Hashable | None = None
        self.pass_open = False             # this epoch's pass over the training data has begun
        self.last_train_source: Hashable | None = None
        self.pending = Pending()
        self.owner: str | None = None      # the framework whose callback owns the phases
        self.declared: tuple[str, int | None, str] | None = None
        self.declared_counts: dict[int | None, EpochCounts] = {}
        self.declared_pending = 0.0

    # -- observations -----------------------------------------------------------------------

    def mode(self, training: bool, now: float) -> None:
        """``model.train(training)`` on a model being trained (or on any, before the first step)."""
        self.training_mode = training
        if self.owner:
            return
        if not self.confirmed:
            if training:
                if self.pending.since is None:
                    self.pending.since = now
            else:
                self.pending = Pending()
            return
        if training and self.phase != TRAIN:
            self._train_activity(now)
        elif not training and self.phase == TRAIN:
            self._validate(now)

    def fetch(self, source: Hashable, grad: bool, first_of_pass: bool, start: float, end: float) -> None:
        """A batch came out of a DataLoader of data set SOURCE; the loop waited from START to END."""
        training = grad and self.training_mode
        if training and source == self.train_source and not first_of_pass and self.phase == TRAIN \
                and not self.over and not self.owner:  # the common case, every batch: kept short
            self.counts.data_wait += end - start
            if end - start >= DATA_JOINABLE:
                self.data.wait(start, end, self.epoch, LANE)
            return
        if self.owner:
            self._declared_wait(grad, start, end)
            return
        if not self.confirmed:
            self._pending_wait(source, training, first_of_pass, start, end)
            return
        if not training or (self.train_source is not None and source != self.train_source):
            if self.phase == TRAIN:
                self._validate(start)
            return
        if first_of_pass and source == self.train_source:
            if self.pass_open and not self.over:
                self._close_training(start)
            self._train_activity(start)
            self.pass_open = True
        else:
            self._train_activity(start)
        self.last_train_source = source
        self.counts.data_wait += end - start
        self.data.wait(start, end, self.epoch, LANE)

    def exhausted(self, source: Hashable, now: float) -> None:
        """The DataLoader of SOURCE ran out: a pass over the training data ends the epoch's training."""
        if self.confirmed and not self.owner and source == self.train_source and self.phase == TRAIN \
                and not self.over:
            self._close_training(now)

    def backward(self, now: float) -> None:
        if self.phase != TRAIN or self.over or self.owner:
            self._trained(now)
        self._counts(now).backwards += 1

    def step(self, now: float) -> None:
        self.optimizer_seen = True
        if self.phase != TRAIN or self.over or self.owner:
            self._trained(now)
            self._counts(now).steps += 1
        else:
            self.counts.steps += 1

    def finish(self, now: float) -> None:
        """The process is ending: close what is open, send the last epoch's figures."""
        self.data.flush()
        if not self.confirmed or self.owner:
            return
        if not self.over:
            self._close_training(now)
        self._end(now)

    # -- a framework's callback owns the phases -------------------------------------------

    def declare_owner(self, owner: str, now: float) -> None:
        if self.owner == owner:
            return
        if self.confirmed and not self.owner:
            if not self.over:
                self._close_training(now)
            self._end(now)
        self.owner = owner

    def declared_phase(self, name: str, epoch: int | None, lane: str, begin: bool, now: float) -> None:
        """The owning callback began or ended phase NAME of EPOCH in LANE."""
        if begin:
            self.declared = (name, epoch, lane)
            if name == TRAIN:
                counts = self.declared_counts.setdefault(epoch, EpochCounts())
                counts.open_train(now)
                counts.data_wait += self.declared_pending
            self.declared_pending = 0.0
            return
        if self.declared is not None and self.declared[0] == name:
            if name == TRAIN:
                self.declared_counts.setdefault(epoch, EpochCounts()).close_train(now)
                self.data.flush()
            self.declared = None

    def epoch_figures(self, epoch: int | None, now: float) -> dict[str, Any]:
        """The data wait and steps of EPOCH under an owning callback, for its epoch metrics."""
        counts = self.declared_counts.pop(epoch, None)
        if counts is None:
            return {}
        self.data.flush()
        return counts.metrics(now, self.optimizer_seen)

    # -- inside ---------------------------------------------------------------------------

    def _counts(self, now: float) -> EpochCounts:
        if self.owner:
            if self.declared is not None and self.declared[0] == TRAIN:
                return self.declared_counts.setdefault(self.declared[1], EpochCounts())
            return EpochCounts()  # outside the callback's train phase: counted nowhere
        return self.counts

    def _trained(self, now: float) -> None:
        """A backward pass or an optimizer step: training, beyond doubt."""
        if self.owner:
            return
        if self.train_source is None and self.last_train_source is not None:
            self.train_source = self.last_train_source
            self.pass_open = True
        if not self.confirmed:
            self._confirm(now)
        elif self.phase != TRAIN or self.over:
            self._train_activity(now)

    def _confirm(self, now: float) -> None:
        pending, self.pending = self.pending, Pending()
        self.confirmed = True
        self._train_activity(pending.since if pending.since is not None else now)
        if pending.source is not None:
            self.train_source = pending.source
            self.pass_open = True
        self.counts.data_wait += pending.data_wait
        for start, end in pending.waits:
            self.data.wait(start, end, self.epoch, LANE)

    def _pending_wait(self, source: Hashable, training: bool, first_of_pass: bool, start: float, end: float) -> None:
        pending = self.pending
        if not training:
            self.pending = Pending()  # validation before any training: not an epoch's
            return
        if first_of_pass and pending.source == source:
            self.pending = pending = Pending()  # a second pass without training: start over
        if pending.since is None:
            pending.since = start
        pending.source = source
        self.last_train_source = source
        pending.data_wait += end - start
        if len(pending.waits) < PENDING_DATA_PHASES:
            pending.waits.append((start, end))

    def _declared_wait(self, grad: bool, start: float, end: float) -> None:
        declared = self.declared
        if declared is None:
            if grad:  # a framework fetches an epoch's first batch before its callback hears of the epoch
                self.declared_pending += end - start
            return
        name, epoch, lane = declared
        if name == TRAIN:
            self.declared_counts.setdefault(epoch, EpochCounts()).data_wait += end - start
            self.data.wait(start, end, epoch, lane)
        else:
            self.declared_pending = 0.0

    def _train_activity(self, at: float) -> None:
        """Training goes on at AT: the train phase is open, in a new epoch if the last one's
        training is over."""
        if self.epoch == 0 or self.over:
            self._end(at)
            self.epoch += 1
            self.counts = EpochCounts()
            self.over = False
            self.pass_open = False
            self._begin(TRAIN, at)
        elif self.phase != TRAIN:
            self._begin(TRAIN, at)

    def _validate(self, at: float) -> None:
        if self.train_source is None and not self.over:  # no DataLoader: validation ends the epoch's training
            self._close_training(at)
        self._begin(VALIDATE, at)

    def _close_training(self, at: float) -> None:
        """The epoch's training is over: its figures go out. The train phase may go on (the
        code after the loader ran out); training activity after this begins the next epoch."""
        self.data.flush()
        self.voice.epoch(self.epoch, self.counts.metrics(at, self.optimizer_seen))
        self.counts = EpochCounts()
        self.over = True

    def _begin(self, name: str, at: float) -> None:
        self._end(at)
        self.phase = name
        if name == TRAIN:
            self.counts.open_train(at)
        self.voice.phase("begin", name, self.epoch, LANE, at)

    def _end(self, at: float) -> None:
        if self.phase is None:
            return
        if self.phase == TRAIN:
            self.data.flush()
            self.counts.close_train(at)
        self.voice.phase("end", self.phase, self.epoch, LANE, at)
        self.phase = None
