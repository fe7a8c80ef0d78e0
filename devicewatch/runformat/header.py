"""The header record as a typed value, parsed once where a run file is opened.

Readers ask ``run.header.host.cpu_count`` instead of ``header.get("host", {}).get(…)``: a field
the file lacks is a default here, in one place, not at every read. The record is checked first
(``runfile.check_header``: the JSON types the recorder writes), so parsing cannot fail on a
file that passed; what this module does not name stays in ``raw``, the record as read, which
``to_json`` gives back whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any
from collections.abc import Mapping, Sequence

from ..probes.cpu_limits import CpuLimits

# The per-device arrays of a schema-2 sample, whose field order and units the header declares.
GROUPS = ("sys", "proc", "gpu", "gpu_proc")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float | None:
    if value.__class__ in (int, float) and math.isfinite(value):
        return float(value)
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML named it at the start of the run."""

    index: int
    name: str
    uuid: str | None = None
    mem_total: float | None = None   # bytes

    @classmethod
    def parse(cls, value: Any, position: int) -> GpuInfo:
        gpu = _dict(value)
        index = gpu.get("index")
        name = gpu.get("name")
        return cls(index if type(index) is int else position, name if isinstance(name, str) else f"GPU {position}",
                   _text(gpu.get("uuid")), _number(gpu.get("mem_total")))


@dataclass(frozen=True)
class Host:
    """The machine the run was recorded on."""

    hostname: str | None = None
    os: str | None = None
    python: str | None = None
    cpu_model: str | None = None
    cpu_count: int = 0
    mem_total: float | None = None   # bytes
    gpus: tuple[GpuInfo, ...] = ()
    gpu_driver: str | None = None
    gpu_reason: str | None = None    # why the GPUs are not sampled, or None
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)
    cpu_limits: CpuLimits | None = None   # the recorder's own at its start; None in files written before

    @classmethod
    def parse(cls, value: Any) -> Host:
        host = _dict(value)
        gpus: list[Any] = host["gpus"] if isinstance(host.get("gpus"), list) else []
        cores = host.get("cpu_count")
        return cls(_text(host.get("hostname")), _text(host.get("os")), _text(host.get("python")),
                   _text(host.get("cpu_model")), cores if type(cores) is int and cores > 0 else 0,
                   _number(host.get("mem_total")), tuple(GpuInfo.parse(g, i) for i, g in enumerate(gpus)),
                   _text(host.get("gpu_driver")), _text(host.get("gpu_reason")), MappingProxyType(dict(host)),
                   CpuLimits.from_json(host.get("cpu_limits")))

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class LimitsReading:
    """The cores the workload may use (``limits``) from run time ``t`` on."""

    t: float
    limits: CpuLimits


@dataclass(frozen=True)
class CpuLimitsOverRun:
    """The cores the workload could use over a run: its readings in time order, the first at its
    launch, then one per change (``taskset -p``, a cgroup's quota written). Where the file has
    none of the workload's (written before they were recorded), the recorder's own from the
    header at ``t = 0``, and ``of_workload`` is False: the workload inherited them unless it was
    started under a ``taskset`` of its own."""

    readings: tuple[LimitsReading, ...]
    of_workload: bool = True

    @classmethod
    def of(cls, readings: Sequence[LimitsReading], host: Host) -> CpuLimitsOverRun | None:
        """From a run's ``cpu_limits`` records' readings, else HOST's; None where neither says (a
        file written before limits were recorded)."""
        readings = list(readings)
        readings.sort(key=lambda reading: reading.t)
        if readings:
            return cls(tuple(readings))
        return None if host.cpu_limits is None else cls((LimitsReading(0.0, host.cpu_limits),), of_workload=False)

    @property
    def initial(self) -> CpuLimits:
        return self.readings[0].limits

    @property
    def latest(self) -> CpuLimits:
        return self.readings[-1].limits

    @property
    def changes(self) -> tuple[LimitsReading, ...]:
        """The readings after the first: each a change of what the workload may use."""
        return self.readings[1:]

    @property
    def tightest(self) -> CpuLimits:
        """The reading that allowed the fewest cores (the first of them)."""
        return min((reading.limits for reading in self.readings), key=lambda limits: limits.allowed)

    def at(self, t: float) -> CpuLimits:
        """What was in force at run time T (the first reading before it was taken)."""
        found = self.readings[0].limits
        for reading in self.readings:
            if reading.t > t:
                break
            found = reading.limits
        return found


@dataclass(frozen=True)
class Workload:
    """What was launched: a registered workload's name and options, or a command (name None)."""

    name: str | None = None
    args: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)

    @classmethod
    def parse(cls, value: Any) -> Workload:
        workload = _dict(value)

        def strings(key: str) -> tuple[str, ...]:
            items = workload.get(key)
            return tuple(str(x) for x in items) if isinstance(items, list) else ()

        return cls(_text(workload.get("name")) or None, strings("args"), strings("command"),
                   MappingProxyType(dict(workload)))

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class Clock:
    """The wall clock and the monotonic clock read together at ``t = 0`` (what merge aligns by)."""

    unix: float
    mono: float

    @classmethod
    def parse(cls, value: Any) -> Clock | None:
        clock = _dict(value)
        unix, mono = _number(clock.get("unix")), _number(clock.get("mono"))
        return None if unix is None or mono is None else cls(unix, mono)


@dataclass(frozen=True)
class Instrument:
    """Whether the zero-code instrumentation was offered to the workload, and if not, why."""

    offered: bool
    reason: str | None = None

    @classmethod
    def parse(cls, value: Any) -> Instrument | None:
        instrument = value if isinstance(value, dict) else None
        if instrument is None or not isinstance(instrument.get("offered"), bool):
            return None
        return cls(instrument["offered"], _text(instrument.get("reason")))


@dataclass(frozen=True)
class JobId:
    """Which job one node's run belongs to, as its launcher said (``devicewatch.job``), and
    which node it is: a folder shared by several jobs never mixes their nodes."""

    id: str
    source: str                  # the variable it came from (SLURM_JOB_ID, …)
    node: str | None = None      # the node's index, where the launcher gives one
    node_source: str | None = None

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"id": self.id, "from": self.source}
        if self.node is not None:
            record.update(node=self.node, node_from=self.node_source)
        return record

    @classmethod
    def parse(cls, value: Any) -> JobId | None:
        """A node's header ``job``; None for anything else (none, or a merged run's, which has no ``from``)."""
        job = _dict(value)
        if not isinstance(job.get("id"), str) or not isinstance(job.get("from"), str):
            return None
        return cls(job["id"], job["from"], _text(job.get("node")), _text(job.get("node_from")))


@dataclass(frozen=True)
class Node:
    """One node of a merged run (the header's ``hosts``): its label, machine and workload."""

    label: str
    host: Host
    workload: Workload
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)


@dataclass(frozen=True)
class Header:
    """A run file's header record, typed. ``fields``, ``scale`` and ``digits``: per field group
    (``GROUPS``), the order, units and decimals of a schema-2 sample's arrays (empty in schema 1)."""

    schema: int = 1
    version: str | None = None             # the devicewatch that wrote it
    started: str | None = None             # ISO 8601, UTC
    started_unix: float | None = None
    interval: float | None = None          # s between samples
    clock: Clock | None = None
    host: Host = field(default_factory=Host)
    workload: Workload = field(default_factory=Workload)
    instrument: Instrument | None = None
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    scale: Mapping[str, tuple[float, ...]] = field(default_factory=lambda: MappingProxyType({}))
    digits: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}))
    nodes: tuple[Node, ...] = ()           # a merged run's nodes; empty for one node's run
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)
    alignment: Mapping[str, Any] | None = None   # a merged run's: the clock alignment error merge assumed
    job: JobId | None = None               # one node's run of a job: the job's id from its launcher

    @classmethod
    def parse(cls, record: Mapping[str, Any]) -> Header:
        """The header of a record that ``runfile.check_header`` accepted (any dict parses)."""
        record = dict(record)
        schema = record.get("schema")

        def lists(key: str, kind: Any) -> Mapping[str, tuple[Any, ...]]:
            """Each group's list; an entry not a number where one is meant is 1 (no scaling)."""
            groups = _dict(record.get(key))
            return MappingProxyType({group: tuple(kind(x) if kind is str or x.__class__ in (int, float) else kind(1)
                                                  for x in groups[group])
                                     for group in GROUPS if isinstance(groups.get(group), list)})

        hosts: list[Any] = record["hosts"] if isinstance(record.get("hosts"), list) else []
        nodes = tuple(Node(str(h.get("label")), Host.parse(h.get("host")), Workload.parse(h.get("workload")),
                           MappingProxyType(dict(h))) for h in hosts if isinstance(h, dict))
        return cls(schema if type(schema) is int else 1, _text(record.get("devicewatch")), _text(record.get("started")),
                   _number(record.get("started_unix")), _number(record.get("interval")),
                   Clock.parse(record.get("clock")), Host.parse(record.get("host")),
                   Workload.parse(record.get("workload")), Instrument.parse(record.get("instrument")),
                   lists("fields", str), lists("scale", float), lists("digits", int), nodes, MappingProxyType(record),
                   MappingProxyType(record["alignment"]) if isinstance(record.get("alignment"), dict) else None,
                   JobId.parse(record.get("job")))

    def to_json(self) -> dict[str, Any]:
        """The record as read (with what ``for_node`` replaced), for a file or ``--json``."""
        return dict(self.raw)

    def for_node(self, node: Node) -> Header:
        """The header of one node of a merged run: its own machine and workload."""
        raw = dict(self.raw, host=node.host.to_json(), workload=node.workload.to_json())
        return replace(self, host=node.host, workload=node.workload, raw=MappingProxyType(raw))

    @property
    def host_labels(self) -> list[str]:
        """A merged run's nodes (``node 0``, ``node 1``…), in node order; empty for one node's run."""
        return [node.label for node in self.nodes]

