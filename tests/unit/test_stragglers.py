"""The one straggler rule (``analysis.stragglers``): literal phases whose finishes are reasoned,
judged the same by ``report`` (a job's folder, merged) and the live job model."""

import pytest

from devicewatch import analysis
from devicewatch.analysis.stragglers import (NOISE_SECONDS, NOISE_SHARE, RankPhase, judge, judge_all, tally,
                                             text)
from devicewatch.job_files import load_run
from devicewatch.live.job import JobModel
from devicewatch.render.report import report_text

from job_nodes import NodeWriter


def work(rank, epoch, start, end, name="train"):
    return RankPhase(rank, epoch, name, start, end)


def barrier_job(folder):
    """Epoch 1 of two nodes on one wall clock: rank 0 trains to 8.0 s and then waits at the
    barrier until 10.01 s; rank 1 trains to 10.0 s. Rank 0's last phase ends last (10.01), but
    its work ended at 8.0: rank 1 is the straggler, and rank 0 waited 10.0 - 8.0 = 2.0 s."""
    a, b = NodeWriter(folder, 0, 1000.0, 50.0), NodeWriter(folder, 1, 1000.0, 70.0)
    for node in (a, b):
        node.sample(0.5, [50, 50, 50, 50])
    a.phase("phase_begin", 0.0, 1)
    a.phase("phase_end", 8.0, 1)
    a.phase("phase_begin", 8.0, 1, name="wait")
    b.phase("phase_begin", 0.0, 1)
    b.phase("phase_end", 10.0, 1)
    a.phase("phase_end", 10.01, 1, name="wait")
    for node in (a, b):
        node.sample(10.5, [50, 50, 50, 50])
        node.end(11.0)


def test_a_rank_waiting_at_a_barrier_is_not_the_straggler_in_report_nor_on_the_job_screen(tmp_path):
    barrier_job(tmp_path)
    live = JobModel(folder=tmp_path)
    row = live.stragglers[1]
    assert (row.last_rank, row.waited, row.finding) == (1, {0: pytest.approx(2.0)}, True)
    assert live.node_of(1) == "node 1"
    summary = analysis.Summary.of(analysis.run_figures(load_run(tmp_path)))
    [figures] = summary.stragglers
    assert (figures.last_rank, figures.waited, figures.finding) == (1, {"0": pytest.approx(2.0)}, True)
    # rank 1's train took 10.0 s, rank 0's 8.0: it lost its 2.0 s in train
    assert (row.lost_in, figures.lost_in) == ("train", "train")
    assert figures.text == text(row) == ("epoch 1: rank 1 finished its work last; train +2.00 s on the "
                                         "other ranks' median; waited: rank 0 2.000s")
    report = report_text(analysis.run_figures(load_run(tmp_path)), width=120)
    assert "rank 1 the straggler in 1 of 1 epoch, mostly losing its time in train" in report
    assert figures.text in report


def test_differences_of_hundredths_under_an_all_reduce_are_not_findings():
    """Seven 10 s epochs whose ranks end 0.00 to 0.04 s apart, rank 0 last in four: noise, not
    "rank 0 slowest in 4 of 7 epochs"."""
    spreads = [0.00, 0.04, 0.01, 0.03, 0.02, 0.04, 0.00]
    phases = []
    for epoch, spread in enumerate(spreads, start=1):
        start = 10.0 * (epoch - 1)
        last, first = (0, 1) if epoch % 2 else (1, 0)
        phases += [work(first, epoch, start, start + 10.0), work(last, epoch, start, start + 10.0 + spread)]
    rows = judge_all(phases)
    assert [r.epoch for r in rows] == list(range(1, 8))
    assert [r.last_rank for r in rows if r.max_wait > 0] == [1, 0, 1, 0, 1]
    assert not any(r.finding for r in rows)
    # the epochs last 10.00 to 10.04 s: 2% of that, about 0.2 s, is the larger floor
    assert [r.noise_floor for r in rows] == pytest.approx([NOISE_SHARE * (10.0 + s) for s in spreads])
    assert tally(rows) == "no straggler in 7 epochs: all ranks' work ended within the noise floor (0.1 s or 2%)"
    assert text(rows[1]) == ("epoch 2: no straggler: every rank's work ended within 0.04 s of the others "
                             "(under the noise floor of 0.20 s)")
    assert rows[1].lost_in is None


@pytest.mark.parametrize("length, wait, finding", [
    (1.0, 0.09, False), (1.0, 0.1, True),         # a short epoch: the floor is NOISE_SECONDS
    (100.0, 1.9, False), (100.0, 2.1, True),      # a long one: NOISE_SHARE of it, 2.0 s
])
def test_the_noise_floor_is_both_seconds_and_a_share_of_the_epoch(length, wait, finding):
    """The epoch runs from 0 to LENGTH (its last finish); the other rank finished WAIT earlier."""
    row = judge(3, [work(0, 3, 0.0, length - wait), work(1, 3, 0.0, length)])
    assert row.noise_floor == pytest.approx(max(NOISE_SECONDS, NOISE_SHARE * length))
    assert (row.last_rank, row.max_wait, row.finding) == (1, pytest.approx(wait), finding)


def test_the_phase_it_lost_its_time_in_is_the_one_longer_than_the_other_ranks_median():
    """Three ranks; rank 2's data phase took 0.9 s against the others' 0.1 and 0.2 (median 0.15):
    0.75 s beyond; its train took as long as theirs."""
    phases = []
    for rank, data in ((0, 0.1), (1, 0.2), (2, 0.9)):
        phases += [work(rank, 1, 0.0, data, "data"), work(rank, 1, data, data + 2.0)]
    row = judge(1, phases)
    assert (row.last_rank, row.lost_in, row.phase_excess) == (2, "data", pytest.approx(0.75))
    assert row.waited == {0: pytest.approx(0.8), 1: pytest.approx(0.7)}
    # phases of other epochs and a wait are no part of it; a lone rank is no comparison
    assert judge(1, phases + [work(0, 1, 2.1, 5.0, "wait"), work(0, 2, 3.0, 9.0)]) == row
    assert judge(2, phases + [work(0, 2, 3.0, 9.0)]) is None


def test_of_an_odd_count_of_other_ranks_the_median_is_the_middle_one():
    """Four ranks; rank 3's data phase took 1.0 s against 0.1, 0.5 and 0.2: the median is the
    middle one, 0.2 (not their mean, 0.2667): 0.8 s beyond, in the order the ranks finished."""
    phases = []
    for rank, data in ((0, 0.1), (1, 0.5), (2, 0.2), (3, 1.0)):
        phases += [work(rank, 1, 0.0, data, "data"), work(rank, 1, data, data + 2.0)]
    row = judge(1, phases)
    assert (row.last_rank, row.lost_in, row.phase_excess) == (3, "data", pytest.approx(0.8))


def test_the_tally_counts_only_findings_and_names_where_it_lost_the_time():
    rows = judge_all([work(0, 1, 0, 1.0), work(1, 1, 0, 1.5),       # rank 1 by 0.5 s
                      work(0, 2, 2, 3.0), work(1, 2, 2, 3.02),      # noise
                      work(0, 3, 4, 5.0), work(1, 3, 4, 5.6)])      # rank 1 by 0.6 s
    assert [r.finding for r in rows] == [True, False, True]
    assert tally(rows) == "rank 1 the straggler in 2 of 3 epochs, mostly losing its time in train"
    assert tally(rows, "segment").endswith("in 2 of 3 segments, mostly losing its time in train")
