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
- **Epochs**: with a DataLoader, an epoch is one pass over the training data set, with the
  validation that follows it, and only a pass that ends is one: the loader runs out, or the
  loop leaves it after several batches for a new pass (``break`` after N batches). The pass is
  the one the loop consumes, not the one the loader produces: a wrapper that reads ahead
  (Accelerate, a prefetch generator) runs the DataLoader out a batch or two before the loop's
  last step, so the loader running out only marks the pass as read; the epoch's training ends
  when validation begins, a new pass begins, or the process ends, and the steps until then
  are the epoch's. A new iterator left after one batch (``next(iter(loader))`` every step) is
  not a new pass. A loop that reads no DataLoader (a generator, a list of shards, a ``range()``)
  makes its passes with the Python ``for`` loop around its steps: when an evaluation begins,
  the hooks tell (``loop_left``) whether that loop was left (its function returned, or it is
  past the loop), and a pass that was ends the epoch's training there.
- **Segments**: a loop whose passes do not end has no epochs: batches sampled by hand (a
  ``while`` loop, or an evaluation inside the ``for`` loop before any pass ended), an
  endless stream, a new iterator every step, or a pass that would outlast LONG_PASS at the
  loop's pace when the first evaluation comes in its middle (a sampler of huge length and a
  trainer that stops at a step count). Its units are the training stretches between
  evaluations (the train → validate → train turn), sent as epochs marked ``unit: "segment"``.
  A ``model.train()`` after the last evaluation opens nothing until training goes on, so no
  empty unit trails at the end. Numbered from 1.
- **The loop's wait** (``wait_s``): the time from the end of one training step (its optimizer
  step, or its backward pass where no optimizer steps) to the start of the next step's
  compute (the trained model called), whatever the loop did in between; the stretch across an
  evaluation or a barrier is not counted, nor the wait before the first step. What it was
  spent on is told by ``sampled`` (a watcher reading the loop's stack while it waits): input
  (a DataLoader, a queue, a generator, ``torch.load``…) or the script's own work (logging,
  ``.item()``).
- **Data wait** (``data_wait_s``): the loop's input wait: the time blocked in the training
  DataLoader's ``__next__``, summed exactly, plus the share of the rest of the loop's wait
  that the watcher found spent on input; ``waited_on`` names what most of it was spent on.
  Drawn as ``data`` phases inside the train phase where a wait is long enough to see
  (``DataPhases``; waits under DATA_JOINABLE are only summed). A loop with neither a measured
  loader nor a measured step sends no ``data_wait_s`` (not measured, never 0).
- **Waiting for other ranks**: a ``torch.distributed.barrier`` is a ``wait`` phase, not
  training: a rank that waits while another validates is seen waiting.

When a framework's callback owns the phases (``declare_owner``: Lightning, Keras, Hugging
Face), the loop says no train/validate phase of its own: it follows the callback's phases and
keeps only the data wait and the steps, which the callback adds to its epoch's metrics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from collections.abc import Hashable

from ...loop_figures import UnitFigures

TRAIN, VALIDATE, DATA, WAIT = "train", "validate", "data", "wait"
EPOCH, SEGMENT = "epoch", "segment"   # what a unit of the loop is: a pass over the data, or the stretch between evaluations
LANE = "main"
DATA_VISIBLE = 0.05     # seconds: a shorter wait is summed but not drawn (half the default sample interval)
DATA_JOINABLE = 0.001   # seconds: a wait shorter than this is only summed (a fast loop's every batch)
DATA_JOIN_GAP = 0.005   # seconds: waits closer than this are drawn as one ...
DATA_JOIN_SHARE = 0.9   # ... while waiting fills this share of the joined span
DATA_PHASE_RATE = 10.0  # data phases a second at most (a token bucket) ...
DATA_PHASE_BURST = 10.0  # ... after a burst of this many; the waits left undrawn still count in data_wait_s
PENDING_DATA_PHASES = 16  # data phases held while training is not yet confirmed
UNCLOSED = 2            # steps in a row with no batch from a DataLoader before the model's calls are watched
READ_AHEAD = 2          # steps a loop may take after its loader ran out (a wrapper reads ahead); more: it replays
LONG_PASS = 86400.0     # seconds: a pass longer than this at the loop's pace does not end within a run
WATCH_EVERY = 8         # steps between two looks at whether the loop waits enough to be watched ...
WATCH_SHARE = 0.05      # ... which it does when its wait outside a DataLoader fills this share of the time
WATCH_GAP = 0.001       # ... and is this long a step on average (seconds): a sample every WATCH_INTERVAL tells
                        # nothing of a shorter wait, and a fast loop's glue between steps is no wait
WATCH_WINDOWS = 2       # ... spread over the span's steps, or in this many spans in a row: one preemption between
                        # two steps (10 ms on a busy machine) fills a span's WATCH_GAP and would start the watcher for good
LOADER, INPUT, OWN = "loader", "input", "own"  # what a sample of the loop's wait was spent on
DATALOADER = "DataLoader"  # what the waits timed in a DataLoader's ``__next__`` were spent on


class Voice(Protocol):
    def phase(self, kind: str, name: str, epoch: int | None, lane: str, at: float) -> None: ...
    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool: ...
    def epoch(self, epoch: int, figures: UnitFigures, unit: str = EPOCH) -> None: ...
    def setup(self, train_source: Hashable | None) -> None: ...


@dataclass
class EpochCounts:
    """One epoch's training figures: optimizer steps, backward passes, data wait, train time."""

    steps: int = 0
    backwards: int = 0
    data_wait: float = 0.0
    train_time: float = 0.0
    train_since: float | None = None
    fetched: bool = False        # a measured loader was read: the data wait is known
    loop_wait: float = 0.0       # the loop's wait between steps (``Loop.compute``)
    gaps: int = 0                # waits measured
    iterators: int = 0           # new iterators over the training data begun
    samples: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, what) -> samples of the wait

    def open_train(self, at: float) -> None:
        if self.train_since is None:
            self.train_since = at

    def close_train(self, at: float) -> None:
        if self.train_since is not None:
            self.train_time += max(0.0, at - self.train_since)
            self.train_since = None

    def metrics(self, now: float, optimizer_seen: bool,
                fallback: dict[tuple[str, str], int] | None = None) -> dict[str, Any]:
        return self.figures(now, optimizer_seen, fallback).to_json()

    def figures(self, now: float, optimizer_seen: bool,
                fallback: dict[tuple[str, str], int] | None = None) -> UnitFigures:
        """``steps`` are optimizer steps; a loop that updates its weights by hand (no
        optimizer ever stepped) counts its backward passes instead. The loop's wait outside a
        DataLoader is input in the share of its samples that were (this unit's, else
        FALLBACK's: the loop's so far); unsampled, it is the script's own."""
        seconds = self.train_time + (max(0.0, now - self.train_since) if self.train_since is not None else 0.0)
        steps = self.steps if optimizer_seen else self.backwards
        figures: dict[str, Any] = {}
        if self.gaps:
            rest = max(0.0, self.loop_wait - self.data_wait)
            samples = self.samples or fallback or {}
            inputs = {what: n for (kind, what), n in samples.items() if kind == INPUT}
            outside = sum(inputs.values()) + sum(n for (kind, _), n in samples.items() if kind == OWN)
            input_rest = rest * sum(inputs.values()) / outside if outside else 0.0
            figures["wait_s"] = round(max(self.loop_wait, self.data_wait), 6)
            figures["data_wait_s"] = round(self.data_wait + input_rest, 6)
            if self.fetched:
                figures["loader_wait_s"] = round(self.data_wait, 6)  # in the DataLoader's __next__
                figures["iterators"] = self.iterators
            spent = {what: input_rest * n / outside for what, n in inputs.items()}
            if self.data_wait > 0:
                spent[DATALOADER] = spent.get(DATALOADER, 0.0) + self.data_wait
            if spent and max(spent.values()) > 0:
                figures["waited_on"] = max(spent, key=spent.__getitem__)
        elif self.fetched:
            figures["data_wait_s"] = round(self.data_wait, 6)
        if seconds > 0:
            figures["steps_per_s"] = round(steps / seconds, 3)
        return UnitFigures(steps, **figures)


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
    loop_wait: float = 0.0


class Loop:
    def __init__(self, voice: Voice, lane: str = LANE):
        # What every batch and step reads first, so that they lie together in the instance's memory
        # (a tiny loop's step leaves the caches cold between two calls: each line touched costs)
        self.phase: str | None = None      # the open phase this loop said: train, validate or none
        self.counts = EpochCounts()
        self.over = False                  # training of this epoch is over: its metrics are out
        self.training_mode = True          # the latest model.train()/eval() of a trained model
        self.optimizer_seen = False
        self.train_source: Hashable | None = None
        self.pass_read = False             # ... and its loader ran out (the loop may still hold batches read ahead)
        self.trial: Any = None             # a trial of ``devicewatch try`` counting steps (trial.Trial)
        self.owner: str | None = None      # the framework whose callback owns the phases
        # the loop's wait between steps: open since GAP_SINCE (None: it computes, validates or waits at a barrier)
        self.gap_since: float | None = None
        self.gap_loader = 0.0              # the DataLoader wait of the unit when the gap opened
        self.watched = False
        self.watch_steps = 0
        self.watch_windows = 0             # spans of WATCH_EVERY steps in a row that waited enough to be watched
        self.watch_peak = 0.0              # the longest wait of one step in this span
        self.watch_rest = 0.0              # wait outside a DataLoader since WATCH_FROM
        self.need_calls: Any = None        # () -> None: the hooks watch the model's calls from then on
        self.unclosed = 0                  # steps in a row whose wait no batch or model call ended
        self.pass_batches = 0              # training batches taken from this pass's iterator
        self.voice = voice
        self.lane = lane                   # "rank N" under a launcher of several ranks
        self.data = DataPhases(voice)
        self.confirmed = False
        self.epoch = 0
        self.pass_open = False             # this epoch's pass over the training data has begun
        self.endless_sources: set[Hashable] = set()  # training data sets with no length: units are segments
        self.resume_at: float | None = None  # model.train() after validation or a wait, with no training yet
        self.after_wait: str | None = None   # the phase a barrier interrupted
        self.closed_loader = 0.0           # the DataLoader wait of the units already sent
        self.closed_rest = 0.0             # ... and the rest of their loop's wait
        self.wait_measured = False         # a measured loader was read in a unit already sent
        self.setup_said = False            # how the training data is fed has been said
        self.last_train_source: Hashable | None = None
        self.pending = Pending()
        self.declared: tuple[str, int | None, str] | None = None
        self.declared_counts: dict[int | None, EpochCounts] = {}
        self.declared_pending = 0.0
        self.gap_input = False             # a sample of this gap found the loop taking its input
        self.watch: Any = None             # starts the watcher that samples the wait (set by the hooks)
        self.watch_from: float | None = None
        self.sample_totals: dict[tuple[str, str], int] = {}
        self.loop_code: Any = None         # the code of the frame that calls the trained model (the hooks')
        self.pass_length: int | None = None  # batches in the pass (None: unknown)
        self.pass_since = 0.0
        self.passes_ended = 0              # passes over the training data that ran out or were left after several batches
        self.reiterated = False            # a new iterator was taken after a single batch of the last
        self.long_pass = False             # a pass would outlast LONG_PASS: segments
        self.after_read = 0                # steps since the loader ran out with no new pass
        self.replays = False               # the loop trained on past READ_AHEAD steps after its loader ran out: segments
        self.evaluated: list[tuple[float, float]] = []  # evaluations before training was confirmed
        self.evaluating_since: float | None = None       # ... and the one going on
        self.evaluating_fetched = False                  # ... which read a batch
        self.thread_fed = False            # a DataLoader read on another thread ran out (a queue the loop reads)
        self.loop_left: Any = None         # () -> whether the loop's pass ended (True/False, None: unknown) (the hooks')
        self.loop_passes = 0               # evaluations that came after the pass of a loop without a DataLoader ended ...
        self.loop_inside = False           # ... or, before any did, inside it (every N steps): segments
        self.worker_batches: Any = None    # () -> (seconds, batches) the loader's workers took so far (the hooks')
        self.workers_counted = (0.0, 0)    # ... when the last unit was sent

    # -- observations -----------------------------------------------------------------------

    def mode(self, training: bool, now: float, reloaded: bool = False) -> None:
        """``model.train(training)`` on a model being trained (or on any, before the first step).
        RELOADED: the first such call on it since its weights were loaded back from a checkpoint
        after training began: its evaluation is one of its own, even right after another."""
        self.training_mode = training
        if self.owner:
            return
        if not self.confirmed:
            if training:
                if self.pending.since is None:
                    self.pending.since = now
                if self.gap_since is None:  # the first step's wait, counted if training is confirmed
                    self.gap_since, self.gap_loader = now, self.pending.data_wait
                self._evaluated(now)
            else:
                self.pending = Pending()
                if self.evaluating_since is None:
                    self.evaluating_since = now
            return
        if training and self.phase != TRAIN:
            self._end(now)  # training begins where it goes on (no empty unit if it never does)
            if self.resume_at is None:
                self.resume_at = now
                self.gap_since, self.gap_loader = now, self.counts.data_wait
        elif not training and (self.phase == TRAIN or self.resume_at is not None):
            self._validate(now)
        elif not training and reloaded and self.phase == VALIDATE:
            self._begin(VALIDATE, now)  # the best checkpoint loaded back and tested after validation

    def fetch(self, source: Hashable, grad: bool, first_of_pass: bool, start: float, end: float,
              length: int | None = None) -> None:
        """A batch came out of a DataLoader of data set SOURCE; the loop waited from START to END.
        The first batch of a pass (FIRST_OF_PASS: a new iterator) tells its LENGTH in batches."""
        training = grad and self.training_mode
        if training and source == self.train_source and not first_of_pass and self.phase == TRAIN \
                and not self.over and not self.owner:  # the common case, every batch: kept short
            counts = self.counts
            waited = end - start
            counts.data_wait += waited
            self.pass_batches += 1
            if waited >= DATA_JOINABLE:
                self.data.wait(start, end, self.epoch, self.lane)
            since = self.gap_since
            if since is not None:  # the batch is out: the loop's wait since its last step ends here
                self.gap_since = None
                counts.loop_wait += end - since
                counts.gaps += 1
                if not self.watched:
                    rest = end - since - (counts.data_wait - self.gap_loader)
                    self.watch_rest += rest
                    if rest > self.watch_peak:
                        self.watch_peak = rest
                    self.watch_steps += 1
                    if self.watch_steps >= WATCH_EVERY:
                        self._look(0.0, end)
            return
        if self.owner:
            self._declared_wait(grad, start, end, source)
            return
        if not self.confirmed:
            self._pending_wait(source, training, first_of_pass, start, end)
            if training:
                if first_of_pass:
                    self._new_pass(length, start)
                self.pass_batches += 1
                self.compute(end)
            return
        if not training or (self.train_source is not None and source != self.train_source):
            if self.phase == TRAIN or self.resume_at is not None:
                self._validate(start)
            return
        if first_of_pass and source == self.train_source:
            if self.pass_open and not self.over:
                if self.pass_read or self.pass_batches > 1:
                    self.passes_ended += not self.pass_read  # left for a new pass: it ended here
                    self._close_training(start)
                else:
                    self.reiterated = True  # a new iterator each step: the same pass goes on
                    self._calls()  # ... and the one it leaves shuts its workers down after the batch
            self._train_activity(start)
            self.pass_open = True
            self._new_pass(length, start)
            self.counts.iterators += 1
        else:
            self._train_activity(start)
        self.pass_batches += 1
        self.last_train_source = source
        self.counts.data_wait += end - start
        self.data.wait(start, end, self.epoch, self.lane)
        if not self.reiterated:  # (a loop that leaves its iterator waits on until the model's call)
            self.compute(end)

    def exhausted(self, source: Hashable, now: float) -> None:
        """The DataLoader of SOURCE ran out: the pass over the training data has been read. The
        loop may still hold batches read ahead, so the epoch's training ends at what follows
        (validation, a new pass, the end)."""
        if source == self.train_source and not self.over:
            self.passes_ended += not self.pass_read
            self.pass_read = True
            self.after_read = 0

    def exhausted_elsewhere(self, source: Hashable, now: float) -> None:
        """A DataLoader read on another thread ran out (a thread that fills the queue the loop
        reads): where the loop reads no DataLoader of its own, the pass it is fed has been read."""
        if self.confirmed and self.train_source is None and not self.owner and not self.over:
            self.thread_fed = True
            self.passes_ended += not self.pass_read
            self.pass_read = True

    def endless(self, source: Hashable) -> None:
        """Data set SOURCE has no length (a stream): a loop over it has segments, not epochs."""
        self.endless_sources.add(source)

    def barrier(self, begin: bool, now: float) -> None:
        """The loop waits for the other ranks (BEGIN) or is released: a ``wait`` phase. A rank
        whose pass is read is done with its epoch's training when it starts waiting."""
        if not self.confirmed or self.owner:
            return
        if begin:
            if self.phase == WAIT:
                return
            self.gap_since = None
            if self.phase == TRAIN and self.pass_read and not self.over:
                self._close_training(now)
            self.after_wait = self.phase if self.phase is not None else (TRAIN if self.resume_at is not None else None)
            self._begin(WAIT, now)
        elif self.phase == WAIT:
            self._end(now)
            if self.after_wait == TRAIN:
                self.resume_at = now
            self.after_wait = None

    def backward(self, now: float) -> None:
        if self.phase != TRAIN or self.over or self.owner:
            self._trained(now)
        self._counts(now).backwards += 1
        if not self.optimizer_seen and not self.owner and self.phase == TRAIN:
            self.gap_since, self.gap_loader = now, self.counts.data_wait  # a step by hand ends here

    def step(self, now: float) -> None:
        if self.trial is not None:
            self.trial.step(now)
        self.optimizer_seen = True
        if self.pass_read and self.train_source is not None:
            self.after_read += 1
            self.replays = self.replays or self.after_read > READ_AHEAD
        if self.phase != TRAIN or self.over or self.owner:
            self._trained(now)
            self._counts(now).steps += 1
            if self.owner or self.phase != TRAIN:
                return
            counts = self.counts
        else:
            counts = self.counts
            counts.steps += 1
        if self.gap_since is not None and self.need_calls is not None:
            self.unclosed += 1  # no batch out of a DataLoader since the last step: watch the model's calls
            if self.unclosed > UNCLOSED:
                self._calls()
        elif self.unclosed:
            self.unclosed = 0
        self.gap_since, self.gap_loader = now, counts.data_wait

    def compute(self, now: float) -> None:
        """The step's compute begins: a training batch is out of the DataLoader, or the trained
        model is called with gradients on (``need_calls``); the loop's wait since the last step
        (or since training resumed) ends."""
        since = self.gap_since
        if since is None:
            return
        self.gap_since = None
        if self.owner:
            return
        if not self.confirmed:  # the first step's wait: its training is not yet confirmed
            self.pending.loop_wait += max(0.0, now - since)
            if not self.watched:
                self._look(now - since - (self.pending.data_wait - self.gap_loader), now)
            return
        if self.phase != TRAIN or self.over:
            if self.resume_at is None and self.phase != TRAIN:
                return
            self._train_activity(now)  # the model trains again after model.train()
            self.gap_since = None
        counts = self.counts
        wait = now - since
        counts.loop_wait += wait
        counts.gaps += 1
        if self.gap_input:
            self.gap_input = False
            if counts.data_wait <= self.gap_loader and wait >= DATA_JOINABLE:
                self.data.wait(since, now, self.epoch, self.lane)  # an input wait outside a DataLoader, drawn
        if not self.watched:  # the common case, every step: kept short
            rest = wait - (counts.data_wait - self.gap_loader)
            self.watch_rest += rest
            if rest > self.watch_peak:
                self.watch_peak = rest
            self.watch_steps += 1
            if self.watch_steps >= WATCH_EVERY:
                self._look(0.0, now)

    def sampled(self, kind: str, what: str) -> None:
        """The watcher found the waiting loop in WHAT, of KIND (LOADER, INPUT or OWN)."""
        key = (kind, what)
        self.gap_input = self.gap_input or kind == INPUT
        samples, totals = self.counts.samples, self.sample_totals
        samples[key] = samples.get(key, 0) + 1
        totals[key] = totals.get(key, 0) + 1

    def finish(self, now: float) -> None:
        """The process is ending: close what is open, send the last epoch's figures."""
        self.gap_since = None  # the last step has no next
        self.data.flush()
        if not self.confirmed or self.owner:
            return
        if not self.over:
            self._close_training(now)
        self._end(now)

    def wait_parts(self) -> tuple[float, float, float] | None:
        """The loop's wait so far, over every unit: (the DataLoader's, the rest of it, the share
        of the rest the samples so far found input), so that a window's data wait is its
        DataLoader wait and its rest at one share; None where neither a loader nor the loop's
        wait was measured."""
        declared = list(self.declared_counts.values())
        if not (self.wait_measured or self.train_source is not None or self.counts.fetched
                or self.counts.gaps or any(c.fetched for c in declared)):
            return None
        counts = self.counts
        loader = self.closed_loader + counts.data_wait + sum(c.data_wait for c in declared)
        rest = self.closed_rest + (max(0.0, counts.loop_wait - counts.data_wait) if counts.gaps else 0.0)
        samples = self.sample_totals
        inputs = sum(n for (kind, _), n in samples.items() if kind == INPUT)
        outside = inputs + sum(n for (kind, _), n in samples.items() if kind == OWN)
        return loader, rest, inputs / outside if outside else 0.0

    @property
    def unit(self) -> str:
        """What one unit of this loop is: an epoch (a pass over a training DataLoader, or of
        the ``for`` loop that feeds a loop without one, that ends) or a segment (the training
        between evaluations)."""
        if self.train_source is None:
            return EPOCH if self.thread_fed or (self.loop_passes and not self.loop_inside) else SEGMENT
        if self.train_source in self.endless_sources or self.long_pass or self.replays:
            return SEGMENT
        return SEGMENT if self.reiterated and not self.passes_ended else EPOCH

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
                if self.declared_pending:
                    counts.data_wait += self.declared_pending
                    counts.fetched = True
            self.declared_pending = 0.0
            return
        if self.declared is not None and self.declared[0] == name:
            if name == TRAIN:
                self.declared_counts.setdefault(epoch, EpochCounts()).close_train(now)
                self.data.flush()
                if not self.setup_said:  # a whole train phase read no measured loader
                    self._say_setup(None)
            self.declared = None

    def epoch_figures(self, epoch: int | None, now: float) -> dict[str, Any]:
        """The data wait and steps of EPOCH under an owning callback, for its epoch metrics."""
        counts = self.declared_counts.pop(epoch, None)
        if counts is None:
            return {}
        self.closed_loader += counts.data_wait
        self.wait_measured = self.wait_measured or counts.fetched
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
        if not self.confirmed:
            if self.pending.source is None and self.last_train_source is not None:
                self.pending.source = self.last_train_source
            self._confirm(now)
            return
        if self.train_source is None and self.last_train_source is not None:
            self.train_source = self.last_train_source
            self.pass_open = True
            self._say_setup(self.train_source, again=True)
        if self.phase != TRAIN or self.over:
            self._train_activity(now)

    def _evaluated(self, at: float) -> None:
        """An evaluation before training ends at AT (training may begin): kept until training
        is confirmed, when it is said, in no unit."""
        if self.evaluating_since is not None:
            # a model.eval() that evaluated: it read a batch, or lasted long enough to see
            if len(self.evaluated) < PENDING_DATA_PHASES and \
                    (self.evaluating_fetched or at - self.evaluating_since >= DATA_VISIBLE):
                self.evaluated.append((self.evaluating_since, at))
            self.evaluating_since, self.evaluating_fetched = None, False

    def _confirm(self, now: float) -> None:
        pending, self.pending = self.pending, Pending()
        self.confirmed = True
        if self.watch_from is None:  # the first look at the loop's wait spans its first steps
            self.watch_from = pending.since if pending.since is not None else now
        self._evaluated(pending.since if pending.since is not None else now)
        for start, end in self.evaluated:  # an evaluation before any training step: in no unit
            self.voice.phase("begin", VALIDATE, None, self.lane, start)
            self.voice.phase("end", VALIDATE, None, self.lane, end)
        self.evaluated = []
        self._train_activity(pending.since if pending.since is not None else now)
        if pending.source is not None:
            self.train_source = pending.source
            self.pass_open = True
            self.counts.iterators += 1
        elif not self.owner:
            self._calls()  # no DataLoader read: the model's call ends each wait
        self._say_setup(self.train_source)
        self.counts.data_wait += pending.data_wait
        if pending.loop_wait:
            self.counts.loop_wait += pending.loop_wait
            self.counts.gaps += 1
        for start, end in pending.waits:
            self.data.wait(start, end, self.epoch, self.lane)

    def _say_setup(self, source: Hashable | None, again: bool = False) -> None:
        """How the training data is fed: said once, and again when the training DataLoader is
        learnt after training was confirmed."""
        if self.setup_said and not again:
            return
        self.setup_said = True
        self.voice.setup(source)

    def _pending_wait(self, source: Hashable, training: bool, first_of_pass: bool, start: float, end: float) -> None:
        pending = self.pending
        if not training:
            self.pending = Pending()  # validation before any training: not an epoch's
            if self.evaluating_since is None:
                self.evaluating_since = start
            self.evaluating_fetched = True
            return
        self._evaluated(start)
        if first_of_pass and pending.source == source:
            self.pending = pending = Pending()  # a second pass without training: start over
        if pending.since is None:
            pending.since = start
        if self.gap_since is None:
            self.gap_since, self.gap_loader = start, pending.data_wait
        pending.source = source
        self.last_train_source = source
        pending.data_wait += end - start
        if len(pending.waits) < PENDING_DATA_PHASES:
            pending.waits.append((start, end))

    def _declared_wait(self, grad: bool, start: float, end: float, source: Hashable = None) -> None:
        declared = self.declared
        if grad and not self.setup_said and declared is not None and declared[0] == TRAIN:
            self._say_setup(source)
        if declared is None:
            if grad:  # a framework fetches an epoch's first batch before its callback hears of the epoch
                self.declared_pending += end - start
            return
        name, epoch, lane = declared
        if name == TRAIN:
            counts = self.declared_counts.setdefault(epoch, EpochCounts())
            counts.data_wait += end - start
            counts.fetched = True
            self.data.wait(start, end, epoch, lane)
        else:
            self.declared_pending = 0.0

    def _train_activity(self, at: float) -> None:
        """Training goes on at AT: the train phase is open, in a new epoch if the last one's
        training is over. Training that goes on after a ``model.train()`` or a wait began there."""
        if self.resume_at is not None:
            at, self.resume_at = min(at, self.resume_at), None
        if self.epoch == 0 or self.over:
            self._end(at)
            self.epoch += 1
            self.counts = EpochCounts()
            self.gap_loader = 0.0  # the new counts start from no DataLoader wait
            self.over = False
            self.pass_open = False
            self.pass_read = False
            self._begin(TRAIN, at)
        elif self.phase != TRAIN:
            self._begin(TRAIN, at)

    def _validate(self, at: float) -> None:
        """Validation begins: it ends the unit's training when the pass has been read (for a
        loop without a DataLoader: its ``for`` loop was left), or for a loop of segments;
        validation in the middle of a pass stays in its epoch, unless the pass could not end
        within a run (LONG_PASS)."""
        self.gap_since = None
        if not self.over and self.train_source is None and not self.thread_fed and self.loop_left is not None:
            self._judge_pass()
        if not self.over and not self.pass_read and not self.passes_ended and self.unit == EPOCH \
                and self.pass_length is not None and self.pass_batches > 0 \
                and (self.pass_length - self.pass_batches) * (at - self.pass_since) / self.pass_batches > LONG_PASS:
            self.long_pass = True
        if not self.over and (self.pass_read or self.unit == SEGMENT):
            self._close_training(at)
        self.resume_at = None
        self._begin(VALIDATE, at)

    def _judge_pass(self) -> None:
        """An evaluation begins in a loop that reads no DataLoader: its pass ended where the
        ``for`` loop around its steps was left (``loop_left``), and the epoch's training with it;
        an evaluation inside that loop before any pass ended makes the loop's units segments for
        good, and one inside it after a pass ended stays in the epoch (as in a DataLoader's)."""
        left = self.loop_left()
        if left and not self.loop_inside:
            self.loop_passes += 1
            self.pass_read = True
        elif left is False and not self.loop_passes:
            self.loop_inside = True

    def _close_training(self, at: float) -> None:
        """The epoch's training is over: its figures go out. The train phase may go on (the
        code after the loader ran out); training activity after this begins the next epoch."""
        self.data.flush()
        self.counts.fetched = self.counts.fetched or self.train_source is not None
        figures = self.counts.figures(at, self.optimizer_seen, self.sample_totals)
        if self.worker_batches is not None and figures.loader_wait_s is not None:
            (seconds, batches), (before, counted) = self.worker_batches(), self.workers_counted
            self.workers_counted = (seconds, batches)
            if batches > counted:  # what one batch took a worker to make
                figures = replace(figures, worker_batch_s=round((seconds - before) / (batches - counted), 6))
        self.closed_loader += self.counts.data_wait
        if self.counts.gaps:
            self.closed_rest += max(0.0, self.counts.loop_wait - self.counts.data_wait)
        self.wait_measured = self.wait_measured or self.counts.fetched or bool(self.counts.gaps)
        self.voice.epoch(self.epoch, figures, self.unit)
        self.counts = EpochCounts()
        self.gap_loader = 0.0  # the new counts start from no DataLoader wait
        self.over = True

    def _calls(self) -> None:
        if self.need_calls is not None:
            self.need_calls()
            self.need_calls = None

    def _new_pass(self, length: int | None, at: float) -> None:
        self.pass_batches, self.pass_length, self.pass_since, self.after_read = 0, length, at, 0

    def _look(self, rest: float, now: float) -> None:
        """Whether the loop waits enough outside a DataLoader (REST, this step, added to what
        ``compute`` summed) to be watched: WATCH_SHARE of the time and WATCH_GAP a step, over
        WATCH_EVERY steps, spread over its steps or in WATCH_WINDOWS such spans in a row."""
        if self.watch_from is None:
            self.watch_from = now - max(0.0, rest)
        self.watch_rest += max(0.0, rest)
        self.watch_peak = max(self.watch_peak, rest)
        self.watch_steps += rest != 0.0
        if self.watch_steps >= WATCH_EVERY:
            enough = max(WATCH_SHARE * (now - self.watch_from), WATCH_GAP * self.watch_steps)
            waits = self.watch_rest >= enough
            # a wait spread over the span (enough without its longest gap), or one in two spans in a
            # row: one preemption between two steps on a busy machine is neither
            spread = self.watch_rest - self.watch_peak >= enough
            self.watch_windows = self.watch_windows + 1 if waits else 0
            if (spread or self.watch_windows >= WATCH_WINDOWS) and self.watch is not None:
                self.watched = True
                self.watch()
            self.watch_steps, self.watch_from, self.watch_rest, self.watch_peak = 0, now, 0.0, 0.0

    def _begin(self, name: str, at: float) -> None:
        self._end(at)
        self.phase = name
        if name == TRAIN:
            self.counts.open_train(at)
            if not self.owner and self.gap_since is None:  # training resumes: the wait until its compute
                self.gap_since, self.gap_loader = at, self.counts.data_wait
        self.voice.phase("begin", name, self.epoch, self.lane, at)

    def _end(self, at: float) -> None:
        if self.phase is None:
            return
        if self.phase == TRAIN:
            self.data.flush()
            self.counts.close_train(at)
        self.voice.phase("end", self.phase, self.epoch, self.lane, at)
        self.phase = None


# -- what the waiting loop is doing ------------------------------------------------------------

# A frame of the loop's stack, innermost first: (file, function, line, is a generator, is a library's)
Frame = tuple[str, str, int, bool, bool]
QUEUE_GETS = (("/queue.py", "get"), ("/multiprocessing/queues.py", "get"), ("/multiprocessing/connection.py", "recv"))


OWN_WORDS = re.compile(r"log|print|metric|report|save|checkpoint|eval|valid|plot|track|summar|wandb|tensorboard", re.I)


def spent_on(frames: list[Frame], loop_at: int | None = None) -> tuple[str, str]:
    """What a loop waiting between steps is doing, from its stack (innermost first; LOOP_AT:
    where in it the frame that calls the model is, where known): (LOADER, "DataLoader") in a
    DataLoader's ``__next__`` (timed exactly apart), (INPUT, what) where it takes its input (a
    DataLoader's start-up, a queue, ``torch.load``, tf.data, a generator or an iterator of its
    own, a function of the script that the loop calls, ``get_batch()``, unless named for its
    logging, metrics or checkpoints), else (OWN, what): the script's own work (logging, a
    progress bar, a ``.item()`` or a print on the loop's own lines)."""
    paths = [(path.replace("\\", "/"), function) for path, function, *_ in frames]
    where = next((f"{_base(path)}:{line}" for path, _, line, _, library in frames if not library), "")
    at = f" at {where}" if where else ""
    if any("/torch/utils/data/" in path for path, _ in paths):  # inside a DataLoader, whatever it calls
        if any(p.endswith("/torch/utils/data/dataloader.py") and f == "__next__" for p, f in paths):
            return LOADER, DATALOADER
        return INPUT, "DataLoader's start-up (a new iterator)"
    for (path, function), (_, _, _, generator, library) in zip(paths, frames):
        if any(path.endswith(end) and function == name for end, name in QUEUE_GETS):
            return INPUT, f"queue{at}"
        if path.endswith("/torch/serialization.py"):
            return INPUT, f"torch.load{at}"
        if "/tensorflow/python/data/" in path:
            return INPUT, "tf.data input"
        if "/logging/" in path and library:
            return OWN, "logging"
        if "/tqdm/" in path or "/rich/" in path:
            return OWN, "progress bar"
        if generator:
            return INPUT, f"generator {function}() in {_base(path)}"
        if function == "__next__" and not library:
            return INPUT, f"iterator in {_base(path)}"
    if loop_at is not None:  # the script's function nearest the loop, called by it
        called = [f for f in frames[:loop_at] if not f[4]]
        if called:
            path, function, line = called[-1][:3]
            kind = OWN if OWN_WORDS.search(function) else INPUT
            return kind, f"{function}() at {_base(path)}:{line}"
    return OWN, where or "the script"


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]
