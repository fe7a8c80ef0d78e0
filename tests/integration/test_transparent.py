"""Transparent to what it runs: a probe run bare and under devicewatch sees the same thing.

The test is the user's terminal (a pseudo-terminal it holds the master side of), a pipe, or
the dashboard (Pilot). The probe (scripts/terminal_probe.py) writes what it saw: isatty of its
standard streams, its terminal's size and the change of it, what it read on stdin; the test
compares that, the exit status and the bytes that reached the "terminal", and reads the run
file for the timing of partial lines and redrawn bars.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from collections.abc import Callable

import psutil
import pytest

from devicewatch.runformat import runfile

ROOT = Path(__file__).resolve().parents[2]
PROBE = str(Path(__file__).resolve().parent / "scripts" / "terminal_probe.py")
PY = sys.executable
SIZE = (30, 100)          # rows, columns of the "user's terminal"
RESIZED = (40, 120)


def env() -> dict[str, str]:
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    environment.pop("DEVICEWATCH_EVENTS", None)
    return environment


def under_devicewatch(run_file: Path, *command: str) -> list[str]:
    return [PY, "-m", "devicewatch", "--record", str(run_file), "--interval", "0.05", "--grace", "0.5",
            "--gpu", "off", "--", *command]


def in_terminal(argv: list[str], react: Callable[[bytes, int], bytes | None] = lambda out, fd: None,
                timeout: float = 30) -> tuple[int, bytes, list, list]:
    """Run ARGV as a shell would in a terminal of SIZE: its own session, the terminal its
    controlling one. REACT(output so far, master) may act on the terminal and returns bytes to
    type. Returns the exit status, every byte the terminal received, and its settings before
    and after."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *SIZE, 0, 0))
    before = termios.tcgetattr(slave)
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env(), start_new_session=True,
                               preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    received = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                received += chunk
            typed = react(received, master)
            if typed:
                os.write(master, typed)
            if process.poll() is not None and not select.select([master], [], [], 0.2)[0]:
                break
        try:
            code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:   # the check on what the terminal received says why
            process.kill()
            code = process.wait(timeout=5)
        after = termios.tcgetattr(slave)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
        os.close(slave)
    return code, received, before, after


def report(path: Path) -> dict:
    return json.loads(path.read_text())


def resize_on_prompt(out: bytes, master: int) -> None:
    if b"resize me" in out and not getattr(resize_on_prompt, "done", False):
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", *RESIZED, 0, 0))
        resize_on_prompt.done = True  # type: ignore[attr-defined]
    return None


# -- headless, in a terminal ------------------------------------------------------------------

def test_in_a_terminal_it_has_the_same_terminal_size_change_output_and_exit_status(tmp_path):
    steps = ["see", "winch", "partial", "bar", "colour", "exit=3"]
    results = {}
    for name, wrap in (("bare", lambda *c: list(c)), ("watched", lambda *c: under_devicewatch(tmp_path / "run.jsonl", *c))):
        resize_on_prompt.done = False  # type: ignore[attr-defined]
        results[name] = in_terminal(wrap(PY, PROBE, str(tmp_path / f"{name}.json"), *steps), resize_on_prompt)
    bare, watched = report(tmp_path / "bare.json"), report(tmp_path / "watched.json")
    assert bare == watched == {"isatty": [True, True, True], "size": list(SIZE), "dev_tty": True,
                               "winch": True, "size_after": list(RESIZED)}
    assert results["bare"][0] == results["watched"][0] == 3
    # Byte for byte as it came: the partial line, the bar's carriage returns, the colours.
    assert results["watched"][1].startswith(results["bare"][1])   # then devicewatch's summary
    assert results["watched"][3] == results["watched"][2]     # the terminal's settings restored

    run = runfile.load(str(tmp_path / "run.jsonl"))
    lines = [r.line for r in run.logs]
    assert lines == ["resize me", "loading...done", "step 10/10", "\x1b[31mred\x1b[0m plain"]
    assert run.end.exit_code == 3 and run.end.status == "failed"
    partials = _partials(tmp_path / "run.jsonl")
    loading = next(r for r in partials if r["line"] == "loading...")
    done = next(r for r in run.logs if r.line == "loading...done")
    assert done.t - loading["t"] >= 0.45       # shown 0.6 s before its line ended, not at the end
    bar = [r["line"] for r in partials if r["line"].startswith("step")]
    # The bar redraws for 0.5 s and an open line is recorded at most every 0.1 s: several of
    # its states, each a whole line (what the terminal shows), none a bar of bars.
    assert len(set(bar)) >= 3 and all(len(b) == len("step 10/10") for b in bar)


def _partials(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("partial")]


def test_typed_input_reaches_it_and_ctrl_c_interrupts_it_as_in_a_terminal(tmp_path):
    def typing(out: bytes, _master: int) -> bytes | None:
        if b"ready" not in out and not getattr(typing, "typed", False) and time.monotonic() > typing.at:  # type: ignore[attr-defined]
            typing.typed = True  # type: ignore[attr-defined]
            return b"hello\r"        # Enter sends a carriage return; the terminal makes it \n
        if b"ready" in out and not getattr(typing, "interrupted", False):
            typing.interrupted = True  # type: ignore[attr-defined]
            return b"\x03"
        return None

    codes = {}
    for name, wrap in (("bare", lambda *c: list(c)), ("watched", lambda *c: under_devicewatch(tmp_path / "run.jsonl", *c))):
        typing.typed = typing.interrupted = False  # type: ignore[attr-defined]
        typing.at = time.monotonic() + (3.0 if name == "watched" else 1.0)  # type: ignore[attr-defined]
        code, received, before, after = in_terminal(wrap(PY, PROBE, str(tmp_path / f"{name}.json"),
                                                         "see", "stdin", "sigint"), typing)
        codes[name] = code
        assert after == before
        assert b"hello\r\n" in received     # echoed by the workload's terminal, as by the user's
    bare, watched = report(tmp_path / "bare.json"), report(tmp_path / "watched.json")
    assert bare == watched and watched["stdin"] == "hello\n" and watched["sigint"] is True
    assert codes["bare"] == codes["watched"] == 130
    end = runfile.load(str(tmp_path / "run.jsonl")).end
    assert end.status == "cancelled" and end.exit_code == 130


def test_a_second_ctrl_c_cancels_a_workload_that_ignores_the_first_as_ctrl_c_to_the_recorder_does(tmp_path):
    presses: list[float] = []

    def interrupt_twice(out: bytes, _master: int) -> bytes | None:
        if b"ready" in out and len(presses) < 2 and (not presses or time.monotonic() - presses[-1] > 1.0):
            presses.append(time.monotonic())
            return b"\x03"
        return None

    stubborn = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('ready', flush=True); time.sleep(30)"
    code, _received, before, after = in_terminal(under_devicewatch(tmp_path / "run.jsonl", PY, "-c", stubborn),
                                                 interrupt_twice)
    end = runfile.load(str(tmp_path / "run.jsonl")).end
    # The first Ctrl-C was the workload's to ignore; the second cancelled the run: SIGINT (ignored
    # too), then SIGTERM one grace period (0.5 s) later.
    assert len(presses) == 2 and end.status == "cancelled" and end.signal == "SIGTERM"
    assert code == 128 + signal.SIGTERM and after == before


def test_bytes_that_are_not_text_reach_the_terminal_and_the_run_file_unchanged(tmp_path):
    _code, bare, _, _ = in_terminal([PY, PROBE, str(tmp_path / "bare.json"), "bytes"])
    _code, watched, _, _ = in_terminal(under_devicewatch(tmp_path / "run.jsonl", PY, PROBE, str(tmp_path / "w.json"), "bytes"))
    assert watched.startswith(bare)
    (line,) = runfile.load(str(tmp_path / "run.jsonl")).logs
    assert base64.b64decode(line.raw) == bytes(b for b in range(256) if b not in (10, 13))


# -- headless, in a pipe ------------------------------------------------------------------------

def test_in_a_pipe_stdin_and_its_end_reach_it_and_partial_lines_come_as_they_are_written(tmp_path):
    steps = ["see", "stdin", "partial", "exit=4"]
    shown: dict[str, list[tuple[float, bytes]]] = {}
    for name, argv in (("bare", [PY, PROBE, str(tmp_path / "bare.json"), *steps]),
                       ("watched", under_devicewatch(tmp_path / "run.jsonl", PY, PROBE, str(tmp_path / "watched.json"), *steps))):
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"piped\x00input")
        process.stdin.close()
        chunks = shown[name] = []
        while chunk := process.stdout.read1(65536):
            chunks.append((time.monotonic(), chunk))
        assert process.wait(timeout=30) == 4
    assert report(tmp_path / "bare.json") == report(tmp_path / "watched.json") == \
        {"isatty": [False, False, False], "size": None, "dev_tty": False, "stdin": "piped\x00input"}
    for name, chunks in shown.items():
        loading = next(t for t, chunk in chunks if b"loading..." in chunk)
        done = next(t for t, chunk in chunks if b"done" in chunk)
        assert done - loading >= 0.45, name      # the open line came when written, not with its end


# -- what the workload is doing ----------------------------------------------------------------

def test_a_workload_waiting_for_input_and_a_stopped_one_are_said_so(tmp_path):
    path = tmp_path / "run.jsonl"
    # Continued, the workload runs until the run file says so, not for a time a busy machine's
    # recorder may take longer than to look at it twice.
    script = tmp_path / "reads_and_stops.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "sys.stdin.readline()\n"
        "os.kill(os.getpid(), signal.SIGSTOP)\n"
        "deadline = time.monotonic() + 60\n"
        "while time.monotonic() < deadline:\n"
        "    said = open(sys.argv[1]).read()\n"
        "    if said.rfind('\"state\":\"running\"') > said.rfind('\"state\":\"stopped\"'):\n"
        "        break\n"
        "    time.sleep(0.05)\n")
    process = subprocess.Popen(under_devicewatch(path, PY, str(script), str(path)),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
    assert process.stdin is not None

    def states() -> list[str]:
        try:
            return [r.state for r in runfile.load(str(path)).notices if r.state]
        except Exception:
            return []

    def wait_for(state: str) -> None:
        deadline = time.monotonic() + 15
        while state not in states() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert state in states(), states()

    try:
        wait_for("waiting for input")
        process.stdin.write(b"go\n")
        process.stdin.flush()
        wait_for("stopped")
        (workload,) = [p for p in psutil.Process(process.pid).children() if str(script) in p.cmdline()]
        workload.send_signal(signal.SIGCONT)
        process.stdin.close()
        assert process.wait(timeout=30) == 0
        said = states()
    finally:
        if process.poll() is None:   # a failed check: end the recorder (it ends the stopped workload)
            process.terminate()
            process.wait(timeout=30)
    # Running between reading and stopping itself is too short to be said (two looks, 0.5 s apart).
    assert said[0] == "waiting for input" and said[-2:] == ["stopped", "running"]


# -- the dashboard ------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_in_the_dashboard_the_output_panel_is_its_terminal(tmp_path):
    pytest.importorskip("textual")
    from devicewatch.live.source import LiveSource, open_replay
    from devicewatch.registry import Target
    from devicewatch.tui.app import DashboardApp, DashboardSettings
    from devicewatch.tui.output_panel import OutputLog
    from tests.conftest import until

    probe_report = tmp_path / "probe.json"
    source = LiveSource(str(tmp_path / "runs"), Target(None, [], [PY, PROBE, str(probe_report), "stdin", "see", "bar",
                                                                   "colour", "exit=5"]), interval=0.05, gpu=False)
    app = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs")), source, tick=0.1)
    async with app.run_test(size=(160, 48)) as pilot:
        log = app.screen.query_one("#log", OutputLog)
        await until(pilot, lambda: "waiting for input" in str(log.border_title), 20)
        assert "waiting for input" in str(log.border_title)
        await pilot.press("i")
        assert log.typing and app.focused is log
        await pilot.press("h", "i", "enter")
        await until(pilot, lambda: source.run is not None and source.run.finished, 20)
        await pilot.pause(0.3)
        rows_columns = [log.scrollable_content_region.height, log.scrollable_content_region.width]
        assert list(log.lines) == ["hi", "step 10/10", "red plain"]   # the bar redrawn in one line
        red = log._lines[-1]
        assert [(span.start, span.end, span.style.color.number) for span in red.spans] == [(0, 3, 1)]  # red kept
        live_lines = list(log.lines)
    seen = report(probe_report)
    assert seen["isatty"] == [True, True, True] and seen["stdin"] == "hi\n"
    assert seen["size"] == rows_columns
    assert source.run.end.exit_code == 5
    replay = DashboardApp(DashboardSettings(runs_dir=str(tmp_path / "runs")), open_replay(str(source.path)))
    async with replay.run_test(size=(160, 48)) as pilot:
        log = replay.screen.query_one("#log", OutputLog)
        await until(pilot, lambda: list(log.lines) == live_lines, 10)
        assert list(log.lines) == live_lines and log.open_line is None   # the replay shows what the live panel did


def test_ctrl_z_stops_it_and_devicewatch_as_one_job_and_fg_brings_both_back(tmp_path):
    """A shell with job control is the user's: Ctrl-Z gives it the terminal back, ``fg`` resumes."""
    run_file = tmp_path / "run.jsonl"
    # Between its two lines the workload runs until the run file says it runs again (after fg),
    # rather than sleeping for a time a busy machine may outlast before the Ctrl-Z reaches it
    # (the signals themselves are no condition to wait on: its terminal's SIGTSTP, which POSIX
    # discards, may come after the recorder's SIGCONT and take it from the queue).
    script = tmp_path / "stopped_and_continued.py"
    script.write_text(
        "import os, sys, time\n"
        "os.write(1, b'ready\\n')\n"   # one write: the Ctrl-Z's echo comes after its line, not inside it
        "deadline = time.monotonic() + 60\n"
        "while '\"state\":\"running\"' not in open(sys.argv[1]).read() and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('after')\n")
    command = " ".join(under_devicewatch(run_file, PY, str(script), str(run_file)))
    # exit is typed once fg has returned and the shell reads its terminal again.
    steps = [(b"bash", b"PS1='$ '; " + command.encode() + b"\r"), (b"ready", b"\x1a"),
             (b"Stopped", b"stty -a | grep -o -- '-\\?icanon'; fg; echo \"fg \"\"returned $?\"\r"),
             (b"after", None), (b"fg returned 0", b"exit\r")]

    stopped_states: list[str] = []

    def workload_state() -> str | None:
        for proc in psutil.process_iter(["cmdline", "status"]):
            if str(script) in (proc.info["cmdline"] or []) and "devicewatch" not in proc.info["cmdline"]:
                return proc.info["status"]
        return None

    def shell(out: bytes, _master: int) -> bytes | None:
        while steps and steps[0][0] in out[shell.seen:]:  # type: ignore[attr-defined]
            shell.seen = out.rindex(steps[0][0]) + len(steps[0][0])  # type: ignore[attr-defined]
            if steps[0][0] == b"Stopped":   # the job is stopped: the workload with it, not running on
                deadline = time.monotonic() + 10
                while workload_state() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
                    time.sleep(0.05)
                stopped_states.append(str(workload_state()))
            return steps.pop(0)[1]
        return None

    shell.seen = 0  # type: ignore[attr-defined]
    code, received, _before, _after = in_terminal(["bash", "--norc", "--noprofile", "-i"], shell, timeout=40)
    assert not steps and code == 0, received[-600:]   # the shell read the exit typed for it
    assert stopped_states == [psutil.STATUS_STOPPED]
    # Stopped, the shell had its terminal as it was (canonical, not devicewatch's raw mode).
    assert re.search(rb"\n(\x1b\[\?2004l)?icanon\n", received.replace(b"\r", b""))
    run = runfile.load(str(run_file))
    states = [n.state for n in run.notices if n.state]
    assert states[0] == "stopped" and "running" in states
    # "^Z": the workload's terminal echoes the key, as the user's does without devicewatch.
    assert run.end.status == "ok" and [r.line for r in run.logs][-1] == "^Zafter"
