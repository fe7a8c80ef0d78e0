"""Nothing runs unseen, nothing is overwritten: real recorders, real signals, a real tmux.

Each way a recording can lose its watcher (a closed terminal, a dashboard killed or quit) ends
the run with an end record saying why, or leaves it recording only because the user chose so;
runs still recording are listed by ``devicewatch runs`` and can be stopped from there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from devicewatch import control
from devicewatch.runformat import runfile

from .conftest import PY, ROOT, child_env, recorder_argv, start_recorder

SLEEPER = "import time, sys; print('up', flush=True); time.sleep(120)"


@pytest.fixture
def runtime(tmp_path) -> dict[str, str]:
    """An environment whose announcements of active runs go to a folder of this test's own."""
    folder = tmp_path / "runtime"
    return child_env(DEVICEWATCH_RUNTIME_DIR=str(folder))


def devicewatch(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "devicewatch", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def listed(env: dict[str, str]) -> list[dict]:
    result = devicewatch("runs", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_for(condition, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def started_writing(path: Path) -> bool:
    try:
        run = runfile.load(path)
    except runfile.RunFileError:
        return False
    return len(run.samples) >= 3


def workload_pids() -> list[int]:
    """The sleeping workloads still alive (not the recorders or tmux, whose command lines
    carry the workload's as arguments)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if cmdline[-2:] == ["-c", SLEEPER] and "devicewatch" not in cmdline and "tmux" not in cmdline[0] \
                and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.info["pid"])
    return found


# -- a recording is never destroyed silently ---------------------------------------------------

def test_record_onto_an_existing_recording_refuses_in_one_line_and_keeps_it(tmp_path, runtime):
    out = tmp_path / "run.jsonl"
    first = devicewatch("--record", str(out), "--quiet", "--", PY, "-c", "print('first')", env=runtime)
    assert first.returncode == 0, first.stderr
    before = out.read_bytes()
    again = devicewatch("--record", str(out), "--quiet", "--", PY, "-c", "print('second')", env=runtime)
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1 and "already exists" in again.stderr and "--overwrite" in again.stderr
    assert "Traceback" not in again.stderr
    assert out.read_bytes() == before
    replaced = devicewatch("--record", str(out), "--overwrite", "--quiet", "--", PY, "-c", "print('second')",
                           env=runtime)
    assert replaced.returncode == 0, replaced.stderr
    assert [r.line for r in runfile.load(out).logs] == ["second"]


def test_an_empty_file_is_recorded_into(tmp_path, runtime):
    out = tmp_path / "reserved.jsonl"
    out.write_bytes(b"")
    done = devicewatch("--record", str(out), "--quiet", "--", PY, "-c", "print('x')", env=runtime)
    assert done.returncode == 0, done.stderr
    assert runfile.load(out).end.status == "ok"


def test_dashboard_run_names_never_collide_even_in_the_same_second(tmp_path):
    from devicewatch.live.source import run_file_name

    names = {run_file_name(str(tmp_path), "demo", now=0.0) for _ in range(5)}
    assert len(names) == 5 and all(p.exists() and p.stat().st_size == 0 for p in names)


# -- a headless recorder and its terminal -----------------------------------------------------

def test_a_hang_up_ends_a_headless_run_saying_the_terminal_closed(tmp_path, runtime):
    out = tmp_path / "run.jsonl"
    recorder = start_recorder(out, PY, "-c", SLEEPER, env=runtime)
    wait_for(lambda: started_writing(out), what="the first samples")
    recorder.send_signal(signal.SIGHUP)
    recorder.wait(timeout=30)
    run = runfile.load(out)
    assert (run.end.status, run.end.reason) == ("cancelled", "terminal closed")
    assert not workload_pids()


def test_under_nohup_a_hang_up_leaves_the_run_recording(tmp_path, runtime):
    out = tmp_path / "run.jsonl"
    ignore_hangups = lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)  # noqa: E731  # what nohup does
    recorder = start_recorder(out, PY, "-c", "import time; time.sleep(2)", env=runtime, preexec_fn=ignore_hangups)
    wait_for(lambda: started_writing(out), what="the first samples")
    recorder.send_signal(signal.SIGHUP)
    assert recorder.wait(timeout=30) == 0
    assert runfile.load(out).end.status == "ok"


# -- runs still recording are listed and can be stopped ---------------------------------------

def test_runs_lists_what_is_recording_and_stops_it(tmp_path, runtime):
    out = tmp_path / "listed.jsonl"
    recorder = start_recorder(out, PY, "-c", SLEEPER, env=runtime)
    try:
        wait_for(lambda: started_writing(out), what="the first samples")
        (entry,) = listed(runtime)
        assert entry["file"] == str(out) and entry["pid"] == recorder.pid and not entry["watched"]
        assert SLEEPER in entry["title"] and entry["age_s"] >= 0
        table = devicewatch("runs", env=runtime)
        assert str(out) in table.stdout and str(recorder.pid) in table.stdout
        stopped = devicewatch("runs", "--stop", out.name, env=runtime)
        assert stopped.returncode == 0, stopped.stderr
        assert recorder.wait(timeout=30) == 128 + signal.SIGINT
        assert runfile.load(out).end.status == "cancelled"
        assert listed(runtime) == []
        missing = devicewatch("runs", "--stop", "no-such.jsonl", env=runtime)
        assert missing.returncode == 2 and "no run recording now" in missing.stderr
    finally:
        recorder.kill()
        recorder.wait()


def test_a_recorder_killed_without_its_clean_up_is_not_listed(tmp_path, runtime):
    out = tmp_path / "killed.jsonl"
    recorder = start_recorder(out, PY, "-c", SLEEPER, env=runtime)
    wait_for(lambda: started_writing(out), what="the first samples")
    assert len(listed(runtime)) == 1
    recorder.kill()   # no handler runs; its watchdog ends the workload
    recorder.wait()
    assert listed(runtime) == []
    assert list(Path(runtime["DEVICEWATCH_RUNTIME_DIR"]).glob("*/*.json")) == []  # the stale entry removed


# -- the dashboard and its terminal (a real tmux) ----------------------------------------------

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """A tmux server of this test's own, 200×50, running one dashboard."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.socket = f"dw-test-{uuid.uuid4().hex[:8]}"
        self.env = dict(env, TERM="xterm-256color")
        self.cwd = cwd

    def tmux(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True,
                              timeout=20)

    def start(self, command: list[str]) -> None:
        shell = " ".join(subprocess.list2cmdline([c]) for c in command)
        result = self.tmux("new-session", "-d", "-x", "200", "-y", "50", "-c", str(self.cwd), shell)
        assert result.returncode == 0, result.stderr

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p").stdout

    def kill(self) -> None:
        self.tmux("kill-server")


def dashboard(tmp_path: Path, env: dict[str, str]) -> tuple[Tmux, Path]:
    runs = tmp_path / "runs"
    session = Tmux(env, tmp_path)
    session.start([PY, "-m", "devicewatch", "run", "--runs-dir", str(runs), "--gpu", "off", "--", PY, "-c", SLEEPER])
    path = wait_for(lambda: next((p for p in runs.glob("*.jsonl") if started_writing(p)), None),
                    what="the dashboard's run file")
    wait_for(lambda: "CPU" in session.screen(), what="the dashboard drawn")
    return session, path


def ended(path: Path) -> dict:
    return wait_for(lambda: runfile.load(path).end, what="the end record")


@needs_tmux
def test_closing_the_dashboards_terminal_ends_its_run_saying_so(tmp_path, runtime):
    session, path = dashboard(tmp_path, runtime)
    try:
        session.kill()   # as a closed window or a dropped SSH link: the terminal hangs up
        end = ended(path)
        # The hang-up reached the workload as itself (through the recorder), as headless.
        assert (end.status, end.reason, end.outside_signal, end.signal) == \
            ("cancelled", "terminal closed", "SIGHUP", "SIGHUP")
        wait_for(lambda: not workload_pids(), what="the workload gone")
        assert listed(runtime) == []
    finally:
        session.kill()


@needs_tmux
def test_a_dashboard_killed_outright_ends_its_run_saying_it_went_away(tmp_path, runtime):
    session, path = dashboard(tmp_path, runtime)
    try:
        (entry,) = listed(runtime)
        assert entry["watched"]
        recorder = psutil.Process(entry["pid"]).cmdline()
        dashboard_pid = int(recorder[recorder.index("--watcher-pid") + 1])
        os.kill(dashboard_pid, signal.SIGKILL)   # no handler runs: a crash, the OOM killer
        end = ended(path)
        assert (end.status, end.reason) == ("cancelled", control.DASHBOARD_GONE)
        wait_for(lambda: not workload_pids(), what="the workload gone")
    finally:
        session.kill()


@needs_tmux
def test_quit_keep_recording_leaves_the_run_listed_and_stoppable(tmp_path, runtime):
    session, path = dashboard(tmp_path, runtime)
    try:
        session.keys("q")
        wait_for(lambda: "keep recording" in session.screen(), what="the quit dialog")
        session.keys("k")
        wait_for(lambda: session.tmux("list-sessions").returncode != 0, what="the dashboard closed")
        time.sleep(1.0)
        assert runfile.load(path).end is None            # still recording, as chosen
        (entry,) = listed(runtime)
        assert entry["file"] == str(path) and not entry["watched"]
        assert devicewatch("runs", "--stop", str(entry["pid"]), env=runtime).returncode == 0
        assert ended(path).status == "cancelled"
        assert any("left the run recording" in n.message for n in runfile.load(path).notices)
    finally:
        session.kill()
        for entry in listed(runtime):
            os.kill(entry["pid"], signal.SIGKILL)


@pytest.mark.asyncio
async def test_the_home_screen_lists_runs_recording_now_to_follow_or_stop(tmp_path, runtime, monkeypatch):
    pytest.importorskip("textual")
    from devicewatch.tui.app import DashboardApp, DashboardSettings
    from devicewatch.tui.home_screen import HomeScreen
    from devicewatch.tui.run_screen import RunScreen

    monkeypatch.setenv("DEVICEWATCH_RUNTIME_DIR", runtime["DEVICEWATCH_RUNTIME_DIR"])
    out = tmp_path / "elsewhere.jsonl"
    recorder = start_recorder(out, PY, "-c", SLEEPER, env=runtime)
    try:
        wait_for(lambda: started_writing(out), what="the first samples")
        app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs")))
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.pause(0.3)
            home = app.screen
            assert isinstance(home, HomeScreen)
            assert [r.pid for r in home.active] == [recorder.pid]
            assert home.query_one("#active-panel").display
            prompt = str(home.query_one("#active").get_option_at_index(0).prompt)
            assert str(out) in prompt and "unwatched" in prompt
            home.query_one("#active").focus()
            await pilot.press("enter")  # follow: the file replayed as it grows
            await pilot.pause(0.5)
            assert isinstance(app.screen, RunScreen) and app.screen.source.path == out
            app.pop_screen()
            await pilot.pause(0.3)
            await pilot.press("s")  # stop: the recorder cancels its workload and finishes the file
            assert recorder.wait(timeout=30) == 128 + signal.SIGINT
            assert runfile.load(out).end.status == "cancelled"
            await pilot.pause(HomeScreen.ACTIVE_SCAN_SECONDS + 0.5)
            assert home.active == [] and not home.query_one("#active-panel").display
    finally:
        recorder.kill()
        recorder.wait()
