"""The loop's pass over its training data, and so what one unit of the loop is.

With a DataLoader, an epoch is one pass over the training data set, and only a pass that ends
is one: the loader runs out, or the loop leaves it after several batches for a new pass
(``break`` after N batches). The pass is the one the loop consumes, not the one the loader
produces: a wrapper that reads ahead runs the DataLoader out a batch or two before the loop's
last step, so the loader running out only marks the pass as ``read`` (READ_AHEAD steps more
are its own; more: the loop replays, and its units are segments). A new iterator left after
one batch is not a new pass. A loop that reads no DataLoader makes its passes with the Python
``for`` loop around its steps: when an evaluation begins, the hooks tell (``left``) whether
that loop was left. A loop whose passes do not end has segments: the stretches between
evaluations.
"""

from __future__ import annotations

from collections.abc import Hashable

from .loop_interface import EPOCH, SEGMENT, LoopLeft

READ_AHEAD = 2          # steps a loop may take after its loader ran out (a wrapper reads ahead); more: it replays
LONG_PASS = 86400.0     # seconds: a pass longer than this at the loop's pace does not end within a run


class TrainingPass:
    """Where the loop is in its pass over the training data, and what it learnt of its passes."""

    def __init__(self) -> None:
        self.source: Hashable | None = None       # the training data set (None: no DataLoader read)
        self.last_source: Hashable | None = None  # ... the last one a training batch came from
        self.open = False                  # this epoch's pass over the training data has begun
        self.read = False                  # ... and its loader ran out (the loop may still hold batches read ahead)
        self.batches = 0                   # training batches taken from this pass's iterator
        self.length: int | None = None     # batches in the pass (None: unknown)
        self.since = 0.0                   # when the pass began
        self.ended = 0                     # passes that ran out or were left after several batches
        self.reiterated = False            # a new iterator was taken after a single batch of the last
        self.long = False                  # a pass would outlast LONG_PASS: segments
        self.after_read = 0                # steps since the loader ran out with no new pass
        self.replays = False               # the loop trained on past READ_AHEAD steps after its loader ran out
        self.endless: set[Hashable] = set()   # training data sets with no length: units are segments
        self.thread_fed = False            # a DataLoader read on another thread ran out (a queue the loop reads)
        self.left: LoopLeft | None = None  # the hooks' answer: whether the for loop around the steps was left
        self.left_passes = 0               # evaluations that came after the pass of a loop without a DataLoader ended ...
        self.inside = False                # ... or, before any did, inside it (every N steps): segments

    @property
    def unit(self) -> str:
        """What one unit of this loop is: an epoch (a pass over a training DataLoader, or of
        the ``for`` loop that feeds a loop without one, that ends) or a segment (the training
        between evaluations)."""
        if self.source is None:
            return EPOCH if self.thread_fed or (self.left_passes and not self.inside) else SEGMENT
        if self.source in self.endless or self.long or self.replays:
            return SEGMENT
        return SEGMENT if self.reiterated and not self.ended else EPOCH

    def new(self, length: int | None, at: float) -> None:
        """A new iterator over the training data at AT, LENGTH batches long (None: unknown)."""
        self.batches, self.length, self.since, self.after_read = 0, length, at, 0

    def next_epoch(self) -> None:
        self.open = False
        self.read = False

    def exhausted(self) -> None:
        """The training DataLoader ran out: the pass has been read."""
        self.ended += not self.read
        self.read = True
        self.after_read = 0

    def fed_elsewhere(self) -> None:
        """A DataLoader read on another thread ran out, for a loop that reads none of its own."""
        self.thread_fed = True
        self.ended += not self.read
        self.read = True

    def stepped(self) -> None:
        """An optimizer step: one after the loader ran out, past READ_AHEAD, is the loop replaying."""
        if self.read and self.source is not None:
            self.after_read += 1
            self.replays = self.replays or self.after_read > READ_AHEAD

    def evaluation(self, at: float) -> bool:
        """An evaluation begins at AT while the epoch's training goes on: whether it ends that
        training. It does where the pass has been read (for a loop without a DataLoader: its
        ``for`` loop was left), or for a loop of segments; an evaluation in the middle of a
        pass stays in its epoch, unless the pass could not end within a run (LONG_PASS)."""
        if self.source is None and not self.thread_fed and self.left is not None:
            self.judge()
        if not self.read and not self.ended and self.unit == EPOCH and self.length is not None \
                and self.batches > 0 and (self.length - self.batches) * (at - self.since) / self.batches > LONG_PASS:
            self.long = True
        return self.read or self.unit == SEGMENT

    def judge(self) -> None:
        """An evaluation begins in a loop that reads no DataLoader: its pass ended where the
        ``for`` loop around its steps was left, and the epoch's training with it; an evaluation
        inside that loop before any pass ended makes the loop's units segments for good, and
        one inside it after a pass ended stays in the epoch (as in a DataLoader's)."""
        assert self.left is not None
        left = self.left()
        if left and not self.inside:
            self.left_passes += 1
            self.read = True
        elif left is False and not self.left_passes:
            self.inside = True
