"""Work beside the caller's: its result, its error, and a process that quits without waiting."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from devicewatch.beside import Beside

ROOT = Path(__file__).resolve().parents[2]


def test_the_result_comes_from_the_other_thread():
    callers = []

    def work(x: int) -> int:
        callers.append(threading.current_thread().name)
        return x * 2

    assert Beside(work, 21, name="devicewatch-test").result() == 42
    assert callers == ["devicewatch-test"]


def test_what_the_work_raised_is_raised_by_result():
    def broken() -> None:
        raise ValueError("no figures")

    pending = Beside(broken)
    with pytest.raises(ValueError, match="no figures"):
        pending.result()


def test_a_process_that_quits_does_not_wait_for_it():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "import time\nfrom devicewatch.beside import Beside\n"
                           "Beside(time.sleep, 60)\nprint('left')"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == "left\n"
    assert time.monotonic() - started < 20  # not the 60 s the work would take
