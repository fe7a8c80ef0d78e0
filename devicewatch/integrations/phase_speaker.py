"""How devicewatch's framework callbacks speak: the Lightning, Keras and Hugging Face callbacks
differ in when their framework tells them a phase begins or ends, not in what they say.

``PhaseSpeaker`` is the part they share: a phase's begin or end sent as an event and told to
the zero-code instrumentation (which then measures the data wait under the callback's phases),
run info, and an epoch's metrics with the instrumentation's figures for it. Standard library
and ``devicewatch.events`` only: it imports no framework, so each callback is a framework's
base class plus this.
"""

from __future__ import annotations

from typing import Any

from .. import events
from .zero_code import process_state


class PhaseSpeaker:
    """What a framework callback sends (a mix-in beside the framework's callback base class,
    which its ``__init__`` calls on)."""

    def __init__(self, lane: str = events.DEFAULT_LANE) -> None:
        super().__init__()
        self.lane = lane
        # Extra fields on every event this callback sends ({"source": "auto"} when the
        # instrumentation added it).
        self.event_fields: dict[str, Any] = {}

    def say_phase(self, name: str, epoch: int | None, begin: bool, at: float | None = None) -> None:
        """A phase's begin or end; AT (a ``time.monotonic()``) stamps one told after the fact."""
        stamp = {} if at is None else {"mono": at}
        (events.phase_begin if begin else events.phase_end)(name, epoch, self.lane, **stamp, **self.event_fields)
        process_state.declared_phase(name, epoch, self.lane, begin)

    def say_run_info(self, info: dict[str, Any]) -> None:
        events.emit(events.RUN_INFO, info=info, **self.event_fields)

    def say_epoch(self, epoch: int, metrics: dict[str, Any]) -> None:
        events.emit(events.EPOCH, epoch=epoch, metrics=metrics, **self.event_fields)

    @staticmethod
    def measured(epoch: int | None) -> dict[str, Any]:
        """The data wait and steps the instrumentation measured in EPOCH (empty outside it)."""
        return process_state.epoch_figures(epoch)
