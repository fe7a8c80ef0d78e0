"""Evaluations before training is confirmed, on literal times: which are kept, and how they are said."""

from __future__ import annotations

from devicewatch.integrations.zero_code.evaluations import Evaluations
from devicewatch.integrations.zero_code.step_counts import PENDING_DATA_PHASES
from devicewatch.integrations.zero_code.waits import DATA_VISIBLE


class Phases:
    def __init__(self) -> None:
        self.said: list[tuple[str, str, int | None, str, float]] = []

    def phase(self, kind: str, name: str, epoch: int | None, lane: str, at: float) -> None:
        self.said.append((kind, name, epoch, lane, at))

    def data_phase(self, *args: object) -> bool: return True
    def epoch(self, *args: object, **kwargs: object) -> None: ...
    def setup(self, *args: object) -> None: ...


def test_an_evaluation_is_kept_where_it_read_a_batch_or_lasted_long_enough_to_see():
    evaluations = Evaluations()
    evaluations.begin(1.0)
    evaluations.end(1.0 + DATA_VISIBLE / 2)          # a model.eval() and back: nothing evaluated
    evaluations.batch(2.0)
    evaluations.batch(2.1)                           # the same evaluation: still from 2 s
    evaluations.end(2.01 + DATA_VISIBLE / 2)         # short, but it read a batch
    evaluations.begin(3.0)
    evaluations.end(4.0)                             # a second long: seen
    evaluations.end(5.0)                             # none going on: nothing more
    assert evaluations.kept == [(2.0, 2.01 + DATA_VISIBLE / 2), (3.0, 4.0)]


def test_the_kept_evaluations_are_said_in_no_epoch_once_and_at_most_the_pending_bound():
    evaluations = Evaluations()
    for n in range(PENDING_DATA_PHASES + 2):
        evaluations.batch(float(n))
        evaluations.end(n + 0.5)
    voice = Phases()
    evaluations.say(voice, "rank 1")
    assert len(voice.said) == 2 * PENDING_DATA_PHASES
    assert voice.said[:2] == [("begin", "validate", None, "rank 1", 0.0), ("end", "validate", None, "rank 1", 0.5)]
    evaluations.say(voice, "rank 1")
    assert len(voice.said) == 2 * PENDING_DATA_PHASES
