"""GpuProbe's NVML habits against the fake NVML of tests/fakes (pynvml's own structures and
exception classes; the real library needs a driver and a GPU): what each NVML error becomes."""

from __future__ import annotations

import pynvml
import pytest

from devicewatch.probes.gpu import GpuProbe
from tests.fakes.nvml import T0, Clock, FakeGpu, FakeNVML, FakeProcess
from tests.fakes.nvml import started_probe as started



def poll_at(probe: GpuProbe, clock: Clock, t: float, pids=(42,)) -> list[dict] | None:
    clock.now = T0 + t
    return probe.sample(list(pids), run_start_unix=T0)


def two_gpus() -> list[FakeGpu]:
    """GPU 0 with the workload (pid 42) and a stranger (pid 7); GPU 1 without GPM."""
    return [FakeGpu(name="Fake GPU 0", util_period=0.1, processes=[FakeProcess(42, mem=1 << 29), FakeProcess(7)]),
            FakeGpu(name="Fake GPU 1", gpm=False, util=50.0)]


def test_devices_and_driver_are_described():
    probe, _, _ = started(two_gpus())
    assert probe.reason is None and probe.driver == "570.86"
    assert [d["name"] for d in probe.devices] == ["Fake GPU 0", "Fake GPU 1"]
    assert probe.gpm_reasons == [None, "GPM not supported on Fake GPU 1 (needs Hopper or newer)"]


def test_buffered_samples_are_drained_once_each():
    probe, _, clock = started(two_gpus())
    first = poll_at(probe, clock, 0.25)
    # The driver samples every 0.1 s: 0.1 and 0.2 s are new at 0.25 s, 0.3 s at 0.35 s.
    assert [t for t, _ in first[0]["util_samples"]] == [0.1, 0.2]
    assert [t for t, _ in poll_at(probe, clock, 0.35)[0]["util_samples"]] == [0.3]


def test_not_found_from_the_buffer_means_nothing_new_and_the_last_value_stands():
    probe, nvml, clock = started(two_gpus())
    assert poll_at(probe, clock, 0.25)[0]["util"] == 97.0
    # Polled again at the same instant: the fake raises NVMLError_NotFound (no sample newer).
    again = poll_at(probe, clock, 0.25)
    assert probe.available and "util_samples" not in again[0] and again[0]["util"] == 97.0
    assert nvml.calls["nvmlDeviceGetSamples"] == 4   # two polls, two GPUs: the buffer is still used


@pytest.mark.parametrize("error", [pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND])
def test_a_buffer_the_gpu_lacks_falls_back_to_the_average_for_good(error):
    probe, nvml, clock = started(two_gpus())
    nvml.break_call("nvmlDeviceGetSamples", error)
    records = poll_at(probe, clock, 0.25)
    assert probe.available and [r["util"] for r in records] == [97, 50]
    assert not any("util_samples" in r for r in records)
    poll_at(probe, clock, 0.5)
    assert nvml.calls["nvmlDeviceGetSamples"] == 2   # tried once per GPU, then not again


@pytest.mark.parametrize("error", [pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
                                   pynvml.NVML_ERROR_NOT_FOUND])
def test_a_reading_the_gpu_does_not_have_is_none_and_the_others_stay(error):
    probe, nvml, clock = started(two_gpus())
    nvml.break_call("nvmlDeviceGetPowerUsage", error)
    records = poll_at(probe, clock, 0.25)
    assert probe.available and [r["power_w"] for r in records] == [None, None]
    assert [r["temp_c"] for r in records] == [51, 51] and records[0]["util"] == 97.0


def test_only_the_workloads_processes_are_reported():
    probe, _, clock = started(two_gpus())
    gpu0, gpu1 = poll_at(probe, clock, 0.25)
    # The driver's per-process samples at 0.1 and 0.2 s, both at the fake's 50% and 10%.
    assert gpu0["procs"] == [{"pid": 42, "mem": 1 << 29, "util": 50.0, "mem_util": 10.0}]
    assert gpu1["procs"] == []


@pytest.mark.parametrize("error", [pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND])
def test_per_process_use_falls_back_to_the_older_call_then_to_none(error):
    probe, nvml, clock = started(two_gpus())
    nvml.break_call("nvmlDeviceGetProcessesUtilizationInfo", error)
    assert poll_at(probe, clock, 0.25)[0]["procs"][0]["util"] == 50.0   # the older call answered
    assert nvml.calls["nvmlDeviceGetProcessUtilization"] == 2
    nvml.break_call("nvmlDeviceGetProcessUtilization", error)
    gpu0 = poll_at(probe, clock, 0.5)[0]
    # Neither call works: the process is still listed with its memory, its use unknown.
    assert probe.available and gpu0["procs"] == [{"pid": 42, "mem": 1 << 29, "util": None, "mem_util": None}]
    poll_at(probe, clock, 0.75)
    assert nvml.calls["nvmlDeviceGetProcessUtilization"] == 4   # not tried again after it failed


def test_an_unexpected_nvml_error_mid_run_makes_the_probe_unavailable_with_a_reason():
    probe, nvml, clock = started(two_gpus())
    assert poll_at(probe, clock, 0.25) is not None
    nvml.break_call("nvmlDeviceGetSamples", pynvml.NVML_ERROR_GPU_IS_LOST)
    assert poll_at(probe, clock, 0.5) is None
    assert not probe.available and probe.reason == "NVML error: GPU is lost"


def test_a_gpu_lost_while_reading_gpm_ends_gpu_sampling_not_only_gpm():
    probe, nvml, clock = started(two_gpus())
    poll_at(probe, clock, 0.0)
    nvml.break_call("nvmlGpmSampleGet", pynvml.NVML_ERROR_GPU_IS_LOST)
    assert poll_at(probe, clock, 0.25) is None
    assert not probe.available and probe.reason == "NVML error: GPU is lost"


def test_no_library_no_driver_and_switched_off_give_reasons():
    def missing():
        raise ImportError("no pynvml")

    probe = GpuProbe(nvml_loader=missing)
    probe.start()
    assert not probe.available and probe.reason == "nvidia-ml-py is not installed"
    nvml = FakeNVML(two_gpus(), init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    probe = GpuProbe(nvml_loader=nvml.module)
    probe.start()
    assert not probe.available and probe.reason == "no NVIDIA driver (Driver Not Loaded)"
    none = GpuProbe(nvml_loader=FakeNVML([]).module)
    none.start()
    assert not none.available and none.reason == "no NVIDIA GPU found"
    off = GpuProbe(enabled=False)
    off.start()
    assert not off.available and "--gpu off" in off.reason
