"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` distribution, imported as ``pynvml``).

Every query goes through ``_query``, which turns "not supported" into ``None`` so that one
missing counter never hides the others. A missing library, driver or device, or an NVML error
in the middle of a run, leaves the probe *unavailable* with a reason; the recorder writes that
reason down and samples everything else as before.

Utilization is read from the driver's buffer of recent samples (``nvmlDeviceGetSamples``),
drained on every call, so a dip shorter than the sampling period is still seen as it
happened. Where the buffer is not supported, the one-second average of
``nvmlDeviceGetUtilizationRates`` is used instead.
"""

from __future__ import annotations

import time
from typing import Any, Callable

# Each GPU's readings in a sample, in the order the run file stores them (like nvitop's
# SNAPSHOT_KEYS): the writer and the reader take the list from here through the header, so a
# field added here is recorded and read without touching either. The memory total does not
# change: it is in the header (``host.gpus[i].mem_total``). Memory is stored in MiB.
GPU_FIELDS = ("util", "mem_util", "mem_used", "power_w", "temp_c", "sm_clock_mhz")
GPU_SCALE = {"mem_used": 1 << 20}
# Per-process use of a GPU: one entry per process of the workload seen on it.
GPU_PROC_FIELDS = ("pid", "mem", "util")
GPU_PROC_SCALE = {"mem": 1 << 20}

NVML_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _load_nvml() -> Any:
    import pynvml  # imported here: nothing touches NVML before a recorder asks for it

    return pynvml


class GpuProbe:
    """Samples every visible NVIDIA GPU. Construct, then ``start()``; check ``available``."""

    def __init__(self, enabled: bool = True, nvml_loader: Callable[[], Any] = _load_nvml):
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
            now_us = int(time.time() * 1e6)
            for index in range(count):
                handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
                memory = self._query(self.nvml.nvmlDeviceGetMemoryInfo, handle)
                self._handles.append(handle)
                self._last_seen.append(now_us)
                self._last_proc_seen.append(now_us)
                self._buffered.append(True)
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
        self.available = True
        self.reason = None

    def stop(self) -> None:
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
            return [self._sample_device(i, h, set(pids or ()), run_start_unix)
                    for i, h in enumerate(self._handles)]
        except Exception as exc:
            self._fail(exc)
            return None

    def _sample_device(self, index: int, handle: Any, pids: set[int], run_start_unix: float) -> dict[str, Any]:
        nvml = self.nvml
        rates = self._query(nvml.nvmlDeviceGetUtilizationRates, handle)
        memory = self._query(nvml.nvmlDeviceGetMemoryInfo, handle)
        power = self._query(nvml.nvmlDeviceGetPowerUsage, handle)
        record: dict[str, Any] = {
            "index": index,
            "util": getattr(rates, "gpu", None),
            "mem_util": getattr(rates, "memory", None),
            "mem_used": getattr(memory, "used", None),
            "mem_total": getattr(memory, "total", None),
            "power_w": round(power / 1000.0, 1) if power is not None else None,
            "temp_c": self._query(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": self._query(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        }
        buffered = self._drain_samples(index, handle, run_start_unix)
        if buffered:
            record["util_samples"] = buffered
            record["util"] = buffered[-1][1]
        record["procs"] = self._processes(index, handle, pids)
        return record

    def _drain_samples(self, index: int, handle: Any, run_start_unix: float) -> list[list[float]]:
        """The driver's utilization samples newer than the last ones seen, as [t, percent]."""
        if not self._buffered[index]:
            return []
        try:
            value_type, samples = self.nvml.nvmlDeviceGetSamples(
                handle, self.nvml.NVML_GPU_UTILIZATION_SAMPLES, self._last_seen[index])
        except self.nvml.NVMLError as exc:
            if self._not_supported(exc):
                self._buffered[index] = False
                return []
            if getattr(exc, "value", None) == getattr(self.nvml, "NVML_ERROR_NOT_FOUND", -1):
                return []  # no new samples since the last call
            raise
        field = NVML_VALUE_FIELDS.get(value_type, "uiVal")
        out = []
        for sample in samples:
            stamp = int(sample.timeStamp)
            if stamp <= self._last_seen[index]:
                continue
            self._last_seen[index] = stamp
            out.append([round(stamp / 1e6 - run_start_unix, 3), float(getattr(sample.sampleValue, field))])
        return out

    def _processes(self, index: int, handle: Any, pids: set[int]) -> list[dict[str, Any]]:
        nvml = self.nvml
        running = self._query(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
        used = {p.pid: getattr(p, "usedGpuMemory", None) for p in running if not pids or p.pid in pids}
        util: dict[int, int] = {}
        samples = self._query(nvml.nvmlDeviceGetProcessUtilization, handle, self._last_proc_seen[index]) or []
        for sample in samples:
            if pids and sample.pid not in pids:
                continue
            util[sample.pid] = sample.smUtil
            self._last_proc_seen[index] = max(self._last_proc_seen[index], int(sample.timeStamp))
        return [{"pid": pid, "mem": used.get(pid), "util": util.get(pid)}
                for pid in sorted(set(used) | set(util))]

    # -- NVML habits ----------------------------------------------------------------------

    def _query(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call NVML; "not supported" and "not found" become None instead of an exception."""
        try:
            return fn(*args)
        except self.nvml.NVMLError as exc:
            if self._not_supported(exc) or getattr(exc, "value", None) == getattr(self.nvml, "NVML_ERROR_NOT_FOUND", -1):
                return None
            raise

    def _not_supported(self, exc: Exception) -> bool:
        codes = {getattr(self.nvml, "NVML_ERROR_NOT_SUPPORTED", -1),
                 getattr(self.nvml, "NVML_ERROR_FUNCTION_NOT_FOUND", -1)}
        return getattr(exc, "value", None) in codes

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
