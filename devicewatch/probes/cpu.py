"""Every CPU core, total CPU, frequency, each core's clock, memory and swap."""

from __future__ import annotations

import glob
import os
import platform
import re
from typing import Any

import psutil

from . import procfs

# Frequency changes slowly and reading it costs more than the per-core times (one sysfs file
# per core), so it is refreshed once every this many samples (swap too, where psutil reads it).
SLOW_EVERY = 10

MIB = 1 << 20
# What a sample holds besides the per-core list, in the order the run file stores it (nested
# readings by their flattened names: ``mem["used"]`` is ``mem_used``), and the unit each is
# stored in where it is not the reading's own (memory in MiB: bytes would say nothing more).
# The memory total does not change during a run: it is in the header (``host.mem_total``).
# Per-core values are stored as whole percents: /proc/stat counts in 1/100 s, so at 10 Hz a
# core's reading moves in steps of 10% anyway.
SYSTEM_FIELDS = ("freq_mhz", "mem_used", "mem_swap_used", "mem_swap_total")
SYSTEM_SCALE = {"mem_used": MIB, "mem_swap_used": MIB, "mem_swap_total": MIB}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class CoreClocks:
    """Each core's clock in MHz, where the kernel offers it: cpufreq's ``scaling_cur_freq``
    (kHz, one file per core), else the ``cpu MHz`` lines of /proc/cpuinfo (x86 without a
    cpufreq driver, most virtual machines). Cores in ascending number, as /proc/stat lists
    them. ``source`` says which, or None: then no clock is recorded (``read`` gives None)."""

    def __init__(self) -> None:
        self.source: str | None = None
        self._files: list[procfs.ProcFile | None] = []
        self._cpuinfo: procfs.ProcFile | None = None
        numbered = {}
        for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"):
            number = re.search(r"/cpu(\d+)/", path)
            if number is not None:
                numbered[int(number.group(1))] = path
        try:
            if numbered:
                self._files = [procfs.ProcFile(numbered[n], 64) if n in numbered else None
                               for n in range(max(numbered) + 1)]
                self.source = "cpufreq"
            elif os.path.exists("/proc/cpuinfo"):
                self._cpuinfo = procfs.ProcFile("/proc/cpuinfo", 4096 * (os.cpu_count() or 1))
                if self._from_cpuinfo():
                    self.source = "cpuinfo"
        except OSError:
            self.source = None

    def _from_cpuinfo(self) -> list[float | None]:
        assert self._cpuinfo is not None
        clocks: dict[int, float] = {}
        processor = None
        for line in self._cpuinfo.read().split(b"\n"):
            if line.startswith(b"processor"):
                processor = int(line.split(b":", 1)[1])
            elif line.startswith(b"cpu MHz") and processor is not None:
                clocks[processor] = float(line.split(b":", 1)[1])
        return [clocks.get(n) for n in range(max(clocks) + 1)] if clocks else []

    def read(self) -> list[float | None] | None:
        """Each core's clock now (None for a core it cannot tell), or None where none is offered."""
        if self.source is None:
            return None
        try:
            if self._cpuinfo is not None:
                return self._from_cpuinfo() or None
            return [round(int(f.read()) / 1000.0, 0) if f is not None else None for f in self._files]
        except (OSError, ValueError):
            return None


class CpuProbe:
    """Per-core busy percent, memory and swap each sample; frequency and swap every SLOW_EVERY.

    On Linux the cores and memory are read from /proc directly (``procfs``: a third of
    psutil's cost), elsewhere through psutil; the readings are the same."""

    def __init__(self) -> None:
        self._cores = procfs.CoreTimes() if procfs.available() else None
        self._meminfo = procfs.MemInfo() if self._cores is not None else None
        if self._cores is None:
            psutil.cpu_percent(percpu=True)  # primes the counters: the next read covers the interval
        self._tick = 0
        self._clocks = CoreClocks()
        self._freq: float | None = None
        self._swap = (0, 0)

    def _frequency(self, clocks: list[float | None] | None) -> float | None:
        """The mean clock in MHz, as psutil gives it. Where there is no cpufreq, psutil averages
        the ``cpu MHz`` lines of /proc/cpuinfo, which the clocks were just read from: their mean,
        rather than the file read and parsed a second time."""
        if self._clocks.source == "cpuinfo" and clocks:
            known = [clock for clock in clocks if clock is not None]
            return round(sum(known) / len(known), 0) if known else None
        try:
            freq = psutil.cpu_freq()
            return round(freq.current, 0) if freq else None
        except (OSError, NotImplementedError):
            return None

    def sample(self) -> dict[str, Any]:
        cores = self._cores.percent() if self._cores is not None else psutil.cpu_percent(percpu=True)
        clocks = None
        if self._tick % SLOW_EVERY == 0:
            clocks = self._clocks.read()  # in the samples it was read in: none between
            self._freq = self._frequency(clocks)
        memory = self._meminfo.read() if self._meminfo is not None else None
        if memory is None:
            if self._tick % SLOW_EVERY == 0:
                swap = psutil.swap_memory()
                self._swap = (swap.used, swap.total)
            virtual = psutil.virtual_memory()
            memory = {"used": virtual.total - virtual.available, "total": virtual.total,
                      "swap_used": self._swap[0], "swap_total": self._swap[1]}
        self._tick += 1
        reading = {
            "cpu": cores,
            "cpu_total": round(sum(cores) / len(cores), 1) if cores else 0.0,
            "freq_mhz": self._freq,
            "mem": memory,
        }
        if clocks is not None:
            reading["cpu_mhz"] = clocks
        return reading
