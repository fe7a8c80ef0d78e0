"""Signals sent to the dashboard: the terminal given back, the workload signalled as itself.

SIGTERM, SIGHUP and SIGQUIT end the dashboard as they end any program in a terminal, but only
once the terminal is the user's again: the app exits as a quit does, and Textual's driver leaves
application mode (the alternate screen left, mouse reporting off, the cursor shown, the
terminal's settings as they were). Each of these, and SIGUSR1 and SIGUSR2, reaches the workload
of every live run on screen as itself, as a headless recorder passes on a signal sent to it
(``LiveSource.pass_signal``); after an ending one the workload has its grace, as headless.

Python runs a handler on the main thread between two bytecodes, which may be in the middle of
the event loop's own work: the handler only hands the signal to the loop
(``call_soon_threadsafe``, which is safe there), and the app acts on it in the loop
(``DashboardApp.signalled``). Where no loop runs (before the app has started, after it has
ended) the terminal is not the app's: an ending signal takes its default action. A second
ending signal while the loop still runs means the first was not acted on in time (the loop
blocked, or the user insists): the handler then gives the terminal back itself (``give_back``:
the runs told, the driver's way out of application mode written straight to the terminal) and
takes the signal's default action.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
PASSED = (*ENDING, signal.SIGUSR1, signal.SIGUSR2)


def default_action(sig: signal.Signals) -> None:
    """End this process as SIG would have without a handler (its status says so to the shell)."""
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


@contextmanager
def handed_to(loop_of: Callable[[], asyncio.AbstractEventLoop | None],
              act: Callable[[signal.Signals], None],
              give_back: Callable[[signal.Signals], None] = lambda _sig: None) -> Iterator[None]:
    """While inside: each of ``PASSED`` is handed to the loop ``loop_of`` gives, where ``act``
    runs with it; one that comes while no loop runs takes its default action (SIGUSR1 and
    SIGUSR2 are then dropped: the runs they are for have not started, or have gone), and so does
    a second ending one while the loop runs, after ``give_back`` (called in the handler). A
    signal ignored when the dashboard starts (``nohup``) stays ignored, as a headless recorder
    leaves it."""
    handed: list[signal.Signals] = []   # the ending signals handed to the loop

    def handler(signum: int, _frame: Any) -> None:
        sig = signal.Signals(signum)
        loop = loop_of()
        if loop is not None and loop.is_running():
            if sig in ENDING and handed:
                give_back(sig)
                default_action(sig)
                return
            if sig in ENDING:
                handed.append(sig)
            try:
                loop.call_soon_threadsafe(act, sig)
                return
            except RuntimeError:   # closed meanwhile
                pass
        if sig in ENDING:
            default_action(sig)

    previous = {sig: signal.signal(sig, handler) for sig in PASSED if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
