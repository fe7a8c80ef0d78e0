"""A job's nodes followed live: literal node files written a record at a time, so every aligned
time, straggler and silence is reasoned from what was written."""

import os
import time
from pathlib import Path

import pytest

from devicewatch.errors import RunFileError
from devicewatch.live.job import SILENT_AFTER, JobModel, open_job

from conftest import command
from job_nodes import NodeWriter, epoch

def test_an_epochs_straggler_is_named_once_every_rank_has_left_it_with_the_phase_it_lost_time_in(tmp_path):
    # node 1 started 2 s after node 0 on the wall clock; its own t counts from its start
    a, b = NodeWriter(tmp_path, 0, 1000.0, 50.0), NodeWriter(tmp_path, 1, 1002.0, 900.0)
    a.sample(0.1, [10, 20, 30, 40])
    epoch(a, 1, 2.0, 1.0)                  # ends at wall 1000 + 3.5 = 1003.5
    epoch(b, 1, 0.0, 1.3)                  # ends at wall 1002 + 1.8 = 1003.8: 0.3 s later, in train
    model = JobModel(folder=tmp_path)
    assert model.job == "4711" and len(model.nodes) == 2
    assert [n.label for n in model.ordered()] == ["node 0", "node 1"]
    assert model.stragglers == {}          # nobody has begun epoch 2: epoch 1 may still go on
    a.phase("phase_begin", 3.6, 2)
    model.poll()
    assert model.stragglers == {}          # rank 1 has not left epoch 1 yet
    b.phase("phase_begin", 1.9, 2)
    assert model.poll()
    row = model.stragglers[1]
    assert (row.last_rank, model.node_of(row.last_rank), row.lost_in) == (1, "node 1", "train")
    assert row.waited == {0: pytest.approx(0.3)}
    assert row.phase_excess == pytest.approx(0.3)
    assert list(model.nodes.values())[0].cpu.tolist() == [10, 20, 30, 40]   # the latest reading of each core


def test_a_node_that_joins_late_is_followed_and_said_to_have_joined_late(tmp_path):
    first = NodeWriter(tmp_path, 0, 1000.0, 50.0)
    first.sample(0.1, [1, 2, 3, 4])
    model = JobModel(folder=tmp_path)
    assert [n.label for n in model.ordered()] == ["node0"]   # no rank has spoken: its file
    first.phase("phase_begin", 0.5, 1)
    late = NodeWriter(tmp_path, 1, 1045.0, 60.0)
    late.phase("phase_begin", 0.5, 1)
    assert model.poll()
    assert [n.label for n in model.ordered()] == ["node 0", "node 1"]
    assert model.origin == 1000.0 and model.ordered()[1].start_unix - model.origin == 45.0


def test_a_node_whose_file_stops_growing_is_silent_since_its_last_write_and_an_ended_one_is_not(tmp_path):
    a, b = NodeWriter(tmp_path, 0, 1000.0, 50.0), NodeWriter(tmp_path, 1, 1000.0, 50.0)
    a.sample(0.1, [1, 2, 3, 4])
    b.sample(0.1, [1, 2, 3, 4])
    b.end(0.2)
    long_ago = time.time() - SILENT_AFTER - 10
    for path in (a.path, b.path):
        os.utime(path, (long_ago, long_ago))
    model = JobModel(folder=tmp_path)
    now = time.time()
    node_a, node_b = model.ordered()
    assert node_a.silent(now) and node_a.grown_at == pytest.approx(long_ago)
    assert not node_b.silent(now) and node_b.status == "ok"
    a.sample(0.2, [5, 5, 5, 5])            # it speaks again
    model.poll()
    assert not node_a.silent(time.time())


def test_the_end_pair_refines_a_nodes_clock_rate_as_merge_does(tmp_path):
    a = NodeWriter(tmp_path, 0, 1000.0, 50.0)
    a.phase("phase_begin", 0.0, 1)
    a.phase("phase_end", 100.0, 1)
    model = JobModel(folder=tmp_path)
    node = model.ordered()[0]
    assert node.unix(100.0) == 1100.0                  # the start pair alone: rate 1
    a.end(100.0, drift=0.0005)                         # the wall clock ran 0.05 % fast (NTP slewing)
    model.poll()
    assert node.unix(100.0) == pytest.approx(1100.05)
    a2 = NodeWriter(tmp_path, 1, 1000.0, 50.0)
    a2.end(100.0, drift=0.01)                          # 1 %: a step of the clock, not a rate: left out
    model.poll()
    assert model.ordered()[1].unix(100.0) == 1100.0


def test_another_jobs_file_in_the_folder_is_not_mixed_in(tmp_path):
    NodeWriter(tmp_path, 0, 500.0, 5.0, job="old", name="old0.jsonl").end(1.0)
    NodeWriter(tmp_path, 0, 1000.0, 50.0)
    NodeWriter(tmp_path, 1, 1000.0, 50.0)
    model = JobModel(folder=tmp_path)
    assert model.job == "4711" and sorted(p.name for p in model.nodes) == ["node0.jsonl", "node1.jsonl"]
    assert model.left_out == ("old0.jsonl: of job old",)


def test_a_newer_job_starting_in_the_folder_takes_the_view_over(tmp_path):
    NodeWriter(tmp_path, 0, 500.0, 5.0, job="earlier", name="old.jsonl").end(1.0)
    model = JobModel(folder=tmp_path)      # opened before the new job's recorders wrote a line
    assert model.job == "earlier" and [p.name for p in model.nodes] == ["old.jsonl"]
    (tmp_path / "reserved.jsonl").touch()  # a recorder's file, reserved, its header not yet written
    NodeWriter(tmp_path, 0, 1000.0, 50.0)
    model.poll()
    assert model.job == "4711" and [p.name for p in model.nodes] == ["node0.jsonl"]
    assert model.left_out == ("old.jsonl: of job earlier",)


def test_bad_input_is_one_line(tmp_path):
    (tmp_path / "x.jsonl").write_text("not a run\n")
    with pytest.raises(RunFileError, match=r"holds no node's run file \(x.jsonl: not a devicewatch run file\)"):
        open_job([str(tmp_path)])
    with pytest.raises(RunFileError, match="x.jsonl is not a devicewatch run file"):
        open_job([str(tmp_path / "x.jsonl"), str(tmp_path / "x.jsonl")])
    with pytest.raises(RunFileError, match="no such file"):
        open_job([str(tmp_path / "nope.jsonl"), str(tmp_path / "x.jsonl")])
    empty = tmp_path / "empty"
    empty.mkdir()
    assert open_job([str(empty)]).nodes == {}   # a job about to start: its nodes join as they come
    merged = tmp_path / "merged.jsonl"
    merged.write_text('{"type": "header", "format": "devicewatch-run", "schema": 1, "hosts": [{"label": "node 0"}]}\n')
    with pytest.raises(RunFileError, match="merged.jsonl is already a merged run: replay it alone"):
        open_job([str(merged), str(merged)])


def test_replay_refuses_bad_input_in_one_line_before_the_terminal_is_taken(tmp_path):
    with pytest.raises(RunFileError, match="no such file"):
        command("replay", [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    (tmp_path / "x.jsonl").write_text("not a run\n")
    with pytest.raises(RunFileError, match="holds no node's run file"):
        command("replay", [str(tmp_path)])


def test_a_phase_begun_again_inside_itself_pairs_as_report_pairs_it_and_both_name_one_straggler(tmp_path, capsys):
    """Rank 1 begins train again inside its train of epoch 1 (a hook nested in the loop): the
    first end closes the inner one, the second the outer (``events.PhaseTracker``, the one
    pairing rule). Rank 0's work ends at 1.0 s, rank 1's at 1.3 s: over the noise floor
    (0.1 s; 2% of the 1.3 s epoch is less), rank 1 is the straggler, rank 0 waited 0.3 s, on
    the job screen as in the report of the same files."""
    import json

    a, b = NodeWriter(tmp_path, 0, 1000.0, 50.0), NodeWriter(tmp_path, 1, 1000.0, 900.0)
    a.phase("phase_begin", 0.0, 1)
    a.phase("phase_end", 1.0, 1)
    b.phase("phase_begin", 0.0, 1)
    b.phase("phase_begin", 0.2, 1)
    b.phase("phase_end", 1.0, 1)
    b.phase("phase_end", 1.3, 1)
    for node in (a, b):   # both go on to epoch 2: both have left epoch 1
        node.phase("phase_begin", 1.5, 2)
    model = JobModel(folder=tmp_path)
    model.poll()
    assert 1 in model.stragglers, "epoch 1 was never judged: a phase of it seemed open still"
    row = model.stragglers[1]
    assert (row.last_rank, row.finding) == (1, True) and row.waited == {0: pytest.approx(0.3)}
    for node in (a, b):
        node.phase("phase_end", 1.8, 2)
        node.end(2.0)
    assert command("report", [str(tmp_path), "--json"]) == 0
    reported = json.loads(capsys.readouterr().out)["stragglers"]
    assert reported[0]["epoch"] == 1 and reported[0]["last_rank"] == row.last_rank == 1
    assert reported[0]["waited"] == {"0": pytest.approx(0.3)}


def test_a_node_an_hour_in_is_opened_from_its_tail_with_every_phase_and_its_latest_reading(tmp_path):
    """A node's file as the one writer writes it, still growing, 5 × KEEP samples long: the
    model reads its every phase and only its newest KEEP samples (their ``total``: none before
    them decoded), the latest the one it draws; the straggler judged as from literal files."""
    from devicewatch.live.job import KEEP
    from devicewatch.runformat.writer import RunWriter

    samples = 5 * KEEP
    writers = []
    for rank, unix in ((0, 1000.0), (1, 1000.0)):
        header = {"interval": 0.1, "started_unix": unix, "clock": {"unix": unix, "mono": 50.0},
                  "host": {"hostname": "box", "cpu_count": 2, "gpus": []}, "job": {"id": "4711", "from": "SLURM_JOB_ID"}}
        writers.append(RunWriter(tmp_path / f"node{rank}.jsonl", header))
    who = lambda rank: {"rank": rank, "local_rank": 0, "world_size": 2, "group_rank": rank, "pid": 100 + rank}  # noqa: E731
    for i in range(1, samples + 1):
        for rank, writer in enumerate(writers):
            writer.write({"type": "sample", "t": i / 10, "cpu": [float(i), 10.0 * rank], "cpu_total": 1.0})
            if i == 1:
                writer.write({"type": "event", "t": 0.1, "kind": "phase_begin", "name": "train", "epoch": 1, **who(rank)})
            if i == 20 + 10 * rank:   # rank 0's train ends at 2.0 s, rank 1's at 3.0 s
                writer.write({"type": "event", "t": i / 10, "kind": "phase_end", "name": "train", "epoch": 1, **who(rank)})
            if i == 40:
                writer.write({"type": "event", "t": 4.0, "kind": "phase_begin", "name": "train", "epoch": 2, **who(rank)})
    for writer in writers:
        writer.close()
    model = JobModel(folder=tmp_path)
    node0, node1 = model.ordered()
    assert (node0.label, node1.label) == ("node 0", "node 1") and not node0.finished
    assert node0.run.samples.total == len(node0.run.samples) == KEEP
    assert node0.cpu.tolist() == [samples, 0.0] and node1.cpu.tolist() == [samples, 10.0]
    assert node0.last_seen == pytest.approx(samples / 10)
    row = model.stragglers[1]
    assert row.last_rank == 1 and row.waited == {0: pytest.approx(1.0)}
    assert 2 not in model.stragglers          # both ranks still in epoch 2


def test_a_node_is_silent_by_its_file_as_last_looked_at_not_by_the_time_its_job_took_to_open(tmp_path):
    a = NodeWriter(tmp_path, 0, 1000.0, 50.0)
    a.sample(0.1, [1, 2, 3, 4])
    model = JobModel(folder=tmp_path)
    node = model.ordered()[0]
    later = time.time() + SILENT_AFTER + 3     # the other nodes' files took that long to read
    assert not node.silent(later)
    long_ago = time.time() - SILENT_AFTER - 10
    os.utime(a.path, (long_ago, long_ago))
    model.poll()                                # looked at again: it has not grown since long ago
    assert node.silent(time.time())
