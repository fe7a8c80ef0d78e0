"""GpuProbe against a fake NVML module (a test input: the real one needs a driver and a GPU)."""

from types import SimpleNamespace

from devicewatch.probes.gpu import GpuProbe


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


def fake_nvml(buffered=True, samples_by_call=None):
    """Two GPUs; device 0 has buffered utilization samples, per-process use for pid 42."""
    calls = {"samples": 0}
    samples_by_call = samples_by_call or [[(1_000_100_000, 80), (1_000_200_000, 20)], [(1_000_300_000, 95)]]

    def get_samples(handle, kind, last_seen):
        if not buffered:
            raise NVMLError(3)  # NOT_SUPPORTED
        batch = samples_by_call[min(calls["samples"], len(samples_by_call) - 1)] if handle == 0 else []
        calls["samples"] += handle == 0
        if not batch:
            raise NVMLError(6)  # NOT_FOUND: nothing new
        return 1, [SimpleNamespace(timeStamp=ts, sampleValue=SimpleNamespace(uiVal=v)) for ts, v in batch]

    def power(handle):
        if handle == 1:
            raise NVMLError(3)
        return 250_500

    return SimpleNamespace(
        NVMLError=NVMLError, NVML_ERROR_NOT_SUPPORTED=3, NVML_ERROR_NOT_FOUND=6,
        NVML_ERROR_FUNCTION_NOT_FOUND=13, NVML_GPU_UTILIZATION_SAMPLES=1, NVML_TEMPERATURE_GPU=0,
        NVML_CLOCK_SM=1,
        nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 2,
        nvmlSystemGetDriverVersion=lambda: "570.86",
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: f"Fake GPU {h}", nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=1 << 30, total=8 << 30),
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=50, memory=10),
        nvmlDeviceGetPowerUsage=power, nvmlDeviceGetTemperature=lambda h, k: 60,
        nvmlDeviceGetClockInfo=lambda h, k: 1500, nvmlDeviceGetSamples=get_samples,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [SimpleNamespace(pid=42, usedGpuMemory=1 << 29),
                                                         SimpleNamespace(pid=7, usedGpuMemory=1 << 20)],
        nvmlDeviceGetProcessUtilization=lambda h, ts: [SimpleNamespace(pid=42, smUtil=77, memUtil=12, timeStamp=ts + 1)],
    )


def started(nvml):
    probe = GpuProbe(nvml_loader=lambda: nvml)
    probe.start()
    probe._last_seen = [0, 0]  # start() takes "now"; the fake's stamps are from 1970
    return probe


def test_devices_and_driver_are_described():
    probe = started(fake_nvml())
    assert probe.available and probe.reason is None and probe.driver == "570.86"
    assert [d["name"] for d in probe.devices] == ["Fake GPU 0", "Fake GPU 1"]


def test_buffered_samples_are_drained_once_each():
    probe = started(fake_nvml())
    first = probe.sample(pids=[42], run_start_unix=1000.0)
    # Stamps in µs since the epoch, minus the run's start: 1000.1 s -> 0.1 s, 1000.2 -> 0.2.
    assert first[0]["util_samples"] == [[0.1, 80.0], [0.2, 20.0]]
    assert first[0]["util"] == 20.0  # the newest buffered value
    second = probe.sample(pids=[42], run_start_unix=1000.0)
    assert second[0]["util_samples"] == [[0.3, 95.0]]
    # Device 1 has no buffered samples: the one-second average stands, unsupported power is None.
    assert "util_samples" not in second[1] and second[1]["util"] == 50 and second[1]["power_w"] is None
    assert first[0]["power_w"] == 250.5


def test_only_the_workloads_processes_are_reported():
    probe = started(fake_nvml())
    (gpu0, _) = probe.sample(pids=[42], run_start_unix=1000.0)
    assert gpu0["procs"] == [{"pid": 42, "mem": 1 << 29, "util": 77, "mem_util": 12}]


def test_unsupported_buffer_falls_back_to_the_average():
    probe = started(fake_nvml(buffered=False))
    (gpu0, _) = probe.sample(pids=[], run_start_unix=1000.0)
    assert gpu0["util"] == 50 and "util_samples" not in gpu0


def test_no_library_and_no_driver_give_reasons():
    def missing():
        raise ImportError("no pynvml")

    probe = GpuProbe(nvml_loader=missing)
    probe.start()
    assert not probe.available and "nvidia-ml-py" in probe.reason
    broken = fake_nvml()
    broken.nvmlInit = lambda: (_ for _ in ()).throw(NVMLError(9))
    probe = GpuProbe(nvml_loader=lambda: broken)
    probe.start()
    assert not probe.available and probe.reason.startswith("no NVIDIA driver")
    off = GpuProbe(enabled=False)
    off.start()
    assert not off.available and "--gpu off" in off.reason


def test_an_error_mid_run_makes_the_probe_unavailable_with_a_reason():
    nvml = fake_nvml()
    probe = started(nvml)
    assert probe.sample([], 1000.0) is not None
    # GPU lost, seen by the buffered-utilization read that every poll makes
    nvml.nvmlDeviceGetSamples = lambda h, k, ts: (_ for _ in ()).throw(NVMLError(15))
    assert probe.sample([], 1000.0) is None
    assert not probe.available and probe.reason.startswith("NVML error")
