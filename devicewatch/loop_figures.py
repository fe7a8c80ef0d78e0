"""The figures devicewatch itself measures in each unit of a training loop (an epoch, or a
segment between evaluations), declared once: the zero-code loop makes them, its epoch event
carries them among the event's ``metrics``, and the reader tells them from the workload's own
metrics by these names (``runformat.records.EpochMetrics``). Each field also says where a view
puts it (``role``): a column of the epoch table, the data wait (a column of its own), or one of
the loop's workings, which the verdict and the advice say in words. Standard library only: it
is loaded in the workload's processes.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

COLUMN, DATA_WAIT, WORKING = "column", "data wait", "working"


def _figure(role: str) -> Any:
    return field(default=None, metadata={"role": role})


@dataclass(frozen=True)
class UnitFigures:
    """What the loop measured in one unit, as its epoch event's metrics: a field each, so a
    figure is named and typed here before it can reach a run file (``to_json`` leaves out
    what was not measured: absent, never 0)."""

    steps: int = field(metadata={"role": COLUMN})
    data_wait_s: float | None = _figure(DATA_WAIT)   # the input wait: the DataLoader's, and what the samples found input
    wait_s: float | None = _figure(WORKING)          # the loop's whole wait between steps
    loader_wait_s: float | None = _figure(WORKING)   # the part in the training DataLoader's __next__
    iterators: int | None = _figure(WORKING)         # new iterators over the training data
    waited_on: str | None = _figure(WORKING)         # what most of the input wait was spent on
    steps_per_s: float | None = _figure(COLUMN)
    worker_batch_s: float | None = _figure(WORKING)  # what one batch took a loader worker to make
    steps_sampled: bool | None = _figure(WORKING)    # counted from stack samples: at least this many

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if value is not None}

    def steps_text(self) -> str:
        """The steps as a view says them: ``≥12`` where counted from stack samples (a step
        shorter than the time between two samples may go unseen: a lower bound), else ``12``."""
        return f"≥{self.steps}" if self.steps_sampled else str(self.steps)


def _named(role: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(UnitFigures) if f.metadata["role"] == role)


# The names of the figures, in their order: what an epoch event's metrics may hold besides the
# workload's own; and by where a view puts them.
FIGURES = tuple(f.name for f in fields(UnitFigures))
# The one figure every unit has (the loop counts its steps): how its figures are told from a
# workload's own metrics.
(STEPS,) = (f.name for f in fields(UnitFigures) if f.default is MISSING)
COLUMNS = _named(COLUMN)
(DATA_WAIT_FIGURE,) = _named(DATA_WAIT)
WORKINGS = _named(WORKING)
