"""austin's samples as slices of each thread's stack.

austin (``-P``, wall-clock mode) writes one line a sample of each thread, as it takes it:
``P<pid>;T<interpreter>:<tid>;<file>:<function>:<line>;… <microseconds>``, the outermost frame
first, the number the time since that thread's sample before. A stack austin could not read
whole (it never stops the process, so a stack may change as it reads) is ``:INVALID:``: it is
left out, and the slice before it lasts until the next stack read whole.
"""

from __future__ import annotations

from dataclasses import dataclass

MAIN_THREAD = "MainThread"
INVALID = ":INVALID:"
KNOWN_STACKS = 4096   # the stacks parsed once and kept: a loop's are few, and come back every step


@dataclass(frozen=True)
class Frame:
    name: str        # the function's qualified name (``_BaseDataLoaderIter.__next__``)
    file: str
    line: int

    @property
    def function(self) -> str:
        """The bare name: ``__next__`` of ``_BaseDataLoaderIter.__next__``."""
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Slice:
    """One thread's stack, outermost frame first, held from START to END (seconds on the
    recorder's clock)."""

    thread: str
    tid: int
    start: float
    end: float
    stack: tuple[Frame, ...]


@dataclass(frozen=True)
class Sample:
    pid: int
    tid: int
    stack: tuple[Frame, ...]
    delta: float     # seconds since this thread's sample before, as austin measured it


def _frame(text: str) -> Frame:
    file, _, rest = text.rpartition(":")      # the line number last; a file name may hold a colon
    file, _, function = file.rpartition(":")
    return Frame(function, file, int(rest) if rest.isdigit() else 0)


class SampleReader:
    """austin's lines into samples: a stack seen before is not parsed again."""

    def __init__(self) -> None:
        self._stacks: dict[str, tuple[Frame, ...]] = {}

    def read(self, line: str) -> Sample | None:
        """LINE's sample, or None (a comment, an unreadable stack, a line cut short)."""
        if not line.startswith("P"):
            return None
        body, _, metric = line.rstrip("\n").rpartition(" ")
        head = body.split(";", 2)
        if len(head) < 3 or not head[1].startswith("T") or not metric.isdigit():
            return None
        frames = head[2]
        if INVALID in frames:
            return None
        stack = self._stacks.get(frames)
        if stack is None:
            stack = tuple(_frame(f) for f in frames.split(";"))
            if len(self._stacks) >= KNOWN_STACKS:
                self._stacks.clear()
            self._stacks[frames] = stack
        try:
            pid, tid = int(head[0][1:]), int(head[1].rpartition(":")[2], 0)
        except ValueError:
            return None
        return Sample(pid, tid, stack, int(metric) / 1e6)


class Slicer:
    """Timed samples into each thread's slices: a sample's stack holds from its time to the time
    of that thread's next one.

    A sample is read when this reader gets to it, which on a busy machine may be well after austin
    took it, and several then come at once; austin's own interval between two samples is true to
    when they were taken. So a sample is timed no later than it came, nor later than any sample
    that came after it less the intervals between them (a burst is spread back over the time it
    was taken in: samples are held until LOOKAHEAD seconds of later ones have come), nor later
    than the sample before it plus its interval."""

    LOOKAHEAD = 0.25

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, tuple[Frame, ...]]] = {}
        self._held: list[tuple[Sample, float]] = []

    def add(self, sample: Sample, came: float) -> None:
        self._held.append((sample, came))

    def ready(self) -> list[Slice]:
        """The slices closed by the samples held that came LOOKAHEAD before the latest."""
        if not self._held:
            return []
        newest = self._held[-1][1]
        n = next((i for i, (_, came) in enumerate(self._held) if came > newest - self.LOOKAHEAD), len(self._held))
        return self._take(n)

    def flush(self) -> list[Slice]:
        """The slices closed by every sample held (austin's run ended)."""
        return self._take(len(self._held))

    def _take(self, count: int) -> list[Slice]:
        held = self._held
        bound: list[float] = [0.0] * len(held)
        after: dict[int, tuple[float, float]] = {}   # a thread's next sample: (its bound, its interval)
        for n in range(len(held) - 1, -1, -1):
            sample, came = held[n]
            following = after.get(sample.tid)
            bound[n] = came if following is None else min(came, following[0] - following[1])
            after[sample.tid] = (bound[n], sample.delta)
        out: list[Slice] = []
        for (sample, _), latest in zip(held[:count], bound):
            before = self._last.get(sample.tid)
            at = latest if before is None else max(before[0], min(latest, before[0] + sample.delta))
            self._last[sample.tid] = (at, sample.stack)
            if before is not None and at > before[0]:
                thread = MAIN_THREAD if sample.tid == sample.pid else f"thread {sample.tid}"
                out.append(Slice(thread, sample.tid, before[0], at, before[1]))
        del held[:count]
        return out

    def forget(self) -> None:
        """A new austin run: no slice spans the moment between two runs."""
        self._last.clear()
        self._held.clear()
