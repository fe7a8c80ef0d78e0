"""A framework's callback owns the phases (Lightning, Keras, Hugging Face): the loop follows them.

The loop then says no train or validate phase of its own. It keeps, for each train phase the
callback declares, the data wait and the steps (``EpochCounts``), which the callback adds to its
epoch's metrics (``figures``). A framework fetches an epoch's first batch before its callback
hears of the epoch: a training batch's wait outside any declared phase joins the next train
phase (``pending``).
"""

from __future__ import annotations

from .loop_interface import TRAIN
from .step_counts import EpochCounts
from .waits import DataPhases


class Declared:
    """The phase the owning callback declared last, and each epoch's counts under it."""

    def __init__(self, data: DataPhases) -> None:
        self.data = data
        self.phase: tuple[str, int | None, str] | None = None   # (name, epoch, lane) open now
        self.counts: dict[int | None, EpochCounts] = {}
        self.pending = 0.0                 # training batches' wait before the callback's train phase

    def training(self) -> bool:
        return self.phase is not None and self.phase[0] == TRAIN

    def counts_now(self) -> EpochCounts:
        """Where a step counts: the declared train phase's epoch, else nowhere (a throwaway)."""
        if self.phase is not None and self.phase[0] == TRAIN:
            return self.counts.setdefault(self.phase[1], EpochCounts())
        return EpochCounts()

    def begin(self, name: str, epoch: int | None, lane: str, now: float) -> None:
        self.phase = (name, epoch, lane)
        if name == TRAIN:
            counts = self.counts.setdefault(epoch, EpochCounts())
            counts.open_train(now)
            if self.pending:
                counts.data_wait += self.pending
                counts.fetched = True
        self.pending = 0.0

    def end(self, name: str, epoch: int | None, now: float) -> bool:
        """The callback ended phase NAME of EPOCH: whether a train phase ended."""
        if self.phase is None or self.phase[0] != name:
            return False
        self.phase = None
        if name != TRAIN:
            return False
        self.counts.setdefault(epoch, EpochCounts()).close_train(now)
        self.data.flush()
        return True

    def wait(self, grad: bool, start: float, end: float) -> None:
        """A batch taken from START to END (GRAD: with gradients on)."""
        if self.phase is None:
            if grad:
                self.pending += end - start
            return
        name, epoch, lane = self.phase
        if name == TRAIN:
            counts = self.counts.setdefault(epoch, EpochCounts())
            counts.data_wait += end - start
            counts.fetched = True
            self.data.wait(start, end, epoch, lane)
        else:
            self.pending = 0.0

    def taken(self, epoch: int | None) -> EpochCounts | None:
        """EPOCH's counts, handed to its callback once (None: none were kept)."""
        counts = self.counts.pop(epoch, None)
        if counts is not None:
            self.data.flush()
        return counts
