"""The cores a process may use, read where the kernel says: its affinity, its cgroup's cpuset and
its cgroup's CPU quota.

A container limited to 4 of 64 cores still shows 64 in /proc/stat and ``os.cpu_count()``; a
figure of "N of 64 cores" is then wrong by 16 times. Three things limit a process, and the
kernel enforces each on its own:

* its **affinity** (``sched_setaffinity``, ``taskset``): the cores it may be scheduled on;
* its cgroup's **cpuset** (``cpuset.cpus.effective`` in cgroup v2, ``cpuset.effective_cpus`` or
  ``cpuset.cpus`` in v1): the cores anything in the cgroup may use;
* its cgroup's **CPU quota** (``cpu.max`` in v2, ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``
  in v1): CPU time per period, i.e. a number of cores' worth of time, possibly fractional.
  Every cgroup on the path up to the root applies (a parent's quota binds its children), so
  the smallest counts; a container whose cgroup namespace hides its parents shows what it can.

The cgroup files are found once from /proc/PID/cgroup and the mount table (v1, v2 or both, as
a hybrid mounts them) and found again only when /proc/PID/cgroup changes (the process was
moved); each reading re-reads the values, a handful of small files kept open between readings
(``KeptFiles``: opening them anew was most of a reading's cost) and read again in place, so
once a second costs little. Standard library only, Linux only: elsewhere a reading has the
affinity where the platform has it and no cgroup.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .procfs import close_quietly

AFFINITY = "affinity"
CPUSET = "cpuset"
QUOTA = "CPU quota"


def parse_cpu_list(text: str) -> tuple[int, ...] | None:
    """The kernel's list of cores (``0-3,8,10-11``) as a sorted tuple; None if it is not one.
    An empty list is an empty tuple (a v2 cpuset not set reads empty)."""
    cores: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            return None
        low, high = int(first), int(last) if dash else int(first)
        if high < low or high - low > 1 << 16:
            return None
        cores.update(range(low, high + 1))
    return tuple(sorted(cores))


def cpu_list_text(cores: Iterable[int]) -> str:
    """Cores as the kernel writes them: ``0-3,8``."""
    ranges: list[list[int]] = []
    for core in sorted(set(cores)):
        if ranges and core == ranges[-1][1] + 1:
            ranges[-1][1] = core
        else:
            ranges.append([core, core])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in ranges)


def _figure(cores: float) -> str:
    return f"{round(cores, 2):g}"


@dataclass(frozen=True)
class CpuLimits:
    """The cores one process may use. ``affinity`` and ``cpuset``: the cores each allows (None
    where not read: no such platform call, no cpuset controller); ``quota_cores``: the cgroup
    CPU quota in cores (None: no quota); ``allowed``: what they leave together, the number of
    cores in both sets or the quota, whichever is smaller (fractional under a quota)."""

    host_cores: int
    affinity: tuple[int, ...] | None = None
    cpuset: tuple[int, ...] | None = None
    quota_cores: float | None = None
    allowed: float = field(init=False)

    def __post_init__(self) -> None:
        quota = self.quota_cores if self.quota_cores is not None else math.inf
        object.__setattr__(self, "allowed", float(min(self.cores, quota)))

    @property
    def cores(self) -> int:
        """The cores both the affinity and the cpuset allow (the host's where neither was read)."""
        if self.affinity is not None and self.cpuset is not None:
            return len(set(self.affinity) & set(self.cpuset))
        if self.affinity is not None:
            return len(self.affinity)
        if self.cpuset is not None:
            return len(self.cpuset)
        return self.host_cores

    @property
    def limited(self) -> bool:
        """Fewer cores' worth than the host has."""
        return self.allowed < self.host_cores

    @property
    def bound_by(self) -> tuple[str, ...]:
        """What sets ``allowed`` (``AFFINITY``, ``CPUSET``, ``QUOTA``); empty when nothing limits.
        An affinity that only follows its cpuset (the kernel narrows it so) is not named."""
        if not self.limited:
            return ()
        named: list[str] = []
        if self.cores == self.allowed:
            affinity = None if self.affinity is None else set(self.affinity)
            cpuset = None if self.cpuset is None else set(self.cpuset)
            if cpuset is not None and len(cpuset) < self.host_cores and (affinity is None or cpuset <= affinity):
                named.append(CPUSET)
            elif affinity is not None and (cpuset is None or affinity <= cpuset):
                named.append(AFFINITY)
            else:   # each leaves out cores the other allows
                named += [AFFINITY, CPUSET]
        if self.quota_cores is not None and self.quota_cores == self.allowed:
            named.append(QUOTA)
        return tuple(named)

    def text(self) -> str:
        """``4 cores allowed of 64 (cpuset)``, ``2.5 cores allowed of 64 (CPU quota)``, ``all 64 cores allowed``."""
        if not self.limited:
            return f"all {self.host_cores} cores allowed" if self.host_cores > 1 else "1 core allowed of 1"
        unit = "core" if self.allowed == 1 else "cores"
        return f"{_figure(self.allowed)} {unit} allowed of {self.host_cores} ({', '.join(self.bound_by)})"

    def to_json(self) -> dict[str, Any]:
        """As the run file stores it: the sets as the kernel lists cores (``0-3``), ``allowed`` for
        readers that do not work it out."""
        return {"host_cores": self.host_cores,
                "affinity": None if self.affinity is None else cpu_list_text(self.affinity),
                "cpuset": None if self.cpuset is None else cpu_list_text(self.cpuset),
                "quota_cores": None if self.quota_cores is None else round(self.quota_cores, 4),
                "allowed": round(self.allowed, 4)}

    @classmethod
    def from_json(cls, value: Any) -> CpuLimits | None:
        """What ``to_json`` wrote; None for anything else (a run file is untrusted input).
        ``allowed`` is worked out again from the parts, never taken as written."""
        if not isinstance(value, Mapping):
            return None
        host = value.get("host_cores")
        quota = value.get("quota_cores")
        if type(host) is not int or host < 1:
            return None
        if quota is not None and (quota.__class__ not in (int, float) or not math.isfinite(quota) or quota <= 0):
            return None
        sets = [value.get("affinity"), value.get("cpuset")]
        if not all(item is None or isinstance(item, str) for item in sets):
            return None
        affinity, cpuset = (None if item is None else parse_cpu_list(item) for item in sets)
        if (affinity is None) != (sets[0] is None) or (cpuset is None) != (sets[1] is None):
            return None
        return cls(host, affinity, cpuset, None if quota is None else float(quota))


# -- where the cgroup files are ------------------------------------------------------------

def _unescape(path: str) -> str:
    """A mountinfo path with its octal escapes (``\\040`` for a space) undone."""
    if "\\" not in path:
        return path
    out, i = [], 0
    while i < len(path):
        if path[i] == "\\" and path[i + 1:i + 4].isdigit():
            out.append(chr(int(path[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Mount:
    """A cgroup hierarchy as mounted: v2 (``controllers`` empty) or v1 with its controllers."""

    version: int
    root: str                      # the hierarchy's directory shown at the mount point
    point: str                     # where it is mounted
    controllers: frozenset[str] = frozenset()


def cgroup_mounts(mountinfo: str) -> list[Mount]:
    """The cgroup mounts of a /proc/PID/mountinfo text."""
    mounts = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, after = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(after) < 3:
            continue
        if after[0] == "cgroup2":
            mounts.append(Mount(2, _unescape(fields[3]), _unescape(fields[4])))
        elif after[0] == "cgroup":
            mounts.append(Mount(1, _unescape(fields[3]), _unescape(fields[4]), frozenset(after[2].split(","))))
    return mounts


def cgroup_membership(text: str) -> dict[str, str]:
    """A /proc/PID/cgroup text as {controller: path}; the v2 hierarchy under ``""``."""
    member: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _id, controllers, path = parts
        if not controllers:
            member[""] = path
        for controller in controllers.split(","):
            if controller:
                member[controller] = path
    return member


def _inside(mount: Mount, path: str) -> str | None:
    """PATH's directory under MOUNT, or None where the mount does not show it."""
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None
    rest = path[len(root):].strip("/")
    if ".." in rest.split("/"):   # a cgroup outside this cgroup namespace's root
        return None
    return os.path.join(mount.point, rest) if rest else mount.point


def _directory(controller: str, member: Mapping[str, str], mounts: list[Mount]) -> tuple[str, str, int] | None:
    """(the cgroup's directory, the mount point above which nothing is visible, the version) of
    CONTROLLER: its v1 hierarchy where one is mounted, else the v2 hierarchy."""
    for version, key in ((1, controller), (2, "")):
        if key not in member:
            continue
        path = member[key]
        found = [(m, d) for m in mounts
                 if m.version == version and (version == 2 or controller in m.controllers)
                 and (d := _inside(m, path)) is not None]
        if found:
            mount, directory = min(found, key=lambda item: len(item[0].root))  # the widest view
            return directory, mount.point, version
    return None


def _upwards(directory: str, top: str) -> list[str]:
    """DIRECTORY and each parent up to TOP, the mount point, included."""
    chain = [directory]
    while chain[-1] != top and len(chain[-1]) > len(top):
        chain.append(os.path.dirname(chain[-1]))
    return chain


@dataclass(frozen=True)
class CgroupFiles:
    """The files a reading opens: the cpuset's (the nearest that exists) and the quota's, each
    directory from the process's cgroup up to the visible root."""

    cpuset: tuple[str, ...] = ()           # candidates, nearest first; the first that reads counts
    quota: tuple[tuple[str, str | None], ...] = ()   # (v2 cpu.max, None) or (v1 quota, v1 period)

    @classmethod
    def find(cls, cgroup: str, mountinfo: str, root: str = "/") -> CgroupFiles:
        """From a /proc/PID/cgroup and a mountinfo text; ROOT: where the mount points are (tests)."""
        member, mounts = cgroup_membership(cgroup), cgroup_mounts(mountinfo)
        place = lambda path: os.path.join(root, path.lstrip("/"))  # noqa: E731
        cpuset: list[str] = []
        found = _directory("cpuset", member, mounts)
        if found is not None:
            directory, top, version = found
            names = ("cpuset.cpus.effective",) if version == 2 else ("cpuset.effective_cpus", "cpuset.cpus")
            cpuset = [place(os.path.join(d, name)) for d in _upwards(directory, top) for name in names]
        quota: list[tuple[str, str | None]] = []
        found = _directory("cpu", member, mounts)
        if found is not None:
            directory, top, version = found
            for d in _upwards(directory, top):
                quota.append((place(os.path.join(d, "cpu.max")), None) if version == 2 else
                             (place(os.path.join(d, "cpu.cfs_quota_us")), place(os.path.join(d, "cpu.cfs_period_us"))))
        return cls(tuple(cpuset), tuple(quota))

    def read_cpuset(self, read: Callable[[str], str | None] | None = None) -> tuple[int, ...] | None:
        """The nearest cpuset that reads; READ: how a file is read (``KeptFiles.read``)."""
        for path in self.cpuset:
            text = (read or _read)(path)
            if text is not None and text.strip():
                cores = parse_cpu_list(text)
                if cores:
                    return cores
        return None

    def read_quota(self, read: Callable[[str], str | None] | None = None) -> float | None:
        """The smallest quota along the path, in cores; None where none is set."""
        smallest: float | None = None
        for first, second in self.quota:
            cores = _quota_cores(first, second, read or _read)
            if cores is not None and (smallest is None or cores < smallest):
                smallest = cores
        return smallest


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


class KeptFiles:
    """Small files kept open and read again in place (``pread`` from offset 0, which makes
    cgroupfs and /proc generate them anew, and a regular file read as it is now). A file that
    is not there is tried again at the next read (a controller enabled later adds its files);
    one that fails to read (its cgroup removed) is closed and tried again likewise."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def read(self, path: str) -> str | None:
        fd = self._open.get(path)
        if fd is None:
            try:
                fd = self._open[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
        try:
            size = 4096
            data = os.pread(fd, size, 0)
            while len(data) == size:   # filled the buffer: the file may go on
                size *= 2
                data = os.pread(fd, size, 0)
        except OSError:
            self._forget(path)
            return None
        return data.decode("ascii", "replace")

    def _forget(self, path: str) -> None:
        close_quietly(self._open.pop(path, None))

    def close(self) -> None:
        for path in list(self._open):
            self._forget(path)

    def __del__(self) -> None:
        self.close()


def _quota_cores(first: str, period_path: str | None, read: Callable[[str], str | None] = _read) -> float | None:
    """One cgroup's quota in cores: v2 ``cpu.max`` ("max 100000", "400000 100000"), or v1's two files."""
    if period_path is None:
        text = read(first)
        parts = text.split() if text else []
        quota, period = (parts[0], parts[1]) if len(parts) == 2 else ("max", "0")
    else:
        quota, period = (read(first) or "-1").strip(), (read(period_path) or "0").strip()
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:   # "max", or a file that is not there
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


# -- readings --------------------------------------------------------------------------------

def _affinity(pid: int) -> tuple[int, ...] | None:
    if not hasattr(os, "sched_getaffinity"):
        return None
    return tuple(sorted(os.sched_getaffinity(pid)))


class CpuLimitsProbe:
    """The limits of one process, read again on each ``read``: the workload's root process, or
    any member of its tree. ``proc``, ``root``, ``host_cores`` and ``affinity`` are where it
    reads from (tests give a folder of literal files)."""

    def __init__(self, pid: int, *, proc: str = "/proc", root: str = "/", host_cores: int | None = None,
                 affinity: Callable[[int], tuple[int, ...] | None] = _affinity):
        self.pid = pid
        self._proc = proc
        self._root = root
        self._host_cores = host_cores or os.cpu_count() or 1
        self._affinity = affinity
        self._membership: bytes | None = None
        self._files = CgroupFiles()
        self._kept = KeptFiles()
        self._cgroup_path = os.path.join(proc, str(pid), "cgroup")

    def read(self) -> CpuLimits | None:
        """The limits now; None once the process is gone."""
        try:   # opened each time: a file kept open would read on after a literal /proc's is removed
            fd = os.open(self._cgroup_path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                membership = _read_whole(fd)
            finally:
                os.close(fd)
        except FileNotFoundError:
            if not os.path.exists(os.path.join(self._proc, str(self.pid))):
                return None
            membership = b""   # no cgroups here (not Linux, or a kernel without them)
        except OSError:
            return None
        if membership != self._membership:   # the first reading, or the process was moved
            self._membership = membership
            self._kept.close()
            # Our mount table, not the process's: the paths are opened here.
            mountinfo = _read_text(os.path.join(self._proc, "self", "mountinfo")) if membership else ""
            self._files = CgroupFiles.find(membership.decode("utf-8", "replace"), mountinfo, self._root)
        try:
            affinity = self._affinity(self.pid)
        except ProcessLookupError:
            return None
        except OSError:
            affinity = None
        return CpuLimits(self._host_cores, affinity, self._files.read_cpuset(self._kept.read),
                         self._files.read_quota(self._kept.read))

    def close(self) -> None:
        """Close the cgroup files kept open (the next reading opens them again)."""
        self._kept.close()
        self._membership = None


def _read_whole(fd: int) -> bytes:
    parts = []
    while chunk := os.read(fd, 4096):
        parts.append(chunk)
    return b"".join(parts)


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def of_process(pid: int) -> CpuLimits | None:
    """One reading of PID's limits (None if it is gone)."""
    return CpuLimitsProbe(pid).read()
