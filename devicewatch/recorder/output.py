"""The output pump: one of the workload's streams, read on a thread, recorded line by line.

What the workload writes is echoed to the recorder's terminal as it comes, byte for byte
(partial lines, carriage returns, colours). Each line becomes a ``log`` record within a
``RateBound`` (beyond it, lines and bytes are counted and said in a notice). A line still open
(``loading...``, a bar that redraws itself) is recorded as it stands, at most every
``PARTIAL_EVERY`` seconds, as a ``log`` record marked ``partial`` that the line's next record
replaces. A line that is not UTF-8 keeps its bytes (``raw``, base64). On a pseudo-terminal the
terminal's own ``\r\n`` for ``\n`` (``onlcr``) is undone, so that lines are what was written.
A progress bar rewrites
one line with carriage returns: its updates are looked at as they come (an epoch printed by a
bar is seen live) and the line is recorded as what it ended as, so a bar that never prints a
newline costs neither memory nor records; when a bar moves to a new epoch, its last state for
the epoch before is recorded as a line of its own. Epoch lines are never dropped.
"""

from __future__ import annotations

import base64
import select
import time
from collections.abc import Callable
from typing import Any

from ..runformat import records
from .bound import RateBound
from .stdout_epochs import StdoutEpochs
from .terminal import Terminal

MAX_LOG_LINE = 64 * 1024         # longer output lines are cut (and say so)
OUTPUT_CHUNK = 1 << 16
# A workload printing gigabytes cost the recorder a whole core, writing a record per line.
LOG_RATE = 5000
LOG_BURST = 200_000
PARTIAL_EVERY = 0.1              # seconds: an open line is recorded at most this often
PARTIAL_MAX = 4096               # bytes of an open line recorded (the whole line comes when it ends)


class OutputPump:
    """Records (and echoes) one stream (``stdout`` or ``stderr``) of the workload."""

    def __init__(self, stream: str, write: Callable[[records.Writable], None], t: Callable[[], float],
                 terminal: Terminal, epochs: StdoutEpochs, terminal_newlines: bool = False):
        self.stream = stream
        self._write, self._t, self._terminal, self._epochs = write, t, terminal, epochs
        self._terminal_newlines = terminal_newlines   # a pseudo-terminal's \r\n to undo
        self.bound = RateBound(LOG_RATE, LOG_BURST, t)
        self._bar: bytes | None = None   # the latest complete update of a progress bar
        self._open: bytes = b""          # the open line as it stands, recorded or not
        self._open_recorded: bytes = b""
        self._open_due = 0.0             # monotonic time the open line may next be recorded
        self._full = False               # the last read filled its chunk

    def pump(self, pipe: Any) -> None:
        """Read PIPE to its end (the workload and everything it started closed it)."""
        pending = b""
        held_cr = b""   # a pseudo-terminal's \r at the end of a chunk: its \n may come next
        long_line: tuple[bytes, int] | None = None  # (its start, its length so far): a line past MAX_LOG_LINE
        while True:
            chunk = self._read(pipe)
            if chunk is None:          # the open line waited long enough: record it as it stands
                self._record_open()
                continue
            if not chunk:
                break
            self._terminal.echo_bytes(self.stream, chunk)
            if self._terminal_newlines:
                chunk = (held_cr + chunk).replace(b"\r\n", b"\n")
                held_cr = b"\r" if chunk.endswith(b"\r") else b""
                chunk = chunk[:-1] if held_cr else chunk
            data = pending + chunk
            pending = b""
            if long_line is not None:  # the rest of a line already too long: it ends at the next newline
                newline = data.find(b"\n")
                if newline < 0:
                    long_line = (long_line[0], long_line[1] + len(data))
                    continue
                self.take_line(long_line[0], long_line[1] + newline)
                long_line, data = None, data[newline + 1:]
            end = data.rfind(b"\n")
            if end < 0:
                pending = data
            else:
                self.take_lines(data[:end])
                pending = data[end + 1:]
            if b"\r" in pending:
                pending = self._progress(pending)
            if len(pending) > MAX_LOG_LINE:  # no newline for too long: keep its start, count the rest
                long_line, pending = (pending[:MAX_LOG_LINE], len(pending)), b""
            self._open = b"" if long_line is not None else self._shown_open(pending + held_cr)
            if self._open != self._open_recorded and time.monotonic() >= self._open_due:
                self._record_open()
        pending += held_cr
        if long_line is not None:
            self.take_line(long_line[0], long_line[1] + len(pending))
        elif pending:
            self.take_line(pending)
        self.note_drops(final=True)
        pipe.close()

    def _read(self, pipe: Any) -> bytes | None:
        """The next chunk (b"" at the end), or None once the open line is due to be recorded.
        After a full chunk more is waiting (a flood): read on without asking."""
        if self._open != self._open_recorded and not self._full and hasattr(pipe, "fileno"):
            wait = self._open_due - time.monotonic()
            try:
                if wait <= 0 or not select.select([pipe.fileno()], [], [], wait)[0]:
                    return None
            except (OSError, ValueError):
                return b""
        try:
            chunk = pipe.read1(OUTPUT_CHUNK)
        except (OSError, ValueError):   # EIO: a pseudo-terminal whose every writer has gone
            return b""
        if self._terminal_newlines and chunk and hasattr(pipe, "fileno"):
            chunk = _more(pipe, chunk)
        self._full = len(chunk) >= OUTPUT_CHUNK
        return chunk

    def _shown_open(self, pending: bytes) -> bytes:
        """What a terminal shows of the open line: its latest update written over the one before."""
        if b"\r" not in pending:
            return pending[:PARTIAL_MAX]
        current = pending.rsplit(b"\r", 1)[1]
        bar = self._bar or b""
        return (current + bar[len(current):])[:PARTIAL_MAX]

    def _record_open(self) -> None:
        """The open line as it stands now, replaced by the line's next record."""
        self._open_due = time.monotonic() + PARTIAL_EVERY
        self._open_recorded = self._open
        self._write(records.log(self._t(), self.stream, *_text(self._open), partial=True))

    def _progress(self, pending: bytes) -> bytes:
        """A line still open holds carriage-return updates: take each complete one, keep only
        the latest (what the line would end as)."""
        *updates, current = pending.split(b"\r")
        self._updates(updates)
        return b"\r" + current

    def _updates(self, updates: list[bytes]) -> None:
        """A progress bar's updates, oldest first: each is looked at for an epoch; when the
        epoch changes, the bar as it ended the epoch before is recorded as a line."""
        for update in updates:
            if not update.strip():
                continue
            if self._epochs.might_mark(update):
                before = self._epochs.epoch
                if self._epochs.feed(update) and before is not None and self._epochs.epoch != before \
                        and self._bar is not None:
                    self._record(self._bar, len(self._bar), epoch_line=True)
            self._bar = update

    def take_lines(self, lines: bytes) -> None:
        """Complete lines: each recorded while the bound allows; past it, counted in bulk
        unless they are echoed or one of them may be an epoch line."""
        start = 0
        while start <= len(lines):
            if self.bound.tokens < 1 and not self.bound.refill():
                rest = lines[start:]
                if not self._epochs.might_mark(rest):
                    self.bound.drop("lines", rest.count(b"\n") + 1, len(rest))
                    self.note_drops()
                    return
            end = lines.find(b"\n", start)
            end = len(lines) if end < 0 else end
            self.take_line(lines[start:end])
            start = end + 1

    def take_line(self, line: bytes, length: int | None = None) -> None:
        """One complete line (``length``: its whole length, when it was cut)."""
        shown = line[:MAX_LOG_LINE]
        length = len(line) if length is None else length
        if b"\r" in shown:  # a progress bar rewrote the line: its updates, then what it ended as
            *updates, shown = shown.split(b"\r")
            self._updates(updates)
        self._bar = None
        self._open = self._open_recorded = b""
        self._record(shown, length, self._epochs.might_mark(shown) and self._epochs.feed(shown))

    def _record(self, line: bytes, length: int, epoch_line: bool) -> None:
        """Write a line; an epoch line is never dropped."""
        if epoch_line or self.bound.take():
            self._write(records.log(self._t(), self.stream, *_text(line),
                                    cut_from=length if length > MAX_LOG_LINE else None))
        else:
            self.bound.drop("lines", 1, length)
        self.note_drops()

    def note_drops(self, final: bool = False) -> None:
        drops = self.bound.due(final)
        if drops is None:
            return
        lines = drops.counts.get("lines", 0)
        self._write(records.notice(
            self._t(), f"{lines} lines ({drops.size} bytes) of {self.stream} over the bound of {LOG_RATE} "
                       f"lines/s (bursts of {LOG_BURST}) left out of the run file between {drops.first:.1f} s "
                       f"and {drops.last:.1f} s",
            dropped_lines=lines, dropped_bytes=drops.size, stream=self.stream,
            dropped_from=drops.first, dropped_to=drops.last))


def _more(pipe: Any, chunk: bytes) -> bytes:
    """CHUNK and what else is ready now, up to OUTPUT_CHUNK: a pseudo-terminal hands over at
    most a few KiB a read, and each chunk costs its Python work, so a flood is taken in 64 KiB."""
    parts, size = [chunk], len(chunk)
    try:
        while size < OUTPUT_CHUNK and select.select([pipe.fileno()], [], [], 0)[0]:
            more = pipe.read1(OUTPUT_CHUNK - size)
            if not more:
                break
            parts.append(more)
            size += len(more)
    except (OSError, ValueError):   # the end: the next read says so
        pass
    return b"".join(parts)


def _text(line: bytes) -> tuple[str, str | None]:
    """A line as text, and its bytes (base64) when they are not UTF-8: nothing the workload
    wrote is lost, and every reader still gets text (with U+FFFD where bytes were not text)."""
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError:
        return line.decode("utf-8", errors="replace"), base64.b64encode(line).decode("ascii")
