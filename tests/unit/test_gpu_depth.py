"""GPM metrics, per-process use, the driver's sample period, and the verdict that uses them,
against the fake NVML of tests/fakes (pynvml's own structures; no GPU needed)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pynvml
import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile
from devicewatch.probes.gpu import GPM_FIELDS, GPU_FIELDS, GpuProbe
from devicewatch.recorder import Recorder, RecordOptions
from tests.conftest import write_run
from tests.fakes.nvml import T0, Clock, FakeGpu, FakeNVML, FakeProcess
from tests.fakes.nvml import started_probe as started

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "gpu-gpm.jsonl"
MIB = 1 << 20


def poll_at(probe: GpuProbe, clock: Clock, t: float, pids=(42,)) -> list[dict]:
    clock.now = T0 + t
    records = probe.sample(list(pids), run_start_unix=T0)
    assert records is not None, probe.reason
    return records


# -- GPM --------------------------------------------------------------------------------------

def test_gpm_fields_from_two_samples_one_sample_per_poll():
    probe, nvml, clock = started([FakeGpu()])
    first = poll_at(probe, clock, 0.0)[0]
    assert not set(GPM_FIELDS) & set(first)  # one GPM sample is not a window yet
    second = poll_at(probe, clock, 0.15)[0]
    # The fake's defaults: SM 31%, occupancy 12.5%, tensor 4%, DRAM 22%, PCIe 100 and 900 MiB/s.
    assert {k: second[k] for k in GPM_FIELDS} == {
        "sm_active": 31.0, "sm_occupancy": 12.5, "tensor_active": 4.0, "dram_active": 22.0,
        "pcie_tx": 100 * MIB, "pcie_rx": 900 * MIB}
    poll_at(probe, clock, 0.30)
    # Two buffers, reused: one sample get per poll, one metrics call per window.
    assert nvml.calls["nvmlGpmSampleAlloc"] == 2
    assert nvml.calls["nvmlGpmSampleGet"] == 3 and nvml.calls["nvmlGpmMetricsGet"] == 2
    assert probe.gpm_reasons == [None]
    assert set(second) <= {"index", "util_samples", "mem_total", "mig", "procs", *GPU_FIELDS}


def test_a_poll_100ms_or_less_after_the_last_gpm_sample_waits_for_the_next():
    # SM activity 20% for the first 0.2 s, 80% after: a window's value is its middle's.
    gpu = FakeGpu(gpm_values={pynvml.NVML_GPM_METRIC_SM_UTIL: lambda t: 20.0 if t < T0 + 0.2 else 80.0})
    probe, nvml, clock = started([gpu])
    poll_at(probe, clock, 0.0)
    early = poll_at(probe, clock, 0.09)[0]      # 90 ms: NVML needs more than 100
    assert "sm_active" not in early and nvml.calls["nvmlGpmSampleGet"] == 1
    later = poll_at(probe, clock, 0.3)[0]       # the window 0 .. 0.3 s, middle 0.15 s
    assert later["sm_active"] == 20.0 and later["sm_occupancy"] is None  # not given by this GPU
    assert poll_at(probe, clock, 0.5)[0]["sm_active"] == 80.0


def test_mig_instances_are_sampled_each_with_its_own_gpm_sample():
    gpu = FakeGpu(mig=(3, 5), mig_values={3: {pynvml.NVML_GPM_METRIC_SM_UTIL: 60.0},
                                           5: {pynvml.NVML_GPM_METRIC_SM_UTIL: 10.0}})
    probe, nvml, clock = started([gpu])
    poll_at(probe, clock, 0.0)
    record = poll_at(probe, clock, 0.2)[0]
    assert [(m["gpu_instance"], m["sm_active"]) for m in record["mig"]] == [(3, 60.0), (5, 10.0)]
    assert "sm_active" not in record and nvml.calls["nvmlGpmSampleGet"] == 0
    assert nvml.calls["nvmlGpmMigSampleGet"] == 4


@pytest.mark.parametrize("gpu, options, reason", [
    (FakeGpu(name="Tesla V100", gpm=False), {}, "GPM not supported on Tesla V100 (needs Hopper or newer)"),
    (FakeGpu(), {"driver_has_gpm": False}, "GPM not sampled: the NVIDIA driver has no GPM functions (too old)"),
    (FakeGpu(), {"binding_has_gpm": False}, "GPM not sampled: this nvidia-ml-py has no nvmlGpmQueryDeviceSupport"),
])
def test_without_gpm_the_reason_is_kept_and_nothing_else_changes(gpu, options, reason):
    probe, nvml, clock = started([gpu], **options)
    assert probe.gpm_reasons == [reason]
    records = [poll_at(probe, clock, t)[0] for t in (0.0, 0.2, 0.4)]
    assert all(not set(GPM_FIELDS) & set(r) and "mig" not in r for r in records)
    assert records[-1]["util"] == 97.0 and records[-1]["power_w"] == 312.4
    assert not any(name.startswith("nvmlGpmSample") or name == "nvmlGpmMetricsGet" for name in nvml.calls)


def test_a_gpm_failure_stops_gpm_only_and_says_why_once():
    probe, nvml, clock = started([FakeGpu()])
    poll_at(probe, clock, 0.0)
    nvml.break_call("nvmlGpmSampleGet", pynvml.NVML_ERROR_UNKNOWN)
    record = poll_at(probe, clock, 0.2)[0]
    assert probe.available and record["util"] == 97.0 and "sm_active" not in record
    assert probe.gpm_reasons == ["GPM sampling stopped: Unknown Error"]
    assert probe.take_news() == [{"kind": "gpm_stopped", "index": 0, "reason": "GPM sampling stopped: Unknown Error"}]
    poll_at(probe, clock, 0.4)
    assert nvml.calls["nvmlGpmSampleGet"] == 2 and probe.take_news() == []


# -- which field is read at which rate ---------------------------------------------------------

SLOW_CALLS = ("nvmlDeviceGetMemoryInfo", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature",
              "nvmlDeviceGetClockInfo", "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetUtilizationRates")
POLL_CALLS = ("nvmlDeviceGetSamples", "nvmlDeviceGetProcessesUtilizationInfo", "nvmlGpmSampleGet")


def test_slow_fields_are_read_once_a_second_and_repeated_between_reads():
    gpu = FakeGpu(processes=[FakeProcess(42)])
    probe, nvml, clock = started([gpu])
    start_calls = {name: nvml.calls[name] for name in SLOW_CALLS}  # start() reads memory and names
    records = [poll_at(probe, clock, 0.2 * k)[0] for k in range(11)]   # 0 .. 2.0 s
    # Slow reads at 0, 1.0 and 2.0 s: three of each call; every poll makes the others.
    assert {name: nvml.calls[name] - start_calls[name] for name in SLOW_CALLS} == dict.fromkeys(SLOW_CALLS, 3)
    assert {name: nvml.calls[name] for name in POLL_CALLS} == dict.fromkeys(POLL_CALLS, 11)
    # Between reads, a poll repeats the last reading: the memory the GPU reported at 1.0 s.
    gpu.mem_used = 9 << 30
    clock.now = T0 + 2.2
    assert probe.sample([42], T0)[0]["mem_used"] == 4 << 30
    clock.now = T0 + 2.96   # within a poll's jitter (SLOW_SLACK) of the next read at 3.0 s
    assert probe.sample([42], T0)[0]["mem_used"] == 9 << 30
    assert all(r["power_w"] == 312.4 and r["temp_c"] == 51 and r["procs"][0]["mem"] == 2 << 30 for r in records)


def test_without_the_utilization_buffer_the_average_is_read_at_every_poll():
    probe, nvml, clock = started([FakeGpu(buffered=False, util=lambda t: 10.0 if t < T0 + 0.3 else 60.0)])
    assert [poll_at(probe, clock, t)[0]["util"] for t in (0.0, 0.2, 0.4)] == [10, 10, 60]
    assert nvml.calls["nvmlDeviceGetMemoryInfo"] == 2   # start() and the one slow read at 0 s


# -- per-process use and the driver's own rate --------------------------------------------------

def workload_gpu() -> FakeGpu:
    """Driver samples every 0.2 s; the workload (pid 42) at 10% before 0.3 s and 50% after."""
    return FakeGpu(util_period=0.2, processes=[
        FakeProcess(42, sm_util=lambda t: 10.0 if t < T0 + 0.3 else 50.0, mem_util=lambda t: 4.0),
        FakeProcess(7, sm_util=99.0)])


@pytest.mark.parametrize("options, used", [
    ({}, "nvmlDeviceGetProcessesUtilizationInfo"),
    ({"process_info_api": False}, "nvmlDeviceGetProcessUtilization"),
])
def test_process_use_counts_each_driver_sample_once(options, used):
    probe, nvml, clock = started([workload_gpu()], **options)
    # Samples at 0.2 and 0.4 s are new at 0.5 s: (10 + 50) / 2.
    assert poll_at(probe, clock, 0.5)[0]["procs"] == [{"pid": 42, "mem": 2 << 30, "util": 30.0, "mem_util": 4.0}]
    # Nothing new at 0.55 s: the process is still listed, its use not repeated.
    assert poll_at(probe, clock, 0.55)[0]["procs"] == [{"pid": 42, "mem": 2 << 30, "util": None, "mem_util": None}]
    assert poll_at(probe, clock, 0.7)[0]["procs"][0]["util"] == 50.0   # the sample at 0.6 s alone
    assert nvml.calls[used] == 3
    if options:  # the newer call was tried once, found missing, and not tried again
        assert nvml.calls["nvmlDeviceGetProcessesUtilizationInfo"] == 1


def test_buffered_utilization_keeps_driver_stamps_and_its_period_is_reported_once():
    probe, _, clock = started([FakeGpu(util_period=0.25)])
    stamps = []
    for k in range(1, 13):
        stamps += [t for t, _ in poll_at(probe, clock, 0.3 * k)[0].get("util_samples", [])]
    # Every driver sample from 0.25 s to 3.5 s, each once, at its own time.
    assert stamps == [round(0.25 * k, 3) for k in range(1, 15)]
    assert probe.util_period == [0.25]
    assert probe.take_news() == [{"kind": "util_period", "index": 0, "seconds": 0.25}]
    poll_at(probe, clock, 4.0)
    assert probe.take_news() == []


def test_driver_rate_text_and_periods_from_gpu_status(tmp_path):
    assert analysis.driver_rate_text(1 / 6) == "GPU utilization: driver samples every 167 ms"
    assert "unknown" in analysis.driver_rate_text(None)
    run = runfile.load(write_run(tmp_path / "r.jsonl", [
        {"type": "gpu_status", "t": 0.0, "available": True, "reason": None, "devices": 2},
        {"type": "gpu_status", "t": 1.0, "available": True, "reason": None, "devices": 2, "util_period": [None, 0.1]},
        {"type": "gpu_status", "t": 2.0, "available": True, "reason": None, "devices": 2, "util_period": [0.1667, 0.1]},
    ], header={"host": {"cpu_count": 2, "gpus": [{"name": "a"}, {"name": "b"}]}}))
    assert analysis.driver_sample_periods(run) == [0.1667, 0.1]


# -- the verdict -------------------------------------------------------------------------------

def busy_gpu_run(tmp_path: Path, sm_active: float | None) -> runfile.Run:
    """30 samples (2.9 s: enough to judge) of a GPU busy 97% with the CPU at 20%; SM activity
    as given (None: no GPM)."""
    samples = []
    for i in range(30):
        gpu = {"index": 0, "util": 97}
        if sm_active is not None:
            gpu["sm_active"] = sm_active
        samples.append({"type": "sample", "t": 0.1 * (i + 1), "cpu": [20.0, 20.0], "cpu_total": 20.0,
                        "gpus": [gpu]})
    return runfile.load(write_run(tmp_path / f"busy-{sm_active}.jsonl", samples,
                                  header={"host": {"cpu_count": 2, "gpus": [{"name": "H100"}]}}))


def test_a_busy_gpu_with_idle_sms_is_launch_bound_not_gpu_bound(tmp_path):
    low = analysis.run_figures(busy_gpu_run(tmp_path, 31.0)).verdict
    assert low.label == "launch-bound"
    assert low.text == ("GPU busy 97% of the time but SMs 31% active: kernels too small or too few "
                        "— launch-bound")
    assert low.figures["sm_active_mean"] == 31.0
    assert analysis.run_figures(busy_gpu_run(tmp_path, analysis.SM_ACTIVE_LOW)).verdict.label == "GPU-bound"
    unmeasured = analysis.run_figures(busy_gpu_run(tmp_path, None)).verdict
    assert unmeasured.label == "GPU-bound" and "SM activity not measured" in unmeasured.text


def test_the_gpm_fixture_replays_with_its_fields(tmp_path):
    run = runfile.load(FIXTURE)
    assert run.bad_lines == 0 and run.end.status == "ok"
    # Made by bench/make_gpm_fixture.py: GPU 0 (H100) SMs 31% active, driver every 1/6 s;
    # GPU 1 (A100) without GPM, driver every 0.1 s.
    assert run.gpu_status[0].gpm[0] is None and "needs Hopper" in run.gpu_status[0].gpm[1]
    t, sm = analysis.gpm_series(run, "sm_active", 0)
    assert len(t) >= 5 and set(sm) == {31.0}
    assert analysis.gpm_series(run, "sm_active", 1)[0].size == 0
    assert analysis.driver_sample_periods(run) == [0.1667, 0.1]
    assert analysis.run_figures(run).verdict.label == "launch-bound"


# -- the recorder, end to end ------------------------------------------------------------------

def record_with(tmp_path: Path, nvml: FakeNVML, seconds: float, interval: float) -> runfile.Run:
    out = tmp_path / "run.jsonl"
    options = RecordOptions(output=str(out), command=[sys.executable, "-c", f"import time; time.sleep({seconds})"],
                            interval=interval, echo=False, status_line=False, grace=0.5)
    code = Recorder(options, gpu_probe=GpuProbe(nvml_loader=nvml.module), out=io.StringIO(), err=io.StringIO()).run()
    assert code == 0
    return runfile.load(out)


def test_the_recorder_writes_gpm_fields_periods_and_reasons(tmp_path):
    stranger = FakeProcess(pid=1, sm_util=99.0)  # not the workload's: never attributed to it
    nvml = FakeNVML([FakeGpu(processes=[stranger]), FakeGpu(name="Tesla T4", gpm=False, util_period=0.1)])
    run = record_with(tmp_path, nvml, seconds=2.0, interval=0.1)
    assert run.gpu_status[0].available and run.gpu_status[0].gpm == (
        None, "GPM not supported on Tesla T4 (needs Hopper or newer)")
    with_gpm = [s["gpus"][0] for s in run.samples if s.get("gpus", [{}])[0].get("sm_active") is not None]
    assert with_gpm and all(g["sm_active"] == 31.0 and g["pcie_rx"] == 900 * MIB for g in with_gpm)
    assert all(s["gpus"][1].get(f) is None for f in GPM_FIELDS for s in run.samples if "gpus" in s)
    assert all(s["gpus"][0]["procs"] == [] for s in run.samples if "gpus" in s)
    assert analysis.driver_sample_periods(run) == [0.1667, 0.1]
    stamps = [t for s in run.samples for t, _ in s.get("gpus", [{}])[0].get("util_samples", [])]
    assert stamps == sorted(set(stamps))  # no driver sample written twice


def test_slow_nvml_polls_land_in_later_samples_and_none_is_lost(tmp_path):
    # 60 ms a call, four calls a poll (ten once a second): 0.24 s or more per poll, against
    # one poll asked for every 0.2 s and 0.05 s between samples.
    nvml = FakeNVML([FakeGpu()], latency=0.06)
    run = record_with(tmp_path, nvml, seconds=1.5, interval=0.05)
    with_gpus = [s for s in run.samples if "gpus" in s]
    polls = nvml.calls["nvmlDeviceGetSamples"]
    # Every poll but at most the one still running at the end is in exactly one sample.
    assert polls - 1 <= len(with_gpus) <= polls
    assert len(with_gpus) < len(run.samples)  # samples went on without waiting for the GPU
    assert any("gpus_t" in s and s["gpus_t"] < s["t"] for s in with_gpus)


def test_report_and_svg_show_sm_activity_and_the_driver_rate():
    from devicewatch.render import export
    from devicewatch.render.report import report_text

    run = runfile.load(FIXTURE)
    text = report_text(analysis.run_figures(run))
    # The fixture's fake GPU 0 keeps its buffered samples 1/6 s apart; GPU 1 is set to 0.1 s.
    assert "GPU 0 rate     GPU utilization: driver samples every 167 ms" in text
    assert "GPU 1 rate     GPU utilization: driver samples every 100 ms" in text
    assert "launch-bound" in text
    svg = export.svg(analysis.run_figures(run))
    assert "GPU 0 SM active" in svg and "GPU 1 SM active" not in svg  # GPU 1 has no GPM


def test_more_gpus_are_polled_less_often():
    from devicewatch.recorder import gpu_poll_period

    # GPU_READS_PER_SECOND = 8 device reads a second at most, polls 0.2 s to 1 s apart.
    assert [gpu_poll_period(n) for n in (1, 2, 3, 4, 8, 64)] == [0.2, 0.25, 0.375, 0.5, 1.0, 1.0]
