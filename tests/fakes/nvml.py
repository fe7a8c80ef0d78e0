"""A fake NVML, written from the installed ``pynvml`` (nvidia-ml-py): same function names and
arguments, the binding's own ctypes structures and ``NVMLError`` classes, so that code tested
against it runs unchanged on a real driver. It is a test input, never the thing under test.

    nvml = FakeNVML([FakeGpu(), FakeGpu(gpm=False)])
    probe = GpuProbe(nvml_loader=nvml.module)

What it models, and where that comes from:

- ``nvmlDeviceGetSamples``: the driver's utilization buffer, one sample every
  ``FakeGpu.util_period`` seconds on a fixed grid, stamped in µs since the epoch; samples newer
  than ``lastSeen`` are returned, ``NVML_ERROR_NOT_FOUND`` when there are none.
- Per-process use: ``nvmlDeviceGetProcessesUtilizationInfo`` (returns
  ``c_nvmlProcessUtilizationInfo_v1_t``) and the older ``nvmlDeviceGetProcessUtilization``
  (``c_nvmlProcessUtilizationSample_t``), on the same grid.
- GPM: ``nvmlGpmSampleAlloc`` returns a real ``c_nvmlGpmSample_t`` pointer (its address is the
  fake's sample id); ``nvmlGpmMetricsGet`` fills the caller's ``c_nvmlGpmMetricsGet_t`` in place
  and refuses two samples 100 ms apart or less (the interval NVML documents for GPM).
  PCIe rates are in MiB/s, as the binding's comments on ``NVML_GPM_METRIC_PCIE_*_PER_SEC`` say.
- MIG: with ``FakeGpu.mig`` set, MIG mode is on, ``nvmlGpmSampleGet`` on the whole GPU is not
  supported and ``nvmlGpmMigSampleGet`` takes the GPU instance ids.
- Old setups: ``driver_has_gpm=False`` makes the GPM functions fail with
  ``NVML_ERROR_FUNCTION_NOT_FOUND`` (what the binding raises for a symbol the driver lacks);
  ``binding_has_gpm=False`` leaves them out of the module (an old nvidia-ml-py);
  ``process_info_api=False`` makes ``nvmlDeviceGetProcessesUtilizationInfo`` not found.
- Cost: ``latency`` seconds slept in every call (a driver round trip the CPU waits for; a dict
  gives it per function), and ``stall=(probability, seconds)`` for the rare slow call.
"""

from __future__ import annotations

import ctypes
import random
import threading
import time
import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import pynvml as real

Value = float | Callable[[float], float]   # a constant, or a function of Unix time in seconds

DEFAULT_GPM = {
    real.NVML_GPM_METRIC_SM_UTIL: 31.0,
    real.NVML_GPM_METRIC_SM_OCCUPANCY: 12.5,
    real.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 4.0,
    real.NVML_GPM_METRIC_DRAM_BW_UTIL: 22.0,
    real.NVML_GPM_METRIC_PCIE_TX_PER_SEC: 100.0,   # MiB/s
    real.NVML_GPM_METRIC_PCIE_RX_PER_SEC: 900.0,   # MiB/s
}
GPM_FUNCTIONS = ("nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleFree", "nvmlGpmSampleGet",
                 "nvmlGpmMigSampleGet", "nvmlGpmMetricsGet")


@dataclass
class FakeProcess:
    pid: int
    mem: int = 2 << 30
    sm_util: Value = 50.0
    mem_util: Value = 10.0


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    gpm: bool = True                         # Hopper or newer
    util: Value = 97.0
    util_period: float = 1 / 6               # the driver's own sampling period (167 ms)
    buffered: bool = True                    # nvmlDeviceGetSamples supported
    gpm_values: dict[int, Value] = field(default_factory=lambda: dict(DEFAULT_GPM))
    mig: tuple[int, ...] = ()                # GPU instance ids; MIG mode is on when non-empty
    mig_values: dict[int, dict[int, Value]] = field(default_factory=dict)
    processes: list[FakeProcess] = field(default_factory=list)
    mem_total: int = 80 << 30
    mem_used: int = 4 << 30
    power_mw: int = 312_400
    temp_c: int = 51
    sm_clock_mhz: int = 1980


@dataclass(frozen=True)
class FakeHandle:
    index: int
    gpu_instance: int | None = None          # set on a MIG device handle


def _at(value: Value, t: float) -> float:
    return float(value(t)) if callable(value) else float(value)


class FakeNVML:
    def __init__(self, gpus: list[FakeGpu], *, clock: Callable[[], float] = time.time,
                 latency: float | dict[str, float] = 0.0, stall: tuple[float, float] | None = None,
                 driver: str = "570.86", driver_has_gpm: bool = True, binding_has_gpm: bool = True,
                 process_info_api: bool = True, init_error: int | None = None, buffer_seconds: float = 20.0,
                 seed: int = 1):
        self.gpus = gpus
        self.clock = clock
        self.latency = latency
        self.stall = stall
        self.driver = driver
        self.driver_has_gpm = driver_has_gpm
        self.binding_has_gpm = binding_has_gpm
        self.process_info_api = process_info_api
        self.init_error = init_error
        self.buffer_seconds = buffer_seconds
        self.calls: Counter[str] = Counter()
        self.broken: dict[str, tuple[int, int]] = {}   # function name -> (error, last call that still answers)
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._samples: dict[int, tuple[FakeHandle, float]] = {}   # GPM sample address -> (target, time)
        self._next_sample = 0x1000
        self._grid_start = clock()

    # -- the module the probe loads -------------------------------------------------------

    def module(self) -> types.ModuleType:
        """A module with pynvml's constants, structures and errors, and this fake's functions."""
        mod = types.ModuleType("pynvml")
        for name in dir(real):
            if name.startswith(("NVML_", "NVMLError", "c_nvml")) or name == "ProcessesUtilizationInfo_v1":
                setattr(mod, name, getattr(real, name))
        for name in dir(self):
            if not name.startswith("nvml"):
                continue
            if name.startswith("nvmlGpm") and not self.binding_has_gpm:
                continue
            setattr(mod, name, self._timed(name, getattr(self, name)))
        mod.fake = self
        return mod

    def break_call(self, name: str, error: int, after: int = 0) -> None:
        """NAME raises NVMLError(ERROR) (a GPU lost mid-run, say) from its call AFTER + 1 on."""
        self.broken[name] = (error, self.calls[name] + after)

    def _timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        latency = self.latency.get(name, 0.0) if isinstance(self.latency, dict) else self.latency

        def call(*args: Any) -> Any:
            self.calls[name] += 1
            pause = latency
            if self.stall is not None and self._random.random() < self.stall[0]:
                pause += self.stall[1]
            if pause:
                time.sleep(pause)
            broken = self.broken.get(name)
            if broken is not None and self.calls[name] > broken[1]:
                raise real.NVMLError(broken[0])
            return fn(*args)

        call.__name__ = name
        return call

    def _gpu(self, handle: FakeHandle) -> FakeGpu:
        if not isinstance(handle, FakeHandle) or not 0 <= handle.index < len(self.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[handle.index]

    def _grid(self, gpu: FakeGpu, after_us: int) -> list[int]:
        """The driver's sample stamps (µs) newer than AFTER_US still in its buffer."""
        now = self.clock()
        period = gpu.util_period
        first = max(after_us / 1e6, now - self.buffer_seconds, self._grid_start)
        k = int((first - self._grid_start) / period)
        stamps = []
        while True:
            t = self._grid_start + k * period
            if t > now:
                return stamps
            stamp = int(round(t * 1e6))
            if stamp > after_us:
                stamps.append(stamp)
            k += 1

    # -- library and devices --------------------------------------------------------------

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        pass

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        if not 0 <= index < len(self.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return FakeHandle(index)

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str:
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str:
        return f"GPU-fake-{handle.index:04d}"

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle) -> Any:
        gpu = self._gpu(handle)
        return real.c_nvmlMemory_t(total=gpu.mem_total, free=gpu.mem_total - gpu.mem_used, used=gpu.mem_used)

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> Any:
        gpu = self._gpu(handle)
        return real.c_nvmlUtilization_t(gpu=int(_at(gpu.util, self.clock())), memory=10)

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        return self._gpu(handle).power_mw

    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        return self._gpu(handle).temp_c

    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, clock_type: int) -> int:
        return self._gpu(handle).sm_clock_mhz

    def nvmlDeviceGetSamples(self, handle: FakeHandle, sampling_type: int, timeStamp: int) -> tuple[int, list[Any]]:
        gpu = self._gpu(handle)
        if not gpu.buffered or sampling_type != real.NVML_GPU_UTILIZATION_SAMPLES:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        stamps = self._grid(gpu, int(timeStamp))
        if not stamps:
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return real.NVML_VALUE_TYPE_UNSIGNED_INT, [
            real.c_nvmlSample_t(timeStamp=s, sampleValue=real.c_nvmlValue_t(uiVal=int(_at(gpu.util, s / 1e6))))
            for s in stamps]

    # -- processes ------------------------------------------------------------------------

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        return [real.nvmlStructToFriendlyObject(real.c_nvmlProcessInfo_t(
            pid=p.pid, usedGpuMemory=p.mem, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF))
            for p in self._gpu(handle).processes]

    def _process_rows(self, handle: FakeHandle, after_us: int) -> list[tuple[int, FakeProcess]]:
        gpu = self._gpu(handle)
        rows = [(stamp, p) for stamp in self._grid(gpu, after_us) for p in gpu.processes]
        if not rows:
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return rows

    def nvmlDeviceGetProcessesUtilizationInfo(self, handle: FakeHandle, timeStamp: int) -> list[Any]:
        if not self.process_info_api:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)
        return [real.c_nvmlProcessUtilizationInfo_v1_t(
            timeStamp=stamp, pid=p.pid, smUtil=int(_at(p.sm_util, stamp / 1e6)),
            memUtil=int(_at(p.mem_util, stamp / 1e6))) for stamp, p in self._process_rows(handle, int(timeStamp))]

    def nvmlDeviceGetProcessUtilization(self, handle: FakeHandle, timeStamp: int) -> list[Any]:
        return [real.c_nvmlProcessUtilizationSample_t(
            pid=p.pid, timeStamp=stamp, smUtil=int(_at(p.sm_util, stamp / 1e6)),
            memUtil=int(_at(p.mem_util, stamp / 1e6))) for stamp, p in self._process_rows(handle, int(timeStamp))]

    # -- MIG ------------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, handle: FakeHandle) -> list[int]:
        mode = real.NVML_DEVICE_MIG_ENABLE if self._gpu(handle).mig else real.NVML_DEVICE_MIG_DISABLE
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeHandle) -> int:
        return 7 if self._gpu(handle).mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeHandle, index: int) -> FakeHandle:
        instances = self._gpu(handle).mig
        if not 0 <= index < len(instances):
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return FakeHandle(handle.index, instances[index])

    def nvmlDeviceGetGpuInstanceId(self, handle: FakeHandle) -> int:
        if handle.gpu_instance is None:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return handle.gpu_instance

    # -- GPM ------------------------------------------------------------------------------

    def _gpm_driver(self) -> None:
        if not self.driver_has_gpm:
            raise real.NVMLError(real.NVML_ERROR_FUNCTION_NOT_FOUND)

    def nvmlGpmQueryDeviceSupport(self, handle: FakeHandle) -> Any:
        self._gpm_driver()
        support = real.c_nvmlGpmSupport_t()
        support.version = real.NVML_GPM_SUPPORT_VERSION
        support.isSupportedDevice = int(self._gpu(handle).gpm)
        return support

    def nvmlGpmSampleAlloc(self) -> Any:
        self._gpm_driver()
        with self._lock:
            address = self._next_sample
            self._next_sample += 0x100
            self._samples[address] = (FakeHandle(-1), float("nan"))
        return ctypes.cast(ctypes.c_void_p(address), real.c_nvmlGpmSample_t)

    def _address(self, sample: Any) -> int:
        address = ctypes.cast(sample, ctypes.c_void_p).value
        if address not in self._samples:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return address

    def nvmlGpmSampleFree(self, gpmSample: Any) -> None:
        self._gpm_driver()
        del self._samples[self._address(gpmSample)]

    def nvmlGpmSampleGet(self, device: FakeHandle, gpmSample: Any) -> Any:
        self._gpm_driver()
        gpu = self._gpu(device)
        if not gpu.gpm or gpu.mig:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        self._samples[self._address(gpmSample)] = (device, self.clock())
        return gpmSample

    def nvmlGpmMigSampleGet(self, device: FakeHandle, gpuInstanceId: int, gpmSample: Any) -> Any:
        self._gpm_driver()
        gpu = self._gpu(device)
        if not gpu.gpm:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        if gpuInstanceId not in gpu.mig:
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        self._samples[self._address(gpmSample)] = (FakeHandle(device.index, gpuInstanceId), self.clock())
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: Any) -> Any:
        self._gpm_driver()
        if metricsGet.version != real.NVML_GPM_METRICS_GET_VERSION:
            raise real.NVMLError(real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        first, t1 = self._samples[self._address(metricsGet.sample1)]
        second, t2 = self._samples[self._address(metricsGet.sample2)]
        if first != second or not t2 - t1 > 0.1:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        gpu = self._gpu(FakeHandle(first.index))
        values = gpu.gpm_values if first.gpu_instance is None else gpu.mig_values.get(first.gpu_instance, {})
        middle = (t1 + t2) / 2
        for i in range(metricsGet.numMetrics):
            metric = metricsGet.metrics[i]
            value = values.get(metric.metricId)
            if value is None:
                metric.nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
            else:
                metric.nvmlReturn = real.NVML_SUCCESS
                metric.value = _at(value, middle)
        return metricsGet


T0 = 1000.0  # the unix second a test's clock starts at


class Clock:
    """Unix seconds that only move when a test says so; the probe and the fake share it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def started_probe(gpus: list[FakeGpu], **fake_options: Any) -> tuple[Any, FakeNVML, Clock]:
    """A GpuProbe started on a fake NVML of GPUS, both on one test clock."""
    from devicewatch.probes.gpu import GpuProbe

    clock = Clock()
    nvml = FakeNVML(gpus, clock=clock, **fake_options)
    probe = GpuProbe(nvml_loader=nvml.module, clock=clock)
    probe.start()
    assert probe.available, probe.reason
    return probe, nvml, clock
