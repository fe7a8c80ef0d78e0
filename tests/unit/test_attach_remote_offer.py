"""Whether devicewatch attach offers the hooks to a process: only a python executable, and only
one whose Python has sys.remote_exec (3.14 or newer)."""

from __future__ import annotations

import sys


def test_the_hooks_are_offered_only_to_a_python_that_has_sys_remote_exec() -> None:
    """This interpreter (older than 3.14 here) is asked, and declined with its version; a process
    that is no python executable is never run."""
    import subprocess

    from devicewatch.attach import remote

    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as python:
        try:
            exe, why = remote.interpreter(python.pid)
        finally:
            python.kill()
    if sys.version_info >= (3, 14):
        assert exe is not None
    else:
        assert exe is None and why == f"its Python is {sys.version_info[0]}.{sys.version_info[1]}; " \
            "sys.remote_exec needs 3.14 or newer", why
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        try:
            assert remote.interpreter(sleeper.pid) == (None, "it runs sleep, not a python executable devicewatch can ask")
        finally:
            sleeper.kill()
