"""The workload misbehaves: killed mid-epoch, deaf to SIGTERM, leaving descendants behind."""

from __future__ import annotations

import os
import signal
import time

from devicewatch.runformat import runfile

from .conftest import PY, alive, no_traceback, read_pids, reap, recording_in_epoch_two, run_recorder, \
    script, start_recorder  # noqa: F401  (reap is a fixture)


def test_workload_killed_by_sigkill_mid_epoch(tmp_path, reap):
    recorder, pid, out = recording_in_epoch_two(tmp_path, reap)
    os.kill(pid, signal.SIGKILL)
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    # The recorder's exit status is the workload's, as a shell reports it: 128 + signal number.
    assert recorder.returncode == 128 + signal.SIGKILL == 137
    run = runfile.load(out)
    assert run.end.status == "failed"
    assert run.end.signal == "SIGKILL"
    assert run.end.exit_code == 137
    # Epoch 2 was open when the workload died: its begin is recorded, its end never came.
    begins = [e for e in run.events if e.get("kind") == "phase_begin" and e.get("epoch") == 2]
    ends = [e for e in run.events if e.get("kind") == "phase_end" and e.get("epoch") == 2]
    assert begins and not ends


def test_cancel_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path, reap):
    grace = 0.4
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pid"
    recorder = start_recorder(out, PY, script("stubborn.py"), str(pidfile), grace=grace)
    reap.append(recorder.pid)
    [pid] = read_pids(pidfile)
    reap.append(pid)
    cancelled = time.monotonic()
    recorder.send_signal(signal.SIGINT)   # a cancel: Ctrl-C, `devicewatch runs --stop`, a dashboard's "stop"
    _, err = recorder.communicate(timeout=30)
    took = time.monotonic() - cancelled
    no_traceback(err.decode())
    assert not alive(pid)
    run = runfile.load(out)
    assert run.end.status == "cancelled"
    assert run.end.signal == "SIGKILL"
    # SIGINT, then SIGTERM one grace period later, then SIGKILL one more: at least 2 × grace.
    assert took >= 2 * grace


def _descendants_survive_then_end(tmp_path, reap, stubborn: bool):
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pids"
    args = [str(pidfile)] + (["stubborn"] if stubborn else [])
    code, _, err = run_recorder(out, PY, script("forker.py"), *args)
    pids = read_pids(pidfile, timeout=1)   # the workload wrote them before it exited
    reap.extend(pids)
    no_traceback(err)
    assert len(pids) == 3
    # The recorder has exited: nothing it watched may still run, setsid or not.
    still = [pid for pid in pids if alive(pid)]
    assert still == []
    run = runfile.load(out)
    assert code == 0 and run.end.status == "ok"   # the workload itself exited 0
    assert any("left running" in n.message for n in run.notices)
    return run


def test_descendants_that_outlive_the_workload_are_ended(tmp_path, reap):
    _descendants_survive_then_end(tmp_path, reap, stubborn=False)


def test_descendants_that_ignore_sigterm_are_killed(tmp_path, reap):
    _descendants_survive_then_end(tmp_path, reap, stubborn=True)
