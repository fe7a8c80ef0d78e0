"""devicewatch's own processes die in ways no handler sees: the workload's whole tree must not
go on running unobserved, and the run file must say how far it got."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from devicewatch.runformat import runfile

from .conftest import GRACE, PY, alive, child_env, read_pids, reap, recorder_argv, recording_in_epoch_two, \
    script, start_recorder, wait_for  # noqa: F401  (reap is a fixture)

NO_END = "the recorder ended without an end record"


def _family(tmp_path, reap, *flags: str) -> tuple[subprocess.Popen, list[int], object]:
    """A recorder on a workload that keeps running with a child, an orphaned grandchild and a
    setsid grandchild; returns the recorder, every pid of the family and the run file."""
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pids"
    recorder = start_recorder(out, PY, script("forker.py"), str(pidfile), "stay", *flags)
    reap.append(recorder.pid)
    pids = read_pids(pidfile)
    reap.extend(pids)
    assert len(pids) == 4
    wait_for(lambda: out.exists() and out.read_bytes().count(b'"sample"') >= 5, what="samples")
    return recorder, pids, out


def _all_gone(pids: list[int], timeout: float) -> None:
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=timeout,
             what=f"the workload's tree to end (alive: {[p for p in pids if alive(p)]})")


def _readable_without_end(out) -> None:
    run = runfile.load(out)
    assert run.end is None and len(run.samples) >= 5
    shown = subprocess.run([PY, "-m", "devicewatch", "report", str(out), "--no-chart"],
                           env=child_env(), capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert NO_END in shown.stdout


def test_recorder_sigkill_ends_the_whole_tree(tmp_path, reap):
    recorder, pids, out = _family(tmp_path, reap)
    recorder.kill()
    recorder.communicate(timeout=10)
    _all_gone(pids, timeout=10 * GRACE + 5)
    _readable_without_end(out)


def test_recorder_sigkill_ends_a_tree_that_ignores_sigterm(tmp_path, reap):
    recorder, pids, out = _family(tmp_path, reap, "stubborn")
    killed = time.monotonic()
    recorder.kill()
    recorder.communicate(timeout=10)
    _all_gone(pids, timeout=10 * GRACE + 5)
    # SIGTERM first, SIGKILL one grace period later: the stubborn ones lived through the grace.
    assert time.monotonic() - killed >= GRACE * 0.9
    _readable_without_end(out)


def test_recorder_and_watchdog_killed_the_workload_still_gets_its_signal(tmp_path, reap):
    """With the watchdog gone too, PDEATHSIG still ends the workload the recorder launched."""
    recorder, pid, out = recording_in_epoch_two(tmp_path, reap)
    import psutil
    watchdogs = [c for c in psutil.Process(recorder.pid).children()
                 if "devicewatch.watchdog" in " ".join(c.cmdline())]
    assert len(watchdogs) == 1
    reap.append(watchdogs[0].pid)
    watchdogs[0].kill()
    recorder.kill()
    recorder.communicate(timeout=10)
    wait_for(lambda: not alive(pid), timeout=10, what="the workload to end")
    _readable_without_end(out)


def test_dashboard_and_recorder_killed_together(tmp_path, reap):
    """A closed terminal or `kill -9 -PGID` takes the dashboard and its recorder at once."""
    out, pidfile, tree = tmp_path / "run.jsonl", tmp_path / "recorder.pid", tmp_path / "pids"
    parent = subprocess.Popen([PY, script("parent.py"), str(pidfile),
                               *recorder_argv(out, PY, script("forker.py"), str(tree), "stay")],
                              env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    reap.append(parent.pid)
    [recorder_pid] = read_pids(pidfile)
    reap.append(recorder_pid)
    pids = read_pids(tree)
    reap.extend(pids)
    wait_for(lambda: out.exists() and out.read_bytes().count(b'"sample"') >= 5, what="samples")
    os.killpg(parent.pid, signal.SIGKILL)
    parent.wait(timeout=10)
    _all_gone(pids + [recorder_pid], timeout=10 * GRACE + 5)
    _readable_without_end(out)


def test_a_finished_run_leaves_no_watchdog_and_no_fifo(tmp_path, reap):
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pid"
    recorder = start_recorder(out, PY, script("epochs.py"), str(pidfile), "2")
    reap.append(recorder.pid)
    recorder.communicate(timeout=60)
    assert recorder.returncode == 0
    import psutil
    left = [p.pid for p in psutil.process_iter(["cmdline"])
            if "devicewatch.watchdog" in " ".join(p.info["cmdline"] or []) and str(out) in " ".join(p.info["cmdline"] or [])]
    assert left == []
    assert runfile.load(out).end.status == "ok"


def test_orphaned_grandchild_is_sampled_while_it_runs(tmp_path, reap):
    """The recorder is a subreaper: a double-forked grandchild stays in the sampled tree."""
    import psutil
    recorder, pids, out = _family(tmp_path, reap)
    adopted = [pid for pid in pids[1:] if psutil.Process(pid).ppid() == recorder.pid]
    assert len(adopted) == 1   # the double-forked one; not init's

    def counts() -> list[int]:
        return [s["proc"]["count"] for s in runfile.load(out).samples if s.get("proc")]

    # The workload, its child, the orphan, the setsid one, and the zombie the double fork left:
    # sampled once the tree is refreshed after the family was complete (a loaded machine's
    # refresh comes later than a quiet one's; a recorder that never finds five fails here).
    wait_for(lambda: 5 in counts(), timeout=30, what="a sample of the whole family")
    recorder.send_signal(signal.SIGTERM)
    recorder.communicate(timeout=30)
    assert max(counts()) == 5, counts()
    assert not any(alive(pid) for pid in pids)
