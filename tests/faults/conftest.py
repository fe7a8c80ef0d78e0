"""Shared pieces of the fault suite: launching the real recorder on the small scripts in scripts/.

Every test here runs real processes and sends real signals; intervals and grace periods are
short so that the whole suite stays quick on a small machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
PY = sys.executable
INTERVAL = 0.05
GRACE = 0.5


def script(name: str) -> str:
    return str(SCRIPTS / name)


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a recorder: this checkout first on the import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("DEVICEWATCH_EVENTS", None)
    env.update(extra)
    return env


def recorder_argv(output: str | os.PathLike[str], *command: str, interval: float = INTERVAL,
                  grace: float = GRACE, quiet: bool = True) -> list[str]:
    argv = [PY, "-m", "devicewatch", "--record", str(output), "--interval", str(interval),
            "--grace", str(grace), "--gpu", "off"]
    if quiet:
        argv.append("--quiet")
    return argv + ["--", *command]


def start_recorder(output: str | os.PathLike[str], *command: str, **kwargs) -> subprocess.Popen:
    popen_kwargs = {k: kwargs.pop(k) for k in ("preexec_fn", "cwd", "env", "stdout", "stderr") if k in kwargs}
    popen_kwargs.setdefault("env", child_env())
    popen_kwargs.setdefault("stdout", subprocess.PIPE)
    popen_kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(recorder_argv(output, *command, **kwargs), stdin=subprocess.DEVNULL,
                            **popen_kwargs)


def run_recorder(output: str | os.PathLike[str], *command: str, timeout: float = 60, **kwargs):
    """Record COMMAND to OUTPUT to the end; returns (exit status, stdout, stderr) as text."""
    proc = start_recorder(output, *command, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()   # its workload is killed by the recorder's own clean-up, or by the test
        proc.communicate()
        raise
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def wait_for(condition: Callable[[], object], timeout: float = 20, what: str = "a condition") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def read_pids(path: Path, timeout: float = 20) -> list[int]:
    text = wait_for(lambda: path.exists() and path.read_text(), timeout, f"{path.name}")
    return [int(x) for x in str(text).split()]


def records(path: Path) -> list[dict]:
    """The run file's complete lines, parsed without the reader (a check independent of it)."""
    out = []
    for line in path.read_bytes().split(b"\n"):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"type": "<unparsable>"})
    return out


def has_event(path: Path, **fields) -> bool:
    if not path.exists():
        return False
    for line in path.read_bytes().split(b"\n")[:-1]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") == "event" and all(record.get(k) == v for k, v in fields.items()):
            return True
    return False


def alive(pid: int) -> bool:
    """True if PID runs (a zombie, dead but not yet reaped by its parent, counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr


@pytest.fixture
def reap():
    """Kill, at the end of a test, every pid it registered that is still alive."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, 9)
        except (ProcessLookupError, PermissionError):
            pass


def recording_in_epoch_two(tmp_path: Path, reap: list[int]) -> tuple[subprocess.Popen, int, Path]:
    """The epochs script under a real recorder, in its second epoch's training: (recorder,
    workload pid, run file); both processes are reaped after the test."""
    out, pidfile = tmp_path / "run.jsonl", tmp_path / "pid"
    recorder = start_recorder(out, PY, script("epochs.py"), str(pidfile))
    reap.append(recorder.pid)
    [pid] = read_pids(pidfile)
    reap.append(pid)
    wait_for(lambda: has_event(out, kind="phase_begin", name="train", epoch=2), what="epoch 2")
    return recorder, pid, out


@pytest.fixture
def small_disk(tmp_path):
    """A real 256 KiB filesystem (tmpfs); skipped where mounting is not allowed."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {made.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)
