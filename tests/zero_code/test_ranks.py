"""Ranks of one machine in one recording: a lane each, and a rank at a barrier is waiting."""

from __future__ import annotations

from devicewatch import analysis, events
from devicewatch.runformat import runfile

from conftest import write_run


def phase(kind: str, t: float, name: str, epoch: int, rank: int) -> dict:
    return {"type": "event", "t": t, "kind": kind, "name": name, "epoch": epoch,
            "lane": f"rank {rank}", "pid": 100 + rank, "rank": rank, "world_size": 2, "source": "auto"}


def test_the_rank_that_validates_finishes_last_not_the_one_waiting_for_it(tmp_path):
    """Rank 0 validates from 1.0 to 3.0 while rank 1 waits at the barrier until 3.0."""
    records = []
    for rank in (0, 1):
        records += [phase("phase_begin", 0.0, "train", 1, rank), phase("phase_end", 1.0, "train", 1, rank)]
    records += [phase("phase_begin", 1.0, "validate", 1, 0), phase("phase_end", 3.0, "validate", 1, 0),
                phase("phase_begin", 1.0, "wait", 1, 1), phase("phase_end", 3.0, "wait", 1, 1)]
    run = runfile.load(write_run(tmp_path / "run.jsonl", sorted(records, key=lambda r: r["t"])))
    assert analysis.lanes(analysis.phases(run)) == ["rank 0", "rank 1"]
    # the epoch runs 0.0-3.0: its noise floor is 0.1 s (2% of 3 s is less); rank 0's validate
    # took 2.0 s beyond rank 1's none
    figures = analysis.run_figures(run)
    assert [row.to_json() for row in analysis.straggler_figures(figures.stragglers, figures.unit)] == [{
        "epoch": 1, "last_rank": 0, "max_wait": 2.0, "waited": {"1": 2.0}, "length": 3.0, "noise_floor": 0.1,
        "finding": True, "lost_in": "validate", "phase_excess": 2.0,
        "text": "epoch 1: rank 0 finished its work last; validate +2.00 s on the other ranks' median; "
                "waited: rank 1 2.000s"}]


def test_a_rank_lane_is_the_same_whether_given_by_the_event_or_by_merge():
    assert events.rank_lane(1) == "rank 1" == events.rank_lane(1, "rank 1") == events.rank_lane(1, "main")
    assert events.rank_lane(1, "loader") == "rank 1 loader"


def test_a_rank_of_several_sends_its_main_lane_as_its_own(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT

    sent = tmp_path / "events"
    sent.touch()
    code = ("from devicewatch import events; events.phase_begin('train', 1); "
            "events.phase_begin('load', 1, lane='loader')")
    for world, lanes in (("2", ["rank 1", "rank 1 loader"]), ("1", ["main", "loader"])):
        sent.write_text("")
        env = dict(os.environ, PYTHONPATH=str(ROOT), DEVICEWATCH_EVENTS=str(sent), RANK="1", WORLD_SIZE=world)
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
        assert [json.loads(line)["lane"] for line in sent.read_text().splitlines()] == lanes
