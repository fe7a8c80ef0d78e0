"""A job's nodes followed live as one run: every node's run file in a folder (or a list of files).

Each node's recorder writes its own file (``--record runs/%j/%h.jsonl``); this follows all of
them at once, each through the one reader (a finished file's columnar form; a growing one's
journal from its tail, ``runformat.tail``: its events whole, of its samples only the newest, as
only a node's latest reading is drawn), and keeps what the job view draws:

- each node: its machine (cores, GPUs) and their latest readings, its ranks, how it ended, when
  it joined, and since when its file has not grown (a node whose recorder was killed or whose
  machine went away);
- each rank's phases on one time axis: a node's ``t`` mapped onto the wall clock by its clock
  pairs as ``merge`` maps it (the start pair at once, the rate refined when the end pair comes);
- each epoch's straggler as soon as every rank has left that epoch, judged by the one rule
  ``report`` judges a merged run by (``analysis.stragglers``: the rank whose work, not its wait
  at a barrier, ended last; a wait under the noise floor is no finding), with the others' waits
  and the phase in which it spent the most time beyond the other ranks.

Textual-free, like the rest of ``live``: the job screen draws from it.
"""

from __future__ import annotations

import os
from collections import deque
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import events
from ..analysis.stragglers import EpochStragglers, RankPhase, judge
from ..errors import RunFileError
from ..job_files import job_folder
from ..merge import MAX_RATE_ERROR, SAME_BOOT
from ..phase_kinds import kind_of
from ..runformat.header import Header
from ..runformat.percent import MISSING_PERCENT
from ..runformat.runfile import Run, load_columns, read_header
from ..runformat.tail import TailFollower

# A node whose file has not grown for this long, and has no end record, is silent: at the
# default 10 samples/s a recorder writes every 0.1 s, so 5 s is fifty samples missing.
SILENT_AFTER = 5.0
# Samples a node keeps in its run object between polls: only its latest reading is drawn.
KEEP = 16
# Phases kept per rank for the lanes (each epoch's are kept apart for its straggler).
PHASES_KEPT = 4096


@dataclass
class Phase:
    name: str
    epoch: int | None
    begin: float          # the node's own t
    end: float | None     # None while open

    @property
    def kind(self) -> str:
        return kind_of(self.name)


@dataclass
class Rank:
    rank: int
    node: NodeFeed
    phases: deque[Phase] = field(default_factory=lambda: deque(maxlen=PHASES_KEPT))
    latest_epoch: int | None = None     # the highest epoch of a phase begun
    by_epoch: dict[int, list[Phase]] = field(default_factory=dict)   # every phase of each epoch
    # Its phases paired by the one rule ``analysis.phases`` pairs a run's by (``events.PhaseTracker``:
    # by pid, lane, name and epoch, an end closing the latest such begin), each open phase by its
    # begin event, which the tracker holds until its end comes.
    tracker: events.PhaseTracker = field(default_factory=events.PhaseTracker)
    open: dict[int, Phase] = field(default_factory=dict)

    def take(self, event: dict[str, Any]) -> None:
        epoch = event.get("epoch") if type(event.get("epoch")) is int else None
        begun = self.tracker.take(event)
        if event.get("kind") == events.PHASE_BEGIN:
            phase = Phase(str(event.get("name")), epoch, float(event["t"]), None)
            self.open[id(event)] = phase
            self.phases.append(phase)
            if epoch is not None:
                self.by_epoch.setdefault(epoch, []).append(phase)
            if epoch is not None and (self.latest_epoch is None or epoch > self.latest_epoch):
                self.latest_epoch = epoch
        elif begun is not None:
            self.open.pop(id(begun)).end = float(event["t"])

    def open_in(self, epoch: int) -> bool:
        return any(p.epoch == epoch for p in self.open.values())

    def worked(self, epoch: int, origin: float) -> list[RankPhase]:
        """This rank's ended phases of EPOCH on the job's axis: its node's t on the wall
        clock, less ORIGIN."""
        unix = self.node.unix
        return [RankPhase(self.rank, epoch, p.name, unix(p.begin) - origin, unix(p.end) - origin)
                for p in self.by_epoch.get(epoch, ()) if p.end is not None]


class NodeFeed:
    """One node's run file, followed."""

    def __init__(self, path: Path, silent_after: float = SILENT_AFTER):
        self.path = path
        self.silent_after = silent_after
        self.follower: TailFollower | None = None
        self.run: Run | None = None
        self.error: str | None = None
        self.ranks: dict[int, Rank] = {}
        self.group_rank: int | None = None
        self.world_size: int | None = None
        self.cpu: np.ndarray = np.zeros(0)      # the latest reading of each core, %
        self.gpu: np.ndarray = np.zeros(0)      # of each GPU, %
        self.grown_at: float | None = None      # the wall clock of the file's last growth (its mtime)
        self.seen_at: float | None = None       # the wall clock when it was last looked at
        self._size = -1
        finished = load_columns(path)
        if finished is not None and finished.finished:
            self.run = finished    # a finished node: mapped, not decoded
            for event in finished.events:
                self._take(event)
            self._latest()
        self._stat()

    # -- identity and time ------------------------------------------------------------------

    @property
    def label(self) -> str:
        if self.group_rank is not None:
            return f"node {self.group_rank}"
        return self.path.stem   # until a rank says its node: the file (its host is shown beside)

    @property
    def hostname(self) -> str:
        return (self.run.header.host.hostname if self.run else None) or "?"

    @property
    def start_unix(self) -> float | None:
        if self.run is None:
            return None
        clock = self.run.header.clock
        return clock.unix if clock else self.run.header.started_unix

    @property
    def rate(self) -> float:
        """Wall-clock seconds per second of this node's monotonic clock: 1 until the end pair
        comes, then as its two pairs measure it (merge's rule, a step of the clock left out)."""
        if self.run is None or self.run.header.clock is None or not self.run.end:
            return 1.0
        clock, end = self.run.header.clock, self.run.end.clock
        if end is None or end.mono <= clock.mono:
            return 1.0
        measured = (end.unix - clock.unix) / (end.mono - clock.mono)
        return measured if abs(measured - 1.0) <= MAX_RATE_ERROR else 1.0

    def unix(self, t: float) -> float:
        return (self.start_unix or 0.0) + t * self.rate

    @property
    def last_seen(self) -> float:
        """The node's own t of the latest thing its file holds."""
        return self.run.duration if self.run is not None else 0.0

    @property
    def finished(self) -> bool:
        return self.run is not None and self.run.finished

    @property
    def status(self) -> str | None:
        return self.run.end.status if self.run is not None and self.run.end else None

    def silent(self, now: float) -> bool:
        """No end record, and the file had not grown for SILENT_AFTER (or ten intervals) when it
        was last looked at: a node read first of a job that takes seconds to open is not
        silent for the time its later nodes took."""
        if self.finished or self.grown_at is None:
            return False
        interval = (self.run.header.interval if self.run else None) or 0.1
        seen = now if self.seen_at is None else min(now, self.seen_at)
        return seen - self.grown_at > max(self.silent_after, 10 * interval)

    # -- reading ----------------------------------------------------------------------------

    def _stat(self) -> bool:
        try:
            stat = self.path.stat()
        except OSError:
            return False
        grew = stat.st_size != self._size
        self._size = stat.st_size
        self.grown_at = stat.st_mtime
        self.seen_at = time.time()
        return grew

    def poll(self) -> bool:
        """Read what the file gained; True if anything did."""
        if self.finished and self.follower is None:
            return False
        if not self._stat() and self.follower is not None:
            return False
        try:
            if self.follower is None:
                if self._size <= 0:
                    return False
                self.follower = TailFollower(self.path, keep=KEEP)
            records = self.follower.poll(samples=False)
        except RunFileError as exc:
            self.error = str(exc)
            return False
        self.run = self.follower.run
        for record in records:
            if record.get("type") == "event":
                self._take(record)
        self._latest()
        if self.finished:
            self.follower.close()
            self.follower = None
        return True

    def _take(self, event: dict[str, Any]) -> None:
        rank = event.get("rank")
        if type(rank) is not int:
            return
        if type(event.get("group_rank")) is int:
            self.group_rank = event["group_rank"]
        if type(event.get("world_size")) is int:
            self.world_size = event["world_size"]
        state = self.ranks.get(rank)
        if state is None:
            state = self.ranks[rank] = Rank(rank, self)
        if event.get("kind") in (events.PHASE_BEGIN, events.PHASE_END):
            state.take(event)

    def _latest(self) -> None:
        run = self.run
        if run is None or not len(run.samples):
            return
        samples = run.samples
        percent = samples.core_percent()
        if percent is not None and len(percent):
            row = np.asarray(percent[-1], dtype=float)
            self.cpu = np.where(percent[-1] == MISSING_PERCENT, np.nan, row)   # a core not read then
        if samples.gpus:
            self.gpu = np.asarray(samples.gpu("util")[-1], dtype=float).reshape(-1)

    @property
    def cores(self) -> int:
        return (self.run.header.host.cpu_count if self.run else 0) or len(self.cpu)

    @property
    def gpus(self) -> int:
        return len(self.run.header.host.gpus) if self.run else 0

    def close(self) -> None:
        if self.follower is not None:
            self.follower.close()
            self.follower = None


class JobModel:
    """Every node of one job, followed; ``poll`` reads what their files gained."""

    def __init__(self, folder: Path | None = None, files: list[Path] | None = None,
                 silent_after: float = SILENT_AFTER):
        self.folder = folder
        self.silent_after = silent_after
        self.files = files
        self.job: str | None = None
        self.nodes: dict[Path, NodeFeed] = {}
        self.left_out: tuple[str, ...] = ()
        self.version = 0
        self.stragglers: dict[int, EpochStragglers] = {}
        self._headers: dict[Path, Header] = {}
        self.poll()

    @property
    def source_name(self) -> str:
        return str(self.folder) if self.folder is not None else ", ".join(p.name for p in self.files or [])

    def _paths(self) -> list[Path]:
        """The files to follow: the given ones, or the folder's newest job's. A newer job
        starting in the folder (its first node's header written) takes the view over."""
        if self.folder is None:
            return [p for p in self.files or [] if p.exists()]
        found = job_folder(self.folder, known=self._headers)
        if found.job != self.job and self.nodes:
            self.close()
            self.nodes, self.stragglers = {}, {}
        self.job = found.job
        self.left_out = found.left_out
        return [f.path for f in found.files]

    def poll(self) -> bool:
        """New nodes (a node joining late), and what every node's file gained; True if anything changed."""
        changed = False
        for path in self._paths():
            if path not in self.nodes:
                self.nodes[path] = NodeFeed(path, self.silent_after)
                changed = True
        for node in self.nodes.values():
            changed = node.poll() or changed
        if changed:
            self.version += 1
            self._epochs()
        return changed

    def close(self) -> None:
        for node in self.nodes.values():
            node.close()

    # -- the job as one run -----------------------------------------------------------------

    def ordered(self) -> list[NodeFeed]:
        """The nodes by their torchrun node rank (those not yet known after, by file)."""
        return sorted(self.nodes.values(),
                      key=lambda n: (n.group_rank if n.group_rank is not None else 1 << 30, n.path.name))

    def ranks(self) -> list[Rank]:
        return sorted((r for n in self.nodes.values() for r in n.ranks.values()), key=lambda r: r.rank)

    @property
    def origin(self) -> float | None:
        starts = [n.start_unix for n in self.nodes.values() if n.start_unix is not None]
        return min(starts) if starts else None

    @property
    def world_size(self) -> int | None:
        sizes = [n.world_size for n in self.nodes.values() if n.world_size]
        return max(sizes) if sizes else None

    def now_unix(self) -> float:
        """The job's latest moment: the newest reading of any node, on the wall clock."""
        ends = [n.unix(n.last_seen) for n in self.nodes.values() if n.run is not None]
        return max(ends) if ends else time.time()

    def alignment_text(self) -> str:
        hosts: list[tuple[str, float]] = []
        for node in self.nodes.values():
            if node.run is None or node.run.header.clock is None:
                continue
            clock = node.run.header.clock
            boot = (node.hostname, clock.unix - clock.mono)
            if not any(h == boot[0] and abs(b - boot[1]) < SAME_BOOT for h, b in hosts):
                hosts.append(boot)
        if len(hosts) > 1:
            return f"{len(hosts)} hosts: aligned by their clocks (NTP, PTP)"
        return "one host: one clock"

    def _epochs(self) -> None:
        """Each epoch whose every rank has left it (begun a later one, or its node ended), with
        its straggler; an epoch once judged is not judged again."""
        ranks = self.ranks()
        live = [r for r in ranks if not r.node.silent(time.time())]
        expected = self.world_size
        if not live or (expected is not None and len(ranks) < expected):
            return
        epochs = sorted({e for r in ranks for e in r.by_epoch})
        for epoch in epochs:
            if epoch in self.stragglers:
                continue
            left = all((r.latest_epoch is not None and r.latest_epoch > epoch and not r.open_in(epoch))
                       or r.node.finished for r in live)
            if not left:
                continue
            origin = self.origin or 0.0
            judged = judge(epoch, [p for r in live for p in r.worked(epoch, origin)])
            if judged is not None:
                self.stragglers[epoch] = judged

    def node_of(self, rank: int) -> str:
        """The label of the node RANK runs on ("?" for a rank not seen)."""
        return next((n.label for n in self.nodes.values() if rank in n.ranks), "?")


def open_job(paths: list[str], silent_after: float = SILENT_AFTER) -> JobModel:
    """A job's folder, or several run files, followed as one job; a one-line error for bad input."""
    if len(paths) == 1 and os.path.isdir(paths[0]):
        model = JobModel(folder=Path(paths[0]), silent_after=silent_after)
        if not model.nodes and not os.listdir(paths[0]):
            return model   # an empty folder: a job about to start; its nodes join as they come
        if not model.nodes:
            raise RunFileError(f"{paths[0]} holds no node's run file"
                               + (f" ({'; '.join(model.left_out)})" if model.left_out else ""))
        return model
    for path in paths:
        if os.path.isdir(path):
            raise RunFileError(f"{path} is a folder: give one job's folder, or run files")
        if not os.path.exists(path):
            raise RunFileError(f"no such file: {path}")
        header = read_header(path) if os.path.getsize(path) else None
        if os.path.getsize(path) and header is None:
            raise RunFileError(f"{os.path.basename(path)} is not a devicewatch run file")
        if header is not None and header.nodes:
            raise RunFileError(f"{os.path.basename(path)} is already a merged run: replay it alone")
    return JobModel(files=[Path(p) for p in paths], silent_after=silent_after)
