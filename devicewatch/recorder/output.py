"""The output pump: one of the workload's streams, read on a thread, recorded line by line.

Each line becomes a ``log`` record within a ``RateBound`` (beyond it, lines and bytes are
counted and said in a notice) and is echoed to the recorder's terminal. A progress bar rewrites
one line with carriage returns: its updates are looked at as they come (an epoch printed by a
bar is seen live) and the line is recorded as what it ended as, so a bar that never prints a
newline costs neither memory nor records; when a bar moves to a new epoch, its last state for
the epoch before is recorded as a line of its own. Epoch lines are never dropped.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from ..runformat import records
from .bound import RateBound
from .stdout_epochs import StdoutEpochs
from .terminal import Terminal

MAX_LOG_LINE = 64 * 1024         # longer output lines are cut (and say so)
OUTPUT_CHUNK = 1 << 16
# A workload printing gigabytes cost the recorder a whole core, writing a record per line.
LOG_RATE = 5000
LOG_BURST = 200_000


class OutputPump:
    """Records (and echoes) one stream (``stdout`` or ``stderr``) of the workload."""

    def __init__(self, stream: str, write: Callable[[dict[str, Any]], None], t: Callable[[], float],
                 terminal: Terminal, epochs: StdoutEpochs):
        self.stream = stream
        self._write, self._t, self._terminal, self._epochs = write, t, terminal, epochs
        self.bound = RateBound(LOG_RATE, LOG_BURST, t)
        self._bar: bytes | None = None   # the latest complete update of a progress bar

    def pump(self, pipe: Any) -> None:
        """Read PIPE to its end (the workload and everything it started closed it)."""
        pending = b""
        long_line: tuple[bytes, int] | None = None  # (its start, its length so far): a line past MAX_LOG_LINE
        while True:
            try:
                chunk = pipe.read1(OUTPUT_CHUNK)
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                break
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
        if long_line is not None:
            self.take_line(long_line[0], long_line[1] + len(pending))
        elif pending:
            self.take_line(pending)
        self.note_drops(final=True)
        pipe.close()

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
            if self.bound.tokens < 1 and not self.bound.refill() and not self._terminal.echoing:
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
        self._record(shown, length, self._epochs.might_mark(shown) and self._epochs.feed(shown))

    def _record(self, line: bytes, length: int, epoch_line: bool) -> None:
        """Write and echo a line; an epoch line is never dropped."""
        text = line.decode("utf-8", errors="replace")
        if epoch_line or self.bound.take():
            self._write(records.log(self._t(), self.stream, text,
                                    cut_from=length if length > MAX_LOG_LINE else None))
        else:
            self.bound.drop("lines", 1, length)
        self.note_drops()
        self._terminal.echo(self.stream, text)

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
