"""What the dashboard draws, kept as growing NumPy arrays fed record by record.

The live view receives a few records per poll; appending them to preallocated arrays keeps a
poll O(new records), and the charts slice the arrays by time with ``searchsorted``. Phases,
epochs and the verdict come from ``analysis`` (the same figures as ``devicewatch report``) and
are recomputed only when events arrived, the verdict at most every few seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import analysis, events
from ..runfile import Run
from ..safe_text import inert


class Column:
    """An append-only float array (1-D, or 2-D with a fixed row width) that doubles as it fills."""

    def __init__(self, width: int | None = None, capacity: int = 1024):
        self.width = width
        shape = (capacity,) if width is None else (capacity, width)
        self._data = np.full(shape, np.nan)
        self.size = 0

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


class RunModel:
    """The dashboard's view of one run: arrays for the charts, phases, epochs, verdict, logs."""

    VERDICT_EVERY = 3.0  # seconds between verdict recomputations while live

    def __init__(self, run: Run, clock: Any = time.monotonic):
        self.run = run
        self.clock = clock
        self.cores = run.cores or 0
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
        self.logs_taken = 0
        self.ingest(run.samples + run.events)

    # -- feeding -----------------------------------------------------------------------------

    def ingest(self, records: list[dict[str, Any]]) -> None:
        """Take new records (as ``Follower.poll`` returns them); the run object is already updated."""
        changed = events = False
        for record in records:
            kind = record.get("type")
            if kind == "sample":
                self._sample(record)
                changed = True
            elif kind == "event":
                self._event(record)
                events = True
            elif kind in ("end", "gpu_status", "log"):
                changed = True
        if events:
            self.events_version += 1
        if changed or events:
            self.version += 1

    def _sample(self, s: dict[str, Any]) -> None:
        row = s.get("cpu") or []
        if self.cpu is None:
            self.cores = len(row) or self.cores
            self.cpu = Column(max(self.cores, 1))
        self.t.append(_number(s.get("t")))
        self.cpu.append(row if len(row) == self.cpu.width else np.nan)
        self.cpu_total.append(_number(s.get("cpu_total")))
        proc = s.get("proc") if isinstance(s.get("proc"), dict) else {}
        self.proc_cpu.append(_number(proc.get("cpu")))
        self.proc_rss.append(_number(proc.get("rss")))
        self.proc_count.append(_number(proc.get("count")))
        self.recorder_cpu.append(_number(s.get("recorder_cpu")))
        self.watcher_cpu.append(_number(s.get("watcher_cpu")))
        gpus = s.get("gpus") or []
        while len(self.gpus) < len(gpus):
            self.gpus.append(GpuTrack(analysis.gpu_label(self.run, len(self.gpus)),
                                      Column(), Column(), Column(), Column(), Column()))
        for track, gpu in zip(self.gpus, gpus):
            buffered = gpu.get("util_samples")
            if buffered:
                for stamp, value in buffered:
                    if not track.util_t.size or stamp >= track.util_t.values[-1]:
                        track.util_t.append(_number(stamp))
                        track.util.append(_number(value))
            elif isinstance(gpu.get("util"), (int, float)):
                track.util_t.append(_number(s.get("t")))
                track.util.append(_number(gpu["util"]))
            track.t.append(_number(s.get("t")))
            track.mem_used.append(_number(gpu.get("mem_used")))
            track.power.append(_number(gpu.get("power_w")))
            if isinstance(gpu.get("mem_total"), (int, float)):
                track.mem_total = float(gpu["mem_total"])

    def _event(self, e: dict[str, Any]) -> None:
        kind = e.get("kind")
        if kind == events.RUN_INFO and isinstance(e.get("info"), dict):
            self.run_info.update(e["info"])
        elif kind == events.MARKER:
            self.markers.append((float(e.get("t", 0.0)), str(e.get("label", ""))))
        self.open_phases.take(e)

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
        if self._phases_version == self.events_version and not (self.phases and self.phases[-1].open):
            return
        self._phases_version = self.events_version
        self.phases = analysis.phases(self.run)
        self.epoch_rows = analysis.epochs(self.run, self.phases)
        self.lanes = analysis.lanes(self.phases)

    def refresh_verdict(self, force: bool = False) -> bool:
        """Recompute the verdict if the data changed and enough time passed; True if it did."""
        now = self.clock()
        if self._verdict_version == self.version:
            return False
        if not force and now - self._verdict_at < self.VERDICT_EVERY:
            return False
        self._verdict_at, self._verdict_version = now, self.version
        self.refresh_phases()
        self.verdict = analysis.verdict(self.run, all_phases=self.phases)
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
        for status in reversed(self.run.gpu_status):
            if not status.get("available"):
                return str(status.get("reason") or "GPU sampling unavailable")
            return None
        reason = self.run.header.get("host", {}).get("gpu_reason")
        return str(reason) if reason else None
