"""The dashboard's terminal driver: keys read and parsed as Textual's driver does, an input thread
that does not wake while no key comes, and that ends when input is to stop."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import termios
import tty

import pytest
from textual import events
from textual.drivers.linux_driver import LinuxDriver

from devicewatch.tui.driver import QuietLinuxDriver


class _App:
    """What a driver's input thread sends its messages to."""

    def __init__(self) -> None:
        self.messages: list[object] = []

    async def _post_message(self, message: object) -> bool:
        self.messages.append(message)
        return True

    def keys(self) -> list[str]:
        return [m.key for m in self.messages if isinstance(m, events.Key)]


def _switches(thread: threading.Thread) -> int:
    """The thread's context switches so far (each wake is one)."""
    counts = {}
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            counts[name] = value.strip()
    return int(counts["voluntary_ctxt_switches"]) + int(counts["nonvoluntary_ctxt_switches"])


async def _input_thread(driver_class: type[LinuxDriver], terminal: int):
    """DRIVER_CLASS's input thread reading TERMINAL, and the app it sends to."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    app = _App()
    driver = driver_class(app)   # type: ignore[arg-type]
    for sig, handler in handlers.items():   # the driver's own, for a real app's Ctrl+Z
        signal.signal(sig, handler)
    driver.fileno = terminal
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    return driver, app, thread


async def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="counts a thread's wakes in /proc")
async def test_the_input_thread_reads_keys_as_textuals_and_sleeps_while_none_comes():
    master, slave = os.openpty()
    tty.setraw(slave)   # as the app's driver leaves its terminal: keys come as typed, not a line at a time
    try:
        driver, app, thread = await _input_thread(QuietLinuxDriver, slave)
        await asyncio.sleep(0.3)
        # Keys, and a lone Escape: a key once the parser's escape delay has passed.
        os.write(master, b"q\x1b")
        await _until(lambda: app.keys() == ["q", "escape"])
        assert app.keys() == ["q", "escape"]
        os.write(master, b"\x1b[A")   # an escape sequence: one key, the arrow
        await _until(lambda: len(app.keys()) == 3)
        assert app.keys() == ["q", "escape", "up"]
        # No key for a second: the thread sleeps (Textual's wakes ten times a second).
        before = _switches(thread)
        await asyncio.sleep(1.0)
        quiet = _switches(thread) - before
        assert quiet <= 2
        # Input stops: the thread ends at once, without waiting for a key.
        started = time.monotonic()
        driver.exit_event.set()
        thread.join(2.0)
        assert not thread.is_alive() and time.monotonic() - started < 1.0
        driver.exit_event.clear()   # as Textual's disable_input leaves it, for input to start again
        assert not driver.exit_event.is_set()

        # The same second with Textual's own driver: the count above tells the two apart.
        textuals, textual_app, textual_thread = await _input_thread(LinuxDriver, slave)
        await asyncio.sleep(0.3)
        before = _switches(textual_thread)
        await asyncio.sleep(1.0)
        assert _switches(textual_thread) - before >= 5
        os.write(master, b"q")
        await _until(lambda: textual_app.keys() == ["q"])
        assert textual_app.keys() == ["q"]
        textuals.exit_event.set()
        textual_thread.join(2.0)
    finally:
        os.close(master)
        os.close(slave)


def test_the_dashboard_uses_it_where_textual_would_use_its_linux_driver(monkeypatch):
    from textual.app import App

    from devicewatch.tui.app import DashboardApp

    monkeypatch.setattr(App, "get_driver_class", lambda self: LinuxDriver)
    assert DashboardApp.get_driver_class(object.__new__(DashboardApp)) is QuietLinuxDriver
    other = type("OtherDriver", (LinuxDriver,), {})
    monkeypatch.setattr(App, "get_driver_class", lambda self: other)
    assert DashboardApp.get_driver_class(object.__new__(DashboardApp)) is other


def test_the_dashboard_keeps_textuals_driver_where_the_quiet_one_cannot_be_imported(monkeypatch):
    import sys

    from textual.app import App

    from devicewatch.tui.app import DashboardApp

    monkeypatch.setattr(App, "get_driver_class", lambda self: LinuxDriver)
    monkeypatch.setitem(sys.modules, "devicewatch.tui.driver", None)   # its import fails
    assert DashboardApp.get_driver_class(object.__new__(DashboardApp)) is LinuxDriver


@pytest.mark.asyncio
async def test_giving_the_terminal_back_at_once_writes_what_textuals_way_out_writes_and_restores_its_settings():
    """From a signal handler the driver leaves application mode by Textual's own steps, their
    sequences written straight to the terminal (behind a CAN) instead of through the writer
    thread: the same bytes Textual's writer thread writes for ``stop_application_mode``."""
    from textual.drivers._writer_thread import WriterThread

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    terminals = [os.openpty(), os.openpty()]
    try:
        written = []
        for n, (master, slave) in enumerate(terminals):
            driver = (QuietLinuxDriver if n == 0 else LinuxDriver)(_App())   # type: ignore[arg-type]
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            driver.fileno = slave
            driver._file = os.fdopen(os.dup(slave), "w")
            driver.attrs_before = termios.tcgetattr(slave)   # as before application mode
            tty.setraw(slave)                                 # as in it
            if n == 0:
                driver.give_back_now()
            else:   # Textual's own way out, through its writer thread
                driver._writer_thread = WriterThread(driver._file)
                driver._writer_thread.start()
                driver.stop_application_mode()
                driver._writer_thread.stop()
            assert termios.tcgetattr(slave) == driver.attrs_before
            driver._file.close()
            written.append(_read_all(master))
        ours, textuals = written
        assert b"\x1b[?1049l" in textuals and b"\x1b[?25h" in textuals and b"\x1b[?1000l" in textuals
        assert ours == b"\x18" + textuals
    finally:
        for master, slave in terminals:
            os.close(master)
            os.close(slave)


def _read_all(master: int) -> bytes:
    """What a pty's master holds now (everything written to its slave so far)."""
    import select

    data = b""
    while select.select([master], [], [], 0.2)[0]:
        data += os.read(master, 65536)
    return data
