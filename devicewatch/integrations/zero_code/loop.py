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

The loop is split by concern, each part tested on its own: the pass over the training data and
what a unit is (``training_pass``), the wait between steps, its data phases and what it was
spent on (``waits``), the step's counts and a unit's figures (``step_counts``), the evaluations
before training is confirmed (``evaluations``), a callback's phases (``declared``), and what the
hooks hand it and its voice hears, typed once (``loop_interface``). ``Loop`` holds the phase
said and turns the hooks' observations into calls on its parts; its hot paths (a batch, a step,
a model call) read each part through one attribute and call none of them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Any

from ...loop_figures import UnitFigures
from .declared import Declared
from .evaluations import Evaluations
from .loop_interface import (DATA, DATALOADER, EPOCH, INPUT, LANE, LOADER, OWN, SEGMENT, TRAIN, VALIDATE, WAIT,
                             LoopLeft, StepCounter, Voice, WaitWatch, WorkerBatches)
from .step_counts import PENDING_DATA_PHASES, EpochCounts, Pending
from .training_pass import LONG_PASS, READ_AHEAD, TrainingPass
from .waits import (DATA_JOIN_GAP, DATA_JOIN_SHARE, DATA_JOINABLE, DATA_PHASE_BURST, DATA_PHASE_RATE, DATA_VISIBLE,
                    UNCLOSED, WATCH_EVERY, WATCH_GAP, WATCH_SHARE, WATCH_WINDOWS, DataPhases, Frame, Gap, spent_on)

__all__ = [  # the loop's words, where its callers and tests have always found them
    "DATA", "DATALOADER", "DATA_JOINABLE", "DATA_JOIN_GAP", "DATA_JOIN_SHARE", "DATA_PHASE_BURST", "DATA_PHASE_RATE",
    "DATA_VISIBLE", "EPOCH", "INPUT", "LANE", "LOADER", "LONG_PASS", "OWN", "PENDING_DATA_PHASES", "READ_AHEAD",
    "SEGMENT", "TRAIN", "UNCLOSED", "VALIDATE", "WAIT", "WATCH_EVERY", "WATCH_GAP", "WATCH_SHARE", "WATCH_WINDOWS",
    "DataPhases", "EpochCounts", "Frame", "Loop", "UnitFigures", "Voice", "spent_on"]


# Joined mid-run (``devicewatch attach``), the hooks may see the end of a step (its backward
# pass and optimizer step) before any batch: training is confirmed with the loop's DataLoader
# once its first batch comes, or as reading none after this many of them with no batch.
JOINED_STEPS = 3


class Loop:
    def __init__(self, voice: Voice, lane: str = LANE):
        # What every batch and step reads first, so that they lie together in the instance's memory
        # (a tiny loop's step leaves the caches cold between two calls: each line touched costs)
        self.phase: str | None = None      # the open phase this loop said: train, validate or none
        self.counts = EpochCounts()
        self.over = False                  # training of this epoch is over: its metrics are out
        self.training_mode = True          # the latest model.train()/eval() of a trained model
        self.optimizer_seen = False
        self.pass_ = TrainingPass()
        self.gap = Gap()                   # the loop's wait between steps
        self.trial: StepCounter | None = None   # a trial of ``devicewatch try`` counting steps
        self.owner: str | None = None      # the framework whose callback owns the phases
        self.voice = voice
        self.lane = lane                   # "rank N" under a launcher of several ranks
        self.data = DataPhases(voice)
        self.confirmed = False
        self.epoch = 0
        self.resume_at: float | None = None  # model.train() after validation or a wait, with no training yet
        self.after_wait: str | None = None   # the phase a barrier interrupted
        self.closed_loader = 0.0           # the DataLoader wait of the units already sent
        self.closed_rest = 0.0             # ... and the rest of their loop's wait
        self.wait_measured = False         # a measured loader was read in a unit already sent
        self.setup_said = False            # how the training data is fed has been said
        self.pending = Pending()
        self.evaluations = Evaluations()
        self.declared = Declared(self.data)
        self.worker_batches: WorkerBatches | None = None   # the loader's workers' batches so far (the hooks')
        self.workers_counted = (0.0, 0)    # ... when the last unit was sent
        self.joined_steps: int | None = None   # joined mid-run: backward passes and steps seen before any batch

    # -- what the hooks hand the loop (``loop_interface``) ----------------------------------

    @property
    def loop_left(self) -> LoopLeft | None:
        return self.pass_.left

    @loop_left.setter
    def loop_left(self, left: LoopLeft | None) -> None:
        self.pass_.left = left

    @property
    def watch(self) -> WaitWatch | None:
        return self.gap.watch

    @watch.setter
    def watch(self, watch: WaitWatch | None) -> None:
        self.gap.watch = watch

    @property
    def train_source(self) -> Hashable | None:
        """The training data set's DataLoader (None: none read yet)."""
        return self.pass_.source

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
                if self.gap.since is None:  # the first step's wait, counted if training is confirmed
                    self.gap.open(now, self.pending.data_wait)
                self.evaluations.end(now)
            else:
                self.pending = Pending()
                self.evaluations.begin(now)
            return
        if training and self.phase != TRAIN:
            self._end(now)  # training begins where it goes on (no empty unit if it never does)
            if self.resume_at is None:
                self.resume_at = now
                self.gap.open(now, self.counts.data_wait)
        elif not training and (self.phase == TRAIN or self.resume_at is not None):
            self._validate(now)
        elif not training and reloaded and self.phase == VALIDATE:
            self._begin(VALIDATE, now)  # the best checkpoint loaded back and tested after validation

    def fetch(self, source: Hashable, grad: bool, first_of_pass: bool, start: float, end: float,
              length: int | None = None) -> None:
        """A batch came out of a DataLoader of data set SOURCE; the loop waited from START to END.
        The first batch of a pass (FIRST_OF_PASS: a new iterator) tells its LENGTH in batches."""
        training = grad and self.training_mode
        pass_ = self.pass_
        if training and source == pass_.source and not first_of_pass and self.phase == TRAIN \
                and not self.over and not self.owner:  # the common case, every batch: kept short
            counts = self.counts
            waited = end - start
            counts.data_wait += waited
            pass_.batches += 1
            if waited >= DATA_JOINABLE:
                self.data.wait(start, end, self.epoch, self.lane)
            gap = self.gap
            since = gap.since
            if since is not None:  # the batch is out: the loop's wait since its last step ends here
                gap.since = None
                counts.loop_wait += end - since
                counts.gaps += 1
                if not gap.watched:
                    rest = end - since - (counts.data_wait - gap.loader)
                    gap.rest += rest
                    if rest > gap.peak:
                        gap.peak = rest
                    gap.steps += 1
                    if gap.steps >= WATCH_EVERY:
                        gap.look(0.0, end)
            return
        if self.owner:
            if grad and not self.setup_said and self.declared.training():
                self._say_setup(source)
            self.declared.wait(grad, start, end)
            return
        if not self.confirmed:
            self._pending_wait(source, training, first_of_pass, start, end)
            if training:
                if first_of_pass:
                    pass_.new(length, start)
                pass_.batches += 1
                self.compute(end)
            return
        if not training or (pass_.source is not None and source != pass_.source):
            if self.phase == TRAIN or self.resume_at is not None:
                self._validate(start)
            return
        if first_of_pass and source == pass_.source:
            if pass_.open and not self.over:
                if pass_.read or pass_.batches > 1:
                    pass_.ended += not pass_.read  # left for a new pass: it ended here
                    self._close_training(start)
                else:
                    pass_.reiterated = True  # a new iterator each step: the same pass goes on
                    self.gap.calls()  # ... and the one it leaves shuts its workers down after the batch
            self._train_activity(start)
            pass_.open = True
            pass_.new(length, start)
            self.counts.iterators += 1
        else:
            self._train_activity(start)
        pass_.batches += 1
        pass_.last_source = source
        self.counts.data_wait += end - start
        self.data.wait(start, end, self.epoch, self.lane)
        if not pass_.reiterated:  # (a loop that leaves its iterator waits on until the model's call)
            self.compute(end)

    def exhausted(self, source: Hashable, now: float) -> None:
        """The DataLoader of SOURCE ran out: the pass over the training data has been read. The
        loop may still hold batches read ahead, so the epoch's training ends at what follows
        (validation, a new pass, the end)."""
        if source == self.pass_.source and not self.over:
            self.pass_.exhausted()

    def exhausted_elsewhere(self, source: Hashable, now: float) -> None:
        """A DataLoader read on another thread ran out (a thread that fills the queue the loop
        reads): where the loop reads no DataLoader of its own, the pass it is fed has been read."""
        if self.confirmed and self.pass_.source is None and not self.owner and not self.over:
            self.pass_.fed_elsewhere()

    def endless(self, source: Hashable) -> None:
        """Data set SOURCE has no length (a stream): a loop over it has segments, not epochs."""
        self.pass_.endless.add(source)

    def barrier(self, begin: bool, now: float) -> None:
        """The loop waits for the other ranks (BEGIN) or is released: a ``wait`` phase. A rank
        whose pass is read is done with its epoch's training when it starts waiting."""
        if not self.confirmed or self.owner:
            return
        if begin:
            if self.phase == WAIT:
                return
            self.gap.since = None
            if self.phase == TRAIN and self.pass_.read and not self.over:
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
        self._counts().backwards += 1
        if not self.optimizer_seen and not self.owner and self.phase == TRAIN:
            self.gap.open(now, self.counts.data_wait)  # a step by hand ends here

    def step(self, now: float) -> None:
        if self.trial is not None:
            self.trial.step(now)
        self.optimizer_seen = True
        pass_ = self.pass_
        if pass_.read and pass_.source is not None:
            pass_.stepped()
        if self.phase != TRAIN or self.over or self.owner:
            self._trained(now)
            self._counts().steps += 1
            if self.owner or self.phase != TRAIN:
                return
            counts = self.counts
        else:
            counts = self.counts
            counts.steps += 1
        gap = self.gap
        if gap.since is not None and gap.need_calls is not None:
            gap.unclosed += 1  # no batch out of a DataLoader since the last step: watch the model's calls
            if gap.unclosed > UNCLOSED:
                gap.calls()
        elif gap.unclosed:
            gap.unclosed = 0
        gap.since, gap.loader = now, counts.data_wait

    def compute(self, now: float) -> None:
        """The step's compute begins: a training batch is out of the DataLoader, or the trained
        model is called with gradients on (``need_calls``); the loop's wait since the last step
        (or since training resumed) ends."""
        gap = self.gap
        since = gap.since
        if since is None:
            return
        gap.since = None
        if self.owner:
            return
        if not self.confirmed:  # the first step's wait: its training is not yet confirmed
            self.pending.loop_wait += max(0.0, now - since)
            if not gap.watched:
                gap.look(now - since - (self.pending.data_wait - gap.loader), now)
            return
        if self.phase != TRAIN or self.over:
            if self.resume_at is None and self.phase != TRAIN:
                return
            self._train_activity(now)  # the model trains again after model.train()
            gap.since = None
        counts = self.counts
        wait = now - since
        counts.loop_wait += wait
        counts.gaps += 1
        if gap.input:
            gap.input = False
            if counts.data_wait <= gap.loader and wait >= DATA_JOINABLE:
                self.data.wait(since, now, self.epoch, self.lane)  # an input wait outside a DataLoader, drawn
        if not gap.watched:  # the common case, every step: kept short
            rest = wait - (counts.data_wait - gap.loader)
            gap.rest += rest
            if rest > gap.peak:
                gap.peak = rest
            gap.steps += 1
            if gap.steps >= WATCH_EVERY:
                gap.look(0.0, now)

    def sampled(self, kind: str, what: str) -> None:
        """The watcher found the waiting loop in WHAT, of KIND (LOADER, INPUT or OWN)."""
        self.gap.sampled(kind, what)
        samples = self.counts.samples
        samples[(kind, what)] = samples.get((kind, what), 0) + 1

    def finish(self, now: float) -> None:
        """The process is ending: close what is open, send the last epoch's figures."""
        self.gap.since = None  # the last step has no next
        self.data.flush()
        if not self.confirmed or self.owner:
            return
        if not self.over:
            self._close_training(now)
        self._end(now)

    def leave(self, now: float) -> None:
        """The hooks are being taken out of a process that runs on (a detach): close what is
        open; the unit under way sends no figures, since it is not over."""
        self.gap.since = None
        self.data.flush()
        self._end(now)

    def wait_parts(self) -> tuple[float, float, float] | None:
        """The loop's wait so far, over every unit: (the DataLoader's, the rest of it, the share
        of the rest the samples so far found input), so that a window's data wait is its
        DataLoader wait and its rest at one share; None where neither a loader nor the loop's
        wait was measured."""
        declared = list(self.declared.counts.values())
        counts = self.counts
        if not (self.wait_measured or self.pass_.source is not None or counts.fetched
                or counts.gaps or any(c.fetched for c in declared)):
            return None
        loader = self.closed_loader + counts.data_wait + sum(c.data_wait for c in declared)
        return loader, self.closed_rest + counts.rest(), self.gap.input_share()

    @property
    def unit(self) -> str:
        """What one unit of this loop is (``TrainingPass.unit``): an epoch or a segment."""
        return self.pass_.unit

    # -- a framework's callback owns the phases (``declared``) -------------------------------

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
            self.declared.begin(name, epoch, lane, now)
        elif self.declared.end(name, epoch, now) and not self.setup_said:
            self._say_setup(None)  # a whole train phase read no measured loader

    def epoch_figures(self, epoch: int | None, now: float) -> dict[str, Any]:
        """The data wait and steps of EPOCH under an owning callback, for its epoch metrics."""
        counts = self.declared.taken(epoch)
        if counts is None:
            return {}
        self.closed_loader += counts.data_wait
        self.wait_measured = self.wait_measured or counts.fetched
        return counts.metrics(now, self.optimizer_seen)

    # -- inside ---------------------------------------------------------------------------

    def _counts(self) -> EpochCounts:
        return self.declared.counts_now() if self.owner else self.counts

    def _trained(self, now: float) -> None:
        """A backward pass or an optimizer step: training, beyond doubt."""
        if self.owner:
            return
        pass_ = self.pass_
        if not self.confirmed:
            if self.joined_steps is not None and pass_.last_source is None and self.joined_steps < JOINED_STEPS:
                self.joined_steps += 1   # the step under way at a join: the loop's batches are yet to be seen
                return
            if self.pending.source is None and pass_.last_source is not None:
                self.pending.source = pass_.last_source
            self._confirm(now)
            return
        if pass_.source is None and pass_.last_source is not None:
            pass_.source = pass_.last_source
            pass_.open = True
            self._say_setup(pass_.source, again=True)
        if self.phase != TRAIN or self.over:
            self._train_activity(now)

    def _confirm(self, now: float) -> None:
        pending, self.pending = self.pending, Pending()
        self.confirmed = True
        began = pending.since if pending.since is not None else now
        gap = self.gap
        if gap.start is None:  # the first look at the loop's wait spans its first steps
            gap.start = began
        self.evaluations.end(began)
        self.evaluations.say(self.voice, self.lane)  # an evaluation before any training step: in no unit
        self._train_activity(began)
        if pending.source is not None:
            self.pass_.source = pending.source
            self.pass_.open = True
            self.counts.iterators += 1
        elif not self.owner:
            gap.calls()  # no DataLoader read: the model's call ends each wait
        self._say_setup(self.pass_.source)
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
        if not training:
            self.pending = Pending()  # validation before any training: not an epoch's
            self.evaluations.batch(start)
            return
        self.evaluations.end(start)
        if first_of_pass and self.pending.source == source:
            self.pending = Pending()  # a second pass without training: start over
        if self.gap.since is None:
            self.gap.open(start, self.pending.data_wait)
        self.pending.wait(source, start, end)
        self.pass_.last_source = source

    def _train_activity(self, at: float) -> None:
        """Training goes on at AT: the train phase is open, in a new epoch if the last one's
        training is over. Training that goes on after a ``model.train()`` or a wait began there."""
        if self.resume_at is not None:
            at, self.resume_at = min(at, self.resume_at), None
        if self.epoch == 0 or self.over:
            self._end(at)
            self.epoch += 1
            self.counts = EpochCounts()
            self.gap.loader = 0.0  # the new counts start from no DataLoader wait
            self.over = False
            self.pass_.next_epoch()
            self._begin(TRAIN, at)
        elif self.phase != TRAIN:
            self._begin(TRAIN, at)

    def _validate(self, at: float) -> None:
        """Validation begins: it ends the unit's training where the pass says it does
        (``TrainingPass.evaluation``)."""
        self.gap.since = None
        if not self.over and self.pass_.evaluation(at):
            self._close_training(at)
        self.resume_at = None
        self._begin(VALIDATE, at)

    def _close_training(self, at: float) -> None:
        """The epoch's training is over: its figures go out. The train phase may go on (the
        code after the loader ran out); training activity after this begins the next epoch."""
        self.data.flush()
        counts = self.counts
        counts.fetched = counts.fetched or self.pass_.source is not None
        figures = counts.figures(at, self.optimizer_seen, self.gap.samples)
        if self.worker_batches is not None and figures.loader_wait_s is not None:
            (seconds, batches), (before, counted) = self.worker_batches(), self.workers_counted
            self.workers_counted = (seconds, batches)
            if batches > counted:  # what one batch took a worker to make
                figures = replace(figures, worker_batch_s=round((seconds - before) / (batches - counted), 6))
        self.closed_loader += counts.data_wait
        self.closed_rest += counts.rest()
        self.wait_measured = self.wait_measured or counts.fetched or bool(counts.gaps)
        self.voice.epoch(self.epoch, figures, self.unit)
        self.counts = EpochCounts()
        self.gap.loader = 0.0  # the new counts start from no DataLoader wait
        self.over = True

    def _begin(self, name: str, at: float) -> None:
        self._end(at)
        self.phase = name
        if name == TRAIN:
            self.counts.open_train(at)
            if not self.owner and self.gap.since is None:  # training resumes: the wait until its compute
                self.gap.open(at, self.counts.data_wait)
        self.voice.phase("begin", name, self.epoch, self.lane, at)

    def _end(self, at: float) -> None:
        if self.phase is None:
            return
        if self.phase == TRAIN:
            self.data.flush()
            self.counts.close_train(at)
        self.voice.phase("end", self.phase, self.epoch, self.lane, at)
        self.phase = None
