"""The writer's promise to a run's readers: each record is in the journal when ``write``
returns (a follower sees it, a writer killed loses none), while the columns it builds are fed a
batch at a time and still hold every sample once it closes."""

import os
import subprocess
import sys

from devicewatch.runformat import columnar
from devicewatch.runformat.runfile import Follower, load
from devicewatch.runformat.writer import RunWriter, compact

from conftest import ROOT

HEADER = {"host": {"cpu_count": 2, "gpus": []}}


def end(t):
    return {"type": "end", "t": t, "status": "ok", "exit_code": 0, "signal": None, "duration": t,
            "reason": "the workload finished"}


def test_each_record_is_in_the_journal_when_write_returns(tmp_path):
    path = tmp_path / "run.jsonl"
    writer = RunWriter(path, HEADER)
    count = RunWriter.FEED_EVERY + 3   # past one batch of the columns, and into the next
    with Follower(path) as follower:
        follower.poll(collect=False)
        for i in range(count):
            writer.write({"type": "sample", "t": i / 10, "cpu": [10.0, 20.0]})
            follower.poll(collect=False)
            assert len(follower.run.samples) == i + 1
            if i == 5:
                writer.write({"type": "notice", "t": 0.55, "level": "info", "message": "between"})
                assert [r["message"] for r in follower.poll()] == ["between"]
    writer.write(end(count / 10))
    writer.close()
    assert compact(path) == columnar.path_for(str(path))
    run = load(path)
    assert run.columnar and len(run.samples) == count and [n.message for n in run.notices] == ["between"]
    assert run.samples.t[-1] == (count - 1) / 10


KILLED = """
import os, signal, sys
from devicewatch.runformat.writer import RunWriter
writer = RunWriter(sys.argv[1], {"host": {"cpu_count": 2, "gpus": []}})
for i in range(7):
    writer.write({"type": "sample", "t": i / 10, "cpu": [10.0, 20.0]})
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_writer_killed_loses_no_record_it_wrote(tmp_path):
    """Seven samples, fewer than a batch of the columns, then SIGKILL: all seven are read."""
    path = tmp_path / "killed.jsonl"
    done = subprocess.run([sys.executable, "-c", KILLED, str(path)], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr
    run = load(path)
    assert len(run.samples) == 7 and run.end is None and not run.cut_last_line and run.bad_lines == 0
