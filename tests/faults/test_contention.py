"""Files under contention: two recorders on one path, a reader of a file still being written,
a followed file truncated, replaced or deleted, and a full or read-only disk at start and
mid-run (a real small tmpfs, mounted where the machine allows it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from devicewatch.runformat import runfile
from devicewatch.errors import RunFileError

from .conftest import PY, alive, child_env, recorder_argv, has_event, no_traceback, read_pids, reap, run_recorder, script, \
    start_recorder, wait_for  # noqa: F401  (reap is a fixture)


def test_second_recorder_on_the_same_path_refuses_and_loses_nothing(tmp_path, reap):
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pid"
    first = start_recorder(out, PY, script("epochs.py"), str(pidfile))
    reap.append(first.pid)
    reap.extend(read_pids(pidfile))
    wait_for(lambda: has_event(out, kind="phase_begin", name="train", epoch=2), what="epoch 2")
    before = out.read_bytes()
    code, _, err = run_recorder(out, PY, "-c", "print('second')")
    no_traceback(err)
    assert code == 2
    assert err.strip().splitlines() == [f"devicewatch: error: {out} is being written by another recorder; "
                                        "nothing was changed"]
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=30)
    after = out.read_bytes()
    assert after.startswith(before)   # the first run's records are all still there, in place
    run = runfile.load(out)
    assert run.end.status == "cancelled" and not any(log.line == "second" for log in run.logs)


def test_a_finished_file_is_recorded_again_only_when_asked_to(tmp_path):
    out = tmp_path / "run.jsonl"
    code, _, err = run_recorder(out, PY, "-c", "print('one')")
    assert code == 0, err
    code, _, err = run_recorder(out, PY, "-c", "print('two')")
    assert code == 2 and "--overwrite" in err            # refused: the first recording is kept
    assert [log.line for log in runfile.load(out).logs] == ["one"]
    argv = recorder_argv(out, PY, "-c", "print('two')")
    argv.insert(argv.index("--record") + 2, "--overwrite")
    done = subprocess.run(argv, env=child_env(), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [log.line for log in runfile.load(out).logs] == ["two"]


def test_follower_on_a_file_being_written_sees_every_record(tmp_path, reap):
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pid"
    recorder = start_recorder(out, PY, script("epochs.py"), str(pidfile), "4")
    reap.append(recorder.pid)
    wait_for(out.exists, what="the run file")
    follower = runfile.Follower(out)
    seen = []
    while recorder.poll() is None:
        seen += follower.poll()
    seen += follower.poll(final=True)
    whole = runfile.load(out)
    assert recorder.returncode == 0
    assert len([r for r in seen if r["type"] == "sample"]) == len(whole.samples)
    assert seen[-1] == whole.end.to_json()   # the end record as written


def _header_and_samples(path, start: int, count: int) -> None:
    with open(path, "a") as f:
        if start == 0:
            f.write(json.dumps({"type": "header", "format": runfile.FORMAT, "schema": 1, "interval": 0.1,
                                "host": {}, "workload": {"name": "x"}}) + "\n")
        for i in range(start, start + count):
            f.write(json.dumps({"type": "sample", "t": i / 10, "cpu": [1.0], "cpu_total": 1.0}) + "\n")


def test_follower_of_a_truncated_file_says_so_and_keeps_what_it_read(tmp_path):
    path = tmp_path / "run.jsonl"
    _header_and_samples(path, 0, 5)
    follower = runfile.Follower(path)
    assert len(follower.poll()) == 5
    os.truncate(path, 0)
    with pytest.raises(RunFileError, match="truncated while being read"):
        follower.poll()
    assert len(follower.run.samples) == 5


@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_follower_keeps_following_the_file_it_opened(tmp_path, how):
    """The recorder still writes to the file it opened; a new file at the path is another run."""
    path = tmp_path / "run.jsonl"
    _header_and_samples(path, 0, 3)
    follower = runfile.Follower(path)
    assert len(follower.poll()) == 3
    writer = open(path, "a")
    if how == "replaced":
        other = tmp_path / "other.jsonl"
        _header_and_samples(other, 0, 50)
        os.replace(other, path)
    else:
        os.unlink(path)
    writer.write(json.dumps({"type": "sample", "t": 9.0, "cpu": [2.0], "cpu_total": 2.0}) + "\n")
    writer.close()
    assert [r["t"] for r in follower.poll(final=True)] == [9.0]
    assert len(follower.run.samples) == 4


def test_disk_full_at_start(small_disk):
    (small_disk / "filler").write_bytes(b"x" * (256 * 1024))
    out = small_disk / "run.jsonl"
    code, _, err = run_recorder(out, PY, "-c", "print('never')")
    no_traceback(err)
    assert code == 2
    assert err.strip().splitlines() == [f"devicewatch: error: cannot write {out}: No space left on device"]


def test_read_only_disk_at_start(small_disk):
    made = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot remount read-only: {made.stderr.strip()}")
    out = small_disk / "run.jsonl"
    code, _, err = run_recorder(out, PY, "-c", "print('never')")
    no_traceback(err)
    assert code == 2
    assert err.strip().splitlines() == [f"devicewatch: error: cannot write {out}: Read-only file system"]
    assert not out.exists()
