"""Evaluations before training is confirmed: kept until it is, then said in no unit.

An inference script, the torchrun agent or a DataLoader worker never trains, so the loop says
nothing until the first backward pass or optimizer step. An evaluation before that (a
``model.eval()`` that read a batch, or lasted long enough to see) is kept, at most
PENDING_DATA_PHASES of them, and said as a validate phase of no epoch once training is
confirmed: a sanity check before training is seen, and counted in no unit.
"""

from __future__ import annotations

from .loop_interface import VALIDATE, Voice
from .step_counts import PENDING_DATA_PHASES
from .waits import DATA_VISIBLE


class Evaluations:
    """The evaluations before training was confirmed, and the one going on."""

    def __init__(self) -> None:
        self.kept: list[tuple[float, float]] = []
        self.since: float | None = None    # the one going on began (None: none)
        self.fetched = False               # ... and read a batch

    def begin(self, at: float) -> None:
        if self.since is None:
            self.since = at

    def batch(self, at: float) -> None:
        """A validation batch was taken at AT."""
        self.begin(at)
        self.fetched = True

    def end(self, at: float) -> None:
        """Training may begin at AT: the evaluation going on ends there, kept if it evaluated."""
        if self.since is not None:
            if len(self.kept) < PENDING_DATA_PHASES and (self.fetched or at - self.since >= DATA_VISIBLE):
                self.kept.append((self.since, at))
            self.since, self.fetched = None, False

    def say(self, voice: Voice, lane: str) -> None:
        """Training is confirmed: the evaluations kept are said, in no unit."""
        for start, end in self.kept:
            voice.phase("begin", VALIDATE, None, lane, start)
            voice.phase("end", VALIDATE, None, lane, end)
        self.kept = []
