"""Several torchrun nodes' runs on one time axis: one run file with every host and every rank.

Each node is recorded by its own recorder (``devicewatch --record nodeK.jsonl -- torchrun …``),
and each file's ``t`` counts from its own start on its own monotonic clock. The merge maps every
file onto wall-clock time by the (wall clock, monotonic) pairs its recorder wrote at the start
(header ``clock``) and at the end (end record ``clock``), then writes one ordinary run file:

- samples keep their host apart: each carries ``host`` (``node 0``, ``node 1``, …);
- every rank's phases get a lane of their own, ``rank N``; events and log lines carry ``host``
  and ``rank``;
- the header lists the hosts and states the alignment error the merge assumes.

Pure: reading and writing go through ``devicewatch.runfile``; nothing here draws anything.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from . import __version__, events
from .errors import RunFileError, UsageError
from .runfile import Run, RunWriter, compact, load

# A recorder's two clock pairs disagree with the monotonic clock by more than this only when the
# wall clock was stepped during the run (an NTP step): then the start pair alone aligns it.
MAX_RATE_ERROR = 1e-3
# Two files from one host share the monotonic clock only within one boot: their (wall − mono)
# offsets then agree to well under a second.
SAME_BOOT = 1.0
STATUS_ORDER = ("ok", "cancelled", "failed", "error")
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
        return str(self.run.header.get("host", {}).get("hostname", "?"))

    def unix(self, t: float) -> float:
        return self.start_unix + t * self.rate

    @property
    def end_unix(self) -> float:
        return self.unix(self.run.duration)

    @property
    def status(self) -> str:
        return str(self.run.end.get("status")) if self.run.end else "error"

    @property
    def reason(self) -> str:
        if self.run.end is None:
            return "the recorder stopped without an end record (killed)"
        return str(self.run.end.get("reason") or self.status)


@dataclass
class Merged:
    """The merged run, ready to write: header fields and records in time order (end last)."""

    header: dict[str, Any]
    records: list[dict[str, Any]]
    nodes: list[Node]
    alignment: dict[str, Any]


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


def _pair(record: dict[str, Any] | None) -> tuple[float, float] | None:
    clock = record.get("clock") if record else None
    if not isinstance(clock, dict):
        return None
    unix, mono = clock.get("unix"), clock.get("mono")
    if type(unix) in (int, float) and type(mono) in (int, float):
        return float(unix), float(mono)
    return None


def _node(run: Run) -> Node:
    name = os.path.basename(run.path)
    if "hosts" in run.header:
        raise RunFileError(f"{name} is already a merged run; merge the nodes' own files")
    ranks, groups, local, jobs, worlds = _identity(run)
    if not ranks:
        raise RunFileError(f"{name} has no events from torchrun ranks (no RANK in their environment): "
                           "record each node's torchrun, with a script that uses devicewatch.events")
    if len(jobs) > 1 or len(worlds) > 1:
        raise RunFileError(f"{name} holds ranks of more than one job: {', '.join(sorted(jobs)) or worlds}")
    start = _pair(run.header)
    end = _pair(run.end)
    rate = 1.0
    if start is not None and end is not None and end[1] > start[1]:
        measured = (end[0] - start[0]) / (end[1] - start[1])
        if abs(measured - 1.0) <= MAX_RATE_ERROR:
            rate = measured
    start_unix = start[0] if start else float(run.header.get("started_unix", 0.0))
    label = f"node {groups[0]}" if len(groups) == 1 else \
        ("nodes " + ",".join(map(str, groups)) if groups else str(run.header.get("host", {}).get("hostname", name)))
    return Node(run, label, groups[0] if len(groups) == 1 else None, ranks, local,
                next(iter(jobs), None), next(iter(worlds), None), start_unix, rate,
                start[1] if start else None, [p for p in (start, end) if p is not None])


def _clock(unix: float) -> str:
    return datetime.fromtimestamp(unix, timezone.utc).strftime("%H:%M:%S")


def _check(nodes: list[Node]) -> None:
    """One job's nodes, each once, overlapping in time; else one line saying which files and why."""
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
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

def _lane(rank: int, lane: Any) -> str:
    if lane in (None, "main", f"rank{rank}", f"rank {rank}"):
        return f"rank {rank}"
    return f"rank {rank} {lane}"


def _log_rank(node: Node, line: str) -> int | None:
    if len(node.ranks) == 1:
        return node.ranks[0]
    match = TEE_PREFIX.match(line)
    if match:
        return node.local_ranks.get(int(match.group(1)))
    return None


def _records(node: Node, origin: float) -> Iterable[dict[str, Any]]:
    shift = node.start_unix - origin

    def at(t: float) -> float:
        return round(shift + t * node.rate, 6)

    run = node.run
    for sample in run.samples:
        record = dict(sample, t=at(sample["t"]), host=node.label)
        if isinstance(sample.get("gpus"), list):
            gpus = []
            for entry in sample["gpus"]:
                if isinstance(entry, dict) and isinstance(entry.get("util_samples"), list):
                    entry = dict(entry, util_samples=[[at(p[0]), p[1]] for p in entry["util_samples"]
                                                      if isinstance(p, list) and len(p) == 2
                                                      and type(p[0]) in (int, float)])
                gpus.append(entry)
            record["gpus"] = gpus
        yield record
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
        record = dict(log, t=at(log["t"]), host=node.label)
        rank = _log_rank(node, str(log.get("line", "")))
        if rank is not None:
            record["rank"] = rank
        yield record
    for notice in run.notices:
        yield dict(notice, t=at(notice["t"]), host=node.label,
                   message=f"{node.label}: {notice.get('message')}")
    for status in run.gpu_status:
        yield dict(status, t=at(status["t"]), host=node.label)


def _host_entry(node: Node, origin: float) -> dict[str, Any]:
    return {"label": node.label, "file": node.name, "group_rank": node.group_rank, "ranks": node.ranks,
            "host": node.run.header.get("host", {}), "workload": node.run.header.get("workload", {}),
            "interval": node.run.header.get("interval"), "offset": round(node.start_unix - origin, 6),
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
    records: list[dict[str, Any]] = []
    for node in nodes:
        records.extend(_records(node, origin))
    records.sort(key=lambda r: r["t"])  # stable: at equal times, node order

    first = nodes[0].run.header
    hostnames = list(dict.fromkeys(n.hostname for n in nodes))
    host = dict(first.get("host", {}), hostname=", ".join(hostnames))
    workload = dict(first.get("workload", {}))
    header = {
        "devicewatch": __version__,
        "started": datetime.fromtimestamp(origin, timezone.utc).isoformat(timespec="seconds"),
        "started_unix": round(origin, 3),
        "interval": first.get("interval", 0.1),
        "host": host,
        "workload": workload,
        "hosts": [_host_entry(n, origin) for n in nodes],
        "job": {"id": nodes[0].job, "world_size": nodes[0].world_size,
                "ranks": sorted(r for n in nodes for r in n.ranks)},
        "alignment": align,
    }
    duration = round(max(n.end_unix for n in nodes) - origin, 6)
    records.append({"type": "notice", "t": 0.0, "level": "info",
                    "message": f"merged {len(nodes)} nodes; alignment: {align['text']}"})
    for node in nodes:
        if node.status != "ok":
            records.append({"type": "notice", "t": round(node.end_unix - origin, 6), "level": "warning",
                            "host": node.label, "message": f"{node.label} ended {node.status}: {node.reason}"})
    records.sort(key=lambda r: r["t"])
    worst = max(nodes, key=lambda n: STATUS_ORDER.index(n.status) if n.status in STATUS_ORDER else 0)
    end = worst.run.end or {}
    records.append({"type": "end", "t": duration, "status": worst.status,
                    "exit_code": end.get("exit_code", 0 if worst.status == "ok" else 1),
                    "signal": end.get("signal"), "duration": duration,
                    "reason": "; ".join(f"{n.label}: {n.reason}" for n in nodes)})
    return Merged(header, records, nodes, align)


def write(merged: Merged, path: str) -> None:
    """Write the merged run through the one run-file writer."""
    try:
        writer = RunWriter(path, merged.header)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    try:
        for record in merged.records:
            writer.write(record)
    finally:
        writer.close()
    compact(path)  # the merged run is finished: its columnar form beside it
