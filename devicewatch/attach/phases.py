"""The training loop's sampled stacks as the run's phases, epochs and loop figures.

Fed the loop thread's slices in time order (``feed``), it writes what the zero-code
instrumentation writes for a launched run, in the same vocabulary (``events``): a ``train``
phase per pass over the training data with ``data`` phases inside it, a ``validate`` phase,
and at the end of each pass its epoch event with the loop's figures (``UnitFigures``). Every
event it writes says ``sampled``: its times are those of the samples, within a sampling period.

A pass ends where the stacks say so: a DataLoader's iterator is made anew, or an evaluation has
run its course. Evaluation seen amid a pass is held until it is judged (``_real``): half as long
as the shortest evaluation seen, or, the pass having run its course, a good part of one; else it
was a misread sample on a busy machine (a non-blocking read of a stack as it changes, held until
a late next sample) and its time stays the pass's. The pass under way when the sampler joined is
partial: its phases have no epoch number and no epoch event, so no figure mixes a partial pass
with whole ones. Passes are numbered from the attach (1 is the first whole pass seen), or by the
script's own loop variable where it can be read (``number``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import events
from ..loop_figures import UnitFigures
from ..runformat import records
from .classify import DATA, TRAIN, VALIDATE, Classifier, loader_workers, new_iterator
from .stacks import Slice

DATA_JOIN_GAP = 0.05   # seconds: data waits closer than this are drawn as one data phase
SOURCE = "auto"        # analysis reads these phases as the zero-code instrumentation's
# A slice of another section than the slices either side of it, shorter than this many sampling
# periods (or GLITCH seconds, the longer), is theirs. A non-blocking sample may read a stack while
# it changes (evaluation's frames without the script's own line under no_grad), and one such
# sample, however late the next one comes on a busy machine, must not end a pass.
GLITCH_PERIODS = 2.5
GLITCH = 0.05
GAP = 0.1   # seconds without a sample that are a gap, not the time between two samples
# Evaluation amid a pass ends it (``_real``) when it lasts FIRST glitches before any evaluation
# was seen whole; later, FULL of the shortest evaluation seen, or PART of it once the pass has
# lasted COURSE of the shortest pass seen. A busy machine stretches an evaluation (0.26 s quiet,
# 0.44-0.6 s beside two busy programs in the attach tests): FULL and PART are below such ratios.
FIRST = 1.5
FULL = 0.5
PART = 0.4
COURSE = 0.8


def _section(kind: str) -> str:
    """Which section a kind belongs to: a pass (data and train), evaluation, or neither."""
    return "pass" if kind in (DATA, TRAIN) else kind


@dataclass
class Pass:
    epoch: int | None        # None: the pass under way at the attach (partial)
    start: float
    data_s: float = 0.0
    train_s: float = 0.0
    other_s: float = 0.0
    steps: int = 0


class PhaseBuilder:
    def __init__(self, write: Callable[[dict[str, Any]], None], pid: int, thread: str = "MainThread",
                 classifier: Classifier | None = None, workers: Callable[[], int] | None = None,
                 period: float = 0.0):
        self._write = write
        self._pid = pid
        self._thread = thread
        self.classify = classifier or Classifier()
        self._workers = workers or (lambda: 0)
        self._glitch = max(GLITCH, GLITCH_PERIODS * period)   # period: seconds between two samples
        self.section: str | None = None        # train (a pass is open), validate, or None
        self.current: Pass | None = None
        self.passes = 0                        # whole passes begun
        self.after_pass = False                # a pass has ended: the next one is seen whole
        self.last_kind: str | None = None
        self.data_open: tuple[float, float] | None = None   # the data wait being drawn: (start, end)
        self.loader: dict[str, Any] | None = None
        self.end = 0.0
        self._held: tuple[Slice, str] | None = None   # the slice judged once the next one comes
        self._before: str | None = None               # the kind of the slice taken last
        self.number: Callable[[], int | None] = lambda: None   # the script's epoch, where it can be read
        # Evaluation amid a pass, not yet judged: [at, its seconds, the pass's seconds since it was last seen].
        self.pending: list[float] | None = None
        self.validate_from: float | None = None       # when the evaluation now open began after a pass
        self.shortest_validate: float | None = None   # the epoch's shape: its shortest evaluation seen whole
        self.shortest_pass: float | None = None       # ... and its shortest whole pass

    # -- events ---------------------------------------------------------------------------

    def _event(self, t: float, kind: str, **fields: Any) -> None:
        self._write(records.event(round(t, 4), kind, pid=self._pid, thread=self._thread, source=SOURCE,
                                  sampled=True, **fields))

    def _phase(self, begin: bool, name: str, t: float, epoch: int | None) -> None:
        self._event(t, events.PHASE_BEGIN if begin else events.PHASE_END, name=name, epoch=epoch,
                    lane=events.DEFAULT_LANE)

    # -- feeding --------------------------------------------------------------------------

    def feed(self, piece: Slice) -> None:
        """Take PIECE, the next of the loop thread's slices; it is judged with the one after it
        in hand (a glitch is judged by its neighbours)."""
        kind = self.classify.kind(piece.stack)
        if self._held is not None:
            held, held_kind = self._held
            if self._before is not None and _section(self._before) == _section(kind) != _section(held_kind) \
                    and held.end - held.start < self._glitch:
                held_kind = self._before
            self._take(held, held_kind)
        self._held = (piece, kind)

    def _take(self, piece: Slice, kind: str) -> None:
        self._before = kind
        start, end = max(piece.start, self.end), piece.end
        if end <= start:
            return
        self._loader_seen(piece, start)
        # After a moment nobody sampled (austin started again, a stalled machine) a change of
        # section is put halfway through it: the best guess, within half the gap either way.
        at = (self.end + start) / 2 if self.end > 0 and start - self.end > GAP else start
        if kind == VALIDATE:
            if self.section == TRAIN:
                if self.pending is None:
                    self.pending = [at, 0.0, 0.0]
                self.pending[2] = 0.0
                if self._real(self.pending[1] + end - start, self.pending[0]):
                    self._confirm()   # this slice not yet counted as the pass's: the evaluation's
                else:
                    self.pending[1] += end - start
            elif self.section != VALIDATE:
                self._phase(True, VALIDATE, at, self.current.epoch if self.current else None)
                self.section = VALIDATE
        elif kind in (DATA, TRAIN):
            restart = new_iterator(piece.stack) and self.current is not None and self.current.steps > 0
            if self.pending is not None:
                # After a moment nobody sampled (austin started again) the evaluation may have
                # gone on into it: up to halfway through it, as a change of section is put.
                unseen = (start - self.end) / 2 if start - self.end > GAP else 0.0
                if restart or (unseen and self._real(self.pending[1] + unseen, self.pending[0])):
                    self._confirm()
                else:
                    # An evaluation's own moments of another kind (a framework's hook, a half-read
                    # stack) are shorter than what it has run; once the pass has gone on longer
                    # than that, it was a misread: its seconds stay the pass's (other).
                    self.pending[2] += end - start
                    if self.pending[2] > max(self._glitch, self.pending[1]):
                        self.pending = None
            if self.section == VALIDATE or restart:
                self._open_pass(at, whole=True)
            elif self.section is None:
                self._open_pass(at, whole=self.after_pass)
        elif self.section == VALIDATE:   # evaluation over, the next pass not begun (a checkpoint saved, the end)
            self._end_validate(at)
        self._count(kind, start, end)
        self.last_kind = kind
        self.end = end

    def _real(self, seconds: float, at: float) -> bool:
        """Whether SECONDS of evaluation from AT, amid a pass, are the epoch's evaluation: long
        compared with the epoch's own shape (the shortest evaluation and pass seen whole)."""
        if seconds < self._glitch:
            return False
        if self.shortest_validate is None:
            return seconds >= FIRST * self._glitch
        if seconds >= FULL * self.shortest_validate:
            return True
        so_far = at - self.current.start if self.current else 0.0
        return self.shortest_pass is not None and so_far >= COURSE * self.shortest_pass \
            and seconds >= PART * self.shortest_validate

    def _confirm(self) -> None:
        """The evaluation held (``pending``) was one: the pass ends where it began."""
        assert self.pending is not None and self.current is not None
        at, seconds, _ = self.pending
        self.pending = None
        self.current.other_s = max(0.0, self.current.other_s - seconds)   # counted as the pass's while held
        self._close_pass(at)
        self._phase(True, VALIDATE, at, self.current.epoch)
        self.section = VALIDATE
        self.validate_from = at

    def _end_validate(self, t: float) -> None:
        self._phase(False, VALIDATE, t, self.current.epoch if self.current else None)
        self.section = None
        if self.validate_from is not None:
            seconds = t - self.validate_from
            self.shortest_validate = min(seconds, self.shortest_validate or seconds)
            self.validate_from = None

    def _loader_seen(self, piece: Slice, t: float) -> None:
        """The training DataLoader's setup, said once known (as the zero-code ``setup`` event)."""
        workers = loader_workers(piece.stack)
        if workers is None or self.section == VALIDATE:
            return
        loader = {"num_workers": max(1, self._workers()) if workers else 0}
        if loader != self.loader:
            self.loader = loader
            self._event(t, events.INSTRUMENT, state="setup", loader=loader)

    def _count(self, kind: str, start: float, end: float) -> None:
        p = self.current
        if p is None or self.section != TRAIN:
            return
        if kind == DATA:
            p.data_s += end - start
            if self.data_open is not None and start - self.data_open[1] <= DATA_JOIN_GAP:
                self.data_open = (self.data_open[0], end)
            else:
                self._close_data()
                self.data_open = (start, end)
        else:
            if kind == TRAIN:
                p.train_s += end - start
                if self.last_kind == DATA:
                    p.steps += 1
            else:
                p.other_s += end - start
            if self.data_open is not None and start - self.data_open[1] > DATA_JOIN_GAP:
                self._close_data()

    def _close_data(self) -> None:
        if self.data_open is not None and self.current is not None:
            start, end = self.data_open
            self._phase(True, DATA, start, self.current.epoch)
            self._phase(False, DATA, end, self.current.epoch)
        self.data_open = None

    def _open_pass(self, t: float, whole: bool) -> None:
        if self.section == VALIDATE:
            self._end_validate(t)
            self.after_pass = True
        elif self.section == TRAIN:
            self._close_pass(t)
        epoch = None
        if whole:
            self.passes += 1
            epoch = self.number() or self.passes
        self.current = Pass(epoch, t)
        self.section = TRAIN
        self._phase(True, TRAIN, t, epoch)

    def _close_pass(self, t: float) -> None:
        p = self.current
        assert p is not None
        self._close_data()
        self._phase(False, TRAIN, t, p.epoch)
        self.section = None
        self.after_pass = True
        if p.epoch is None:
            return
        self.shortest_pass = min(t - p.start, self.shortest_pass or t - p.start)
        # The samples cover the pass but for the moments no austin run sampled: the data wait is
        # its share of what was sampled, over the whole pass.
        sampled, loop = p.data_s + p.train_s + p.other_s, t - p.start
        data = round(p.data_s / sampled * loop, 4) if sampled > 0 else 0.0
        # The steps are those seen (a data wait, then training): a step shorter than the time
        # between two samples goes unseen, so the count is a lower bound, and no steps a second
        # are made of it.
        figures = UnitFigures(steps=p.steps, data_wait_s=data, wait_s=data, loader_wait_s=data, iterators=1,
                              waited_on="DataLoader" if data > 0 else None, steps_sampled=True)
        self._event(t, events.EPOCH, epoch=p.epoch, metrics=figures.to_json())

    def finish(self) -> None:
        """The process ended or was left: what is open ends where the last sample saw it."""
        if self._held is not None:
            self._take(*self._held)
            self._held = None
        if self.pending is not None:   # the run ended in it, or was left in it: an evaluation
            self._confirm()
        at = self.end
        if self.section == TRAIN:
            self._close_data()
            self._phase(False, TRAIN, at, self.current.epoch if self.current else None)
        elif self.section == VALIDATE:
            self._phase(False, VALIDATE, at, self.current.epoch if self.current else None)
        self.section = None
