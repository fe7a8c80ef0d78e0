"""Our workloads end cleanly: stopped (SIGTERM), cancelled (SIGINT) or cut short by a full
disk, each prints one line saying so and exits with a meaningful status, never a traceback.

The full disk is a file size limit on the workload's own output (RLIMIT_FSIZE, as `ulimit -f`):
its write fails with EFBIG exactly where a full disk fails with ENOSPC.
"""

from __future__ import annotations

import resource
import signal
import subprocess

import pytest

from .conftest import PY, child_env, wait_for

# Small but real runs: each prints its first line within seconds and then goes on working.
WORKLOADS = {
    "demo": ["--epochs", "1000", "--samples", "2000"],
    "training": ["--framework", "torch", "--epochs", "50", "--train-samples", "512"],
    "pipeline": ["--backend", "torch", "--epochs", "50", "--train-samples", "512"],
    "conv": ["--net", "squeezenet", "--repeats", "50"],
}


def _start(tmp_path, name: str, limit: int | None = None) -> tuple[subprocess.Popen, object]:
    out = tmp_path / f"{name}.out"

    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    with open(out, "wb") as handle:
        proc = subprocess.Popen([PY, "-m", f"workloads.{name}", *WORKLOADS[name]], stdin=subprocess.DEVNULL,
                                stdout=handle, stderr=subprocess.PIPE, env=child_env(), preexec_fn=cap)
    return proc, out


def _one_line(stderr: bytes) -> str:
    text = stderr.decode(errors="replace")
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "nothing said"
    return lines[-1]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("sig, code, said", [(signal.SIGINT, 130, "cancelled"), (signal.SIGTERM, 143, "stopped")])
def test_signal_mid_run(tmp_path, name, sig, code, said):
    proc, out = _start(tmp_path, name)
    try:
        wait_for(lambda: out.stat().st_size > 0 or proc.poll() is not None, timeout=120,
                 what=f"{name} to get going")
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")
            pytest.skip(f"{name} does not run here: {err.strip().splitlines()[-1:] or proc.returncode}")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert _one_line(err) == f"{name}: {said} ({sig.name})"


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_output_cut_short_by_a_full_disk(tmp_path, name):
    proc, out = _start(tmp_path, name, limit=8)   # 8 bytes: the first line does not fit
    try:
        _, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    line = _one_line(err)
    if proc.returncode != 74 and "cannot write" not in line:
        pytest.skip(f"{name} does not run here: {line}")
    assert proc.returncode == 74
    assert line == f"{name}: stopped: cannot write its output (File too large)"
    assert out.stat().st_size <= 8
