"""What the dashboard draws, kept as growing NumPy arrays fed record by record.

The live view receives a few records per poll; appending them to preallocated arrays keeps a
poll O(new records), and the charts slice the arrays by time with ``searchsorted``. A finished
run is taken in one block: its older part folded to a bounded number of rows by NumPy before
anything is copied, so a day costs what an hour does. Phases, epochs and the verdict come from
``analysis`` (the same figures as ``devicewatch report``) and are recomputed only when events
arrived, the verdict at most every few seconds; what the charts draw behind the data (phase
spans, epoch lines, markers) is kept as arrays and rebuilt only when events arrive, the open
phases stretched to now on every poll.

Each array a view reads is a snapshot: columns grow by writing past the end of what was read
and fold into new arrays, so a chart holding last tick's arrays still draws last tick's data.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
import time
from bisect import bisect_right, insort
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import analysis, events
from ..analysis import advice as advice_
from ..phase_kinds import KINDS
from ..runformat.downsample import minmax_rows, minmax_rows_bytes
from ..runformat.eventlog import Events
from ..runformat.percent import MISSING_PERCENT, percent_to_float
from ..runformat.records import Epoch, LogLine, RecordError, RunInfo
from ..runformat.runfile import Run
from ..safe_text import inert, inert_keeping_colours


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
        """Hold exactly ``values`` (after folding the history), in a new array: what a view
        read before stays as it was."""
        grown = np.full((max(len(values) * 2, 1),) + self._data.shape[1:], np.nan)
        grown[: len(values)] = values
        self._data = grown
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


def _fold_factor(rows: int, window: int, limit: int) -> int:
    return max(2, math.ceil(2 * (rows - window) / max(limit - window, 2)))


def _held(rows: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Readings taken now and then (a row of NaN where none was taken), each gap holding the
    reading before it (``last`` before the first)."""
    have = ~np.isnan(rows).all(axis=1)
    index = np.maximum.accumulate(np.where(have, np.arange(len(rows)), -1)) if len(rows) else np.zeros(0, int)
    return np.where(index[:, None] >= 0, rows[np.maximum(index, 0)], last[None, :])


def _bounded(t: np.ndarray, columns: list[np.ndarray], window: int, limit: int
             ) -> tuple[np.ndarray, list[np.ndarray]]:
    """A block of rows too large to keep (a finished run taken at once): the newest ``window``
    rows as they are, the older ones folded by NumPy (min, max pairs) into at most
    ``limit - window`` rows, before any of it is copied into the model's columns."""
    if len(t) <= limit:
        return t, columns
    old = len(t) - window
    folded_t, folded = minmax_rows(t[:old], [c[:old] for c in columns], _fold_factor(len(t), window, limit))
    return (np.concatenate([folded_t, t[old:]]),
            [np.concatenate([f, c[old:]]) for f, c in zip(folded, columns)])


def _bounded_percent(percent: np.ndarray, window: int, limit: int) -> np.ndarray:
    """``_bounded``'s per-core floats, folded from the bytes they are stored as: only the rows
    kept are made floats (a day of 64 cores would be 442 MB of them)."""
    if len(percent) > limit:
        old = len(percent) - window
        folded = minmax_rows_bytes(percent[:old], _fold_factor(len(percent), window, limit), MISSING_PERCENT)
        percent = np.concatenate([folded, percent[old:]])
    return percent_to_float(percent)


_RANK_LANE = re.compile(r"rank (\d+)(?:\s|$)")


def ordered_lanes(lanes: list[str]) -> list[str]:
    """Lanes as drawn: a merged run's ``rank N …`` lanes in rank order (``analysis.lanes`` gives
    first appearance, which is whichever rank began first), every other lane where it was."""
    def key(item: tuple[int, str]) -> tuple[int, int, int]:
        index, lane = item
        match = _RANK_LANE.match(lane)
        return (1, int(match.group(1)), index) if match else (0, 0, index)

    ranked = sorted(enumerate(lanes), key=key)
    return [lane for _, lane in ranked]


@dataclass(frozen=True)
class PhaseArrays:
    """Every phase as arrays, in the model's phase order: what the charts draw behind the data."""

    starts: np.ndarray
    ends: np.ndarray
    kinds: np.ndarray          # each phase's kind, as its number in KINDS
    names: tuple[str, ...]     # as a lane shows it: ``train 3``
    lanes: np.ndarray          # index into the model's ``lanes``

    def where(self, keep: np.ndarray) -> PhaseArrays:
        return self.taking(np.flatnonzero(keep))

    def taking(self, index: np.ndarray, names: tuple[str, ...] | None = None) -> PhaseArrays:
        """The phases at ``index`` (``names``: theirs, when known)."""
        if names is None:
            names = _picked(self.names, index)
        return PhaseArrays(self.starts[index], self.ends[index], self.kinds[index], names, self.lanes[index])


def _picked(items: tuple[str, ...], index: np.ndarray) -> tuple[str, ...]:
    """``tuple(items[i] for i in index)``, picked in C (a long run's thousands of phases)."""
    if len(index) == 0:
        return ()
    picked = operator.itemgetter(*index.tolist())(items)
    return picked if len(index) > 1 else (picked,)


# Versions are drawn from one counter for every model, so that two models (another node of a
# merged run, the other side of a comparison) never show the same version of different data.
_versions = itertools.count(1)


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

    VERDICT_EVERY = 3.0  # seconds between verdict recomputations while live, at the least
    VERDICT_SHARE = 0.01  # of one core the verdict may take: a dearer one (a long run) waits longer
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
        # Each core's clock (MHz) where the run recorded it, held between its readings (once a
        # second); None where it was not recorded.
        self.cpu_mhz: Column | None = None
        self.cpu_total = Column()
        self.proc_cpu = Column()
        self.proc_rss = Column()
        self.proc_wait = Column()
        self.proc_count = Column()
        self.recorder_cpu = Column()
        self.watcher_cpu = Column()
        self.gpus: list[GpuTrack] = []
        self.version = next(_versions)           # changes whenever anything drawable changed
        self.samples_version = next(_versions)   # changes whenever the sample columns changed
        self.events_version = 0
        self.phases_version = next(_versions)    # changes whenever phases, epochs, lanes or markers did
        self.epochs_version = next(_versions)    # changes whenever the epoch rows did
        self.phases: list[analysis.Phase] = []
        self.epoch_rows: list[analysis.EpochRow] = []
        self.epochs_done = 0        # epochs none of whose phases is still open
        self.lanes: list[str] = []  # in drawing order (``ordered_lanes``)
        self.phase_arrays = PhaseArrays(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), (), np.zeros(0, np.int64))
        self.boundaries = np.zeros(0)   # epoch starts after the first: the epoch lines
        # The first lane's phases: drawn by version, picked again only when the phases were paired
        # anew (the open ones stretched to now keep the same lanes array).
        self._main_lane: tuple[int, PhaseArrays] = (-1, self.phase_arrays)
        self._main_lane_index: tuple[np.ndarray | None, np.ndarray, tuple[str, ...]] = (None, np.zeros(0, int), ())
        self.run_info: dict[str, Any] = {}
        self.markers: list[tuple[float, str]] = []
        self.local_markers: list[tuple[float, str]] = []  # dropped here, not (yet) in the file
        self.open_phases = events.PhaseTracker()
        self.verdict: analysis.Verdict | None = None
        self.advice: list[advice_.Advice] = []   # beside the verdict, worked out with it
        self._verdict_at = -1e9
        self._verdict_wait = self.VERDICT_EVERY
        self._held_since: float | None = None   # run time from which the label shown was held against its figures
        self.cpu_clock: Callable[[], float] = time.thread_time   # what a verdict's cost is measured by
        self._verdict_version = -1
        self._phases_version = -1
        self._open: list[int] = []  # indices of phases not yet ended
        self._ends = np.zeros(0)    # the phases' ends as paired (the open ones stretched on top)
        # Phases paired as their events arrive, by the pairer ``analysis.phases`` feeds a whole run.
        self._pairer = analysis.PhasePairer()
        # Epoch rows by epoch, each with what it was computed from (its phases, its epoch events
        # so far): only an epoch whose phases or metrics changed is computed again.
        self._rows: dict[int, tuple[tuple[Any, ...], analysis.EpochRow]] = {}
        self._epoch_events: dict[int, list[Epoch]] = {}
        self._epochs_with_events: set[int] = set()   # epochs given epoch events since the last pairing
        # The pairer's ended phases as taken so far (``refresh_phases``): that list only grows at
        # its end while ``_ended_of`` stays, so each ended phase is looked at once.
        self._ended_of: tuple[int, int] | None = None
        self._open_epochs: set[int] = set()   # epochs with a phase open at the last pairing
        self._forget_ended()
        self._names: dict[tuple[str, int | None], str] = {}
        self.logs_taken = 0
        self._samples_seen = 0   # rows of run.samples already taken (counted over the whole run)
        self.ingest(run.events)
        self._take_samples()

    # -- feeding -----------------------------------------------------------------------------

    def ingest(self, records: Any) -> None:
        """Take new records (as ``Follower.poll`` returns them); the run object is already updated."""
        changed = self._take_samples()
        events = False
        for record in records:
            kind = record.get("type")
            if kind == "event":
                self._event(record)
                events = True
            elif kind in ("end", "gpu_status", "log", "notice"):   # a notice: the workload stopped, or ran again
                changed = True
        if events:
            self.events_version += 1
        if changed or events:
            self.version = next(_versions)

    def _take_samples(self) -> bool:
        """Append the sample rows added to the run's columns since the last call."""
        c = self.machine.samples
        first = max(self._samples_seen - c.dropped, 0)
        if c.total <= self._samples_seen or first >= len(c):
            return False
        self._samples_seen = c.total
        self.samples_version = next(_versions)
        rows = slice(first, len(c))
        t = c.t[rows]
        # The per-core readings as stored bytes: for the width of a first block, or to fold a
        # large one (a poll's few rows are taken as floats).
        percent = c.core_percent() if self.cpu is None or len(t) > self.LIMIT else None
        if self.cpu is None:
            self.cores = (percent if percent is not None else c.cpu).shape[1] or self.cores
            self.cpu = Column(max(self.cores, 1))
        cpu_width = self.cpu.values.shape[1]
        if percent is not None and len(t) > self.LIMIT and percent.shape[1] == cpu_width:
            cpu = None  # folded from its bytes below
        else:
            cpu = c.cpu[rows]
            if cpu.shape[1] != cpu_width:
                cpu = np.full((len(t), cpu_width), np.nan)
        others = [c.cpu_total[rows], c.proc("cpu")[rows], c.proc("rss")[rows], c.proc("count")[rows],
                  c.recorder_cpu[rows], c.watcher_cpu[rows], c.proc("cpu_wait")[rows]]
        host_t, host_columns = _bounded(t, others if cpu is None else [cpu, *others], self.WINDOW, self.LIMIT)
        if cpu is None and percent is not None:
            host_columns.insert(0, _bounded_percent(percent[rows], self.WINDOW, self.LIMIT))
        clocks = c.widths["clock_cores"]
        if clocks and self.cpu_mhz is None:
            self.cpu_mhz = Column(clocks)
            self.cpu_mhz.extend(np.full((self.t.size, clocks), np.nan))
        if self.cpu_mhz is not None:
            width = self.cpu_mhz.values.shape[1]
            mhz = c.cpu_mhz[rows]
            if mhz.shape[1] != width:
                mhz = np.full((len(t), width), np.nan)
            before = self.cpu_mhz.values[-1] if self.cpu_mhz.size else np.full(width, np.nan)
            self.cpu_mhz.extend(_bounded(t, [_held(mhz, before)], self.WINDOW, self.LIMIT)[1][0])
        self.t.extend(host_t)
        for column, values in zip([self.cpu, self.cpu_total, self.proc_cpu, self.proc_rss, self.proc_count,
                                   self.recorder_cpu, self.watcher_cpu, self.proc_wait], host_columns):
            column.extend(values)
        present = c.gpu_present[rows]
        gpus = c.gpus if present.any() else len(self.gpus)
        while len(self.gpus) < gpus:
            self.gpus.append(GpuTrack(analysis.gpu_label(self.machine, len(self.gpus)),
                                      Column(), Column(), Column(), Column(), Column()))
        if present.any():
            # The rows with GPU readings taken once, not once per GPU (a day has 864,000 of them).
            mem, power, totals, sm_active = (c.gpu(name)[rows][present]
                                             for name in ("mem_used", "power_w", "mem_total", "sm_active"))
            since = float(t[0]) - 1e-9
            gpu_t = t[present]
            for g, track in enumerate(self.gpus):
                util_t, util = c.util(g)
                new = util_t > max(since, float(track.util_t.values[-1]) if track.util_t.size else -np.inf)
                util_t, (util,) = _bounded(util_t[new], [util[new]], self.WINDOW, self.LIMIT)
                track.util_t.extend(util_t)
                track.util.extend(util)
                device_t, device = _bounded(gpu_t, [mem[:, g], power[:, g], sm_active[:, g]],
                                            self.WINDOW, self.LIMIT)
                track.t.extend(device_t)
                for column, values in zip([track.mem_used, track.power, track.sm_active], device):
                    column.extend(values)
                known = totals[:, g]
                known = known[~np.isnan(known)]
                if known.size:
                    track.mem_total = float(known[-1])
                _fold(track.util_t, [track.util], self.WINDOW, self.LIMIT)
                _fold(track.t, [track.mem_used, track.power, track.sm_active], self.WINDOW, self.LIMIT)
        _fold(self.t, [self.cpu, self.cpu_total, self.proc_cpu, self.proc_rss, self.proc_count,
                       self.recorder_cpu, self.watcher_cpu, self.proc_wait,
                       *([self.cpu_mhz] if self.cpu_mhz is not None else [])],
              self.WINDOW, self.LIMIT)
        return True

    def _event(self, e: dict[str, Any]) -> None:
        kind = e.get("kind")
        if kind == events.RUN_INFO:
            try:
                self.run_info.update(RunInfo.parse(e).info)
            except RecordError:   # counted bad as the run read it
                pass
        elif kind == events.MARKER:
            self.markers.append((float(e.get("t", 0.0)), str(e.get("label", ""))))
        elif kind == events.EPOCH:
            try:
                epoch = Epoch.parse(e)
            except RecordError:   # counted bad as the run read it
                pass
            else:
                self._epoch_events.setdefault(epoch.epoch, []).append(epoch)
                self._epochs_with_events.add(epoch.epoch)
        self.open_phases.take(e)
        self._pairer.take(e)

    def add_marker(self, label: str) -> float:
        """A marker dropped on the screen at the newest time; returns that time."""
        at = self.latest
        self.local_markers.append((at, label))
        self.version = next(_versions)
        self.phases_version = next(_versions)
        return at

    @property
    def current_phase(self) -> str | None:
        return self.open_phases.current

    def take_logs(self) -> list[str]:
        """Log lines not yet shown, their colours kept (SGR), anything else a terminal acts on inert."""
        new = self.run.logs[self.logs_taken:]
        self.logs_taken = len(self.run.logs)
        return [_shown_line(r) for r in new]

    def open_line(self) -> str | None:
        """The output's line not yet ended, as it stands (a bar being redrawn, ``loading...``)."""
        record = self.run.open_line
        return None if record is None else _shown_line(record)

    def workload_state(self) -> str | None:
        """``waiting for input`` or ``stopped`` while the recorder says so, else None."""
        if self.run.end is not None:
            return None
        for notice in reversed(self.run.notices):
            state = notice.state
            if state is not None:
                return None if state == "running" else inert(state)
        return None

    # -- derived -----------------------------------------------------------------------------

    def refresh_phases(self) -> None:
        """Pair the events again when new ones came; otherwise only stretch the open phases to
        now (a poll must not cost more after a thousand epochs than after one)."""
        if self._phases_version == self.events_version:
            if not self._open:
                return
            end = self.run.duration
            stretched = False
            for i in self._open:
                p = self.phases[i]
                if p.end < end:
                    self.phases[i] = replace(p, end=end)
                    stretched = True
            if stretched:
                ends = self._ends.copy()
                ends[self._open] = [self.phases[i].end for i in self._open]
                self.phase_arrays = replace(self.phase_arrays, ends=ends)
                self.phases_version = next(_versions)
            return
        self._phases_version = self.events_version
        ended, of = self._pairer.ended()  # the same lists analysis.phases merges
        touched = set(self._epochs_with_events)   # epochs whose row may change
        self._epochs_with_events = set()
        if of != self._ended_of or len(ended) < self._ended_count:   # sorted again: taken anew
            self._forget_ended()
            self._ended_of = of
            touched |= self._rows.keys()
        touched |= self._take_ended(ended[self._ended_count:])
        # The open phases go among the ended ones where a stable sort of both would put them.
        still_open = sorted(self._pairer.still_open(self.run.duration), key=analysis.phase_order)
        positions = [bisect_right(self._ended_keys, analysis.phase_order(p)) for p in still_open]
        phases = list(ended)
        names = list(self._ended_names)
        for k, (at, p) in enumerate(zip(positions, still_open)):
            phases.insert(at + k, p)
            names.insert(at + k, self._name(p))
        self.phases = phases
        self._open = [at + k for k, at in enumerate(positions)]
        open_epochs = {p.epoch for p in still_open if p.epoch is not None}
        touched |= open_epochs | self._open_epochs
        self._open_epochs = open_epochs
        if self._refresh_epochs(touched, still_open):
            self.epoch_rows = [self._rows[epoch][1] for epoch in self._epochs if epoch in self._rows]
            self.boundaries = np.array(sorted({r.start for r in self.epoch_rows[1:]}), float)
            self.epochs_version = next(_versions)
        self.epochs_done = len(self.epoch_rows) - sum(1 for epoch in open_epochs if epoch in self._rows)
        self.lanes = self._lanes(positions, still_open)
        lane_index = {lane: i for i, lane in enumerate(self.lanes)}
        by_code = np.array([lane_index[lane] for lane in self._lane_codes], np.int64)
        # The open phases' values put among the ended ones' (``np.insert`` of each, one placement for all).
        kept = np.ones(len(self._ended_ends) + len(still_open), bool)
        opened = np.asarray(positions, np.int64) + np.arange(len(still_open))
        kept[opened] = False

        def placed(ended_values: np.ndarray, open_values: list[Any]) -> np.ndarray:
            out = np.empty(len(kept), ended_values.dtype)
            out[kept] = ended_values
            out[opened] = open_values
            return out

        self._ends = placed(self._ended_ends, [p.end for p in still_open])
        self.phase_arrays = PhaseArrays(
            placed(self._ended_starts, [p.start for p in still_open]), self._ends,
            placed(self._ended_kinds, [KINDS.index(p.kind) for p in still_open]), tuple(names),
            by_code[placed(self._ended_lanes, [self._lane_codes[p.lane] for p in still_open])])
        self.phases_version = next(_versions)

    def _forget_ended(self) -> None:
        """No ended phase taken yet (``_take_ended``)."""
        self._ended_count = 0
        self._ended_keys: list[tuple[float, str]] = []   # each one's ``phase_order``
        self._ended_starts = np.zeros(0)
        self._ended_ends = np.zeros(0)
        self._ended_kinds = np.zeros(0, np.int64)
        self._ended_names: list[str] = []
        self._ended_lanes = np.zeros(0, np.int64)   # each one's lane as its code
        self._lane_codes: dict[str, int] = {}       # lanes in the order first seen
        self._lane_first: dict[str, int] = {}       # each lane's first ended phase
        self._ended_by_epoch: dict[int, list[analysis.Phase]] = {}
        self._epochs: list[int] = []                # epochs with phases, in order
        self._open_epochs = set()

    def _take_ended(self, new: list[analysis.Phase]) -> set[int]:
        """Take the pairer's newly ended phases (after those taken before); their epochs."""
        epochs = set()
        for i, p in enumerate(new, start=self._ended_count):
            self._ended_keys.append(analysis.phase_order(p))
            self._ended_names.append(self._name(p))
            self._lane_codes.setdefault(p.lane, len(self._lane_codes))
            self._lane_first.setdefault(p.lane, i)
            if p.epoch is not None:
                self._ended_by_epoch.setdefault(p.epoch, []).append(p)
                epochs.add(p.epoch)
        if new:
            self._ended_count += len(new)
            self._ended_starts = np.concatenate([self._ended_starts, [p.start for p in new]])
            self._ended_ends = np.concatenate([self._ended_ends, [p.end for p in new]])
            self._ended_kinds = np.concatenate([self._ended_kinds, [KINDS.index(p.kind) for p in new]])
            self._ended_lanes = np.concatenate([self._ended_lanes, [self._lane_codes[p.lane] for p in new]])
        return epochs

    def _lanes(self, positions: list[int], still_open: list[analysis.Phase]) -> list[str]:
        """``ordered_lanes(analysis.lanes(self.phases))``: lanes by their first phase."""
        first = {lane: i + bisect_right(positions, i) for lane, i in self._lane_first.items()}
        for k, (at, p) in enumerate(zip(positions, still_open)):
            self._lane_codes.setdefault(p.lane, len(self._lane_codes))   # a lane only open phases run in
            if at + k < first.get(p.lane, math.inf):
                first[p.lane] = at + k
        return ordered_lanes(sorted(first, key=first.__getitem__))

    def _refresh_epochs(self, touched: set[int], still_open: list[analysis.Phase]) -> bool:
        """``analysis.epochs`` of the run, computed again only for the epochs whose phases or
        epoch events may have changed (``touched``; a poll must not cost more after a thousand
        epochs); whether any row changed."""
        open_by_epoch: dict[int, list[analysis.Phase]] = {}
        for p in still_open:
            if p.epoch is not None:
                open_by_epoch.setdefault(p.epoch, []).append(p)
        changed, members_of, any_change = [], {}, False
        for epoch in touched:
            members = self._ended_by_epoch.get(epoch, [])
            if epoch in open_by_epoch:   # in the order of the phases: a stable sort of both
                members = sorted(members + open_by_epoch[epoch], key=analysis.phase_order)
            at = bisect_right(self._epochs, epoch)
            listed = at > 0 and self._epochs[at - 1] == epoch
            if not members:   # no phase of it is left
                if listed:
                    del self._epochs[at - 1]
                    any_change = True
                any_change |= self._rows.pop(epoch, None) is not None
                continue
            if not listed:
                insort(self._epochs, epoch)
                any_change = True
            key = (tuple(members), len(self._epoch_events.get(epoch, ())))
            members_of[epoch] = (key, members)
            if epoch not in self._rows or self._rows[epoch][0] != key:
                changed.append(epoch)
        if changed:
            # The changed epochs' phases and epoch events, as a run of their own: analysis
            # reads the metrics from the run's events, and need not scan all of them.
            part = Run(self.run.path, self.run.header, self.run.samples,
                       Events([e.to_json() for epoch in changed for e in self._epoch_events.get(epoch, ())]))
            for row in analysis.epochs(part, [p for epoch in changed for p in members_of[epoch][1]]):
                before = self._rows.get(row.epoch)
                any_change |= before is None or before[1] != row
                self._rows[row.epoch] = (members_of[row.epoch][0], row)
        return any_change

    def _name(self, p: analysis.Phase) -> str:
        """A phase as a lane names it: ``train 3``."""
        key = (p.name, p.epoch)
        if key not in self._names:
            self._names[key] = p.name if p.epoch is None else f"{p.name} {p.epoch}"
        return self._names[key]

    def main_lane_phases(self) -> PhaseArrays:
        """The phases of the first lane: the shading behind the time charts."""
        if self._main_lane[0] != self.phases_version:
            arrays = self.phase_arrays
            lanes, index, names = self._main_lane_index
            if lanes is not arrays.lanes:
                index = np.flatnonzero(arrays.lanes == 0)
                names = _picked(arrays.names, index)
                self._main_lane_index = (arrays.lanes, index, names)
            self._main_lane = (self.phases_version, arrays.taking(index, names))
        return self._main_lane[1]

    def cores_text(self) -> str:
        """``2 cores``, or ``1 core allowed of 2`` where the workload may use fewer: as the limit
        held over the run so far, each reading for its time (a limit set for a second is not
        the run's)."""
        limits = self.machine.cpu_limits
        if limits is None:
            return analysis.Cores(self.cores).of()
        held = analysis.time_weighted(limits, 0.0, self.latest)
        return analysis.Cores(self.cores, held).of()

    def series(self) -> analysis.Series:
        """The model's columns (full rate recently, min/max-folded before) as the analysis takes them."""
        t = self.t.values
        cpu = self.cpu.values if self.cpu is not None else np.zeros((len(t), 0))
        none = np.zeros((len(t), 0))
        return analysis.Series(t, cpu, self.cpu_total.values, self.proc_cpu.values, self.proc_rss.values,
                               self.proc_wait.values, self.recorder_cpu.values, self.watcher_cpu.values,
                               [g.util_t.values for g in self.gpus], [g.util.values for g in self.gpus], none, none)

    def refresh_verdict(self, force: bool = False) -> bool:
        """Recompute the verdict if the data changed and enough time passed; True if it did."""
        now = self.clock()
        if self._verdict_version == self.version:
            return False
        # Until there is a verdict, each new sample may bring it: the header counts them as they come.
        early = self.verdict is None or self.verdict.label in ("too early", "too short")
        if not force and not early and now - self._verdict_at < self._verdict_wait:
            return False
        began = self.cpu_clock()
        self._verdict_at, self._verdict_version = now, self.version
        self.refresh_phases()
        # A merged run's node is judged against its own ranks' phases, which ``machine`` holds,
        # and its epochs from them; a run's own are the model's epoch rows, kept up to date.
        own = self.machine is self.run
        # While the run goes on, the label shown holds while the figures are within their
        # margins of it (a figure at a threshold does not flip it at every look), for
        # HOLD_SECONDS of the run at most; once it has ended, the verdict is the finished
        # run's, as ``report`` gives it.
        held = self.verdict.label if self.verdict is not None and self.run.end is None else None
        if held is not None and self._held_since is not None \
                and self.latest - self._held_since >= analysis.HOLD_SECONDS:
            held = None
        s = self.series()
        if own:
            all_phases, rows = self.phases, self.epoch_rows
        else:
            all_phases = analysis.phases(self.machine)
            rows = analysis.epochs(self.machine, all_phases)
        wait = analysis.data_wait(rows)
        self.verdict = analysis.verdict(self.machine, s, all_phases, rows, wait, held=held)
        if not self.verdict.held:
            self._held_since = None
        elif self._held_since is None:
            self._held_since = self.latest
        # What to try next rests on the figures the verdict was judged on: worked out with it,
        # from them (never again from the whole run), and never in a render.
        self.advice = advice_.shown(self.machine, s, all_phases, rows, wait, self.verdict)
        # Judged over the whole run, the verdict costs more as the run grows: it comes again
        # when it has cost at most VERDICT_SHARE of the time since (every 3 s while it is cheap).
        self._verdict_wait = max(self.VERDICT_EVERY, (self.cpu_clock() - began) / self.VERDICT_SHARE)
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
    def all_markers(self) -> list[tuple[float, str]]:
        return self.markers + [m for m in self.local_markers
                               if not any(abs(m[0] - f[0]) < 1.0 and m[1] == f[1] for f in self.markers)]

    @property
    def gpu_reason(self) -> str | None:
        """Why there is no GPU data: the latest gpu_status saying unavailable, or the header's."""
        for status in reversed(self.machine.gpu_status):
            if not status.available:
                return status.reason or "GPU sampling unavailable"
            return None
        return self.machine.header.host.gpu_reason or None


def _shown_line(record: LogLine) -> str:
    return ("! " if record.stream == "stderr" else "") + inert_keeping_colours(record.line)
