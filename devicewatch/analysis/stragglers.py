"""Stragglers: the one rule of which rank held an epoch of a multi-node job up, used by
``report`` (a merged run, a job's folder) and the live job screen (``live.job.JobModel``) alike,
so that the two never name different ranks for one epoch.

The rule: in each epoch, every rank's *work* ends when its last phase of the epoch other than a
``wait`` ends (a rank waiting at a barrier is waiting for the others, not working; phases that
never ended are no finish). The rank whose work ended last is the epoch's straggler, and every
other rank waited the difference. The difference is a finding only at or above the noise floor:
``NOISE_SECONDS`` and ``NOISE_SHARE`` of the epoch, both. Below it (DDP's all-reduce lines the
ranks up to within a few hundredths of a second) the epoch has no straggler, whoever ended last.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .epoch_rows import EPOCH_UNIT, units_text
from .pairing import WAIT_PHASE, Phase

# The noise floor: a wait shorter than either is not a straggler. 0.1 s is several times the
# spread of ranks released together by an all-reduce and above a cluster's NTP error; 2% of
# the epoch keeps a long epoch's scheduling jitter from being called a straggler.
NOISE_SECONDS = 0.1
NOISE_SHARE = 0.02
# The phase the straggler lost its time in is named only where it took this share of the
# epoch's wait (and 5 ms) longer than the other ranks' median: else it lost the time between
# or before its phases.
LOST_SHARE, LOST_SECONDS = 0.1, 0.005


@dataclass(frozen=True)
class RankPhase:
    """One ended phase of one rank, on the job's one time axis (seconds)."""

    rank: int
    epoch: int
    name: str
    start: float
    end: float


@dataclass(frozen=True)
class EpochStragglers:
    """One epoch of two or more ranks: whose work ended last, how long each other rank waited
    for it, and whether that wait is a finding (at or above the noise floor)."""

    epoch: int
    last_rank: int
    finished: dict[int, float]   # rank -> when its work in the epoch ended (s)
    waited: dict[int, float]     # rank -> seconds between its finish and the last rank's
    length: float                # the epoch: its first rank's start to its last rank's finish (s)
    phase: str | None = None     # the phase the last rank spent longest in beyond the others' median
    phase_excess: float = 0.0    # by how much (s)

    @property
    def max_wait(self) -> float:
        return max(self.waited.values(), default=0.0)

    @property
    def noise_floor(self) -> float:
        """The shortest wait that is a finding in this epoch: NOISE_SECONDS, or NOISE_SHARE of
        its length where that is longer."""
        return max(NOISE_SECONDS, NOISE_SHARE * self.length)

    @property
    def finding(self) -> bool:
        """The ranks' finishes differ by the noise floor or more: the last rank held the others up."""
        return self.max_wait >= self.noise_floor

    @property
    def lost_in(self) -> str | None:
        """The phase the straggler lost its time in, where one phase explains a tenth of the
        wait (and 5 ms); None where none does or the epoch has no straggler."""
        if not self.finding or self.phase is None:
            return None
        return self.phase if self.phase_excess >= max(LOST_SECONDS, LOST_SHARE * self.max_wait) else None


def judge(epoch: int, phases: Iterable[RankPhase]) -> EpochStragglers | None:
    """EPOCH's straggler from its ranks' ended phases (others are ignored); None where fewer
    than two ranks worked in it."""
    work = [p for p in phases if p.epoch == epoch and p.name != WAIT_PHASE]
    finished: dict[int, float] = {}
    began: dict[int, float] = {}
    spent: dict[int, dict[str, float]] = {}
    for p in work:
        finished[p.rank] = max(finished.get(p.rank, p.end), p.end)
        began[p.rank] = min(began.get(p.rank, p.start), p.start)
        by_name = spent.setdefault(p.rank, {})
        by_name[p.name] = by_name.get(p.name, 0.0) + (p.end - p.start)
    if len(finished) < 2:
        return None
    last = max(sorted(finished), key=lambda r: finished[r])
    end = finished[last]
    phase, excess = None, 0.0
    for name, seconds in spent[last].items():
        beyond = seconds - _median([spent[r].get(name, 0.0) for r in spent if r != last])
        if phase is None or beyond > excess:
            phase, excess = name, beyond
    return EpochStragglers(epoch, last, dict(sorted(finished.items())),
                           {r: round(end - t, 6) for r, t in sorted(finished.items()) if r != last},
                           round(end - min(began.values()), 6), phase, round(max(excess, 0.0), 6))


def _median(values: list[float]) -> float:
    """The median as ``statistics.median`` takes it (the mean of the middle two of an even
    count), without importing ``statistics``, its fractions and decimals, into every report."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def judge_all(phases: Iterable[RankPhase]) -> list[EpochStragglers]:
    """Every epoch of PHASES with two or more ranks, judged, in epoch order."""
    by_epoch: dict[int, list[RankPhase]] = {}
    for p in phases:
        by_epoch.setdefault(p.epoch, []).append(p)
    judged = (judge(epoch, by_epoch[epoch]) for epoch in sorted(by_epoch))
    return [row for row in judged if row is not None]


def rank_phases(all_phases: Iterable[Phase]) -> list[RankPhase]:
    """A merged run's phases as ranks' phases: those of a rank, in an epoch, ended."""
    out = []
    for p in all_phases:
        rank = p.attrs.get("rank")
        if p.epoch is not None and not p.open and type(rank) is int:
            out.append(RankPhase(rank, p.epoch, p.name, p.start, p.end))
    return out


def stragglers(all_phases: list[Phase]) -> list[EpochStragglers]:
    """A merged run's epochs, each judged (``judge``) from its phases: the rule ``report`` and
    the job screen share."""
    return judge_all(rank_phases(all_phases))


def text(row: EpochStragglers, unit: str = EPOCH_UNIT) -> str:
    """One epoch (or segment, UNIT) in words, the same wherever it is shown: its straggler and
    the others' wait, or that the ranks finished within the noise floor."""
    if not row.finding:
        return (f"{unit} {row.epoch}: no straggler: every rank's work ended within {row.max_wait:.2f} s "
                f"of the others (under the noise floor of {row.noise_floor:.2f} s)")
    waits = ", ".join(f"rank {r} {w:.3f}s" for r, w in row.waited.items())
    where = f"; {row.lost_in} +{row.phase_excess:.2f} s on the other ranks' median" if row.lost_in else ""
    return f"{unit} {row.epoch}: rank {row.last_rank} finished its work last{where}; waited: {waits}"


class Judged(Protocol):
    """An epoch judged, as its figures or as ``report --json``'s (``StragglerFigures``)."""

    @property
    def last_rank(self) -> int: ...
    @property
    def finding(self) -> bool: ...
    @property
    def lost_in(self) -> str | None: ...


def tally(rows: Iterable[Judged], unit: str = EPOCH_UNIT) -> str:
    """The job in one line: which rank was the straggler how often, and where it mostly lost its
    time; or that no epoch had one (only epochs at or above the noise floor count)."""
    rows = list(rows)
    found = [r for r in rows if r.finding]
    if not found:
        return (f"no straggler in {units_text(unit, len(rows))}: all ranks' work ended within "
                f"the noise floor ({NOISE_SECONDS:g} s or {NOISE_SHARE:.0%})")
    counts: dict[int, int] = {}
    for row in found:
        counts[row.last_rank] = counts.get(row.last_rank, 0) + 1
    worst = min(counts, key=lambda rank: (-counts[rank], rank))
    places = [r.lost_in for r in found if r.last_rank == worst and r.lost_in]
    where = min(set(places), key=lambda name: (-places.count(name), name)) if places else None
    line = f"rank {worst} the straggler in {counts[worst]} of {units_text(unit, len(rows))}"
    return line + (f", mostly losing its time in {where}" if where else "")
