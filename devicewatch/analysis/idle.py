"""Idle time and dips: where a GPU (or the CPU without one) fell under DIP_THRESHOLD for at
least MIN_DIP_SECONDS, and which phase was running in the middle of each dip.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runformat.runfile import Run
from .pairing import NO_PHASE, Phase
from .utilization import Series
from .wording import gpu_label

DIP_THRESHOLD = 30.0   # % utilization under which a device counts as dipping


IDLE_THRESHOLD = 10.0  # % under which a GPU counts as idle


MIN_DIP_SECONDS = 0.2  # shorter excursions are noise, not a dip


@dataclass
class Dip:
    """A stretch below the dip threshold, with the phase(s) it fell in."""

    start: float
    end: float
    phase: str  # the phase(s) active in the middle of the dip

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class DeviceIdle:
    """One device's idle fraction, mean utilization and dips over the run."""

    device: str
    idle_fraction: float
    mean: float
    dips: list[Dip]

    @property
    def dip_seconds(self) -> float:
        return sum(d.duration for d in self.dips)


def dips(t: np.ndarray, values: np.ndarray, all_phases: list[Phase],
         threshold: float = DIP_THRESHOLD, min_seconds: float = MIN_DIP_SECONDS) -> list[Dip]:
    """Maximal stretches below ``threshold``, from the last sample above it to the next one
    (or to the last sample, when the run ends in a dip)."""
    spans = _dip_spans(t, values, threshold, min_seconds)
    names = _phases_at(all_phases, [(begin + end) / 2 for begin, end in spans])
    return [Dip(begin, end, name) for (begin, end), name in zip(spans, names)]


def _dip_spans(t: np.ndarray, values: np.ndarray, threshold: float, min_seconds: float) -> list[tuple[float, float]]:
    """The (start, end) of each dip of ``dips``, without the phases."""
    spans: list[tuple[float, float]] = []
    if len(t) < 2:
        return spans
    below = np.concatenate(([False], values < threshold, [False]))
    edges = np.flatnonzero(np.diff(below.astype(np.int8)))
    last = len(t) - 1
    for first, after in zip(edges[::2], edges[1::2]):  # run of low samples: first .. after-1
        begin_time = t[first - 1] if first > 0 else t[first]
        end_time = t[min(after, last)]
        if end_time - begin_time >= min_seconds:
            spans.append((float(begin_time), float(end_time)))
    return spans


def _phases_at(all_phases: list[Phase], times: list[float]) -> list[str]:
    """The phase names active at each time (``start <= time < end``), joined by "+" in name
    order, NO_PHASE where none: one sweep over the phases' starts and ends, not a scan of
    every phase per time (a day holds thousands of dips and thousands of phases)."""
    spans = [p for p in all_phases if p.end > p.start]  # the others are never active
    starts = sorted(spans, key=lambda p: p.start)
    ends = sorted(spans, key=lambda p: p.end)
    active: dict[str, int] = {}
    out: dict[int, str] = {}
    i = j = 0
    for k in sorted(range(len(times)), key=times.__getitem__):
        time = times[k]
        while i < len(starts) and starts[i].start <= time:
            active[starts[i].name] = active.get(starts[i].name, 0) + 1
            i += 1
        while j < len(ends) and ends[j].end <= time:
            active[ends[j].name] -= 1
            j += 1
        names = sorted(name for name, count in active.items() if count > 0)
        out[k] = "+".join(names) if names else NO_PHASE
    return [out[k] for k in range(len(times))]


def device_idle(run: Run, s: Series, all_phases: list[Phase], threshold: float = DIP_THRESHOLD) -> list[DeviceIdle]:
    """Per GPU: idle fraction, mean utilization and dips. With no GPU: the same for total CPU."""
    known = s.memo.get(("device_idle", threshold))
    if known is not None and known[0] is all_phases:
        return list(known[1])
    out = []
    devices: list[tuple[str, np.ndarray, np.ndarray]] = []
    for g in range(s.gpus):  # by index too: a machine's GPUs usually share one name
        name = gpu_label(run, g)
        devices.append((name if name == f"GPU {g}" else f"GPU {g} ({name})", s.gpu_t[g], s.gpu_util[g]))
    if not devices:
        devices.append(("CPU (all cores)", s.t, s.cpu_total))
    found = []  # per device: label, idle, mean, dips' spans; the phases of every dip found in one sweep
    for label, t, values in devices:
        valid = ~np.isnan(values)
        t, values = t[valid], values[valid]
        if values.size == 0:
            continue
        idle = float((values < IDLE_THRESHOLD).mean())
        found.append((label, idle, float(values.mean()), _dip_spans(t, values, threshold, MIN_DIP_SECONDS)))
    names = iter(_phases_at(all_phases, [(begin + end) / 2 for *_, spans in found for begin, end in spans]))
    for label, idle, mean, spans in found:
        out.append(DeviceIdle(label, round(idle, 4), round(mean, 1),
                              [Dip(begin, end, next(names)) for begin, end in spans]))
    s.memo[("device_idle", threshold)] = (all_phases, out)
    return list(out)
