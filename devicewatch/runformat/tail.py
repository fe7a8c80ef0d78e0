"""A growing run file followed from where a view must start: every record but its samples, and
of its samples only the newest.

A recorder still writing has left no columnar form, so the one reader (``runfile.Follower``)
decodes every sample line of its journal to keep its latest: an hour of 64 cores and 8 GPUs at
10 Hz is 36,000 lines and seconds of decoding, for a view (the job screen) that draws a node's
latest reading. ``TailFollower`` is that reader with the journal handed to it differently on its
first poll: every line that is not a sample (header, events, lines, notices: a few thousand an
hour) as written, then the last ``keep`` sample lines, then the unfinished last line; from
then on the file as it grows. Every line it reads is read by the one reader's rules; a sample
line left out is not read at all (its damage, if any, is not counted).
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable

from .runfile import Follower
from .schema import SAMPLE_PREFIX


class TailFollower(Follower):
    """``Follower`` whose first poll reads a file's records whole but only its ``keep`` newest
    samples (every sample where ``keep`` is None); the samples come after the other records
    read with them, which keep their own order, as the samples keep theirs."""

    def __init__(self, path: str | os.PathLike[str], keep: int | None = None):
        super().__init__(path, keep)
        if keep is not None:
            self._read = _TailFirst(self._read, keep).read


class _TailFirst:
    """A reader of a run file that gives, the first time it is read, the file so far with all but
    the last ``keep`` complete sample lines left out (and those moved after the other complete
    lines), then the file's unfinished end; afterwards, what the file gains."""

    CHUNK = 1 << 20

    def __init__(self, read: Callable[[int], bytes], keep: int):
        self._whole = read
        self._keep = keep
        self._ready: bytes | None = None
        self._at = 0

    def read(self, size: int) -> bytes:
        if self._ready is None:
            self._ready = self._first()
        if self._at < len(self._ready):
            piece = self._ready[self._at:self._at + size]
            self._at += len(piece)
            return piece
        self._ready, self._at = b"", 0   # served: let it go
        return self._whole(size)

    def _first(self) -> bytes:
        """The file so far, its lines sorted as the class says; each read's lines are found in
        place (no copy of a read but the line it shares with the one before)."""
        others: list[bytes] = []
        newest: deque[bytes] = deque(maxlen=self._keep)
        pending = b""
        while True:
            try:
                chunk = self._whole(self.CHUNK)
            except (OSError, EOFError):   # a compressed file cut short: the reader's own rule
                chunk = b""
            if not chunk:
                break
            first = chunk.find(b"\n")
            if first < 0:
                pending += chunk
                continue
            cut = chunk.rfind(b"\n")
            joined = pending + chunk[:first]   # the line the read before left unfinished
            (newest if joined.startswith(SAMPLE_PREFIX) else others).append(joined)
            others.extend(_other_lines(chunk, first + 1, cut))
            newest.extend(_newest_samples(chunk, first + 1, cut, self._keep))
            pending = chunk[cut + 1:]
        return b"".join(line + b"\n" for line in (*others, *newest)) + pending


# A line break not followed by a sample line: the start of every other line (searched in C, so
# the sample lines, nearly all of a file, are never Python objects).
_OTHER_LINE = re.compile(rb"\n(?!" + re.escape(SAMPLE_PREFIX) + rb")")


def _other_lines(block: bytes, start: int, end: int) -> list[bytes]:
    """The lines of ``block[start:end]`` (whole lines, the last without its line break) that
    are not samples."""
    if start >= end:
        return [b""] if start == end else []
    starts = [m.end() for m in _OTHER_LINE.finditer(block, start, end)]
    if not block.startswith(SAMPLE_PREFIX, start, end):
        starts.insert(0, start)
    lines = []
    for begin in starts:
        stop = block.find(b"\n", begin, end)
        lines.append(block[begin:end if stop < 0 else stop])
    return lines


def _newest_samples(block: bytes, start: int, end: int, keep: int) -> list[bytes]:
    """The last KEEP sample lines of ``block[start:end]``, in order, read backwards from its end."""
    found: list[bytes] = []
    stop = end
    while len(found) < keep and stop >= start:
        cut = block.rfind(b"\n", start, stop)
        begin = start if cut < 0 else cut + 1
        if block.startswith(SAMPLE_PREFIX, begin, stop):
            found.append(block[begin:stop])
        stop = begin - 1
    return found[::-1]
