"""``devicewatch attach``'s bad input: one line each, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import devicewatch


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("pid, said", [("abc", "attach needs a process id (a number), not 'abc'"),
                                       ("0", "attach needs a process id above 0, not 0")])
def test_a_pid_that_is_no_number_above_0(pid: str, said: str) -> None:
    assert said in one_line_error(devicewatch("attach", pid, "--record", "x.jsonl"))


def test_a_process_that_does_not_exist() -> None:
    # PIDs above the kernel's pid_max (4,194,304 at the most) are never given to a process.
    assert "no process 99999999" in one_line_error(devicewatch("attach", "99999999", "--record", "x.jsonl"))


def test_a_zombie_has_nothing_to_attach_to(tmp_path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 60
        while True:   # ended, not yet waited for: a zombie
            with open(f"/proc/{child.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            assert time.monotonic() < deadline
            time.sleep(0.01)
        said = one_line_error(devicewatch("attach", str(child.pid), "--record", str(tmp_path / "z.jsonl")))
    finally:
        child.wait()
    assert f"process {child.pid} has ended" in said


def test_no_pid_and_no_terminal_to_pick_on() -> None:
    said = one_line_error(devicewatch("attach", "--record", "x.jsonl", stdin=subprocess.DEVNULL))
    assert "attach needs a PID here" in said or "no Python process is running" in said


@pytest.mark.parametrize("rate", ["0", "fast", "500"])
def test_a_rate_out_of_range(rate: str) -> None:
    assert "--rate" in one_line_error(devicewatch("attach", "1", "--record", "x.jsonl", "--rate", rate))
