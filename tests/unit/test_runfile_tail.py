"""A growing run file read from its tail: every record but the samples as the one reader reads
them, and of the samples only the newest, on a file written by the one writer."""

import pytest

from devicewatch.runformat import tail
from devicewatch.runformat.runfile import Follower
from devicewatch.runformat.tail import TailFollower
from devicewatch.runformat.writer import RunWriter


def grown(path, samples=40, every=7):
    """A recorder's file part-way: SAMPLES samples (core 0 reads 10 × i at t = i/10), an event
    after each EVERY-th, a log line and a notice, and the next sample's line half written."""
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 2, "gpus": []}})
    for i in range(1, samples + 1):
        writer.write({"type": "sample", "t": i / 10, "cpu": [10.0 * i, 50.0], "cpu_total": (10.0 * i + 50.0) / 2})
        if i % every == 0:
            writer.write({"type": "event", "t": i / 10, "kind": "phase_begin", "name": "train", "epoch": i // every})
    writer.write({"type": "log", "t": samples / 10, "stream": "stdout", "line": "Epoch 5/9"})
    writer.write({"type": "notice", "t": samples / 10, "level": "warning", "message": "disk nearly full"})
    writer.close()
    with open(path, "a") as handle:
        handle.write('{"type":"sample","t":%s,' % ((samples + 1) / 10))
    return path


def test_the_first_poll_reads_every_record_but_only_the_newest_samples(tmp_path):
    path = grown(tmp_path / "node.jsonl")
    with TailFollower(path, keep=3) as follower, Follower(path, keep=3) as whole:
        follower.poll(samples=False)
        whole.poll(samples=False)
        run = follower.run
        assert run.samples.t.tolist() == pytest.approx([3.8, 3.9, 4.0])        # samples 38, 39, 40 of 40
        assert run.samples.cpu[:, 0].tolist() == [380.0, 390.0, 400.0]
        assert [e["epoch"] for e in run.events] == [1, 2, 3, 4, 5]               # after samples 7, 14 … 35
        assert list(run.events) == list(whole.run.events)
        assert (run.logs, run.notices) == (whole.run.logs, whole.run.notices)
        assert [n.message for n in run.notices] == ["disk nearly full"]
        assert run.duration == whole.run.duration == pytest.approx(4.0)
        assert run.bad_lines == whole.run.bad_lines == 0


def test_then_it_follows_the_file_as_it_grows_the_half_line_included(tmp_path):
    path = grown(tmp_path / "node.jsonl")
    with TailFollower(path, keep=3) as follower:
        assert [r["type"] for r in follower.poll()] == ["event"] * 5 + ["log", "notice"] + ["sample"] * 3
        with open(path, "a") as handle:   # the half-written sample 41 completed, then an event
            handle.write('"cpu":[410.0,50.0],"cpu_total":230.0}\n')
            handle.write('{"type":"event","t":4.1,"kind":"phase_end","name":"train","epoch":5}\n')
        new = follower.poll()
        assert [(r["type"], r["t"]) for r in new] == [("sample", 4.1), ("event", 4.1)]
        assert follower.run.samples.cpu[-1, 0] == 410.0
        assert [e["kind"] for e in follower.run.events][-1] == "phase_end"


@pytest.mark.parametrize("chunk", [1, 37, 1000])
def test_a_line_cut_by_the_readers_chunks_is_read_whole(tmp_path, monkeypatch, chunk):
    path = grown(tmp_path / "node.jsonl")
    monkeypatch.setattr(tail._TailFirst, "CHUNK", chunk)   # 1 and 37: every line straddles reads
    with TailFollower(path, keep=5) as follower, Follower(path) as whole:
        follower.poll(samples=False)
        whole.poll(samples=False)
        assert follower.run.samples.t.tolist() == pytest.approx([3.6, 3.7, 3.8, 3.9, 4.0])
        assert follower.run.samples.cpu.tolist() == whole.run.samples.cpu[-5:].tolist()
        assert list(follower.run.events) == list(whole.run.events)
        assert follower.run.notices == whole.run.notices


def test_a_damaged_record_among_the_others_is_counted_as_the_reader_counts_it(tmp_path):
    path = grown(tmp_path / "node.jsonl", samples=10)
    text = path.read_text().replace('"kind":"phase_begin"', '"kind":"phase_begin"}{', 1)   # not JSON
    path.write_text(text)
    with TailFollower(path, keep=2) as follower:
        follower.poll()
        assert follower.run.bad_lines == 1
        assert [e["epoch"] for e in follower.run.events] == []   # the only event (after sample 7) was it
        assert follower.run.samples.t.tolist() == pytest.approx([0.9, 1.0])


def test_without_a_bound_it_reads_every_sample(tmp_path):
    path = grown(tmp_path / "node.jsonl")
    with TailFollower(path) as follower:
        follower.poll(samples=False)
        assert len(follower.run.samples) == 40
