"""A unit's counts on literal figures: what ``EpochCounts`` makes of its steps and waits, and
what ``Pending`` holds before training is confirmed."""

from __future__ import annotations

from devicewatch.integrations.zero_code.loop_interface import DATALOADER, INPUT, LOADER, OWN
from devicewatch.integrations.zero_code.step_counts import PENDING_DATA_PHASES, EpochCounts, Pending
from devicewatch.loop_figures import UnitFigures


def test_a_units_figures_split_the_wait_outside_the_dataloader_by_its_samples():
    # 40 steps in 10 s of training; 2 s of the loop's wait, 1.5 s of it in the DataLoader; of the
    # 0.5 s outside it, 3 of 4 samples found input (a queue): 0.375 s more of data wait
    counts = EpochCounts(steps=40, data_wait=1.5, train_time=10.0, fetched=True, loop_wait=2.0, gaps=40,
                         iterators=1, samples={(INPUT, "queue at train.py:9"): 3, (OWN, "logging"): 1,
                                               (LOADER, DATALOADER): 7})
    assert counts.rest() == 0.5
    assert counts.figures(20.0, optimizer_seen=True) == UnitFigures(
        40, data_wait_s=1.875, wait_s=2.0, loader_wait_s=1.5, iterators=1, waited_on=DATALOADER, steps_per_s=4.0)


def test_the_input_outside_the_dataloader_is_named_where_it_is_the_most_of_the_wait():
    # no DataLoader: 1 s of waits between 10 steps, all sampled in a queue
    counts = EpochCounts(steps=10, train_time=5.0, loop_wait=1.0, gaps=10, samples={(INPUT, "queue at a.py:3"): 2})
    assert counts.metrics(5.0, optimizer_seen=True) == {
        "steps": 10, "data_wait_s": 1.0, "wait_s": 1.0, "waited_on": "queue at a.py:3", "steps_per_s": 2.0}


def test_a_unit_without_samples_of_its_own_reads_the_loops_so_far_and_unsampled_it_is_the_scripts_own():
    counts = EpochCounts(steps=10, train_time=5.0, loop_wait=1.0, gaps=10)
    assert counts.figures(5.0, True).data_wait_s == 0.0          # no sample: the wait is the script's own
    loop_so_far = {(INPUT, "generator batches() in data.py"): 1, (OWN, "logging"): 1}
    assert counts.figures(5.0, True, fallback=loop_so_far).data_wait_s == 0.5


def test_steps_are_backward_passes_where_no_optimizer_steps_and_an_open_train_phase_counts_to_now():
    counts = EpochCounts(steps=0, backwards=6)
    counts.open_train(10.0)
    counts.open_train(11.0)                       # already open: still from 10 s
    assert counts.figures(13.0, optimizer_seen=False) == UnitFigures(6, steps_per_s=2.0)
    counts.close_train(13.0)
    counts.close_train(14.0)                      # already closed: nothing more
    assert counts.train_time == 3.0


def test_what_was_not_measured_is_absent_never_zero():
    assert EpochCounts(steps=5).figures(0.0, True) == UnitFigures(5)
    assert EpochCounts(steps=5, fetched=True).figures(0.0, True) == UnitFigures(5, data_wait_s=0.0)
    assert EpochCounts(steps=5, loop_wait=3.0, gaps=0).rest() == 0.0


def test_the_stretch_before_training_is_confirmed_keeps_its_first_waits_and_sums_them_all():
    pending = Pending()
    for n in range(PENDING_DATA_PHASES + 4):
        pending.wait("train-set", float(n), n + 0.25)
    assert (pending.since, pending.source, pending.data_wait) == (0.0, "train-set", 0.25 * (PENDING_DATA_PHASES + 4))
    assert len(pending.waits) == PENDING_DATA_PHASES and pending.waits[0] == (0.0, 0.25)
