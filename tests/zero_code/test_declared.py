"""A callback's phases on literal times: where the data wait and steps under them are counted."""

from __future__ import annotations

from devicewatch.integrations.zero_code.declared import Declared
from devicewatch.integrations.zero_code.waits import DataPhases


class Drawn:
    def __init__(self) -> None:
        self.data: list[tuple[float, float, int | None, str]] = []

    def phase(self, *args: object) -> None: ...
    def epoch(self, *args: object, **kwargs: object) -> None: ...
    def setup(self, *args: object) -> None: ...

    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool:
        self.data.append((start, end, epoch, lane))
        return True


def test_the_first_batch_before_the_callbacks_train_phase_joins_it_and_the_epoch_is_handed_over_once():
    voice = Drawn()
    declared = Declared(DataPhases(voice))
    declared.wait(True, 0.0, 0.5)                    # the framework fetched its first batch before the epoch began
    declared.wait(False, 0.5, 0.6)                   # no gradients: not training's
    declared.begin("train", 1, "main", 1.0)
    declared.wait(True, 1.0, 1.2)
    declared.counts_now().steps += 1
    assert declared.training()
    assert declared.end("train", 1, 3.0) is True
    assert voice.data == [(1.0, 1.2, 1, "main")]     # drawn when the train phase ended; the pending wait only summed
    counts = declared.taken(1)
    assert counts is not None
    assert (counts.data_wait, counts.fetched, counts.steps, counts.train_time) == (0.7, True, 1, 2.0)
    assert declared.taken(1) is None


def test_outside_a_train_phase_nothing_is_counted_and_a_validation_batch_drops_the_pending_wait():
    declared = Declared(DataPhases(Drawn()))
    declared.wait(True, 0.0, 0.5)
    declared.begin("validate", 1, "main", 1.0)
    assert declared.pending == 0.0                   # begun: what was pending belongs to no train phase
    declared.counts_now().steps += 1                 # a step under validation: counted nowhere
    declared.wait(True, 1.0, 1.1)
    assert declared.end("train", 1, 2.0) is False    # not the phase open
    assert declared.end("validate", 1, 2.0) is False and declared.phase is None
    assert declared.counts == {}
