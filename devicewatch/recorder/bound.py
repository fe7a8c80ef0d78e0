"""The rate bound shared by the event channel and the output pumps.

A workload can send events or print lines far faster than anyone reads them; writing a record
for each cost the recorder half a core (an event flood) or a whole one (gigabytes of output).
Both are therefore bounded the same way: a token bucket lets RATE items a second through after
a burst of BURST, and what it turns away is counted (by kind, and in bytes where that means
something) over the span of run time it covers, so that a notice can say exactly what was left
out. The notice is due when the drops pause for ``QUIET`` seconds, every ``EVERY`` seconds while
they go on, and at the end of the run; what the notice says is its owner's business.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable

QUIET = 1.0    # seconds without a drop that end a run of drops (and bring its notice)
EVERY = 5.0    # seconds: while dropping, a notice at least this often


@dataclass(frozen=True)
class Drops:
    """What a bound left out since its last notice: counts by key, bytes, and when (run time)."""

    counts: dict[str, int]
    size: int
    first: float
    last: float

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class RateBound:
    """A token bucket of ``rate`` items a second after a burst of ``burst``, and its drops.

    ``clock`` refills the bucket (monotonic seconds); ``run_time`` stamps the drops with the
    run's own time, which is what the notices speak in.
    """

    def __init__(self, rate: float, burst: float, run_time: Callable[[], float],
                 clock: Callable[[], float] = time.monotonic):
        self.rate, self.burst = rate, burst
        self._run_time, self._clock = run_time, clock
        self.tokens = float(burst)
        self._refilled = clock()
        self._counts: dict[str, int] = {}
        self._size = 0
        self._span: tuple[float, float] | None = None

    def refill(self) -> bool:
        """Add the tokens earned since the last refill; True if one is there to take."""
        now = self._clock()
        if now > self._refilled:
            self.tokens = min(self.burst, self.tokens + (now - self._refilled) * self.rate)
            self._refilled = now
        return self.tokens >= 1

    def take(self) -> bool:
        """Let one item through if the bound allows it."""
        if self.tokens < 1 and not self.refill():
            return False
        self.tokens -= 1
        return True

    def drop(self, key: str, count: int = 1, size: int = 0) -> None:
        """Count ``count`` items of ``key`` (and ``size`` bytes) turned away now."""
        self._counts[key] = self._counts.get(key, 0) + count
        self._size += size
        t = self._run_time()
        self._span = (self._span[0] if self._span else t, t)

    def due(self, final: bool = False) -> Drops | None:
        """The drops to note now, or None: when they paused for QUIET seconds, every EVERY
        seconds while they go on, and at the end (``final``). The count starts afresh."""
        if self._span is None:
            return None
        first, last = self._span
        now = self._run_time()
        if not (final or now - last >= QUIET or now - first >= EVERY):
            return None
        drops = Drops(self._counts, self._size, first, last)
        self._counts, self._size, self._span = {}, 0, None
        return drops
