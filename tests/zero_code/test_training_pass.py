"""The loop's pass over its training data on literal observations: what a unit is, when an
evaluation ends the epoch's training, when a loop replays."""

from __future__ import annotations

from devicewatch.integrations.zero_code.loop_interface import EPOCH, SEGMENT
from devicewatch.integrations.zero_code.training_pass import LONG_PASS, READ_AHEAD, TrainingPass

TRAIN_SET = "train-set"


def fed(length: int | None = None) -> TrainingPass:
    """A pass over TRAIN_SET begun at 0 s, LENGTH batches long."""
    pass_ = TrainingPass()
    pass_.source = TRAIN_SET
    pass_.new(length, 0.0)
    return pass_


def test_a_unit_is_an_epoch_only_where_passes_end():
    assert TrainingPass().unit == SEGMENT          # no DataLoader and no for loop found: segments
    fed_by_a_thread = TrainingPass()
    fed_by_a_thread.fed_elsewhere()
    assert fed_by_a_thread.unit == EPOCH and fed_by_a_thread.read and fed_by_a_thread.ended == 1
    assert fed().unit == EPOCH
    endless = fed()
    endless.endless.add(TRAIN_SET)
    assert endless.unit == SEGMENT                 # a stream has no passes to end
    reiterated = fed()
    reiterated.reiterated = True
    assert reiterated.unit == SEGMENT              # a new iterator every step, and no pass ended ...
    reiterated.exhausted()
    assert reiterated.unit == EPOCH                # ... until one does


def test_a_pass_read_twice_is_one_ended_pass():
    pass_ = fed(10)
    pass_.exhausted()
    pass_.exhausted()
    assert (pass_.read, pass_.ended, pass_.after_read) == (True, 1, 0)
    pass_.next_epoch()
    assert (pass_.open, pass_.read) == (False, False)


def test_steps_past_the_read_ahead_after_the_loader_ran_out_are_a_replay():
    pass_ = fed(10)
    pass_.stepped()                                # not read yet: no step counts after it
    assert pass_.after_read == 0
    pass_.exhausted()
    for _ in range(READ_AHEAD):                    # a wrapper's batches read ahead: still the pass's
        pass_.stepped()
    assert (pass_.after_read, pass_.replays, pass_.unit) == (READ_AHEAD, False, EPOCH)
    pass_.stepped()
    assert (pass_.replays, pass_.unit) == (True, SEGMENT)


def test_an_evaluation_in_the_middle_of_a_pass_stays_in_its_epoch_unless_the_pass_would_outlast_a_run():
    # 10 of 1,000 batches in 10 s: the 990 left take 990 s at that pace, well within a run
    short = fed(1000)
    short.batches = 10
    assert short.evaluation(10.0) is False and not short.long
    # 10 of 100,000,000 batches in 10 s: 99,999,990 s left, past LONG_PASS (a day)
    assert 99_999_990 > LONG_PASS
    long = fed(100_000_000)
    long.batches = 10
    assert long.evaluation(10.0) is True and long.long and long.unit == SEGMENT
    # a pass whose loader ran out: the evaluation ends its epoch's training whatever its length
    read = fed(1000)
    read.batches = 1000
    read.exhausted()
    assert read.evaluation(1000.0) is True


def answers(*verdicts: bool | None):
    given = iter(verdicts)
    return lambda: next(given)


def test_a_for_loop_left_before_each_evaluation_makes_epochs_and_one_inside_it_first_makes_segments_for_good():
    left = TrainingPass()
    left.left = answers(True, True)
    assert left.evaluation(1.0) is True and left.unit == EPOCH and left.left_passes == 1
    left.next_epoch()
    assert left.evaluation(2.0) is True and left.left_passes == 2
    inside = TrainingPass()
    inside.left = answers(False, True)
    assert inside.evaluation(1.0) is True and inside.inside   # a segment: its training ends all the same
    assert inside.evaluation(2.0) is True and inside.unit == SEGMENT and inside.left_passes == 0
    unknown = TrainingPass()
    unknown.left = answers(None)                   # a while loop: no for loop found, nothing learnt
    assert unknown.evaluation(1.0) is True and (unknown.left_passes, unknown.inside) == (0, False)
