"""Phases: each ``phase_end`` paired with its ``phase_begin`` (``PhasePairer``, fed a whole run
here and event by event by the live model), and the lanes they run in.

The workload's own phases beat the epochs printed on its output (``phase_source``): the
pairer keeps both apart and shows the printed ones only while the workload has begun none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import events, phase_source
from ..phase_kinds import kind_of
from ..runformat.runfile import Run

NO_PHASE = "(no phase)"


WAIT_PHASE = "wait"          # a rank waiting for the others at a barrier (zero-code): no finish of its epoch


AUTO_SOURCE, STDOUT_SOURCE = "auto", phase_source.PRINTED  # phases of the zero-code instrumentation, of the output


@dataclass(frozen=True)
class Phase:
    """A phase as paired: its name, lane and epoch, when it began and ended (or stood open)."""

    name: str
    lane: str
    epoch: int | None
    start: float
    end: float
    open: bool = False  # never ended: the workload died or is still running
    attrs: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def kind(self) -> str:
        """train, validate, data, copy, or other."""
        return kind_of(self.name)


class PhasePairer:
    """Phases paired as their events arrive, for a whole run (``phases``) or a live one (the
    dashboard's model feeds it event by event): each end with its begin (``events.PhaseTracker``),
    the workload's own phases and those printed on its output apart, so that the printed ones
    drop out once the workload says its phases itself (``phase_source``, the one rule)."""

    def __init__(self) -> None:
        # [workload's own, printed]: the tracker of each and its ended phases, kept in start order
        self._trackers = (events.PhaseTracker(), events.PhaseTracker())
        self._ended: tuple[list[Phase], list[Phase]] = ([], [])
        self._sorted = [True, True]
        self._sorts = [0, 0]   # times each ended list was sorted again (a phase ended out of order)
        self.own = False  # the workload says its phases itself: printed epochs are left out

    def take(self, event: dict[str, Any]) -> None:
        """Follow one event (any kind: phase events and run info count)."""
        self.own = self.own or phase_source.speaks_for_its_phases(event)
        if event.get("kind") not in (events.PHASE_BEGIN, events.PHASE_END):
            return
        printed = int(phase_source.is_printed(event))
        begin = self._trackers[printed].take(event)
        if begin is not None:
            ended = self._ended[printed]
            p = phase_from(begin, float(event["t"]))
            if ended and phase_order(p) < phase_order(ended[-1]):
                self._sorted[printed] = False
            ended.append(p)

    def phases(self, end: float) -> list[Phase]:
        """The phases so far in start order, those still open stretched to END (and ``open``)."""
        ended, _ = self.ended()
        still_open = self.still_open(end)
        if not still_open:
            return list(ended)
        return sorted(ended + still_open, key=phase_order)

    def ended(self) -> tuple[list[Phase], tuple[int, int]]:
        """The ended phases shown, in start order (the list itself: not to be changed), and
        what that list is a growing list of: it changes when the list was sorted again or the
        printed phases were left out, and while it stays, the list only grew at its end."""
        source = 0 if self.own else 1
        ended = self._ended[source]
        if not self._sorted[source]:
            ended.sort(key=phase_order)  # stable: equal starts keep the order they ended in
            self._sorted[source] = True
            self._sorts[source] += 1
        return ended, (source, self._sorts[source])

    def still_open(self, end: float) -> list[Phase]:
        """The phases shown that have not ended, stretched to END, in the order they began."""
        source = 0 if self.own else 1
        return [phase_from(b, max(end, float(b["t"])), True) for b in self._trackers[source].open_phases()]


def phases(run: Run) -> list[Phase]:
    """Pair phase_begin and phase_end events by (pid, lane, name, epoch), in start order."""
    pairer = PhasePairer()
    for event in run.events.of(events.PHASE_BEGIN, events.PHASE_END, events.RUN_INFO):
        pairer.take(event)
    return pairer.phases(run.duration)


def phase_order(p: Phase) -> tuple[float, str]:
    """The order phases are listed in: by start, then lane."""
    return (p.start, p.lane)


def phase_from(begin: dict[str, Any], end: float, is_open: bool = False) -> Phase:
    """The phase a ``phase_begin`` event starts, ending at ``end`` (``is_open``: not ended yet)."""
    reserved = {"type", "t", "kind", "name", "lane", "epoch", "pid", "thread"}
    epoch = begin.get("epoch")
    return Phase(str(begin.get("name")), str(begin.get("lane", "main")),
                 epoch if isinstance(epoch, int) else None, float(begin["t"]), end, is_open,
                 {k: v for k, v in begin.items() if k not in reserved})


def _merged(intervals: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """INTERVALS as the starts and ends of their union's pieces (overlapping or touching ones
    joined), in order."""
    if not intervals:
        return np.zeros(0), np.zeros(0)
    spans = np.array(intervals, dtype=float)
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    starts, reach = spans[:, 0], np.maximum.accumulate(spans[:, 1])
    first = np.concatenate(([True], starts[1:] > reach[:-1]))   # a piece begins where the ones before end
    last = np.concatenate((first[1:], [True]))
    return starts[first], reach[last]


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by any of INTERVALS, overlaps once (a loop: an epoch's few phases at a
    time, where arrays would cost more than they save)."""
    total = 0.0
    current: tuple[float, float] | None = None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
    if current is not None:
        total += current[1] - current[0]
    return total


def lanes(all_phases: list[Phase]) -> list[str]:
    seen: dict[str, None] = {}
    for p in all_phases:
        seen.setdefault(p.lane, None)
    return list(seen)


def lane_overlap(all_phases: list[Phase]) -> dict[str, float]:
    """How much of the time some phase runs is spent with phases running in two or more lanes."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for p in all_phases:
        if p.duration > 0:
            spans.setdefault(p.lane, []).append((p.start, p.end))
    # Each lane's phases as the pieces of their union: the lanes running at a time is then the
    # sum of +1 at each piece's start and -1 at its end (ends first where both fall at once).
    pieces = [_merged(lane) for lane in spans.values()]
    times = np.concatenate([np.zeros(0), *(edges for piece in pieces for edges in piece)])
    steps = np.concatenate([np.zeros(0), *(np.repeat([1.0, -1.0], len(starts)) for starts, _ in pieces)])
    order = np.lexsort((steps, times))
    times, running = times[order], np.cumsum(steps[order])
    held = np.diff(times)   # each span between two edges, with the lanes running during it
    busy = float(np.sum(held[running[:-1] >= 1]))
    overlap = float(np.sum(held[running[:-1] >= 2]))
    return {"busy_seconds": busy, "overlap_seconds": overlap,
            "overlap_fraction": overlap / busy if busy > 0 else 0.0}
