"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` distribution, imported as ``pynvml``).

Every query goes through ``_query``, which turns "not supported" into ``None`` so that one
missing counter never hides the others. A missing library, driver or device, or an NVML error
in the middle of a run, leaves the probe *unavailable* with a reason; the recorder writes that
reason down and samples everything else as before.

Utilization is read from the driver's buffer of recent samples (``nvmlDeviceGetSamples``),
drained on every call, so a dip shorter than the sampling period is still seen as it
happened. Where the buffer is not supported, the one-second average of
``nvmlDeviceGetUtilizationRates`` is used instead. The spacing of the driver's samples is its
own sampling period (often 167 ms); it is measured and reported once known.

Two rates, because NVML calls are the probe's cost (docs/run-format.md lists which field is
read when). Every poll reads what the driver buffers or averages over a window: utilization
samples, per-process use, GPM. Values that change slowly or are instantaneous readings
(memory, power, temperature, SM clock, the utilization-rates average where the buffer works,
the running-process list) are read at most once a second (``SLOW_EVERY``); a poll in between
repeats the last reading.

"Utilization" is the share of time at least one kernel ran: one tiny kernel all the time reads
100%. On Hopper and newer, GPM (GPU performance monitoring) says how much of the chip worked:
SMs active, warp occupancy, tensor cores, DRAM bandwidth, PCIe traffic, each averaged between
two GPM samples taken more than 100 ms apart. Each poll takes one new sample into the older of
two buffers and reuses the other, so a poll costs one sample and one metrics call per GPU (per
GPU instance under MIG). Where GPM is missing, the reason is kept in ``gpm_reasons``.
"""

from __future__ import annotations

import ctypes
import itertools
import statistics
import struct
import time
from collections import deque
from typing import Any
from collections.abc import Callable

NVML_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
MIB = 1 << 20

# (field, NVML metric id constant, scale): percent as given; PCIe from MiB/s to bytes/s.
GPM_METRICS = (
    ("sm_active", "NVML_GPM_METRIC_SM_UTIL", 1.0),
    ("sm_occupancy", "NVML_GPM_METRIC_SM_OCCUPANCY", 1.0),
    ("tensor_active", "NVML_GPM_METRIC_ANY_TENSOR_UTIL", 1.0),
    ("dram_active", "NVML_GPM_METRIC_DRAM_BW_UTIL", 1.0),
    ("pcie_tx", "NVML_GPM_METRIC_PCIE_TX_PER_SEC", MIB),
    ("pcie_rx", "NVML_GPM_METRIC_PCIE_RX_PER_SEC", MIB),
)
GPM_FIELDS = tuple(name for name, _, _ in GPM_METRICS)

# Each GPU's readings in a sample, in the order the run file stores them (like nvitop's
# SNAPSHOT_KEYS): the writer and the reader take the list from here through the header, so a
# field added here is recorded and read without touching either. The memory total does not
# change: it is in the header (``host.gpus[i].mem_total``). Memory is stored in MiB, PCIe
# traffic in MiB/s. Beside these, a GPU's entry carries ``util_samples`` (the driver's buffered
# samples), ``procs`` (per-process use, fields below) and, with MIG on, ``mig`` (GPM per instance).
GPU_FIELDS = ("util", "mem_util", "mem_used", "power_w", "temp_c", "sm_clock_mhz", *GPM_FIELDS)
GPU_SCALE = {"mem_used": MIB, "pcie_tx": MIB, "pcie_rx": MIB}
# Stored as whole numbers: a tenth of a watt or of a GPM percent says nothing at 10 Hz, and
# costs a megabyte an hour on 8 GPUs.
GPU_DIGITS = {"power_w": 0, "sm_active": 0, "sm_occupancy": 0, "tensor_active": 0, "dram_active": 0}
# Per-process use of a GPU: one entry per process of the workload seen on it.
GPU_PROC_FIELDS = ("pid", "mem", "util", "mem_util")
GPU_PROC_SCALE = {"mem": MIB}
GPM_FUNCTIONS = ("nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleFree", "nvmlGpmSampleGet",
                 "nvmlGpmMigSampleGet", "nvmlGpmMetricsGet")
GPM_MIN_GAP = 0.1       # seconds; NVML needs its two GPM samples more than this apart
PERIOD_AFTER = 8        # spacings of driver samples seen before their median is reported
SLOW_EVERY = 1.0        # seconds between reads of the slowly changing fields (SLOW_FIELDS)
SLOW_SLACK = 0.05       # a poll this early for the next slow read still makes it (poll jitter)
SLOW_FIELDS = ("mem_util", "mem_used", "mem_total", "power_w", "temp_c", "sm_clock_mhz")


def _metrics_reader(nvml: Any, count: int) -> struct.Struct:
    """(nvmlReturn, value) of the first COUNT metrics of a ``c_nvmlGpmMetricsGet_t``, read in
    one call from its memory: pynvml's structures run Python code on every attribute read,
    which made reading six metrics cost more than the NVML call that filled them."""
    metric = nvml.c_nvmlGpmMetric_t
    start, size = nvml.c_nvmlGpmMetricsGet_t.metrics.offset, ctypes.sizeof(metric)
    fields = [(start + i * size + off, code) for i in range(count)
              for off, code in ((metric.nvmlReturn.offset, "I"), (metric.value.offset, "d"))]
    fmt, at = "=", 0
    for offset, code in fields:
        fmt += f"{offset - at}x{code}"
        at = offset + struct.calcsize("=" + code)
    return struct.Struct(fmt)


class GpmTarget:
    """Two GPM sample buffers for one GPU or one GPU instance: each read fills the older one."""

    def __init__(self, nvml: Any, handle: Any, gpu_instance: int | None, clock: Callable[[], float]):
        self.nvml = nvml
        self.handle = handle
        self.gpu_instance = gpu_instance
        self.clock = clock
        self.newest = nvml.nvmlGpmSampleAlloc()
        self.spare = nvml.nvmlGpmSampleAlloc()
        self.taken_at: float | None = None
        self.ids = [getattr(nvml, constant) for _, constant, _ in GPM_METRICS]
        self.request = nvml.c_nvmlGpmMetricsGet_t()
        self.request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        self.request.numMetrics = len(self.ids)
        for i, metric_id in enumerate(self.ids):
            self.request.metrics[i].metricId = metric_id
        self.reader = _metrics_reader(nvml, len(self.ids))
        self.success = nvml.NVML_SUCCESS

    def read(self) -> dict[str, Any] | None:
        """The metrics since the previous read, or None when that was 100 ms ago or less."""
        now = self.clock()
        if self.taken_at is not None and now - self.taken_at <= GPM_MIN_GAP:
            return None
        nvml = self.nvml
        if self.gpu_instance is None:
            nvml.nvmlGpmSampleGet(self.handle, self.spare)
        else:
            nvml.nvmlGpmMigSampleGet(self.handle, self.gpu_instance, self.spare)
        self.newest, self.spare = self.spare, self.newest
        first = self.taken_at is None
        self.taken_at = now
        if first:
            return None
        request = self.request
        request.sample1 = self.spare
        request.sample2 = self.newest
        nvml.nvmlGpmMetricsGet(request)
        values = self.reader.unpack_from(request)
        out: dict[str, Any] = {}
        for i, (name, _, scale) in enumerate(GPM_METRICS):
            code, value = values[2 * i], values[2 * i + 1]
            ok = code == self.success and value == value
            out[name] = (round(value, 1) if scale == 1.0 else int(value * scale)) if ok else None
        return out

    def free(self) -> None:
        for sample in (self.newest, self.spare):
            try:
                self.nvml.nvmlGpmSampleFree(sample)
            except Exception:
                pass


def _load_nvml() -> Any:
    import pynvml  # imported here: nothing touches NVML before a recorder asks for it

    return pynvml


class GpuProbe:
    """Samples every visible NVIDIA GPU. Construct, then ``start()``; check ``available``."""

    def __init__(self, enabled: bool = True, nvml_loader: Callable[[], Any] = _load_nvml,
                 clock: Callable[[], float] = time.time):
        """CLOCK gives Unix seconds, the clock NVML stamps its samples with."""
        self.enabled = enabled
        self._load = nvml_loader
        self.nvml: Any = None
        self.available = False
        self.reason: str | None = "GPU sampling switched off (--gpu off)" if not enabled else None
        self.driver: str | None = None
        self.devices: list[dict[str, Any]] = []
        self._handles: list[Any] = []
        self._last_seen: list[int] = []      # newest buffered-sample timestamp per device (µs)
        self._last_proc_seen: list[int] = []
        self._buffered: list[bool] = []
        self._clock = clock
        self._gpm: list[list[GpmTarget]] = []      # per device; empty where GPM is not sampled
        self.gpm_reasons: list[str | None] = []    # per device: why GPM is not sampled, or None
        self._proc_api: list[str | None] = []      # "info", "legacy" or None (neither supported)
        self._stamps: list[deque[int]] = []
        self.util_period: list[float | None] = []  # the driver's sample period per device, seconds
        self._news: list[dict[str, Any]] = []
        self._slow_due: float | None = None        # probe clock: when the slow fields are read next
        self._slow: list[dict[str, Any]] = []      # per device: the last reading of SLOW_FIELDS
        self._rates_util: list[Any] = []           # per device: utilization-rates "gpu", last read
        self._running: list[dict[int, Any]] = []   # per device: pid -> GPU memory, last read
        self._last_util: list[float | None] = []   # per device: the newest buffered value seen

    # -- set-up and tear-down -------------------------------------------------------------

    def start(self) -> None:
        if not self.enabled:
            return
        try:
            self.nvml = self._load()
        except ImportError:
            self.reason = "nvidia-ml-py is not installed"
            return
        try:
            self.nvml.nvmlInit()
        except Exception as exc:  # NVMLError subclasses: library not found, driver not loaded…
            self.reason = f"no NVIDIA driver ({self._describe(exc)})"
            self.nvml = None
            return
        try:
            count = self.nvml.nvmlDeviceGetCount()
            self.driver = self._text(self._query(self.nvml.nvmlSystemGetDriverVersion))
            now_us = int(self._clock() * 1e6)
            for index in range(count):
                handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
                memory = self._query(self.nvml.nvmlDeviceGetMemoryInfo, handle)
                self._handles.append(handle)
                self._last_seen.append(now_us)
                self._last_proc_seen.append(now_us)
                self._buffered.append(True)
                self._proc_api.append("info")
                self._stamps.append(deque(maxlen=PERIOD_AFTER + 1))
                self.util_period.append(None)
                self._slow.append(dict.fromkeys(SLOW_FIELDS))
                self._rates_util.append(None)
                self._running.append({})
                self._last_util.append(None)
                self.devices.append({
                    "index": index,
                    "name": self._text(self._query(self.nvml.nvmlDeviceGetName, handle)) or f"GPU {index}",
                    "uuid": self._text(self._query(self.nvml.nvmlDeviceGetUUID, handle)),
                    "mem_total": getattr(memory, "total", None),
                })
        except Exception as exc:
            self._fail(exc)
            return
        if not self._handles:
            self.reason = "no NVIDIA GPU found"
            return
        for index, handle in enumerate(self._handles):
            targets, reason = self._start_gpm(index, handle)
            self._gpm.append(targets)
            self.gpm_reasons.append(reason)
        self.available = True
        self.reason = None

    def _start_gpm(self, index: int, handle: Any) -> tuple[list[GpmTarget], str | None]:
        nvml = self.nvml
        missing = [name for name in GPM_FUNCTIONS if not hasattr(nvml, name)]
        if missing:
            return [], f"GPM not sampled: this nvidia-ml-py has no {missing[0]}"
        try:
            if not nvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
                return [], f"GPM not supported on {self.devices[index]['name']} (needs Hopper or newer)"
            mode = self._query(nvml.nvmlDeviceGetMigMode, handle)
            if mode and mode[0] == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
                instances = []
                for i in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
                    mig = self._query(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, i)
                    if mig is not None:
                        instances.append(nvml.nvmlDeviceGetGpuInstanceId(mig))
                if not instances:
                    return [], "GPM not sampled: MIG is on but no GPU instance exists"
                return [GpmTarget(nvml, handle, gi, self._clock) for gi in instances], None
            return [GpmTarget(nvml, handle, None, self._clock)], None
        except nvml.NVMLError_FunctionNotFound:
            return [], "GPM not sampled: the NVIDIA driver has no GPM functions (too old)"
        except nvml.NVMLError as exc:
            return [], f"GPM not sampled: {self._describe(exc)}"

    def take_news(self) -> list[dict[str, Any]]:
        """What changed since the last call: a driver sample period measured, GPM stopped."""
        news, self._news = self._news, []
        return news

    def stop(self) -> None:
        for targets in self._gpm:
            for target in targets:
                target.free()
        self._gpm = []
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass
            self.nvml = None
        self.available = False

    # -- sampling -------------------------------------------------------------------------

    def sample(self, pids: list[int] | None = None, run_start_unix: float = 0.0) -> list[dict[str, Any]] | None:
        """One record per device, or None once the probe is (or just became) unavailable."""
        if not self.available:
            return None
        try:
            now = self._clock()
            slow = self._slow_due is None or now + SLOW_SLACK >= self._slow_due
            if slow:  # on a schedule from the first poll, so that the reads stay a second apart
                due = (self._slow_due if self._slow_due is not None else now) + SLOW_EVERY
                self._slow_due = due if due > now else now + SLOW_EVERY
            wanted = set(pids or ())
            return [self._sample_device(i, h, wanted, run_start_unix, slow) for i, h in enumerate(self._handles)]
        except Exception as exc:
            self._fail(exc)
            return None

    def _read_slow(self, index: int, handle: Any) -> None:
        """The fields that change slowly, and the running-process list: once a second."""
        nvml, query = self.nvml, self._query
        memory = query(nvml.nvmlDeviceGetMemoryInfo, handle)
        power = query(nvml.nvmlDeviceGetPowerUsage, handle)
        if self._buffered[index]:  # else read on every poll
            self._read_rates(index, handle)
        slow = self._slow[index]
        slow["mem_used"] = getattr(memory, "used", None)
        slow["mem_total"] = getattr(memory, "total", None)
        slow["power_w"] = round(power / 1000.0, 1) if power is not None else None
        slow["temp_c"] = query(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
        slow["sm_clock_mhz"] = query(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM)
        running = query(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
        self._running[index] = {p.pid: getattr(p, "usedGpuMemory", None) for p in running}

    def _read_rates(self, index: int, handle: Any) -> None:
        rates = self._query(self.nvml.nvmlDeviceGetUtilizationRates, handle)
        self._rates_util[index] = getattr(rates, "gpu", None)
        self._slow[index]["mem_util"] = getattr(rates, "memory", None)

    def _sample_device(self, index: int, handle: Any, pids: set[int], run_start_unix: float,
                       slow: bool) -> dict[str, Any]:
        buffered = self._drain_samples(index, handle, run_start_unix)
        if slow:
            self._read_slow(index, handle)
        if not self._buffered[index]:  # no buffer: the average is the only utilization there is
            self._read_rates(index, handle)
        record: dict[str, Any] = {"index": index, "util": None, **self._slow[index]}
        if buffered:
            record["util_samples"] = buffered
            self._last_util[index] = buffered[-1][1]
        last = self._last_util[index]
        record["util"] = last if last is not None and self._buffered[index] else self._rates_util[index]
        if self._gpm[index]:
            self._read_gpm(index, record)
        record["procs"] = self._processes(index, handle, pids)
        return record

    def _read_gpm(self, index: int, record: dict[str, Any]) -> None:
        """GPM fields into RECORD; a GPM failure stops GPM on this device only, with a reason."""
        targets = self._gpm[index]
        try:
            if targets[0].gpu_instance is None:
                metrics = targets[0].read()
                if metrics is not None:
                    record.update(metrics)
                return
            instances = []
            for target in targets:
                metrics = target.read()
                if metrics is not None:
                    instances.append({"gpu_instance": target.gpu_instance, **metrics})
            if instances:
                record["mig"] = instances
        except self.nvml.NVMLError_GpuIsLost:
            raise  # the whole GPU is gone, not only GPM: sample() makes the probe unavailable
        except self.nvml.NVMLError as exc:
            for target in targets:
                target.free()
            self._gpm[index] = []
            self.gpm_reasons[index] = f"GPM sampling stopped: {self._describe(exc)}"
            self._news.append({"kind": "gpm_stopped", "index": index, "reason": self.gpm_reasons[index]})

    def _drain_samples(self, index: int, handle: Any, run_start_unix: float) -> list[list[float]]:
        """The driver's utilization samples newer than the last ones seen, as [t, percent]."""
        if not self._buffered[index]:
            return []
        nvml = self.nvml
        try:
            value_type, samples = nvml.nvmlDeviceGetSamples(
                handle, nvml.NVML_GPU_UTILIZATION_SAMPLES, self._last_seen[index])
        except nvml.NVMLError_NotFound:
            return []  # no new samples since the last call
        except self._absent:
            self._buffered[index] = False
            return []
        field = NVML_VALUE_FIELDS.get(value_type, "uiVal")
        out = []
        stamps = self._stamps[index]
        for sample in samples:
            stamp = int(sample.timeStamp)
            if stamp <= self._last_seen[index]:
                continue
            self._last_seen[index] = stamp
            stamps.append(stamp)
            out.append([round(stamp / 1e6 - run_start_unix, 3), float(getattr(sample.sampleValue, field))])
        if self.util_period[index] is None and len(stamps) > PERIOD_AFTER:
            ordered = list(stamps)
            period = statistics.median(b - a for a, b in itertools.pairwise(ordered)) / 1e6
            self.util_period[index] = round(period, 4)
            self._news.append({"kind": "util_period", "index": index, "seconds": self.util_period[index]})
        return out

    def _processes(self, index: int, handle: Any, pids: set[int]) -> list[dict[str, Any]]:
        """The workload's processes on this GPU: memory, and their SM and memory use averaged
        over the driver samples newer than the last poll's (each sample counted once)."""
        running = self._running[index]
        used = {pid: mem for pid, mem in running.items() if pid in pids} if pids else dict(running)
        last_seen = self._last_proc_seen[index]
        newest = last_seen
        sums: dict[int, list[float]] = {}
        for sample in self._process_samples(index, handle, last_seen):
            stamp = int(sample.timeStamp)
            if stamp <= last_seen:
                continue  # counted in an earlier poll
            newest = max(newest, stamp)
            if pids and sample.pid not in pids:
                continue
            acc = sums.setdefault(sample.pid, [0.0, 0.0, 0])
            acc[0] += sample.smUtil
            acc[1] += sample.memUtil
            acc[2] += 1
        self._last_proc_seen[index] = newest
        out = []
        for pid in sorted(set(used) | set(sums)):
            acc = sums.get(pid)  # type: ignore[assignment]  # None: a process seen only in the memory list
            out.append({"pid": pid, "mem": used.get(pid),
                        "util": round(acc[0] / acc[2], 1) if acc else None,
                        "mem_util": round(acc[1] / acc[2], 1) if acc else None})
        return out

    def _process_samples(self, index: int, handle: Any, last_seen: int) -> list[Any]:
        """Per-process samples newer than LAST_SEEN: the versioned call, else the deprecated one."""
        nvml = self.nvml
        if self._proc_api[index] == "info":
            try:
                return nvml.nvmlDeviceGetProcessesUtilizationInfo(handle, last_seen)
            except AttributeError:  # an nvidia-ml-py older than the call
                self._proc_api[index] = "legacy"
            except nvml.NVMLError_NotFound:
                return []  # nothing new
            except self._absent:
                self._proc_api[index] = "legacy"
        if self._proc_api[index] == "legacy":
            try:
                return nvml.nvmlDeviceGetProcessUtilization(handle, last_seen)
            except nvml.NVMLError_NotFound:
                return []
            except self._absent:
                self._proc_api[index] = None
        return []

    # -- NVML habits ----------------------------------------------------------------------

    @property
    def _absent(self) -> tuple[type[Exception], ...]:
        """pynvml's errors for a call this GPU or driver does not have (nvitop catches the same)."""
        return (self.nvml.NVMLError_NotSupported, self.nvml.NVMLError_FunctionNotFound)

    def _query(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call NVML; "not supported" and "not found" become None instead of an exception."""
        try:
            return fn(*args)
        except (*self._absent, self.nvml.NVMLError_NotFound):
            return None

    def _fail(self, exc: Exception) -> None:
        self.available = False
        self.reason = f"NVML error: {self._describe(exc)}"

    @staticmethod
    def _describe(exc: Exception) -> str:
        return str(exc) or type(exc).__name__

    @staticmethod
    def _text(value: Any) -> str | None:
        if isinstance(value, bytes):
            return value.decode(errors="replace")
        return value
