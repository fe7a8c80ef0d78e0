"""A run's events in file order, kept so that a million cost megabytes, not gigabytes."""

from __future__ import annotations

import zlib
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any
from collections.abc import Iterable, Iterator

import orjson

from .. import events as ev


class Events(Sequence[dict[str, Any]]):
    """A run's events in file order, as a sequence of dicts, stored so that a million do not
    cost a million dicts.

    The kinds the analysis reads (``DECODED``: phases, epochs, run info, results) are kept as
    dicts. Every other event (markers, above all) is kept as its line, compressed in blocks of
    ``BLOCK`` lines, and decoded again when asked for: about 15 bytes each instead of 400.
    ``of(kinds)`` returns the events of some kinds without decoding the others.
    """

    DECODED = frozenset((ev.RUN_INFO, ev.PHASE_BEGIN, ev.PHASE_END, ev.EPOCH, ev.RESULT))
    BLOCK = 2048

    def __init__(self, records: Iterable[dict[str, Any]] = ()):
        self._n = 0
        self._kept: list[dict[str, Any]] = []
        self._kept_at: list[int] = []      # the position of each kept event
        self._packed: list[bytes] = []     # zlib blocks of event lines
        self._packed_at: list[int] = []    # per block, the position of its first line ...
        self._packed_pos: list[int] = []   # ... and the positions of all its lines, flattened
        self._lines: list[bytes] = []      # the block being filled
        self._lines_at: list[int] = []
        self._cache: tuple[int, list[bytes]] | None = None
        for record in records:
            self.append(record)

    def append(self, record: dict[str, Any], line: bytes | None = None) -> None:
        """File one event; ``line`` (its JSON) lets a kind the analysis does not read stay packed."""
        if line is None or record.get("kind") in self.DECODED:
            self._kept.append(record)
            self._kept_at.append(self._n)
        else:
            self._lines.append(bytes(line))
            self._lines_at.append(self._n)
            if len(self._lines) >= self.BLOCK:
                self._pack()
        self._n += 1

    def _pack(self) -> None:
        self._packed.append(zlib.compress(b"\n".join(self._lines), 1))
        self._packed_at.append(self._lines_at[0])
        self._packed_pos.extend(self._lines_at)
        self._lines, self._lines_at = [], []

    def _block(self, b: int) -> list[bytes]:
        if self._cache is None or self._cache[0] != b:
            self._cache = (b, zlib.decompress(self._packed[b]).split(b"\n"))
        return self._cache[1]

    def of(self, *kinds: str) -> list[dict[str, Any]]:
        """The events of these kinds, in order (the analysis's kinds without decoding any other)."""
        if self.DECODED.issuperset(kinds):
            return [e for e in self._kept if e.get("kind") in kinds]
        return [e for e in self if e.get("kind") in kinds]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._n))]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError(index)
        k = bisect_right(self._kept_at, index) - 1
        if k >= 0 and self._kept_at[k] == index:
            return self._kept[k]
        if self._lines_at and index >= self._lines_at[0]:
            return orjson.loads(self._lines[bisect_right(self._lines_at, index) - 1])
        b = bisect_right(self._packed_at, index) - 1
        first = b * self.BLOCK
        return orjson.loads(self._block(b)[bisect_right(self._packed_pos, index, first, first + self.BLOCK) - 1 - first])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        kept = iter(zip(self._kept_at, self._kept))
        next_kept = next(kept, None)
        for b in range(len(self._packed) + 1):
            if b < len(self._packed):
                lines = zlib.decompress(self._packed[b]).split(b"\n")
                positions = self._packed_pos[b * self.BLOCK:(b + 1) * self.BLOCK]
            else:
                lines, positions = list(self._lines), list(self._lines_at)
            for at, line in zip(positions, lines):
                while next_kept is not None and next_kept[0] < at:
                    yield next_kept[1]
                    next_kept = next(kept, None)
                yield orjson.loads(line)
        while next_kept is not None:
            yield next_kept[1]
            next_kept = next(kept, None)

    def __repr__(self) -> str:
        return f"Events({len(self)} events)"
