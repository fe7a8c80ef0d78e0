"""What the loop counts of its steps: one unit's figures (``EpochCounts``), and the stretch
before training was confirmed (``Pending``), whose waits join the first unit once it is."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ...loop_figures import UnitFigures
from .loop_interface import DATALOADER, INPUT, OWN

PENDING_DATA_PHASES = 16  # data phases (and evaluations) held while training is not yet confirmed


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

    def rest(self) -> float:
        """The loop's wait outside a DataLoader in this unit (none where no wait was measured)."""
        return max(0.0, self.loop_wait - self.data_wait) if self.gaps else 0.0


@dataclass
class Pending:
    """What happened before training was confirmed: since when the loop may have been
    training, and the waits of that stretch."""

    since: float | None = None
    source: Hashable | None = None
    data_wait: float = 0.0
    waits: list[tuple[float, float]] = field(default_factory=list)
    loop_wait: float = 0.0

    def wait(self, source: Hashable, start: float, end: float) -> None:
        """A training batch of SOURCE waited for from START to END."""
        if self.since is None:
            self.since = start
        self.source = source
        self.data_wait += end - start
        if len(self.waits) < PENDING_DATA_PHASES:
            self.waits.append((start, end))
