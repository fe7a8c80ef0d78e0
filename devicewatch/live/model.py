"""What the dashboard draws, kept as growing NumPy arrays fed record by record.

The live view receives a few records per poll; appending them to preallocated arrays keeps a
poll O(new records), and the charts slice the arrays by time with ``searchsorted``. Phases,
epochs and the verdict come from ``analysis`` (the same figures as ``devicewatch report``) and
are recomputed only when events arrived, the verdict at most every few seconds.
"""

from __future__ import annotations

import time
from bisect import bisect_left, insort
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import analysis, events
from ..downsample import minmax_rows
from ..runfile import Run
from ..safe_text import inert


class Column:
    """An append-only float array (1-D, or 2-D with a fixed row width) that doubles as it fills."""

    def __init__(self, width: int | None = None, capacity: int = 13_000):
        self.width = width
        shape = (capacity,) if width is None else (capacity, width)
        self._data = np.full(shape, np.nan)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        needed = self.size + len(values)
        if needed > len(self._data):
            grown = np.full((max(needed, 2 * len(self._data)),) + self._data.shape[1:], np.nan)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size:needed] = values
        self.size = needed

    def replace(self, values: np.ndarray) -> None:
        """Hold exactly ``values`` (after folding the history)."""
        if len(values) > len(self._data):
            self._data = np.full((len(values) * 2,) + self._data.shape[1:], np.nan)
        self._data[: len(values)] = values
        self._data[len(values):self.size] = np.nan
        self.size = len(values)

    def append(self, value: Any) -> None:
        if self.size == len(self._data):
            grown = np.full((2 * len(self._data),) + self._data.shape[1:], np.nan)
            grown[: self.size] = self._data
            self._data = grown
        self._data[self.size] = value
        self.size += 1

    @property
    def values(self) -> np.ndarray:
        return self._data[: self.size]


def _fold(t: Column, others: list[Column], window: int, limit: int) -> None:
    """Keep the newest ``window`` rows at full rate; fold older ones two into one (min, max
    pairs) whenever there are more than ``limit`` rows, so a day costs what an hour does."""
    if t.size <= limit:
        return
    old = t.size - window
    folded_t, folded = minmax_rows(t.values[:old], [c.values[:old] for c in others], 4)
    t.replace(np.concatenate([folded_t, t.values[old:]]))
    for column, part in zip(others, folded):
        column.replace(np.concatenate([part, column.values[old:]]))


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else np.nan


@dataclass
class GpuTrack:
    name: str
    util_t: Column
    util: Column
    t: Column
    mem_used: Column
    power: Column
    mem_total: float = np.nan
    sm_active: Column = field(default_factory=Column)   # GPM, on the times of ``t``; NaN where none


class RunModel:
    """The dashboard's view of one run: arrays for the charts, phases, epochs, verdict, logs."""

    VERDICT_EVERY = 3.0  # seconds between verdict recomputations while live
    WINDOW = 6000        # newest samples kept at full rate (10 minutes at 10 Hz)
    LIMIT = 12000        # rows kept at most: the window plus the min/max-folded history

    def __init__(self, run: Run, clock: Any = time.monotonic, host: str | None = None):
        self.run = run
        self.clock = clock
        # A merged run's nodes sample different machines and their rows interleave in time:
        # the charts and the verdict show one node at a time (``host``, the first by default);
        # the phase strip shows every rank.
        hosts = run.host_labels
        self.host = (host if host in hosts else hosts[0]) if hosts else None
        self.machine = run.of_host(self.host) if self.host is not None else run
        self.cores = self.machine.cores or 0
        self.t = Column()
        self.cpu: Column | None = None
        self.cpu_total = Column()
        self.proc_cpu = Column()
        self.proc_rss = Column()
        self.proc_count = Column()
        self.recorder_cpu = Column()
        self.watcher_cpu = Column()
        self.gpus: list[GpuTrack] = []
        self.version = 0            # bumps whenever anything drawable changed
        self.events_version = 0
        self.phases: list[analysis.Phase] = []
        self.epoch_rows: list[analysis.EpochRow] = []
        self.lanes: list[str] = []
        self.run_info: dict[str, Any] = {}
        self.markers: list[tuple[float, str]] = []
        self.local_markers: list[tuple[float, str]] = []  # dropped here, not (yet) in the file
        self.open_phases = events.PhaseTracker()
        self.verdict: analysis.Verdict | None = None
        self._verdict_at = -1e9
        self._verdict_version = -1
        self._phases_version = -1
        self._open: list[int] = []  # indices of phases not yet ended
        # Phases paired as their events arrive (``analysis.phases`` pairs a whole run): per
        # source, [workload's own, parsed from stdout], the tracker and the ended phases in order.
        self._trackers = (events.PhaseTracker(), events.PhaseTracker())
        self._ended: tuple[list[analysis.Phase], list[analysis.Phase]] = ([], [])
        self._own_phases = False  # the workload sent phases itself: stdout epochs are ignored
        self.logs_taken = 0
        self._samples_seen = 0   # rows of run.samples already taken (counted over the whole run)
        self.ingest(run.events)
        self._take_samples()

    # -- feeding -----------------------------------------------------------------------------

    def ingest(self, records: list[dict[str, Any]]) -> None:
        """Take new records (as ``Follower.poll`` returns them); the run object is already updated."""
        changed = self._take_samples()
        events = False
        for record in records:
            kind = record.get("type")
            if kind == "event":
                self._event(record)
                events = True
            elif kind in ("end", "gpu_status", "log"):
                changed = True
        if events:
            self.events_version += 1
        if changed or events:
            self.version += 1

    def _take_samples(self) -> bool:
        """Append the sample rows added to the run's columns since the last call."""
        c = self.machine.samples
        first = max(self._samples_seen - c.dropped, 0)
        if c.total <= self._samples_seen or first >= len(c):
            return False
        self._samples_seen = c.total
        rows = slice(first, len(c))
        t = c.t[rows]
        if self.cpu is None:
            self.cores = c.cpu.shape[1] or self.cores
            self.cpu = Column(max(self.cores, 1))
        cpu = c.cpu[rows]
        if cpu.shape[1] == self.cpu.width:
            self.cpu.extend(cpu)
        else:
            self.cpu.extend(np.full((len(t), self.cpu.width), np.nan))
        self.t.extend(t)
        self.cpu_total.extend(c.cpu_total[rows])
        self.proc_cpu.extend(c.proc("cpu")[rows])
        self.proc_rss.extend(c.proc("rss")[rows])
        self.proc_count.extend(c.proc("count")[rows])
        self.recorder_cpu.extend(c.recorder_cpu[rows])
        self.watcher_cpu.extend(c.watcher_cpu[rows])
        present = c.gpu_present[rows]
        gpus = c.gpus if present.any() else len(self.gpus)
        while len(self.gpus) < gpus:
            self.gpus.append(GpuTrack(analysis.gpu_label(self.machine, len(self.gpus)),
                                      Column(), Column(), Column(), Column(), Column()))
        if present.any():
            mem, power, totals = c.gpu("mem_used")[rows], c.gpu("power_w")[rows], c.gpu("mem_total")[rows]
            sm_active = c.gpu("sm_active")[rows]
            since = float(t[0]) - 1e-9
            for g, track in enumerate(self.gpus):
                util_t, util = c.util(g)
                new = util_t > max(since, float(track.util_t.values[-1]) if track.util_t.size else -np.inf)
                track.util_t.extend(util_t[new])
                track.util.extend(util[new])
                track.t.extend(t[present])
                track.mem_used.extend(mem[present, g])
                track.power.extend(power[present, g])
                track.sm_active.extend(sm_active[present, g])
                known = totals[present, g]
                known = known[~np.isnan(known)]
                if known.size:
                    track.mem_total = float(known[-1])
                _fold(track.util_t, [track.util], self.WINDOW, self.LIMIT)
                _fold(track.t, [track.mem_used, track.power, track.sm_active], self.WINDOW, self.LIMIT)
        _fold(self.t, [self.cpu, self.cpu_total, self.proc_cpu, self.proc_rss, self.proc_count,
                       self.recorder_cpu, self.watcher_cpu], self.WINDOW, self.LIMIT)
        return True

    def _event(self, e: dict[str, Any]) -> None:
        kind = e.get("kind")
        if kind == events.RUN_INFO and isinstance(e.get("info"), dict):
            self.run_info.update(e["info"])
        elif kind == events.MARKER:
            self.markers.append((float(e.get("t", 0.0)), str(e.get("label", ""))))
        self.open_phases.take(e)
        if kind in (events.PHASE_BEGIN, events.PHASE_END):
            stdout = int(e.get("source") == "stdout")
            self._own_phases = self._own_phases or (kind == events.PHASE_BEGIN and not stdout)
            begin = self._trackers[stdout].take(e)
            if begin is not None:
                insort(self._ended[stdout], analysis.phase_from(begin, float(e["t"])), key=analysis.phase_order)

    @property
    def current_phase(self) -> str | None:
        return self.open_phases.current

    def take_logs(self) -> list[str]:
        """Log lines not yet shown."""
        new = self.run.logs[self.logs_taken:]
        self.logs_taken = len(self.run.logs)
        return [("! " if r.get("stream") == "stderr" else "") + inert(r.get("line", "")) for r in new]

    # -- derived -----------------------------------------------------------------------------

    def refresh_phases(self) -> None:
        """Pair the events again when new ones came; otherwise only stretch the open phases to
        now (a poll must not cost more after a thousand epochs than after one)."""
        if self._phases_version == self.events_version:
            if not self._open:
                return
            end = self.run.duration
            for i in self._open:
                p = self.phases[i]
                if p.end < end:
                    self.phases[i] = replace(p, end=end)
            return
        self._phases_version = self.events_version
        source = 0 if self._own_phases else 1
        end = self.run.duration
        phases = list(self._ended[source])  # the same list analysis.phases gives, paired once
        still_open = [analysis.phase_from(b, max(end, float(b["t"])), True)
                      for b in self._trackers[source].open_phases()]
        for p in still_open:
            insort(phases, p, key=analysis.phase_order)
        self._open = []
        for p in still_open:
            i = bisect_left(phases, analysis.phase_order(p), key=analysis.phase_order)
            while phases[i] is not p:
                i += 1
            self._open.append(i)
        self.phases = phases
        self.epoch_rows = analysis.epochs(self.run, self.phases)
        self.lanes = analysis.lanes(self.phases)

    def series(self) -> analysis.Series:
        """The model's columns (full rate recently, min/max-folded before) as the analysis takes them."""
        t = self.t.values
        cpu = self.cpu.values if self.cpu is not None else np.zeros((len(t), 0))
        none = np.zeros((len(t), 0))
        return analysis.Series(t, cpu, self.cpu_total.values, self.proc_cpu.values, self.proc_rss.values,
                               self.recorder_cpu.values, self.watcher_cpu.values,
                               [g.util_t.values for g in self.gpus], [g.util.values for g in self.gpus], none, none)

    def refresh_verdict(self, force: bool = False) -> bool:
        """Recompute the verdict if the data changed and enough time passed; True if it did."""
        now = self.clock()
        if self._verdict_version == self.version:
            return False
        if not force and now - self._verdict_at < self.VERDICT_EVERY:
            return False
        self._verdict_at, self._verdict_version = now, self.version
        self.refresh_phases()
        # A merged run's node is judged against its own ranks' phases, which ``machine`` holds.
        self.verdict = analysis.verdict(self.machine, self.series(),
                                        all_phases=self.phases if self.machine is self.run else None)
        return True

    @property
    def latest(self) -> float:
        last = self.t.values[-1] if self.t.size else 0.0
        return max(float(last), self.run.duration)

    @property
    def epochs_total(self) -> int | None:
        value = self.run_info.get("epochs")
        return value if isinstance(value, int) and value > 0 else None

    @property
    def epochs_done(self) -> int:
        return sum(1 for row in self.epoch_rows if not any(
            p.open for p in self.phases if p.epoch == row.epoch))

    @property
    def all_markers(self) -> list[tuple[float, str]]:
        return self.markers + [m for m in self.local_markers
                               if not any(abs(m[0] - f[0]) < 1.0 and m[1] == f[1] for f in self.markers)]

    @property
    def gpu_reason(self) -> str | None:
        """Why there is no GPU data: the latest gpu_status saying unavailable, or the header's."""
        for status in reversed(self.machine.gpu_status):
            if not status.get("available"):
                return str(status.get("reason") or "GPU sampling unavailable")
            return None
        reason = self.machine.header.get("host", {}).get("gpu_reason")
        return str(reason) if reason else None
