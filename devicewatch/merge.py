"""Several torchrun nodes' runs on one time axis: one run file with every host and every rank.

Each node is recorded by its own recorder (``devicewatch --record nodeK.jsonl -- torchrun …``),
and each file's ``t`` counts from its own start on its own monotonic clock. The merge maps every
file onto wall-clock time by the (wall clock, monotonic) pairs its recorder wrote at the start
(header ``clock``) and at the end (end record ``clock``), then writes one ordinary run file:

- samples keep their host apart: each carries ``host`` (``node 0``, ``node 1``, …);
- every rank's phases get a lane of their own, ``rank N``; events and log lines carry ``host``
  and ``rank``;
- the header lists the hosts and states the alignment error the merge assumes.

Pure: reading and writing go through ``devicewatch.runformat.runfile``; nothing here draws anything.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, UTC
from typing import Any
from collections.abc import Iterator

import numpy as np

from . import __version__, events
from .errors import RunFileError, UsageError
from .runformat import records as build
from .runformat.runfile import Run, load
from .runformat.writer import RunWriter, compact, probe_fields
from .runformat.encode import join_chunks
from .runformat.reencode import Reencoder
from .runformat.schema import Chunk, Encoder

# A recorder's two clock pairs disagree with the monotonic clock by more than this only when the
# wall clock was stepped during the run (an NTP step): then the start pair alone aligns it.
MAX_RATE_ERROR = 1e-3
# Two files from one host share the monotonic clock only within one boot: their (wall − mono)
# offsets then agree to well under a second.
SAME_BOOT = 1.0
STATUS_ORDER = ("ok", "trial", "cancelled", "failed", "error")
# torchrun --tee / --local-ranks-filter prefix each line with "[ROLE LOCAL_RANK]:".
TEE_PREFIX = re.compile(r"^\[[A-Za-z_]*?(\d+)\]:")


@dataclass
class Node:
    """One node's run file and how its times map onto the wall clock."""

    run: Run
    label: str
    group_rank: int | None
    ranks: list[int]
    local_ranks: dict[int, int]     # local rank -> global rank
    job: str | None
    world_size: int | None
    start_unix: float               # wall clock at t = 0
    rate: float                     # wall-clock seconds per monotonic second
    start_mono: float | None        # the monotonic clock at t = 0 (absent in older files)
    pairs: list[tuple[float, float]] = field(default_factory=list)   # (unix, mono) as recorded

    @property
    def name(self) -> str:
        return os.path.basename(self.run.path)

    @property
    def hostname(self) -> str:
        return self.run.header.host.hostname or "?"

    def unix(self, t: float) -> float:
        return self.start_unix + t * self.rate

    @property
    def end_unix(self) -> float:
        return self.unix(self.run.duration)

    @property
    def status(self) -> str:
        return self.run.end.status if self.run.end else "error"

    @property
    def reason(self) -> str:
        if self.run.end is None:
            return "the recorder stopped without an end record (killed)"
        return self.run.end.reason or self.status


@dataclass
class Merged:
    """The merged run, ready to write: header fields, every record but the samples in time
    order (end last), and the nodes, whose samples ``write`` takes from their columns."""

    header: dict[str, Any]
    records: list[build.Writable]   # events and GPU status as dicts, lines, notices and the end typed
    nodes: list[Node]
    alignment: dict[str, Any]
    origin: float = 0.0             # the wall clock at the merged run's t = 0
    # Each record's place (but the end's) and each node's first sample's, in the order that
    # breaks ties of time: node by node, samples, events, lines, notices, GPU status.
    places: list[int] = field(default_factory=list)
    first_sample: list[int] = field(default_factory=list)


# -- reading the nodes ----------------------------------------------------------------------

def _identity(run: Run) -> tuple[list[int], list[int], dict[int, int], set[str], set[int]]:
    ranks: set[int] = set()
    groups: set[int] = set()
    local: dict[int, int] = {}
    jobs: set[str] = set()
    worlds: set[int] = set()
    for event in run.events:
        rank = event.get("rank")
        if type(rank) is not int:
            continue
        ranks.add(rank)
        if type(event.get("group_rank")) is int:
            groups.add(event["group_rank"])
        if type(event.get("local_rank")) is int:
            local[event["local_rank"]] = rank
        if isinstance(event.get("job"), str):
            jobs.add(event["job"])
        if type(event.get("world_size")) is int:
            worlds.add(event["world_size"])
    return sorted(ranks), sorted(groups), local, jobs, worlds


def _node(run: Run) -> Node:
    name = os.path.basename(run.path)
    if run.header.nodes:
        raise RunFileError(f"{name} is already a merged run; merge the nodes' own files")
    ranks, groups, local, jobs, worlds = _identity(run)
    if not ranks:
        raise RunFileError(f"{name} has no events from torchrun ranks (no RANK in their environment): "
                           "record each node's torchrun, with a script that uses devicewatch.events")
    if len(jobs) > 1 or len(worlds) > 1:
        raise RunFileError(f"{name} holds ranks of more than one job: {', '.join(sorted(jobs)) or worlds}")
    clock = run.header.clock
    start = (clock.unix, clock.mono) if clock is not None else None
    end = (run.end.clock.unix, run.end.clock.mono) if run.end and run.end.clock else None
    rate = 1.0
    if start is not None and end is not None and end[1] > start[1]:
        measured = (end[0] - start[0]) / (end[1] - start[1])
        if abs(measured - 1.0) <= MAX_RATE_ERROR:
            rate = measured
    start_unix = start[0] if start else (run.header.started_unix or 0.0)
    label = f"node {groups[0]}" if len(groups) == 1 else \
        ("nodes " + ",".join(map(str, groups)) if groups else (run.header.host.hostname or name))
    return Node(run, label, groups[0] if len(groups) == 1 else None, ranks, local,
                next(iter(jobs), None), next(iter(worlds), None), start_unix, rate,
                start[1] if start else None, [p for p in (start, end) if p is not None])


def _clock(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%H:%M:%S")


def _check(nodes: list[Node]) -> None:
    """One job's nodes, each once, overlapping in time; else one line saying which files and why."""
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            launched = a.run.header.job, b.run.header.job
            if launched[0] and launched[1] and launched[0].id != launched[1].id:
                raise RunFileError(f"{a.name} and {b.name} are from different jobs "
                                   f"({launched[0].id} vs {launched[1].id})")
            if (a.job and b.job and a.job != b.job) or (a.world_size and b.world_size and a.world_size != b.world_size):
                what = f"{a.job} vs {b.job}" if a.job != b.job else f"world size {a.world_size} vs {b.world_size}"
                raise RunFileError(f"{a.name} and {b.name} are from different jobs ({what})")
            shared = sorted(set(a.ranks) & set(b.ranks))
            if shared or (a.group_rank is not None and a.group_rank == b.group_rank):
                raise RunFileError(f"{a.name} and {b.name} both record {a.label} (rank "
                                   f"{', '.join(map(str, shared or a.ranks))}): the same node given twice")
            if max(a.start_unix, b.start_unix) >= min(a.end_unix, b.end_unix):
                raise RunFileError(f"{a.name} ({_clock(a.start_unix)}–{_clock(a.end_unix)} UTC) and {b.name} "
                                   f"({_clock(b.start_unix)}–{_clock(b.end_unix)} UTC) do not overlap in time: "
                                   "not the nodes of one run")


def alignment(nodes: list[Node]) -> dict[str, Any]:
    """The alignment error the merge assumes, measured where two files share a monotonic clock.

    Files from one host (one boot) map each other's clock pairs onto the wall clock: the
    largest disagreement is the error. Across hosts the files cannot show it: it is the hosts'
    clock synchronisation (NTP: typically milliseconds; PTP: microseconds).
    """
    groups: list[list[Node]] = []
    for node in nodes:
        for members in groups:
            first = members[0]
            if node.start_mono is not None and first.start_mono is not None \
                    and node.hostname == first.hostname \
                    and abs((first.start_unix - first.start_mono) - (node.start_unix - node.start_mono)) < SAME_BOOT:
                members.append(node)
                break
        else:
            groups.append([node])
    same_host: list[float] = []
    for members in groups:
        for a in members:
            for b in members:
                if a is not b:
                    assert b.start_mono is not None
                    same_host += [abs(unix - b.unix(mono - b.start_mono)) for unix, mono in a.pairs]
    hosts = len(groups)
    result: dict[str, Any] = {
        "method": "wall clock, from each file's (wall clock, monotonic) pairs at start and end",
        "hosts": hosts,
        "same_host_error_s": round(max(same_host), 9) if same_host else None,
        "across_hosts": "the hosts' clock synchronisation (NTP, PTP); the files cannot measure it"
        if hosts > 1 else None,
    }
    if hosts > 1:
        result["text"] = (f"{hosts} hosts: aligned by their wall clocks, so to within the hosts' clock "
                          "synchronisation (NTP: milliseconds; PTP: microseconds)")
    elif same_host:
        result["text"] = f"one host: aligned to within {_span(max(same_host))} (measured from the clock pairs)"
    else:
        result["text"] = "one host; the files hold no clock pairs to measure the alignment by"
    return result


def _span(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


# -- merging --------------------------------------------------------------------------------

# Records written at a time: the samples among them are encoded from the columns together, and
# no more records than this are alive as dicts at once.
BLOCK = 8192


def _lane(rank: int, lane: Any) -> str:
    return events.rank_lane(rank, lane)


def _log_rank(node: Node, line: str) -> int | None:
    if len(node.ranks) == 1:
        return node.ranks[0]
    match = TEE_PREFIX.match(line)
    if match:
        return node.local_ranks.get(int(match.group(1)))
    return None


def _others(node: Node, origin: float) -> Iterator[build.Writable]:
    """The node's events, log lines, notices and GPU status on the merged axis, in that order."""
    shift = node.start_unix - origin

    def at(t: float) -> float:
        return round(shift + t * node.rate, 6)

    run = node.run
    for event in run.events:
        record = dict(event, t=at(event["t"]), host=node.label)
        rank = event.get("rank")
        if event.get("kind") in (events.PHASE_BEGIN, events.PHASE_END):
            lane = event.get("lane", "main")
            if type(rank) is int:
                record["lane"] = _lane(rank, lane)
            else:
                record["lane"] = f"{node.label} {lane}"
        yield record
    for log in run.logs:
        rank = _log_rank(node, log.line)
        yield replace(log, t=at(log.t), host=node.label, rank=log.rank if rank is None else rank)
    for notice in run.notices:
        yield replace(notice, t=at(notice.t), host=node.label, message=f"{node.label}: {notice.message}")
    for status in run.gpu_status:
        yield replace(status, t=at(status.t), host=node.label)


def _time(record: build.Writable) -> float:
    return record["t"] if isinstance(record, dict) else record.t


def _host_entry(node: Node, origin: float) -> dict[str, Any]:
    return {"label": node.label, "file": node.name, "group_rank": node.group_rank, "ranks": node.ranks,
            "host": node.run.header.host.to_json(), "workload": node.run.header.workload.to_json(),
            "interval": node.run.header.interval, "offset": round(node.start_unix - origin, 6),
            "rate": node.rate, "status": node.status, "reason": node.reason}


def merge(paths: list[str]) -> Merged:
    """Read the nodes' run files and put them on one time axis. Raises a one-line error for bad input."""
    if len(paths) < 2:
        raise UsageError("merge needs the run files of two or more nodes")
    seen: dict[str, str] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{path} is given twice: the same node given twice")
        seen[real] = path
    nodes = sorted((_node(load(path)) for path in paths),
                   key=lambda n: (n.group_rank if n.group_rank is not None else 1 << 30, n.ranks))
    _check(nodes)
    origin = min(n.start_unix for n in nodes)
    align = alignment(nodes)
    # Every record's place in the file: by time; at equal times, node by node, each node's
    # samples, events, lines, notices and GPU status in turn, the merge's own notices last.
    records: list[build.Writable] = []
    places: list[int] = []
    first_sample: list[int] = []
    place = 0
    for node in nodes:
        first_sample.append(place)
        place += len(node.run.samples)
        for record in _others(node, origin):
            records.append(record)
            places.append(place)
            place += 1
    records.append(build.notice(0.0, f"merged {len(nodes)} nodes; alignment: {align['text']}", "info"))
    for node in nodes:
        if node.status != "ok":
            records.append(build.notice(round(node.end_unix - origin, 6), f"{node.label} ended {node.status}: {node.reason}",
                                  host=node.label))
    places += range(place, place + len(records) - len(places))
    order = sorted(range(len(records)), key=lambda i: _time(records[i]))  # stable: places rise with i
    records = [records[i] for i in order]
    places = [places[i] for i in order]

    first = nodes[0].run.header
    hostnames = list(dict.fromkeys(n.hostname for n in nodes))
    host = dict(first.host.to_json(), hostname=", ".join(hostnames))
    workload = first.workload.to_json()
    header = {
        "devicewatch": __version__,
        "started": datetime.fromtimestamp(origin, UTC).isoformat(timespec="seconds"),
        "started_unix": round(origin, 3),
        "interval": first.interval if first.interval is not None else 0.1,
        "host": host,
        "workload": workload,
        "hosts": [_host_entry(n, origin) for n in nodes],
        "job": {"id": nodes[0].job, "world_size": nodes[0].world_size,
                "ranks": sorted(r for n in nodes for r in n.ranks)},
        "alignment": align,
    }
    duration = round(max(n.end_unix for n in nodes) - origin, 6)
    worst = max(nodes, key=lambda n: STATUS_ORDER.index(n.status) if n.status in STATUS_ORDER else 0)
    end = worst.run.end
    records.append(build.end(duration, worst.status, end.exit_code if end else 1, end.signal if end else None,
                             "; ".join(f"{n.label}: {n.reason}" for n in nodes)))
    return Merged(header, records, nodes, align, origin, places, first_sample)


# -- writing: the samples from their columns, a block at a time -----------------------------

def _blocks(merged: Merged, encoder: Encoder) -> Iterator[tuple[list[build.Writable | bytes], Chunk | None]]:
    """Every record of the merged run but the end, in file order, a block at a time, with the
    values of the samples among them as stored."""
    nodes = [Reencoder(node.run.samples, node.label, node.start_unix - merged.origin, node.rate, encoder)
             for node in merged.nodes]
    others = merged.records[:-1]
    total = sum(map(len, nodes))
    first = np.cumsum([0] + [len(n) for n in nodes])
    times = np.concatenate([n.merged_t for n in nodes] + [np.array([_time(r) for r in others], np.float64)])
    places = np.concatenate([start + np.arange(len(n)) for start, n in zip(merged.first_sample, nodes)]
                            + [np.array(merged.places[:len(others)], np.int64)])
    order = np.lexsort((places, times))
    for start in range(0, len(order), BLOCK):
        chosen = order[start:start + BLOCK]
        sample = chosen < total
        numbers = chosen[sample]
        node_of = np.searchsorted(first, numbers, "right") - 1
        records: list[Any] = [None] * len(numbers)
        parts = []
        for n in np.unique(node_of).tolist():
            at = np.flatnonzero(node_of == n)
            lines, part = nodes[n].block(numbers[at] - first[n])
            for j, line in zip(at.tolist(), lines):
                records[j] = line
            parts.append((at, part))
        samples = iter(records)
        block = [next(samples) if is_sample else others[i - total]
                 for i, is_sample in zip(chosen.tolist(), sample.tolist())]
        yield block, join_chunks(parts, len(numbers)) if parts else None


def write(merged: Merged, path: str) -> None:
    """Write the merged run through the one run-file writer, the samples a block at a time from
    the nodes' columns, and end it as a run ends: its columnar form beside it."""
    declared = probe_fields()
    try:
        writer = RunWriter(path, merged.header, declared)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    encoder = Encoder(declared["fields"], declared["scale"], declared.get("digits"))
    try:
        for block, stored in _blocks(merged, encoder):
            writer.write_records(block, stored)
        writer.write(merged.records[-1])
    finally:
        writer.close()
    compact(path)  # the merged run is finished: its columnar form beside it
