"""Resources failing under the recorder: the run file cannot grow, NVML breaks mid-run."""

from __future__ import annotations

import io
import resource
import signal
import subprocess

import psutil
import pynvml

from devicewatch.runformat import runfile
from devicewatch.probes.gpu import GpuProbe
from devicewatch.recorder import Recorder, RecordOptions
from tests.fakes.nvml import FakeGpu, FakeNVML

from .conftest import PY, alive, child_env, no_traceback, reap, script, start_recorder, wait_for  # noqa: F401


def _file_size_limit(limit: int):
    def apply() -> None:
        # Ignored SIGXFSZ makes a write past the limit fail with EFBIG instead of killing us,
        # as a full disk makes it fail with ENOSPC.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_file_size_limit_mid_run_stops_the_workload_and_keeps_the_file(tmp_path, reap):
    out = tmp_path / "run.jsonl"
    limit = 200_000
    recorder = start_recorder(out, PY, script("chatty.py"), preexec_fn=_file_size_limit(limit))
    reap.append(recorder.pid)
    workload = wait_for(lambda: psutil.Process(recorder.pid).children(), what="the workload")[0]
    reap.append(workload.pid)
    _, err = recorder.communicate(timeout=60)
    err_text = err.decode()
    no_traceback(err_text)
    assert recorder.returncode == 2
    assert err_text.count("\n") == 1 and "File too large" in err_text, err_text
    assert not alive(workload.pid)
    assert out.stat().st_size <= limit
    # Everything written before the limit reads back; a line cut by the limit may end it.
    run = runfile.load(out)
    assert run.bad_lines == 0
    assert run.logs and run.samples
    assert run.end is None   # no room was left for it: the reader reports an abrupt end


def test_file_size_limit_before_the_header_is_one_line(tmp_path):
    out = tmp_path / "run.jsonl"
    recorder = start_recorder(out, PY, "-c", "pass", preexec_fn=_file_size_limit(100))
    _, err = recorder.communicate(timeout=60)
    text = err.decode()
    no_traceback(text)
    assert recorder.returncode == 2 and text.count("\n") == 1 and "cannot write" in text, text


def test_gpu_failing_mid_run_is_noted_and_the_rest_goes_on(tmp_path):
    healthy = 5
    out = tmp_path / "run.jsonl"
    options = RecordOptions(output=str(out), command=[PY, "-c", "import time; time.sleep(1.0)"],
                            interval=0.05, echo=False, status_line=False, grace=0.5)
    # One GPU without the driver's utilization buffer, so that every poll reads the average
    # once; it answers HEALTHY polls, then reports itself lost.
    nvml = FakeNVML([FakeGpu(name="Fake GPU", buffered=False, gpm=False)])
    nvml.break_call("nvmlDeviceGetUtilizationRates", pynvml.NVML_ERROR_GPU_IS_LOST, after=healthy)
    probe = GpuProbe(nvml_loader=nvml.module)
    code = Recorder(options, gpu_probe=probe, out=io.StringIO(), err=io.StringIO()).run()
    assert code == 0
    run = runfile.load(out)
    assert run.header.host.gpus[0].name == "Fake GPU"
    assert [s["available"] for s in run.gpu_status] == [True, False]
    assert run.gpu_status[1]["reason"] == "NVML error: GPU is lost"
    # Without the driver's buffer the average is read once per poll, and GPUs are polled
    # every 0.2 s (every fourth sample at 0.05 s): the five healthy polls, then none.
    samples = list(run.samples)
    with_gpu = [i for i, s in enumerate(samples) if "gpus" in s]
    assert len(with_gpu) == healthy
    after = samples[with_gpu[-1] + 1:]
    # A second of sampling at 0.05 s leaves well over five samples after the failure, all
    # with the CPU still in them.
    assert len(after) >= 5 and all("cpu" in s and "proc" in s for s in after)
    assert run.gpu_status[1]["t"] >= samples[with_gpu[-1]]["t"]
    assert run.end["status"] == "ok"


def test_no_traceback_when_the_workload_cannot_start(tmp_path):
    out = tmp_path / "run.jsonl"
    proc = subprocess.run([PY, "-m", "devicewatch", "--record", str(out), "--gpu", "off", "--",
                           str(tmp_path / "no such program")], capture_output=True, text=True, timeout=60,
                          env=child_env())
    no_traceback(proc.stderr)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert runfile.load(out).end["status"] == "error"
