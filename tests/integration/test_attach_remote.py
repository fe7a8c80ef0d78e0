"""devicewatch attach on a Python 3.14 process: the zero-code instrumentation's hooks put in by
``sys.remote_exec`` and taken out at the detach. The loop of test_attach_process.py, started bare
on a Python 3.14 with PyTorch (``make python314``: Debian's packages in .python314/, or the
interpreter named in DEVICEWATCH_PYTHON314's file); skipped where there is none."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_attach_process import LOOP, Loop, detached_mid_epoch, passes, records, shares

ROOT = Path(__file__).resolve().parents[2]
FOUND = Path(os.environ.get("DEVICEWATCH_PYTHON314", ROOT / ".python314" / "python.json"))
PYTHON314: dict[str, Any] | None = json.loads(FOUND.read_text()) if FOUND.is_file() else None
pytestmark = [pytest.mark.slow, pytest.mark.skipif(PYTHON314 is None, reason=(
    f"no Python 3.14 with PyTorch here ({FOUND} is missing): make python314"))]
# Measured, not sampled: the shares come from the loop's own calls, as in a launched run. Only
# the stretches between what the hooks time and what the loop's [truth] timing brackets differ.
SHARE_POINTS = 1.0


class Loop314(Loop):
    """The loop on Python 3.14: the interpreter itself is the process (its /proc/PID/exe)."""

    def __init__(self, folder: Path, epochs: int, delay: float, width: int, text: str = LOOP):
        assert PYTHON314 is not None
        script = folder / "loop.py"
        script.write_text(text)
        self.lines: list[str] = []
        self.process = subprocess.Popen([PYTHON314["python"], str(script), str(epochs), str(delay), str(width)],
                                        stdout=subprocess.PIPE, text=True, cwd=folder,
                                        env={**os.environ, **PYTHON314["env"]})
        import threading

        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()


def attach(pid: int, output: Path, *more: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.Popen([sys.executable, "-m", "devicewatch", "attach", str(pid), "--record", str(output), *more],
                            cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def said(run: list[dict[str, Any]], state: str) -> dict[str, Any]:
    return next(r for r in run if r.get("kind") == "instrument" and r.get("state") == state)


def test_an_input_bound_loop_on_python_314_is_measured_by_the_hooks(tmp_path: Path) -> None:
    loop = Loop314(tmp_path, 7, 0.004, 256)
    try:
        loop.wait_for("[truth] epoch 1 ", timeout=180)
        out = tmp_path / "attached.jsonl"
        watcher = attach(loop.process.pid, out)
        text, err = watcher.communicate(timeout=300)
        loop.finish()
    finally:
        loop.kill()
    assert watcher.returncode == 0, err
    run = records(out)
    assert run[0]["attached"]["hooks"]["via"] == "sys.remote_exec"
    assert run[-1]["instrument"]["hooked"]["python"].startswith("3.14")
    numbered = said(run, "numbered")
    assert numbered["variable"] == "epoch"    # a loop at the top level: its variable is a global
    # Every pass after the one under way at the join, counted exactly and numbered as the loop's.
    first = numbered["epoch"] + (0 if numbered["whole"] else 1)
    seen = passes(run)
    truths = [t for t in loop.truths() if t["epoch"] >= first]
    assert sorted(seen) == [t["epoch"] for t in truths] and len(truths) >= 4, (sorted(seen), numbered)
    assert {r["metrics"]["steps"] for r in run if r.get("kind") == "epoch"} == {16}   # 256 samples, 16 a batch
    got = shares({k: sum(seen[n][k] for n in seen) for k in ("data", "train", "validate")})
    want = shares({k: sum(t[k] for t in truths) for k in ("data", "train", "validate")})
    assert all(abs(got[k] - want[k]) <= SHARE_POINTS for k in got), (got, want)
    flat = " ".join(text.split())
    assert "verdict: input-bound" in flat
    assert re.search(r"advice: on the next start: try num_workers=\d", flat), flat
    assert "phases: from devicewatch's hooks, put into the process by sys.remote_exec" in flat
    assert "not sampled" in flat and "(sampled)" not in flat


def test_detach_takes_the_hooks_out_and_leaves_the_result_of_a_bare_run(tmp_path: Path) -> None:
    bare, watched, run = detached_mid_epoch(tmp_path, Loop314, 6, attach, signal.SIGTERM)
    assert run[-1]["reason"] == "detached: the process runs on, untouched"
    assert said(run, "left") and run[-1]["instrument"]["hooked"]["taken_out"] is True
    assert watched.checksum() == bare.checksum()


def test_sample_asks_for_the_sampler_on_python_314(tmp_path: Path) -> None:
    """--sample keeps the hooks out; austin 3.7 reads no Python 3.14, which is said in one line."""
    loop = Loop314(tmp_path, 8, 0.004, 64)   # long enough for the sampler to give up (3 tries)
    try:
        loop.wait_for("ready", timeout=180)
        out = tmp_path / "sampled.jsonl"
        watcher = attach(loop.process.pid, out, "--sample")
        text, err = watcher.communicate(timeout=300)
        loop.finish()
    finally:
        loop.kill()
    run = records(out)
    assert run[0]["attached"]["hooks"] == {"not": "phases sampled on request (--sample)"}
    assert not [r for r in run if r.get("kind") == "instrument" and r.get("state") == "joined"]
    assert "hooked" not in run[-1]["instrument"]
    assert "austin cannot read the stacks of this python3.14" in err + text, (err, text)


def test_a_process_that_refuses_remote_debugging_is_sampled_and_says_why(tmp_path: Path) -> None:
    """Started with -X disable-remote-debug: sys.remote_exec is refused, in one notice."""
    assert PYTHON314 is not None
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    before = set(Path(tempfile.gettempdir()).glob("devicewatch-attach-*"))
    process = subprocess.Popen([PYTHON314["python"], "-X", "disable-remote-debug", str(script), "8", "0.004", "64"],
                               stdout=subprocess.PIPE, text=True, cwd=tmp_path, env={**os.environ, **PYTHON314["env"]})
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        out = tmp_path / "refused.jsonl"
        watcher = attach(process.pid, out)
        text, err = watcher.communicate(timeout=300)
        process.stdout.read()
        process.wait(timeout=120)
    finally:
        process.kill()
    assert "devicewatch: the hooks could not go in (" in err, (err, text)   # said on the terminal too
    run = records(out)
    notices = [r["message"] for r in run if r.get("type") == "notice"]
    assert any(m.startswith("the hooks could not go in (") and "phases sampled from outside" in m
               for m in notices), notices
    assert not [r for r in run if r.get("kind") == "instrument" and r.get("state") == "joined"]
    assert set(Path(tempfile.gettempdir()).glob("devicewatch-attach-*")) <= before   # no script left: none was due


def test_a_process_left_can_be_joined_again(tmp_path: Path) -> None:
    """Attach, detach, attach again: the second attach has the hooks too (the first's state went
    with the leave)."""
    loop = Loop314(tmp_path, 10, 0.002, 256)
    runs = []
    try:
        loop.wait_for("[truth] epoch 1 ", timeout=180)
        for n in (1, 2):
            out = tmp_path / f"attach-{n}.jsonl"
            watcher = attach(loop.process.pid, out)
            deadline = time.monotonic() + 60
            while not (out.exists() and '"epoch"' in out.read_text()):   # a whole epoch measured
                assert time.monotonic() < deadline and watcher.poll() is None
                time.sleep(0.05)
            watcher.send_signal(signal.SIGTERM)
            _, err = watcher.communicate(timeout=60)
            assert watcher.returncode == 0, err
            runs.append(records(out))
        loop.finish()
    finally:
        loop.kill()
    for run in runs:
        assert said(run, "joined") and said(run, "left"), [r for r in run if r.get("kind") == "instrument"]
        assert run[-1]["instrument"]["hooked"]["taken_out"] is True


def test_a_join_still_due_when_devicewatch_leaves_runs_later_without_a_word(tmp_path: Path) -> None:
    """The process is in one long call of C code (a sleep) for the whole attach: the script it
    was handed runs after devicewatch has gone. It finds a script that does nothing but remove
    its folder, so the process's own stderr stays clean and nothing is left behind."""
    assert PYTHON314 is not None
    script = tmp_path / "late.py"
    script.write_text("import time\nprint('ready', flush=True)\ntime.sleep(6)\n"
                      "for _ in range(40):\n    time.sleep(0.05)\nprint('done', flush=True)\n")
    before = set(Path(tempfile.gettempdir()).glob("devicewatch-attach-*"))
    process = subprocess.Popen([PYTHON314["python"], str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=tmp_path, env={**os.environ, **PYTHON314["env"]})
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        out = tmp_path / "late.jsonl"
        watcher = attach(process.pid, out)
        deadline = time.monotonic() + 60
        while not (out.exists() and '"sample"' in out.read_text()):
            assert time.monotonic() < deadline and watcher.poll() is None
            time.sleep(0.05)
        time.sleep(1)
        watcher.send_signal(signal.SIGTERM)
        watcher.communicate(timeout=60)
        said, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert said.strip() == "done" and err == "", err
    assert "hooked" not in records(out)[-1]["instrument"]
    assert set(Path(tempfile.gettempdir()).glob("devicewatch-attach-*")) <= before
