"""Resources failing under the recorder: the run file cannot grow, NVML breaks mid-run."""

from __future__ import annotations

import io
import resource
import signal
import subprocess

import pynvml

from devicewatch.runformat import runfile
from devicewatch.probes.gpu import GpuProbe
from devicewatch.recorder import Recorder, RecordOptions
from tests.fakes.nvml import FakeGpu, FakeNVML

from .conftest import PY, child_env, no_traceback, start_recorder


def _file_size_limit(limit: int):
    def apply() -> None:
        # Ignored SIGXFSZ makes a write past the limit fail with EFBIG instead of killing us,
        # as a full disk makes it fail with ENOSPC.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


# Prints LINES lines of 1 KB, then sends three times what the event FIFO holds, prints "done" and
# exits with CODE: a recorder that stopped reading its events once it could no longer write
# would leave it blocked on the FIFO for ever.
TRAINING = """
import sys, time
from devicewatch import events
lines, code = int(sys.argv[1]), int(sys.argv[2])
for i in range(lines):
    print(f"{i:08d} " + "y" * 1000, flush=True)
    if i % 50 == 0:
        time.sleep(0.01)
for i in range(30_000):
    events.marker("after the recording stopped", i=i)
print("done", flush=True)
sys.exit(code)
"""


def _training(tmp_path) -> str:
    path = tmp_path / "training.py"
    path.write_text(TRAINING)
    return str(path)


def _ran_on_to_its_end(out, recorder, stdout: bytes, stderr: bytes, why: str, lines: int, code: int) -> None:
    """The workload ran to its end, echoed, its exit status the recorder's; stderr said what was
    lost when it happened and again at the end; the file holds every record up to then."""
    err = stderr.decode()
    no_traceback(err)
    assert recorder.returncode == code, err
    said = [line for line in err.splitlines() if line.startswith("devicewatch:")]
    assert len(said) == 2, err
    assert said[0].startswith(f"devicewatch: writing {out} failed: {why}; it holds the run up to ")
    assert said[0].endswith("recording stopped, the workload runs on")
    assert said[1].startswith("devicewatch: the recording stopped at ") and why in said[1]
    assert said[1].endswith(f"the workload ran on to its end (exit code {code})")
    echoed = stdout.decode()
    assert f"{lines - 1:08d} " in echoed and "\ndone\n" in echoed   # still echoed after the failure
    run = runfile.load(out)
    assert run.bad_lines == 0   # every complete line reads back; a line cut by the failure may end it
    assert run.logs and run.samples
    assert len(run.logs) < lines   # nothing written after the failure
    assert run.end is None   # no room was left for it: the reader reports an abrupt end


def test_file_size_limit_mid_run_stops_the_recording_and_the_workload_runs_to_its_end(tmp_path, reap):
    out = tmp_path / "run.jsonl"
    limit, lines = 200_000, 3000
    recorder = start_recorder(out, PY, _training(tmp_path), str(lines), "3", quiet=False,
                              preexec_fn=_file_size_limit(limit))
    reap.append(recorder.pid)
    stdout, stderr = recorder.communicate(timeout=120)
    assert out.stat().st_size <= limit
    _ran_on_to_its_end(out, recorder, stdout, stderr, "File too large", lines, 3)


def test_disk_full_mid_run_stops_the_recording_and_the_workload_runs_to_its_end(tmp_path, small_disk, reap):
    out = small_disk / "run.jsonl"
    lines = 3000   # 3 MB of output on a disk of 256 KiB
    recorder = start_recorder(out, PY, _training(tmp_path), str(lines), "0", quiet=False)
    reap.append(recorder.pid)
    stdout, stderr = recorder.communicate(timeout=120)
    _ran_on_to_its_end(out, recorder, stdout, stderr, "No space left on device", lines, 0)


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
    assert [s.available for s in run.gpu_status] == [True, False]
    assert run.gpu_status[1].reason == "NVML error: GPU is lost"
    # Without the driver's buffer the average is read once per poll, and GPUs are polled
    # every 0.2 s (every fourth sample at 0.05 s): the five healthy polls, then none.
    samples = list(run.samples)
    with_gpu = [i for i, s in enumerate(samples) if "gpus" in s]
    assert len(with_gpu) == healthy
    after = samples[with_gpu[-1] + 1:]
    # A second of sampling at 0.05 s leaves well over five samples after the failure, all
    # with the CPU still in them.
    assert len(after) >= 5 and all("cpu" in s and "proc" in s for s in after)
    assert run.gpu_status[1].t >= samples[with_gpu[-1]]["t"]
    assert run.end.status == "ok"


def test_no_traceback_when_the_workload_cannot_start(tmp_path):
    out = tmp_path / "run.jsonl"
    proc = subprocess.run([PY, "-m", "devicewatch", "--record", str(out), "--gpu", "off", "--",
                           str(tmp_path / "no such program")], capture_output=True, text=True, timeout=60,
                          env=child_env())
    no_traceback(proc.stderr)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert runfile.load(out).end.status == "error"
