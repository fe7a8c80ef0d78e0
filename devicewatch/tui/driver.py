"""The dashboard's terminal driver: Textual's Linux driver, whose input thread sleeps until a key.

Textual's driver reads the terminal in a thread that wakes every 0.1 s whether or not anything
came, to see whether input is to stop and whether a lone Escape has waited long enough to be a
key: ten wakes a second, each a few hundred microseconds of a process that otherwise draws
twice a second (1.7 ms of CPU a second following a live run, a twentieth of the dashboard).
Here the thread waits for the terminal or for a pipe written when input is to stop (the
driver's ``exit_event`` writes it as it is set), and on a timer only while the parser holds an
unfinished escape sequence, until the parser's own deadline. What is read, how it is decoded
and parsed, and what is sent to the app are Textual's (``LinuxDriver.run_input_thread``).
"""

from __future__ import annotations

import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

POLL = 0.1   # seconds between wakes where the parser does not say when its escape times out


class WakingEvent(threading.Event):
    """An ``Event`` that also makes a pipe readable while it is set: a thread waiting in
    ``select`` on ``wake_fd`` returns when it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.wake_fd, self._write_fd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)

    def set(self) -> None:
        super().set()
        try:
            os.write(self._write_fd, b"!")
        except OSError:   # full (set many times) or closed: readable already, or no one waits
            pass

    def clear(self) -> None:
        super().clear()
        try:
            while os.read(self.wake_fd, 64):
                pass
        except OSError:   # emptied
            pass


class _Gathered:
    """Stands for the driver's writer thread: what is written, kept in order."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, data: str) -> None:
        self.written.append(data)


# A CAN control character: a terminal drops an escape sequence it is in the middle of (one a
# frame left half written), so that what follows is read from its start.
CANCEL_SEQUENCE = "\x18"


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` whose input thread wakes for input, for the end of input, or for a
    pending escape sequence's deadline, not ten times a second."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_event = WakingEvent()

    def give_back_now(self) -> None:
        """Leave application mode at once, from a signal handler, where the app could not end
        (its loop blocked): Textual's own way out (``stop_application_mode``: input stopped, mouse
        reporting off, the terminal's settings as before, the alternate screen left, the cursor
        shown), its sequences written straight to the terminal behind a CAN rather than through
        the writer thread, which the app's end would wait for."""
        gathered = _Gathered()
        self._writer_thread = gathered   # type: ignore[assignment]  # only its write is used
        try:
            self.stop_application_mode()
        finally:
            data = (CANCEL_SEQUENCE + "".join(gathered.written)).encode()
            fd = self._file.fileno() if self._file is not None else 2
            try:
                while data:
                    data = data[os.write(fd, data):]
            except OSError:   # no terminal left (hung up): nothing to give back
                pass

    @staticmethod
    def _wait(parser: XTermParser) -> float | None:
        """How long the thread may sleep without input: until the parser's escape deadline,
        or for good (None) when it waits for nothing."""
        if not hasattr(parser, "_timeout_time"):   # a Textual whose parser keeps it elsewhere: poll as it does
            return POLL
        deadline = parser._timeout_time
        return None if deadline is None else max(0.0, deadline - get_time())

    def run_input_thread(self) -> None:
        exit_event = self.exit_event
        assert isinstance(exit_event, WakingEvent)
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(exit_event.wake_fd, selectors.EVENT_READ)
        fileno = self.fileno
        parser = XTermParser(self._debug)
        feed, tick = parser.feed, parser.tick
        decode = getincrementaldecoder("utf-8")().decode

        def process_selector_events(selector_events: list[tuple[selectors.SelectorKey, int]],
                                    final: bool = False) -> None:
            terminal = [(key, mask) for key, mask in selector_events if key.fd == fileno]
            for last, (_key, mask) in loop_last(terminal):
                if mask & selectors.EVENT_READ:
                    unicode_data = decode(os.read(fileno, 1024 * 4), final=final and last)
                    if not unicode_data:   # stdin piped, and ended
                        break
                    for event in feed(unicode_data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not exit_event.is_set():
                process_selector_events(selector.select(self._wait(parser)))
            # As Textual ends: nothing more read, a last tick after its 0.1 s wait.
            selector.unregister(self.fileno)
            selector.unregister(exit_event.wake_fd)
            process_selector_events(selector.select(POLL), final=True)
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
