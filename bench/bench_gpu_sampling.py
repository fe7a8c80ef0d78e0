"""What GPU sampling costs with many GPUs, and whether CPU samples stay on time.

1. The cost of each NVML call the GPU probe makes: the probe polls 8 GPUs, as often as the
   recorder polls that many (``recorder.gpu_poll_period``), through a wrapper that times every
   call (mean and p99 wall time per function), and each whole poll in wall time and in CPU
   time of the polling thread (a fake call's latency is a sleep: wall time, not CPU). With
   ``--nvml real`` the installed driver is timed instead of the fake (on a machine with
   NVIDIA GPUs).
2. The recorder at 10 samples/s with 8 fake GPUs whose every call takes ``--latency`` seconds
   (a driver round trip the CPU waits for): its CPU in % of one core — the recorder process's
   user + system CPU time, read from outside between 3 s after start and 1 s before the end,
   over the wall time between — and the p99 error of the sample intervals. The fake's own
   Python runs in the recorder's process and is counted in it. Budgets: at most 1% of one
   core, p99 at most 20 ms.

    python -m bench.bench_gpu_sampling [--gpus 8] [--seconds 20] [--latency 0.0002] [--nvml fake|real]
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

import numpy as np
import psutil

from devicewatch.probes.gpu import GpuProbe
from devicewatch.recorder import gpu_poll_period
from devicewatch.runformat.runfile import load


def fake_module(gpus: int, latency: float) -> Any:
    from tests.fakes.nvml import FakeGpu, FakeNVML, FakeProcess

    return FakeNVML([FakeGpu(processes=[FakeProcess(pid=1)]) for _ in range(gpus)], latency=latency).module()


class Timed:
    """Wraps an NVML module: every ``nvml*`` call is timed under its name."""

    def __init__(self, nvml: Any):
        self._nvml = nvml
        self.times: dict[str, list[float]] = defaultdict(list)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._nvml, name)
        if not name.startswith("nvml") or not callable(value):
            return value

        def call(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return value(*args)
            finally:
                self.times[name].append(time.perf_counter() - start)

        return call


def per_call(nvml: Any, polls: int, interval: float) -> None:
    timed = Timed(nvml)
    probe = GpuProbe(nvml_loader=lambda: timed)
    probe.start()
    if not probe.available:
        sys.exit(f"no GPU to time: {probe.reason}")
    timed.times.clear()
    poll_times, poll_cpu = [], []
    for _ in range(polls):
        time.sleep(interval)
        start, start_cpu = time.perf_counter(), time.thread_time()
        probe.sample([1], time.time())
        poll_times.append(time.perf_counter() - start)
        poll_cpu.append(time.thread_time() - start_cpu)
    probe.stop()
    gpus = len(probe.devices)
    print(f"NVML calls per poll of {gpus} GPUs, {polls} polls {interval * 1000:.0f} ms apart:")
    print(f"  {'function':42s} {'calls/poll':>10s} {'mean µs':>9s} {'p99 µs':>9s}")
    for name, times in sorted(timed.times.items(), key=lambda kv: -sum(kv[1])):
        if name in ("nvmlShutdown", "nvmlGpmSampleFree"):
            continue
        us = np.array(times) * 1e6
        print(f"  {name:42s} {len(times) / polls:10.1f} {us.mean():9.1f} {np.percentile(us, 99):9.1f}")
    ms = np.array(poll_times) * 1000
    cpu_ms = np.array(poll_cpu) * 1000
    print(f"  whole poll: wall mean {ms.mean():.2f} ms, p99 {np.percentile(ms, 99):.2f} ms; "
          f"CPU mean {cpu_ms.mean():.2f} ms, p99 {np.percentile(cpu_ms, 99):.2f} ms")


def child(out: str, gpus: int, latency: float, seconds: float) -> None:
    """The recorder with fake GPUs, in its own process so that its CPU can be read from outside."""
    from devicewatch.recorder import Recorder, RecordOptions

    options = RecordOptions(output=out, command=[sys.executable, "-c", f"import time; time.sleep({seconds})"],
                            interval=0.1, echo=False, status_line=False)
    probe = GpuProbe(nvml_loader=lambda: fake_module(gpus, latency))
    Recorder(options, gpu_probe=probe, out=io.StringIO(), err=io.StringIO()).run()


def recorder(gpus: int, latency: float, seconds: float) -> None:
    out = os.path.join(tempfile.mkdtemp(), "gpus.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "bench.bench_gpu_sampling", "--child", out, "--gpus", str(gpus),
                             "--latency", str(latency), "--seconds", str(seconds)])
    ps = psutil.Process(proc.pid)
    time.sleep(3.0)
    cpu_start, wall_start = sum(ps.cpu_times()[:2]), time.monotonic()
    time.sleep(seconds - 4.0)
    cpu_end, wall_end = sum(ps.cpu_times()[:2]), time.monotonic()
    proc.wait()
    cpu = 100.0 * (cpu_end - cpu_start) / (wall_end - wall_start)
    run = load(out)
    times = np.array([s["t"] for s in run.samples])
    errors_ms = np.abs(np.diff(times) - run.header.interval) * 1000
    with_gpus = sum("gpus" in s for s in run.samples)
    late = sum("gpus_t" in s for s in run.samples)
    print(f"recorder at 10 Hz with {gpus} fake GPUs (polled every {gpu_poll_period(gpus):g} s), "
          f"{latency * 1e6:.0f} µs a call: {cpu:.2f}% of one core "
          f"(budget 1%); interval error p50 {np.percentile(errors_ms, 50):.1f} ms, "
          f"p99 {np.percentile(errors_ms, 99):.1f} ms, max {errors_ms.max():.1f} ms over {len(errors_ms)} "
          f"intervals (budget p99 20 ms); {with_gpus} of {len(run.samples)} samples hold a GPU poll, {late} late")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the recording")
    parser.add_argument("--latency", type=float, default=0.0002, help="seconds each fake NVML call takes")
    parser.add_argument("--nvml", choices=("fake", "real"), default="fake")
    parser.add_argument("--child", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.gpus, args.latency, args.seconds)
        return
    if args.nvml == "real":
        import pynvml

        pynvml.nvmlInit()  # counted: the probe's own init and shutdown pair up inside
        per_call(pynvml, polls=100, interval=gpu_poll_period(pynvml.nvmlDeviceGetCount()))
        return
    per_call(fake_module(args.gpus, args.latency), polls=30, interval=gpu_poll_period(args.gpus))
    recorder(args.gpus, args.latency, args.seconds)


if __name__ == "__main__":
    main()
