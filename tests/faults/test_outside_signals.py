"""Signals from outside (a batch system's time limit, a pod deleted, `kill`, a closed terminal)
reach the workload as themselves, with its grace: the observer never ends the observed.

The workload here notes every signal it gets in a file named after it, so a test sees which
signal arrived, not only that the workload ended.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

import pytest

from devicewatch.recorder import Recorder
from devicewatch.recorder.recorder import OUTSIDE_GRACE
from devicewatch.runformat import runfile

from .conftest import PY, alive, no_traceback, read_pids, start_recorder, wait_for

# argv: FOLDER, then what it does on SIGTERM, SIGHUP and SIGQUIT: "save SECONDS CODE" (sleep, write a
# checkpoint, exit with CODE), "die" (end of the signal itself, as without a handler) or
# "ignore". Every signal it gets is noted in FOLDER/<SIGNAME>; its pid in FOLDER/pid once its
# handlers are in place; it runs until a signal ends it, or until FOLDER/stop exists.
WORKLOAD = """
import os, signal, sys, time
folder, how = sys.argv[1], sys.argv[2]

def got(signum, _frame):
    name = signal.Signals(signum).name
    with open(os.path.join(folder, name), "w") as f:
        f.write(str(os.getpid()))
    print(f"got {name}", flush=True)
    if signum not in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT) or how == "ignore":
        return
    if how == "die":
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    time.sleep(float(sys.argv[3]))   # saving a checkpoint takes a while
    with open(os.path.join(folder, "checkpoint"), "w") as f:
        f.write("saved")
    print("checkpoint saved", flush=True)
    sys.exit(int(sys.argv[4]))

for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(sig, got)
with open(os.path.join(folder, "pid.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.replace(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
while not os.path.exists(os.path.join(folder, "stop")):
    time.sleep(0.02)
print("stopped on request", flush=True)
"""


def _start(tmp_path: Path, reap: list[int], *how: str, grace: float = 0.5):
    """The workload under a recorder, its handlers in place: (recorder, workload pid, run file, folder)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    out = tmp_path / "run.jsonl"
    recorder = start_recorder(out, PY, str(script), str(folder), *how, grace=grace)
    reap.append(recorder.pid)
    [pid] = read_pids(folder / "pid")
    reap.append(pid)
    return recorder, pid, out, folder


def _got(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith("SIG")}


def test_sigusr1_and_sigusr2_pass_through_and_the_run_goes_on(tmp_path, reap):
    recorder, pid, out, folder = _start(tmp_path, reap, "ignore")
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        recorder.send_signal(sig)
        wait_for(lambda sig=sig: (folder / sig.name).exists(), what=f"the workload to get {sig.name}")
    assert alive(pid) and recorder.poll() is None   # the run goes on
    (folder / "stop").touch()
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert recorder.returncode == 0
    assert _got(folder) == {"SIGUSR1", "SIGUSR2"}
    run = runfile.load(out)
    assert run.end.status == "ok" and run.end.outside_signal is None
    said = [n for n in run.notices if n.outside_signal]
    assert [n.message for n in said] == ["SIGUSR1 from outside, passed to the workload",
                                            "SIGUSR2 from outside, passed to the workload"]
    assert "stopped on request" in [log.line for log in run.logs]


@pytest.mark.parametrize("code", [0, 3])
def test_sigterm_reaches_the_workload_and_its_slow_handler_runs_to_its_end(tmp_path, reap, code):
    """A batch system's SIGTERM: the workload's handler takes 3 s to save its checkpoint, and
    does, recorded as it goes; the recorder's exit status is the workload's."""
    recorder, _pid, out, folder = _start(tmp_path, reap, "save", "3", str(code), grace=10)
    recorder.send_signal(signal.SIGTERM)
    _, err = recorder.communicate(timeout=60)
    no_traceback(err.decode())
    assert _got(folder) == {"SIGTERM"}   # as itself: no SIGINT, nothing else
    assert (folder / "checkpoint").read_text() == "saved"
    assert recorder.returncode == code
    run = runfile.load(out)
    lines = [log.line for log in run.logs]
    assert "got SIGTERM" in lines and "checkpoint saved" in lines
    end = run.end
    assert end.outside_signal == "SIGTERM" and end.exit_code == code and end.signal is None
    if code == 0:
        assert end.status == "ok" and end.reason == "the workload finished after SIGTERM from outside"
    else:
        assert end.status == "cancelled"
        assert end.reason == "SIGTERM from outside, passed to the workload: exit code 3"
    [said] = [n for n in run.notices if n.outside_signal]
    assert said.message == "SIGTERM from outside, passed to the workload; it has 10 s to end"
    # Sampled all along: the handler's 3 s are in the run.
    assert run.samples[-1]["t"] - said.t >= 2.5


def test_sighup_reaches_the_workload_as_itself_and_ends_it(tmp_path, reap):
    """A closed terminal: the workload gets the hang-up itself, and ends of it as it would."""
    recorder, pid, out, folder = _start(tmp_path, reap, "die")
    recorder.send_signal(signal.SIGHUP)
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert _got(folder) == {"SIGHUP"}
    assert not alive(pid)
    assert recorder.returncode == 128 + signal.SIGHUP
    run = runfile.load(out)
    assert (run.end.status, run.end.reason, run.end.signal, run.end.outside_signal) == \
        ("cancelled", "terminal closed", "SIGHUP", "SIGHUP")


@pytest.mark.parametrize("sig, steps", [(signal.SIGTERM, {"SIGTERM"}), (signal.SIGHUP, {"SIGHUP", "SIGTERM"})])
def test_a_workload_still_running_after_its_grace_is_ended(tmp_path, reap, sig, steps):
    """Nothing runs unseen: a workload that ignores the signal from outside is ended once its
    grace is over (SIGTERM after a SIGHUP, then SIGKILL, a grace period apart)."""
    grace = 0.5
    recorder, pid, out, folder = _start(tmp_path, reap, "ignore", grace=grace)
    recorder.send_signal(sig)
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert not alive(pid)
    assert _got(folder) == steps
    assert recorder.returncode == 128 + signal.SIGKILL
    run = runfile.load(out)
    assert run.end.status == "cancelled" and run.end.signal == "SIGKILL"
    assert run.end.outside_signal == sig.name
    said = [n for n in run.notices if n.outside_signal]
    sent = [n.message.rsplit(": ", 1)[1] for n in said[1:]]
    assert sent == [f"{s} sent" for s in ("SIGTERM", "SIGKILL") if s != sig.name]
    # Each step came a grace period after the one before.
    times = [n.t for n in said]
    assert all(b - a >= grace - 0.05 for a, b in itertools.pairwise(times))


def test_sigquit_reaches_the_workload_as_itself_with_its_grace(tmp_path, reap):
    """SIGQUIT, the third signal meant to end a program (a dashboard passes it on too): as
    itself, the workload's handler runs, the end says so."""
    recorder, _pid, out, folder = _start(tmp_path, reap, "save", "0", "4", grace=10)
    recorder.send_signal(signal.SIGQUIT)
    _, err = recorder.communicate(timeout=60)
    no_traceback(err.decode())
    assert _got(folder) == {"SIGQUIT"} and (folder / "checkpoint").exists()
    assert recorder.returncode == 4
    end = runfile.load(out).end
    assert (end.status, end.outside_signal, end.reason) == \
        ("cancelled", "SIGQUIT", "SIGQUIT from outside, passed to the workload: exit code 4")


def stopped(pid: int) -> bool:
    """PID is stopped (SIGSTOP, Ctrl-Z), in the kernel's words."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_workload_is_continued_to_take_the_signal_that_ends_it(tmp_path, reap, sig):
    """Stopped (SIGSTOP), the workload would hold the signal pending, its handler unrun, until
    its grace ran out; continued after it (as ``timeout`` does), its handler runs at once.
    SIGTERM from outside, or a cancel (Ctrl-C to the recorder: SIGINT to the workload)."""
    grace = 20.0
    recorder, pid, out, folder = _start(tmp_path, reap, "save", "0", "0", grace=grace)
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: stopped(pid), what="the workload stopped")
    sent = time.monotonic()
    recorder.send_signal(sig)
    wait_for(lambda: (folder / sig.name).exists(), timeout=grace - 5, what=f"the workload's handler of {sig.name}")
    assert time.monotonic() - sent < grace
    if sig == signal.SIGINT:   # the run's end is the user's: the workload is told to stop there
        (folder / "stop").touch()
    _, err = recorder.communicate(timeout=60)
    no_traceback(err.decode())
    assert _got(folder) == {sig.name} and recorder.returncode == 0
    run = runfile.load(out)
    if sig == signal.SIGTERM:
        assert (run.end.status, run.end.outside_signal) == ("ok", "SIGTERM")
        [said] = [n for n in run.notices if n.outside_signal]
        assert said.message == ("SIGTERM from outside, passed to the workload (it was stopped: SIGCONT sent "
                                f"after it); it has {grace:g} s to end")
    else:
        assert (run.end.status, run.end.reason) == ("cancelled", "cancelled by the user")


def test_sigint_to_the_recorder_still_cancels(tmp_path, reap):
    """Ctrl-C to the recorder (or `devicewatch runs --stop`) is a cancel, as before: SIGINT."""
    recorder, pid, out, folder = _start(tmp_path, reap, "die")
    recorder.send_signal(signal.SIGINT)
    wait_for(lambda: (folder / "SIGINT").exists(), what="the workload to get SIGINT")
    _, err = recorder.communicate(timeout=30)
    no_traceback(err.decode())
    assert not alive(pid)
    run = runfile.load(out)
    assert run.end.status == "cancelled" and run.end.reason == "cancelled by the user"
    assert run.end.outside_signal is None


def test_the_grace_after_a_signal_from_outside_is_30_s_unless_grace_is_given(tmp_path):
    from devicewatch import cli
    from devicewatch.commands.record import options_of

    out = str(tmp_path / "run.jsonl")
    _module, args = cli.parse(["--record", out, "--", "true"])
    options = options_of(args)
    assert Recorder(options).outside_grace == OUTSIDE_GRACE == 30.0 and options.grace == 3.0
    for given in ("0.5", "3"):   # given, it is every grace: the default's own value included
        _module, args = cli.parse(["--record", out, "--grace", given, "--", "true"])
        options = options_of(args)
        assert Recorder(options).outside_grace == options.grace == float(given)
