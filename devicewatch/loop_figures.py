"""The figures devicewatch itself measures in each unit of a training loop (an epoch, or a
segment between evaluations), declared once: the zero-code loop makes them, its epoch event
carries them among the event's ``metrics``, and the reader tells them from the workload's own
metrics by these names (``runformat.records.EpochMetrics``). Standard library only: it is
loaded in the workload's processes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class UnitFigures:
    """What the loop measured in one unit, as its epoch event's metrics: a field each, so a
    figure is named and typed here before it can reach a run file (``to_json`` leaves out
    what was not measured: absent, never 0)."""

    steps: int
    data_wait_s: float | None = None       # the input wait: the DataLoader's, and what the samples found input
    wait_s: float | None = None            # the loop's whole wait between steps
    loader_wait_s: float | None = None     # the part in the training DataLoader's __next__
    iterators: int | None = None           # new iterators over the training data
    waited_on: str | None = None           # what most of the input wait was spent on
    steps_per_s: float | None = None
    worker_batch_s: float | None = None    # what one batch took a loader worker to make

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if value is not None}


# The names of the figures, in their order: what an epoch event's metrics may hold besides the
# workload's own.
FIGURES = tuple(f.name for f in fields(UnitFigures))
