"""A signal sent to the dashboard is acted on in its event loop, never inside the handler, and
one that comes while no loop runs does what it would without the dashboard."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from devicewatch.tui import outside_signals

ROOT = Path(__file__).resolve().parents[2]


def test_a_signal_is_acted_on_in_the_running_loop_and_the_handlers_are_put_back():
    before = {sig: signal.getsignal(sig) for sig in outside_signals.PASSED}
    acted: list[tuple[signal.Signals, bool]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def act(sig: signal.Signals) -> None:
            acted.append((sig, asyncio.get_running_loop() is loop))
            done.set()

        with outside_signals.handed_to(lambda: loop, act):
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(done.wait(), 10)

    asyncio.run(main())
    assert acted == [(signal.SIGUSR1, True)]
    assert {sig: signal.getsignal(sig) for sig in outside_signals.PASSED} == before


def run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=60)


def test_without_a_running_loop_an_ending_signal_takes_its_default_action_and_sigusr1_is_dropped():
    done = run_python("""
        import os, signal
        from devicewatch.tui import outside_signals
        with outside_signals.handed_to(lambda: None, lambda sig: print("acted", sig)):
            os.kill(os.getpid(), signal.SIGUSR1)   # dropped: no run to pass it to
            print("still here", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            print("not reached", flush=True)
    """)
    assert done.stdout == "still here\n" and done.returncode == -signal.SIGTERM


def test_a_signal_ignored_when_the_dashboard_starts_stays_ignored():
    done = run_python("""
        import os, signal
        from devicewatch.tui import outside_signals
        signal.signal(signal.SIGHUP, signal.SIG_IGN)   # nohup
        with outside_signals.handed_to(lambda: None, lambda sig: print("acted", sig)):
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
        print("ignored", flush=True)
    """)
    assert done.stdout == "ignored\n" and done.returncode == 0


def test_a_second_ending_signal_the_loop_has_not_acted_on_gives_the_terminal_back_in_the_handler():
    done = run_python("""
        import os, signal
        from devicewatch.tui import outside_signals

        class Blocked:
            \"\"\"A loop that runs but does not get to what is handed to it.\"\"\"
            def is_running(self):
                return True
            def call_soon_threadsafe(self, act, sig):
                print("handed", sig.name, flush=True)

        with outside_signals.handed_to(lambda: Blocked(), lambda sig: None,
                                       lambda sig: print("given back", sig.name, flush=True)):
            os.kill(os.getpid(), signal.SIGUSR1)   # no ending signal: handed, as every one
            os.kill(os.getpid(), signal.SIGTERM)
            print("waiting", flush=True)
            os.kill(os.getpid(), signal.SIGHUP)
            print("not reached", flush=True)
    """)
    assert done.stdout.splitlines() == ["handed SIGUSR1", "handed SIGTERM", "waiting", "given back SIGHUP"]
    assert done.returncode == -signal.SIGHUP
