"""The recorder with real subprocesses, real signals and real files."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from devicewatch import analysis
from devicewatch.runformat.runfile import load

from conftest import ROOT, devicewatch


def script(tmp_path, body, name="work.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def start_recording(tmp_path, work, wait_for):
    """A recorder in the background on ``work``, returned once ``wait_for`` is in its file."""
    out = tmp_path / "run.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    recorder = subprocess.Popen([sys.executable, "-m", "devicewatch", "--record", str(out), "--", sys.executable, work],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not out.exists() or wait_for not in out.read_text()):
        time.sleep(0.05)
    return recorder, out


def test_demo_records_three_epochs_with_phases_and_a_verdict(tmp_path):
    out = tmp_path / "run.jsonl"
    result = devicewatch("--record", str(out), "--quiet", "demo", "--epochs", "3", "--samples", "3000",
                         "--hidden", "256")
    assert result.returncode == 0, result.stderr
    run = load(out)
    assert run.end.status == "ok" and run.end.exit_code == 0
    assert [e.epoch for e in analysis.epochs(run, analysis.phases(run))] == [1, 2, 3]
    names = {(p.name, p.epoch) for p in analysis.phases(run)}
    assert {("train", 1), ("validate", 3)} <= names
    assert run.samples and len(run.samples[0]["cpu"]) == os.cpu_count()
    assert all("recorder_cpu" in s for s in run.samples)
    # The summary printed at the end is the report: epochs table and a verdict.
    assert "Epochs" in result.stdout and "verdict:" in result.stdout
    report = devicewatch("report", str(out), "--json")
    summary = json.loads(report.stdout)
    assert len(summary["epochs"]) == 3 and summary["verdict"]["label"]
    assert set(summary["phases"]) >= {"train", "validate"}


def test_a_plain_script_with_keras_style_epoch_lines(tmp_path):
    work = script(tmp_path, """
        import time
        for epoch in range(1, 4):
            print(f"Epoch {epoch}/3")
            time.sleep(0.3)
            print("100/100 [====] - loss: 0.5")
    """)
    out = tmp_path / "run.jsonl"
    result = devicewatch("--record", str(out), "--", sys.executable, work)
    assert result.returncode == 0, result.stderr
    assert "Epoch 2/3" in result.stdout  # echoed
    run = load(out)
    rows = analysis.epochs(run, analysis.phases(run))
    assert [r.epoch for r in rows] == [1, 2, 3]
    assert sum(1 for line in run.logs if line.line.startswith("Epoch")) == 3
    # Each epoch begins when its line was read and ends where the next begins (the last, with
    # the run), holding its progress line: times from the file, not from how fast the machine was.
    begun = [line.t for line in run.logs if line.line.startswith("Epoch")]
    progress = [line.t for line in run.logs if line.line.startswith("100/100")]
    assert [r.start for r in rows] == pytest.approx(begun, abs=0.05)
    assert [r.end for r in rows] == pytest.approx([r.start for r in rows[1:]] + [run.end.duration], abs=0.05)
    assert all(r.start < t <= r.end for r, t in zip(rows, progress, strict=True))


def test_a_crash_mid_epoch_records_the_exit_code_and_becomes_ours(tmp_path):
    work = script(tmp_path, """
        import sys
        from devicewatch import events
        events.phase_begin("train", epoch=1)
        print("about to fail", flush=True)
        sys.exit(3)
    """)
    out = tmp_path / "run.jsonl"
    result = devicewatch("--record", str(out), "--", sys.executable, work)
    assert result.returncode == 3
    run = load(out)
    assert run.end.status == "failed" and run.end.exit_code == 3
    (phase,) = analysis.phases(run)
    assert phase.open  # the epoch never finished, and the file says so
    assert "exit code 3" in result.stdout


def test_sigint_cancels_a_workload_that_ignores_sigint_and_sigterm(tmp_path):
    # SIGINT to the recorder is a cancel (SIGTERM from outside is passed on as itself instead:
    # tests/faults/test_outside_signals.py).
    work = script(tmp_path, """
        import signal, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stubborn", flush=True)
        while True:
            time.sleep(0.05)
    """)
    recorder, out = start_recording(tmp_path, work, "stubborn")
    started = time.monotonic()
    recorder.send_signal(signal.SIGINT)
    stdout, _ = recorder.communicate(timeout=60)
    elapsed = time.monotonic() - started
    run = load(out)
    assert run.end.status == "cancelled"
    assert run.end.signal == "SIGKILL"   # SIGINT and SIGTERM were ignored, SIGKILL is not
    assert recorder.returncode == 128 + signal.SIGKILL
    # Two grace periods of 3 s (SIGINT -> SIGTERM -> SIGKILL), and not a third one.
    assert 5.5 < elapsed < 60


def test_ctrl_c_cancels_a_normal_workload_promptly(tmp_path):
    work = script(tmp_path, """
        import time
        print("running", flush=True)
        time.sleep(60)
    """)
    recorder, out = start_recording(tmp_path, work, "running")
    recorder.send_signal(signal.SIGINT)
    recorder.communicate(timeout=20)
    run = load(out)
    assert run.end.status == "cancelled"
    assert run.end.signal == "SIGINT"
    assert recorder.returncode == 128 + signal.SIGINT


def test_a_hundred_thousand_output_lines_are_all_kept(tmp_path):
    work = script(tmp_path, """
        import sys
        for i in range(100_000):
            sys.stdout.write(f"line {i}\\n")
    """)
    out = tmp_path / "run.jsonl"
    result = devicewatch("--record", str(out), "--quiet", "--", sys.executable, work)
    assert result.returncode == 0
    run = load(out)
    lines = [r.line for r in run.logs if r.stream == "stdout"]
    assert len(lines) == 100_000
    assert lines[0] == "line 0" and lines[-1] == "line 99999"
    assert "line 5" not in result.stdout  # --quiet: not echoed


def test_events_from_eight_threads_all_arrive_whole(tmp_path):
    work = script(tmp_path, """
        import threading
        from devicewatch import events
        def emit(n):
            for i in range(500):
                events.marker("tick", thread_no=n, i=i, padding="x" * 200)
        threads = [threading.Thread(target=emit, args=(n,)) for n in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
    """)
    out = tmp_path / "run.jsonl"
    assert devicewatch("--record", str(out), "--quiet", "--", sys.executable, work).returncode == 0
    run = load(out)
    markers = [e for e in run.events if e["kind"] == "marker"]
    assert len(markers) == 8 * 500
    assert {(m["thread_no"], m["i"]) for m in markers} == {(n, i) for n in range(8) for i in range(500)}
    assert run.bad_lines == 0 and not run.notices


def test_events_from_a_grandchild_process_arrive(tmp_path):
    work = script(tmp_path, """
        import subprocess, sys
        code = "from devicewatch import events; events.marker('from the grandchild')"
        subprocess.run([sys.executable, "-c", code], check=True)
    """)
    out = tmp_path / "run.jsonl"
    assert devicewatch("--record", str(out), "--quiet", "--", sys.executable, work).returncode == 0
    assert [e["label"] for e in load(out).events] == ["from the grandchild"]


def test_samples_follow_the_interval_without_drift(tmp_path):
    out = tmp_path / "run.jsonl"
    assert devicewatch("--record", str(out), "--interval", "0.05", "--quiet", "--",
                       sys.executable, "-c", "import time; time.sleep(1.5)").returncode == 0
    run = load(out)
    times = [s["t"] for s in run.samples]
    # Sample k is due at k * 0.05 s after the start; one taken late is followed by the next one
    # due, not a tick later (the loop catches up, it never skips). So the run's length, which
    # holds the workload's start too (slower on a loaded machine), gives their number.
    assert abs(len(times) - run.end.duration / 0.05) <= 1.5, (len(times), run.end.duration)
    late = [t - k * 0.05 for k, t in enumerate(times, start=1)]
    assert min(late) > -0.002   # none early
    # On schedule: no lateness accumulated. A loop sleeping the interval after each sample's work
    # would be late by the work of every sample before; one late sample (a busy machine) is not.
    assert min(late[-5:]) < 0.005, late


def test_an_unknown_command_is_one_line(tmp_path):
    out = tmp_path / "run.jsonl"
    result = devicewatch("--record", str(out), "--", "no-such-program-here")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot start no-such-program-here" in result.stderr
    assert load(out).end.status == "error"


@pytest.mark.parametrize("args, message", [
    (["--record", "x.jsonl", "nosuch"], "unknown workload 'nosuch'"),
    (["--record", "x.jsonl", "demo", "--epochs", "many"], "demo: argument --epochs: invalid int value"),
    (["--record", "x.jsonl", "demo", "--bogus"], "demo: unrecognized arguments: --bogus"),
    (["--record", "x.jsonl"], "name a workload"),
    (["--interval", "0", "--record", "x.jsonl", "demo"], "--interval must be between"),
    (["--gpu", "maybe", "--record", "x.jsonl", "demo"], "--gpu takes on or off"),
    (["report", "missing.jsonl"], "no such file: missing.jsonl"),
    (["report"], "report: the following arguments are required: file"),
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["--frob"], "unknown option --frob"),
])
def test_bad_input_gets_one_clear_line(tmp_path, args, message):
    result = devicewatch(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr
    assert not (tmp_path / "x.jsonl").exists()  # refused before anything was launched


def test_a_foreign_file_is_refused(tmp_path):
    foreign = tmp_path / "notes.txt"
    foreign.write_text("shopping list\n")
    result = devicewatch("report", str(foreign))
    assert result.returncode == 2 and "not a devicewatch run file" in result.stderr
    assert "Traceback" not in result.stderr


def test_workloads_lists_every_workload_with_its_options():
    result = devicewatch("workloads")
    assert result.returncode == 0
    assert "demo:" in result.stdout and "--epochs" in result.stdout


def controlled_recorder(out, seconds: float) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "devicewatch", "--record", str(out), "--control", "--quiet",
                             "--", sys.executable, "-c", f"import time; print('up', flush=True); time.sleep({seconds})"],
                            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def test_markers_sent_on_the_control_channel_land_in_the_file_and_a_detached_run_goes_on(tmp_path):
    from devicewatch import control

    out = tmp_path / "run.jsonl"
    recorder = controlled_recorder(out, 1.5)
    recorder.stdin.write(control.marker_line("look here"))
    recorder.stdin.write(b"garbage that is ignored\n")
    recorder.stdin.write(control.detach_line())
    recorder.stdin.flush()
    recorder.stdin.close()  # the dashboard quit, the user chose to keep recording
    assert recorder.wait(timeout=30) == 0
    run = load(out)
    assert [(e["label"], e["source"]) for e in run.events if e["kind"] == "marker"] == [("look here", "dashboard")]
    assert run.end.status == "ok"
    assert any("left the run recording" in n.message for n in run.notices)


def _printed(out, line: str) -> bool:
    """The workload's output recorded in OUT holds LINE (an empty or unfinished file: not yet)."""
    try:
        return any(log.line == line for log in load(out).logs)
    except Exception:   # not there yet, or no header yet: the reader's refusals, whatever they are
        return False


def test_a_dashboard_that_goes_away_without_detaching_ends_its_run_and_says_so(tmp_path):
    from devicewatch import control

    out = tmp_path / "run.jsonl"
    started = time.monotonic()
    recorder = controlled_recorder(out, 60)
    # Up: a SIGINT in the middle of Python's start-up ends it with status 1, not of the signal.
    deadline = time.monotonic() + 30
    while not _printed(out, "up") and time.monotonic() < deadline:
        time.sleep(0.05)
    recorder.stdin.close()  # as the kernel closes it when the dashboard dies, however it dies
    assert recorder.wait(timeout=30) == 128 + 2  # the workload's status: ended by the SIGINT of a cancel
    assert time.monotonic() - started < 30
    run = load(out)
    assert (run.end.status, run.end.reason) == ("cancelled", control.DASHBOARD_GONE)


def test_a_stop_command_ends_the_run_with_the_reason_it_gives(tmp_path):
    from devicewatch import control

    out = tmp_path / "run.jsonl"
    recorder = controlled_recorder(out, 60)
    time.sleep(1.0)
    recorder.stdin.write(control.stop_line("terminal closed"))
    recorder.stdin.flush()
    recorder.wait(timeout=30)
    run = load(out)
    assert (run.end.status, run.end.reason) == ("cancelled", "terminal closed")
    recorder.stdin.close()
