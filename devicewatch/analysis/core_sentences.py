"""Every sentence that counts cores, in one grammar, so that its numbers add up.

Three counts meet in such a sentence and are easily mixed: the machine's cores, the cores the
workload may use (an affinity, a cpuset, a CPU quota: ``allowed``), and the cores other
programs kept busy. Other programs run on the whole machine, whatever the workload may use, so
what they took is counted *of the machine's* cores ("other programs took 1.6 of the machine's
2 cores"), never of the allowed ones ("1.6 of 0.5 cores allowed" cannot be); what the workload
used or can get is counted of the cores it may use ("0.4 of 0.5 cores allowed of 2"), and what
it can get is what is left of those once other programs took theirs: at most the allowed cores,
at most the machine's less the others'. A limit that changed during a run is counted as it held
over the run, each stretch for its time, and its changes are listed: a limit set for a second is
not the run's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..probes.cpu_limits import CpuLimits
from ..runformat.header import CpuLimitsOverRun

OTHERS_NOTABLE = 0.25      # cores other programs took from which a sentence says so


def figure(cores: float) -> str:
    """A number of cores as a limit reads: ``2``, or ``1.5`` where a quota allows a part of one."""
    return f"{cores:.0f}" if abs(cores - round(cores)) < 0.05 else f"{cores:.1f}"


def counted(number: float, noun: str) -> str:
    """``1 thread``, ``4 threads``, ``0.5 cores``, ``1 core``: the noun agrees with the figure."""
    shown = figure(number)
    return f"{shown} {noun}{'s' * (shown != '1')}"


def amount(cores: float) -> str:
    """A measured number of cores (what was busy, taken or waited): one decimal, ``1.6``."""
    return f"{cores:.1f}"


@dataclass(frozen=True)
class Cores:
    """The cores a sentence counts against: the machine's and, where fewer, those the workload
    may use. ``allowed`` is None where it may use every core (a limit of all of them is none)."""

    machine: int
    allowed: float | None = None

    def __post_init__(self) -> None:
        if self.allowed is not None and self.allowed >= self.machine - 1e-6:
            object.__setattr__(self, "allowed", None)

    @classmethod
    def of_figures(cls, figures: Mapping[str, Any]) -> Cores:
        """From a verdict's figures (``cores``, ``allowed_cores``)."""
        machine = figures.get("cores")
        allowed = figures.get("allowed_cores")
        return cls(int(machine) if isinstance(machine, (int, float)) and machine >= 1 else 1,
                   float(allowed) if isinstance(allowed, (int, float)) else None)

    @property
    def limited(self) -> bool:
        return self.allowed is not None

    @property
    def limit(self) -> float:
        """The cores the workload may use: those allowed, else the machine's."""
        return self.allowed if self.allowed is not None else float(self.machine)

    def of(self) -> str:
        """What the workload's cores are counted of: ``2 cores``, ``0.5 cores allowed of 2``."""
        if self.allowed is None:
            return counted(self.machine, "core")
        return f"{counted(self.allowed, 'core')} allowed of {self.machine}"

    def machine_of(self) -> str:
        """What other programs' cores are counted of: ``2 cores``, or where the workload may use
        fewer, ``the machine's 2 cores`` (they are not the allowed ones)."""
        return counted(self.machine, "core") if self.allowed is None else f"the machine's {counted(self.machine, 'core')}"

    def used(self, cores: float) -> str:
        """``1.6 of 2 cores``, ``0.4 of 0.5 cores allowed of 2``: what the workload kept busy."""
        return f"{amount(cores)} of {self.of()}"

    def busy(self, cores: float) -> str:
        """``2.0 of 2 cores``, ``2.0 of the machine's 2 cores``: what was busy on the whole machine."""
        return f"{amount(cores)} of {self.machine_of()}"

    def others(self, cores: float) -> str:
        """``other programs took 1.6 of the machine's 2 cores``."""
        return f"other programs took {self.busy(cores)}"

    def obtainable(self, others: float | None) -> float:
        """The cores the workload can get: those it may use, and no more than the machine's less
        what other programs took."""
        return max(0.0, min(self.limit, self.machine - (others or 0.0)))

    def can_get(self, others: float | None) -> str:
        """``it can get 0.4 of 0.5 cores allowed of 2 (other programs took 1.6 of the machine's 2
        cores)``; the other programs left out where they took too little to matter."""
        text = f"it can get {amount(self.obtainable(others))} of {self.of()}"
        if others is not None and others >= OTHERS_NOTABLE:
            text += f" ({self.others(others)})"
        return text


def limits_text(limits: CpuLimitsOverRun | None, end: float) -> str | None:
    """The cores the workload could use over a run that lasted until END, for a header line:
    ``1 core allowed of 2 (affinity)`` where that held throughout; where it changed, the limit
    as it held over the run, each reading for its time, and the readings in order:
    ``1.9 cores allowed of 2 over the run, on average (2 cores from 0.0 s; 1 core allowed of 2
    (affinity) from 9.0 s)``. None where nothing limited it."""
    if limits is None:
        return None
    if not limits.changes:
        return limits.initial.text() if limits.initial.limited else None
    if not any(reading.limits.limited for reading in limits.readings):
        return None
    machine = limits.initial.host_cores
    held = Cores(machine, time_weighted(limits, 0.0, end))
    steps = "; ".join(f"{_reading_text(r.limits)} from {r.t:.1f} s" for r in limits.readings)
    return f"{held.of()} over the run, on average ({steps})"


def _reading_text(limits: CpuLimits) -> str:
    """``2 cores``, ``1 core allowed of 2 (affinity)``."""
    by = f" ({', '.join(limits.bound_by)})" if limits.bound_by else ""
    return Cores(limits.host_cores, limits.allowed).of() + by


def time_weighted(limits: CpuLimitsOverRun, start: float, end: float) -> float:
    """The allowed cores from START to END, each reading counted for the time it held."""
    if end <= start:
        return limits.at(start).allowed
    total = 0.0
    for i, reading in enumerate(limits.readings):
        since = start if i == 0 else max(start, reading.t)
        until = end if i + 1 == len(limits.readings) else min(end, limits.readings[i + 1].t)
        if until > since:
            total += reading.limits.allowed * (until - since)
    return total / (end - start)
