"""The recorder itself is disturbed: killed, orphaned, interrupted, doubled, given odd paths."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import psutil

from devicewatch.runformat import runfile

from .conftest import PY, alive, child_env, no_traceback, read_pids, reap, recorder_argv, \
    recording_in_epoch_two, records, run_recorder, script, start_recorder, wait_for  # noqa: F401  (reap is a fixture)


def _report(path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "devicewatch", "report", str(path), "--no-chart", *extra],
                          env=child_env(), capture_output=True, text=True, timeout=60)


def test_recorder_killed_by_sigkill_leaves_a_readable_file(tmp_path, reap):
    recorder, pid, out = recording_in_epoch_two(tmp_path, reap)
    recorder.kill()
    recorder.communicate(timeout=10)
    run = runfile.load(out)
    assert run.ended_abruptly and run.end is None
    assert len(run.samples) >= 5 and run.events
    shown = _report(out)
    assert shown.returncode == 0, shown.stderr
    assert "the recorder ended without an end record" in shown.stdout
    as_json = _report(out, "--json")
    assert as_json.returncode == 0 and '"ended_abruptly": true' in as_json.stdout


def test_parent_killed_while_recording_the_run_is_still_finished(tmp_path, reap):
    """A dashboard that dies takes neither the recorder nor the record with it, even though the
    recorder's echo of the workload's output and its summary now go to a broken pipe."""
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "recorder.pid"
    lines = 3000   # about 3 MB of output, most of it printed after the parent is gone
    parent = subprocess.Popen([PY, script("parent.py"), str(pidfile),
                               *recorder_argv(out, PY, script("chatty.py"), str(lines), "3", quiet=False)],
                              env=child_env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reap.append(parent.pid)
    [recorder_pid] = read_pids(pidfile)
    reap.append(recorder_pid)
    recorder = psutil.Process(recorder_pid)
    wait_for(lambda: out.exists() and out.stat().st_size > 20_000, what="the run to get going")
    parent.kill()
    parent.wait(timeout=10)
    wait_for(lambda: not alive(recorder_pid), timeout=60, what="the recorder to finish")
    assert not recorder.is_running() or recorder.status() == psutil.STATUS_ZOMBIE
    run = runfile.load(out)
    assert run.end is not None, "no end record: the recorder died with its parent"
    assert run.end.status == "failed" and run.end.exit_code == 3
    assert len([log for log in run.logs if log.stream == "stdout"]) == lines


def test_sigint_mid_run_cancels_cleanly(tmp_path, reap):
    recorder, pid, out = recording_in_epoch_two(tmp_path, reap)
    recorder.send_signal(signal.SIGINT)
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert not alive(pid)
    run = runfile.load(out)
    assert run.end.status == "cancelled"
    # Python ends on an unhandled KeyboardInterrupt by re-raising SIGINT: 128 + 2.
    assert run.end.signal == "SIGINT" and recorder.returncode == 130


def test_sigint_at_start_up(tmp_path, reap):
    """Ctrl-C the moment the run file appears, while the workload's interpreter is starting."""
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pid"
    recorder = start_recorder(out, PY, script("epochs.py"), str(pidfile))
    reap.append(recorder.pid)
    wait_for(lambda: out.exists() and out.stat().st_size > 0, what="the run file")
    recorder.send_signal(signal.SIGINT)
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert recorder.returncode != 0
    run = runfile.load(out)
    assert run.end is not None and run.end.status == "cancelled"
    time.sleep(0.3)   # a workload that escaped would have written its pid by now
    if pidfile.exists():
        [pid] = read_pids(pidfile)
        reap.append(pid)
        assert not alive(pid)


def test_sigint_during_shutdown_still_ends_everything(tmp_path, reap):
    """Ctrl-C while the recorder waits for descendants that ignore SIGTERM, after the workload
    itself exited 0: the clean-up still completes and the run keeps the workload's own outcome."""
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pids"
    recorder = start_recorder(out, PY, script("forker.py"), str(pidfile), "stubborn", grace=1.0)
    reap.append(recorder.pid)
    pids = read_pids(pidfile)
    reap.extend(pids)
    wait_for(lambda: any("left running" in r.get("message", "") for r in records(out)),
             what="the clean-up to begin")
    recorder.send_signal(signal.SIGINT)
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert [pid for pid in pids if alive(pid)] == []
    run = runfile.load(out)
    assert run.end.status == "ok" and run.end.exit_code == 0
    assert recorder.returncode == 0


def test_two_recorders_at_once_keep_their_runs_apart(tmp_path, reap):
    runs = []
    for name in ("a", "b"):
        out, pidfile = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.pid"
        recorder = start_recorder(out, PY, script("epochs.py"), str(pidfile), "3")
        reap.append(recorder.pid)
        runs.append((recorder, out, pidfile))
    for recorder, out, pidfile in runs:
        _, err = recorder.communicate(timeout=60)
        no_traceback(err.decode())
        assert recorder.returncode == 0
        [pid] = read_pids(pidfile)
        run = runfile.load(out)
        assert run.end.status == "ok"
        # Each file holds exactly its own workload's events: 3 epochs × (begin, end, metrics) + run_info.
        assert {e["pid"] for e in run.events} == {pid}
        assert len(run.events) == 3 * 3 + 1


def test_paths_with_spaces_and_non_ascii(tmp_path):
    folder = tmp_path / "runs with spaces ü 日本"
    folder.mkdir()
    workload = folder / "my script é.py"
    shutil.copy(script("argv.py"), workload)
    out = folder / "run ünïcode 名前.jsonl"
    code, stdout, err = run_recorder(out, PY, str(workload), "α β", "--flag=ü")
    no_traceback(err)
    assert code == 0
    run = runfile.load(out)
    assert run.header.workload.command[1:] == (str(workload), "α β", "--flag=ü")
    assert [log.line for log in run.logs] == ['["\\u03b1 \\u03b2", "--flag=\\u00fc"]']
    shown = _report(out)
    assert shown.returncode == 0, shown.stderr
    assert "ok" in shown.stdout.split("status", 1)[1].split("\n", 1)[0]


def test_output_to_a_closed_pipe_keeps_recording_and_the_exit_status(tmp_path, reap):
    """`devicewatch --record … | head -1`: the reader of our output leaves at once."""
    out = tmp_path / "run.jsonl"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        recorder = start_recorder(out, PY, script("chatty.py"), "500", "3", quiet=False, stdout=write_end)
    finally:
        os.close(write_end)
    reap.append(recorder.pid)
    _, err = recorder.communicate(timeout=60)
    no_traceback(err.decode())
    assert recorder.returncode == 3
    run = runfile.load(out)
    assert run.end.exit_code == 3 and len(run.logs) == 500
    assert any("stopped echoing" in n.message for n in run.notices)
