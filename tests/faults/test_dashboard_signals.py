"""Signals sent to the dashboard (`kill`, a batch system, a closed terminal) give the terminal back
and reach the workload as themselves, as a headless recorder passes them on.

The dashboard runs in a real pseudo-terminal of the test's own: every byte it writes is read
back, so the test sees the modes it set on the terminal and that each is undone after the
signal; the terminal's settings (termios) are read on the pty's other side before and after.
The workload notes each signal it gets in a file named after it.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from devicewatch.recorder.pseudo_terminal import take_controlling_terminal
from devicewatch.recorder.recorder import OUTSIDE_GRACE, TERMINAL_CLOSED
from devicewatch.runformat import runfile

from .conftest import PY, alive, child_env, read_pids, wait_for

pytest.importorskip("textual")

# argv: FOLDER, CODE. Notes each signal in FOLDER/<SIGNAME>; an ending one makes it exit CODE.
# Its pid is in FOLDER/pid once its handlers are in place.
WORKLOAD = """
import os, signal, sys, time
folder, code = sys.argv[1], int(sys.argv[2])

def got(signum, _frame):
    name = signal.Signals(signum).name
    with open(os.path.join(folder, name), "w") as f:
        f.write(str(os.getpid()))
    if signum not in (signal.SIGUSR1, signal.SIGUSR2):
        sys.exit(code)

for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(sig, got)
with open(os.path.join(folder, "pid.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.replace(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
print("up", flush=True)
while True:
    time.sleep(0.05)
"""
CODE = 3
PRIVATE_MODE = re.compile(rb"\x1b\[\?([0-9;]+)([hl])")
# A terminal's private modes as a shell leaves them: the cursor shown, lines wrapped; every
# other mode the dashboard sets (the alternate screen, mouse reporting, focus events, bracketed
# paste, synchronized output) off.
ON_BY_DEFAULT = {25, 7}


class Terminal:
    """A pseudo-terminal of ROWS×COLUMNS whose output is read on a thread as it comes."""

    def __init__(self, rows: int, columns: int):
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.output = bytearray()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._done.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    return
                with self._lock:
                    self.output += chunk

    def written(self) -> bytes:
        with self._lock:
            return bytes(self.output)

    def start(self, argv: list[str], cwd: Path) -> subprocess.Popen:
        slave = self.slave
        env = child_env(TERM="xterm-256color")
        for name in ("COLUMNS", "LINES"):   # the size is the terminal's
            env.pop(name, None)
        return subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, start_new_session=True,
                                env=env, preexec_fn=lambda: take_controlling_terminal(0))

    def close(self) -> None:
        self._done.set()
        self._thread.join(5)
        os.close(self.master)
        os.close(self.slave)


def modes(data: bytes) -> dict[int, bool]:
    """Each private mode DATA sets or resets, as the last sequence naming it left it."""
    last: dict[int, bool] = {}
    for numbers, how in PRIVATE_MODE.findall(data):
        for number in numbers.split(b";"):
            last[int(number)] = how == b"h"
    return last


@pytest.fixture
def terminal():
    made: list[Terminal] = []

    def make(rows: int = 24, columns: int = 80) -> Terminal:
        made.append(Terminal(rows, columns))
        return made[-1]

    yield make
    for each in made:
        each.close()


def dashboard_in(terminal: Terminal, tmp_path: Path, reap: list[int]) -> tuple[subprocess.Popen, int, Path]:
    """`devicewatch run -- python WORKLOAD` in TERMINAL, drawn, its workload's handlers in
    place: (the dashboard, the workload's pid, the notes' folder)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    proc = terminal.start([PY, "-m", "devicewatch", "run", "--runs-dir", str(tmp_path / "runs"), "--gpu", "off",
                           "--", PY, str(script), str(folder), str(CODE)], cwd=tmp_path)
    reap.append(proc.pid)
    [pid] = read_pids(folder / "pid", timeout=60)
    reap.append(pid)
    # The workload runs, so its run screen is up; and the terminal is the dashboard's.
    wait_for(lambda: b"\x1b[?1049h" in terminal.written(), timeout=60, what="the dashboard drawn")
    return proc, pid, folder


def notes(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith("SIG")}


def run_file(tmp_path: Path) -> runfile.Run:
    [path] = (tmp_path / "runs").glob("*.jsonl")
    return runfile.load(path)


def assert_terminal_given_back(terminal: Terminal, mark: int, settings: list) -> None:
    """Every private mode the dashboard changed is back to a shell's default, set so after the
    signal (byte MARK of the output); the Kitty keyboard protocol popped; the terminal's settings
    (termios) as they were before the dashboard started."""
    written = terminal.written()
    changed = modes(written[:mark])
    assert {1049, 1000, 25} <= set(changed), changed   # what the dashboard set: the check can fail
    assert changed[1049] and changed[1000] and not changed[25]
    after = modes(written[mark:])
    for mode in changed:
        assert after.get(mode) == (mode in ON_BY_DEFAULT), (mode, written[mark:][-400:])
    assert b"\x1b[<u" in written[mark:]
    assert termios.tcgetattr(terminal.slave) == settings
    assert b"Traceback" not in written


@pytest.mark.parametrize("sig, size", [(signal.SIGTERM, (24, 80)), (signal.SIGHUP, (30, 100)),
                                       (signal.SIGQUIT, (24, 80))])
def test_an_ending_signal_gives_the_terminal_back_and_reaches_the_workload_as_itself(
        tmp_path, reap, terminal, sig, size):
    term = terminal(*size)
    settings = termios.tcgetattr(term.slave)
    proc, pid, folder = dashboard_in(term, tmp_path, reap)
    raw = termios.tcgetattr(term.slave)
    assert raw[3] & termios.ICANON == 0 and settings[3] & termios.ICANON   # taken: raw mode while drawn
    mark = len(term.written())
    proc.send_signal(sig)
    code = proc.wait(timeout=60)
    assert notes(folder) == {sig.name}   # as itself: never SIGINT
    assert not alive(pid)
    assert_terminal_given_back(term, mark, settings)
    end = run_file(tmp_path).end
    assert (end.status, end.exit_code, end.outside_signal) == ("cancelled", CODE, sig.name)
    assert end.reason == (TERMINAL_CLOSED if sig == signal.SIGHUP else
                          f"{sig.name} from outside, passed to the workload: exit code {CODE}")
    assert code == CODE   # the workload's status, as a headless recorder exits with it
    if sig != signal.SIGHUP:   # said where the recording is, as after a quit, on the restored screen
        after = term.written()[mark:]
        assert after.index(b"\x1b[?1049l") < after.index(b"recording: ")


def test_sigusr1_reaches_the_workload_and_the_dashboard_goes_on(tmp_path, reap, terminal):
    term = terminal()
    proc, pid, folder = dashboard_in(term, tmp_path, reap)
    mark = len(term.written())
    proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: (folder / "SIGUSR1").exists(), what="the workload to get SIGUSR1")
    assert proc.poll() is None and alive(pid)
    assert modes(term.written()[mark:]).get(1049) is not False   # the screen still the dashboard's
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == CODE
    assert notes(folder) == {"SIGUSR1", "SIGTERM"}


def test_a_stopped_workload_takes_a_sigterm_sent_to_the_dashboard_within_its_grace(tmp_path, reap, terminal):
    """SIGSTOPped, the workload would hold SIGTERM pending, its handler unrun, for the whole
    grace (30 s), then be killed; continued after the signal, its handler runs at once."""
    term = terminal()
    proc, pid, folder = dashboard_in(term, tmp_path, reap)
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T",
             what="the workload stopped")
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=OUTSIDE_GRACE + 30) == CODE
    assert time.monotonic() - sent < OUTSIDE_GRACE + 2
    assert notes(folder) == {"SIGTERM"}
    run = run_file(tmp_path)
    assert (run.end.exit_code, run.end.signal, run.end.outside_signal) == (CODE, None, "SIGTERM")
    [said] = [n for n in run.notices if n.outside_signal]
    assert said.message == ("SIGTERM from outside, passed to the workload (it was stopped: SIGCONT sent after it); "
                            f"it has {OUTSIDE_GRACE:g} s to end")


def test_a_second_ending_signal_before_the_first_is_acted_on_gives_the_terminal_back_in_its_handler(
        tmp_path, reap, terminal):
    """SIGHUP and then SIGTERM both pending when the dashboard runs again (stopped meanwhile): the
    app's loop has not acted on the first when the second's handler runs, so the handler gives
    the terminal back itself, tells the run, and the dashboard ends of the signal. The workload
    gets SIGTERM alone, never the cancel's SIGINT."""
    term = terminal()
    settings = termios.tcgetattr(term.slave)
    proc, pid, folder = dashboard_in(term, tmp_path, reap)
    mark = len(term.written())
    proc.send_signal(signal.SIGSTOP)
    wait_for(lambda: Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T",
             what="the dashboard stopped")
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGCONT)
    assert proc.wait(timeout=60) == -signal.SIGTERM
    assert_terminal_given_back(term, mark, settings)
    assert b"\x18" in term.written()[mark:]   # the handler's own way out
    wait_for(lambda: not alive(pid), timeout=OUTSIDE_GRACE, what="the workload to end")
    assert notes(folder) == {"SIGTERM"}
    end = wait_for(lambda: run_file(tmp_path).end, what="the run's end")
    assert (end.outside_signal, end.exit_code) == ("SIGTERM", CODE)
