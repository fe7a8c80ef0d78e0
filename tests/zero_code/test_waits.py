"""The loop's wait on literal times: when it is worth watching, how its data phases are drawn,
what its samples say of it."""

from __future__ import annotations

import pytest

from devicewatch.integrations.zero_code.loop_interface import INPUT, LOADER, OWN
from devicewatch.integrations.zero_code.waits import (DATA_VISIBLE, WATCH_EVERY, WATCH_GAP, DataPhases, Gap,
                                                       spent_on)


def watched_after(rests: list[float], every: float = 0.005) -> int | None:
    """A Gap looked at once a step, steps EVERY seconds apart, each waiting REST outside a
    DataLoader: the step (from 0) at which the watcher was started, or None."""
    started: list[int] = []
    gap = Gap()
    for n, rest in enumerate(rests):
        gap.watch = lambda n=n: started.append(n)
        gap.look(rest, every * (n + 1))
    return started[0] if started else None


def test_a_wait_spread_over_a_span_of_steps_is_watched_at_the_spans_end():
    # 2 ms a step over 8 steps: 16 ms, past both WATCH_GAP a step (8 ms) and 5% of the 40 ms span
    assert WATCH_EVERY == 8 and WATCH_GAP * WATCH_EVERY == pytest.approx(0.008)
    assert watched_after([0.002] * 16) == WATCH_EVERY - 1


def test_one_long_wait_in_a_span_is_watched_only_when_the_next_span_has_one_too():
    # 0.1 ms a step and one 12 ms preemption: 12.7 ms in the span, but 0.7 ms without its peak
    once = [0.0001] * 7 + [0.012] + [0.0001] * 8
    assert watched_after(once) is None
    assert watched_after(once[:8] * 2) == 2 * WATCH_EVERY - 1   # a prefetcher that falls behind each span


def test_a_look_closes_its_span_and_a_watched_gap_asks_no_more():
    gap = Gap()
    for n in range(WATCH_EVERY):
        gap.look(0.0001, 0.005 * (n + 1))
    assert (gap.steps, gap.rest, gap.peak, gap.start, gap.watched) == (0, 0.0, 0.0, 0.04, False)


def test_the_model_calls_are_asked_for_once():
    asked: list[int] = []
    gap = Gap()
    gap.need_calls = lambda: asked.append(1)
    gap.calls()
    gap.calls()
    assert asked == [1] and gap.need_calls is None


def test_samples_say_which_share_of_the_wait_outside_a_dataloader_was_input():
    gap = Gap()
    assert gap.input_share() == 0.0                # no sample: no share claimed
    for kind, what, n in ((INPUT, "queue at train.py:9", 3), (OWN, "logging", 1), (LOADER, "DataLoader", 5)):
        for _ in range(n):
            gap.sampled(kind, what)
    assert gap.input_share() == 0.75               # 3 of the 4 outside the DataLoader
    assert gap.input and gap.samples[(LOADER, "DataLoader")] == 5


class Drawn:
    def __init__(self, accept: bool = True) -> None:
        self.accept = accept
        self.phases: list[tuple[float, float, int | None, str]] = []

    def phase(self, *args: object) -> None: ...
    def epoch(self, *args: object, **kwargs: object) -> None: ...
    def setup(self, *args: object) -> None: ...

    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool:
        self.phases.append((start, end, epoch, lane))
        return self.accept


def test_waits_close_together_that_fill_their_span_are_drawn_as_one():
    voice = Drawn()
    data = DataPhases(voice)
    assert DATA_VISIBLE == 0.05
    data.wait(0.0, 0.03, 1, "main")      # 30 ms: under DATA_VISIBLE alone
    data.wait(0.032, 0.06, 1, "main")    # 2 ms later; 58 of the joined 60 ms waited (over 90%)
    assert voice.phases == []            # held: it may join the next
    data.flush()
    assert voice.phases == [(0.0, 0.06, 1, "main")]


def test_waits_of_two_epochs_or_too_far_apart_are_not_joined_and_a_short_one_is_not_drawn():
    voice = Drawn()
    data = DataPhases(voice)
    data.wait(0.0, 0.03, 1, "main")
    data.wait(0.032, 0.09, 2, "main")    # the next epoch's: not joined; the 30 ms one is too short to draw
    data.wait(0.2, 0.3, 2, "main")       # 110 ms later: the 58 ms one is drawn on its own
    data.flush()
    assert voice.phases == [(0.032, 0.09, 2, "main"), (0.2, 0.3, 2, "main")]
    assert data.undrawn == 0


def test_a_wait_the_voice_refuses_is_counted_undrawn():
    voice = Drawn(accept=False)
    data = DataPhases(voice)
    for start in (0.0, 1.0, 2.0):
        data.wait(start, start + 0.1, 1, "main")
    data.flush()
    assert (len(voice.phases), data.undrawn, data.tokens) == (3, 3, 10.0)   # no token spent on a refusal


def test_what_the_wait_was_spent_on_from_the_stack():
    script = ("/home/u/train.py", "main", 42, False, False)
    queue = ("/usr/lib/python3.11/queue.py", "get", 180, False, True)
    assert spent_on([queue, script]) == (INPUT, "queue at train.py:42")
    assert spent_on([script]) == (OWN, "train.py:42")
