"""The event channel: a FIFO the workload's processes write their events to, read by the
recorder's sampling loop between samples.

A FIFO rather than an inherited descriptor, so that processes the workload starts itself
(torchrun ranks, pool workers) can report too: they find it by the path in
``DEVICEWATCH_EVENTS``. Its folder is private to this user (``mkdtemp``: 0700). Markers,
results and kinds devicewatch does not know pass a ``RateBound``; over it they are counted and
dropped, a run of lines that are all markers or results in bulk without being parsed. Phases,
epochs, run info, instrumentation news and oversize notes are never dropped.

Read between samples (``read_ready``), not on a thread of its own: each event is stamped by its
sender, so reading it up to a sampling interval later changes none of its times, and a thread
woken for every few events cost the recorder a fifth of its CPU (seven wakes a second of a
training loop's phases and epochs, each with cold caches). The FIFO holds a megabyte between
two reads; a sender that fills it waits for the next.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import tempfile
import threading
import time
from typing import Any
from collections.abc import Callable

import orjson

from .. import events
from ..runformat import records
from .bound import RateBound

MAX_EVENT_LINE = 1024 * 1024     # an event line longer than this is dropped unread
NOTED_GARBAGE = 5                # garbage lines noted one by one; the rest counted
# A workload sends tens of events a second; a flood cost the recorder half a core.
EVENT_RATE = 500
EVENT_BURST = 5000
NEVER_DROPPED = (events.RUN_INFO, events.PHASE_BEGIN, events.PHASE_END, events.EPOCH, events.OVERSIZE,
                 events.INSTRUMENT)
BOUNDED = (events.MARKER, events.RESULT)   # counted by kind when dropped; any other kind as "other"
FIFO_SIZE = 1 << 20              # bytes the FIFO holds (asked of Linux; its default is 64 KiB)
READ_BUDGET = 16 * FIFO_SIZE     # bytes one ``read_ready`` takes at most: a flood that keeps the
                                 # FIFO full cannot hold the sampling loop
# How a line of a bounded kind starts, as devicewatch.events writes it (and with a space after
# the colon, as json.dumps writes by default): lines over the bound are recognised by this and
# counted without being parsed.
BOUNDED_PREFIXES = tuple((kind, prefix, b"\n" + prefix) for kind in BOUNDED
                         for prefix in (b'{"kind":"%s",' % kind.encode(), b'{"kind": "%s",' % kind.encode()))


def parse_event(line: bytes) -> dict[str, Any] | None:
    """One event line as a dict with a string ``kind`` and a numeric ``mono``, else None."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:  # the standard library reads what orjson refuses (NaN, huge ints)
        try:
            event = json.loads(line.decode("utf-8"), parse_constant=lambda _name: None)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
    if not isinstance(event, dict) or not isinstance(event.get("kind"), str) \
            or not isinstance(event.get("mono"), (int, float)) or isinstance(event.get("mono"), bool):
        return None
    return event


class EventChannel:
    """Reads the workload's events from the FIFO and hands each one, as a run-file record, to
    ``write`` and then ``on_event``; ``t`` is the recorder's run time, ``start_mono`` the
    monotonic time of t = 0 (events are stamped on the system-wide monotonic clock)."""

    def __init__(self, write: Callable[[records.Writable], None], t: Callable[[], float], start_mono: float,
                 on_event: Callable[[dict[str, Any]], None] = lambda record: None):
        self._write, self._t, self._start_mono, self._on_event = write, t, start_mono, on_event
        self.bound = RateBound(EVENT_RATE, EVENT_BURST, t)
        self.seen = 0           # events read, dropped ones included
        self.garbage = 0
        self.folder = ""
        self.path = ""
        self._read_fd = self._keep_fd = -1
        self._pending = b""      # the start of a line not yet ended
        self._dropping = False   # within a line over MAX_EVENT_LINE: dropped up to its end
        self._ended = False      # every writer has closed: nothing more will come
        self._lock = threading.Lock()   # one reader at a time, and lines taken in the order read
        self._poll: Any = None          # a select.poll of the FIFO: asked before each read

    # -- the FIFO's life ------------------------------------------------------------------

    def open(self) -> str:
        """Create the FIFO in a private folder and open it; returns its path."""
        self.folder = tempfile.mkdtemp(prefix="devicewatch-")
        self.path = os.path.join(self.folder, "events")
        os.mkfifo(self.path, 0o600)
        self._read_fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:  # room for events to pile up between two reads
            import fcntl

            fcntl.fcntl(self._read_fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), FIFO_SIZE)
        except OSError:
            pass  # not Linux, or over /proc/sys/fs/pipe-max-size: the default size
        # Our own writing end: no end-of-file while the workload has not opened it yet.
        self._keep_fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        if hasattr(select, "poll"):
            self._poll = select.poll()
            self._poll.register(self._read_fd, select.POLLIN)
        return self.path

    def finish(self, timeout: float = 5.0) -> None:
        """The workload has ended: read what is left until every writer has gone (processes it
        left behind may still write, for ``timeout`` seconds at most), then say what was dropped
        or unreadable in all."""
        self._close(self._keep_fd)
        self._keep_fd = -1  # now the FIFO reports end-of-file once every writer has closed
        deadline = time.monotonic() + timeout
        while self._read_fd >= 0 and not self._ended:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self._read_fd], [], [], left)
            if ready:
                self.read_ready()
        with self._lock:
            if self._pending and not self._dropping:
                self.take(self._pending + b"\n")
            self._pending = b""
            self.note_drops(final=True)
        if self.garbage > NOTED_GARBAGE:
            self._write(records.notice(self._t(), f"{self.garbage} unreadable lines on the event channel in all"))

    def close(self) -> None:
        """Close both ends and remove the folder (also after a failed start)."""
        with self._lock:   # not under a read an output pump still makes
            for fd in (self._read_fd, self._keep_fd):
                self._close(fd)
            self._read_fd = self._keep_fd = -1
            self._poll = None
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    @staticmethod
    def _close(fd: int) -> None:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    # -- reading --------------------------------------------------------------------------

    def read_ready(self) -> None:
        """Take the events the FIFO holds now (``READ_BUDGET`` bytes at most), without waiting:
        the sampling loop's, and an output pump's before it reads an epoch the workload printed
        (whether the workload said its phases itself, in events sent before it printed)."""
        with self._lock:
            self._read_ready()

    def _read_ready(self) -> None:
        taken = 0
        while not self._ended and taken < READ_BUDGET and self._read_fd >= 0:
            # Asked first: the empty FIFO of most samples costs one poll, not a read that raises
            # (an exception made and caught at every sample was most of this read's cost).
            if self._poll is not None and not self._poll.poll(0):
                break
            try:
                chunk = os.read(self._read_fd, FIFO_SIZE)
            except BlockingIOError:
                break
            except OSError:
                self._ended = True
                break
            if not chunk:
                self._ended = True  # every writer, our own keep-alive end included, has closed
                break
            taken += len(chunk)
            self._consume(chunk)
        self.note_drops()

    def _consume(self, chunk: bytes) -> None:
        data = self._pending + chunk if self._pending else chunk
        cut = data.rfind(b"\n") + 1
        lines, self._pending = data[:cut], data[cut:]
        if lines and self._dropping:
            lines = lines[lines.index(b"\n") + 1:]  # the rest of an oversized line
            self._dropping = False
        if lines:
            self.take(lines)
        if len(self._pending) > MAX_EVENT_LINE:
            if not self._dropping:  # one note per oversized line, however many megabytes it runs on
                self._note_garbage(f"an event line over {MAX_EVENT_LINE} bytes was dropped")
            self._pending, self._dropping = b"", True

    def take(self, lines: bytes) -> None:
        """Complete lines: one by one while the bound allows; past it, a run of lines that are
        all markers or results is counted by kind without being split or parsed."""
        self.bound.refill()
        start = 0
        while self.bound.tokens >= 1 and start < len(lines):
            end = lines.index(b"\n", start)
            if end > start:
                self.take_line(lines[start:end])
            start = end + 1
        rest = lines[start:] if start else lines
        if not rest:
            return
        lines_left = rest.count(b"\n")
        counts = []
        for kind, prefix, after_newline in BOUNDED_PREFIXES:  # a flood is mostly one kind: stop early
            n = rest.count(after_newline) + rest.startswith(prefix)
            counts.append((kind, n))
            lines_left -= n
            if not lines_left:
                for kind, n in counts:
                    if n:
                        self._drop(kind, n)
                return
        for line in rest.split(b"\n"):
            if line:
                self.take_line(line)

    def take_line(self, line: bytes) -> None:
        if not line.strip():
            return
        if self.bound.tokens < 1:
            for kind, prefix, _ in BOUNDED_PREFIXES:
                if line.startswith(prefix):
                    self._drop(kind)
                    return
        event = parse_event(line)
        if event is None:
            self._note_garbage(f"unreadable line on the event channel: {line[:80]!r}")
            return
        kind = event["kind"]
        if kind not in NEVER_DROPPED and not self.bound.take():
            self._drop(kind)
            return
        self.seen += 1
        mono = event.pop("mono")
        record = records.event(round(mono - self._start_mono, 6), kind, **event)
        self._write(record)
        self._on_event(record)

    def _drop(self, kind: str, count: int = 1) -> None:
        self.bound.drop(kind if kind in BOUNDED else "other", count)
        self.seen += count

    def note_drops(self, final: bool = False) -> None:
        """A notice of the events dropped since the last one, when one is due."""
        drops = self.bound.due(final)
        if drops is None:
            return
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(drops.counts.items()))
        self._write(records.notice(
            self._t(), f"{drops.total} events over the bound of {EVENT_RATE}/s (bursts of {EVENT_BURST}) "
                       f"dropped between {drops.first:.1f} s and {drops.last:.1f} s: {kinds}",
            dropped=drops.counts, dropped_from=drops.first, dropped_to=drops.last))

    def _note_garbage(self, message: str) -> None:
        self.garbage += 1
        if self.garbage <= NOTED_GARBAGE:
            self._write(records.notice(self._t(), message))
