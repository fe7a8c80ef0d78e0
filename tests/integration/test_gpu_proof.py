"""bench/gpu_proof.py rehearsed without a GPU: the real recorder records each step, the script
checks each recording with the reader and computes its figures from the files in DIR."""

from __future__ import annotations

import gzip
import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devicewatch import compare
from devicewatch.runformat import runfile
from devicewatch import analysis

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ("training-cpu", "training-cuda", "pipeline-serial", "pipeline-dataloader", "pipeline-overlapped",
              "conv")
ROWS = ("training: CPU→cpu speedup per epoch", "training: CPU→cpu speedup per step",
        "pipeline: overlapped vs serial", "pipeline: overlapped vs dataloader",
        "pipeline: dips under 30% (busiest device)", "conv: tiled vs mcmk (time ratio)",
        "conv: U-Net's convolution share", "conv: torch host↔device copies vs kernels",
        "zero-code: an unmodified PyTorch loop (bench/user_scripts/cifar_loop.py)",
        "zero-code: an unmodified Lightning fit (bench/user_scripts/lightning_fit.py)",
        "recorder: own CPU and interval p99 error", "NVML: one poll of the GPU (real driver)")
ZERO_CODE = ("zero-code-loop", "zero-code-lightning")


def gpu_proof(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    base = dict(os.environ, PYTHONPATH=str(ROOT))
    base.pop("DEVICEWATCH_EVENTS", None)
    return subprocess.run([sys.executable, "-m", "bench.gpu_proof", *args], cwd=ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("proof")
    return out, gpu_proof("--out", str(out), "--quick", "--rehearse")


def figure_rows(path: Path) -> dict[str, str]:
    rows = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 3 and cells[0] not in ("figure", "---"):
            rows[cells[0]] = cells[1]
    return rows


@pytest.mark.slow
def test_rehearsal_records_checks_and_compresses_every_step(rehearsal):
    out, result = rehearsal
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "hidden from every process: textual,plotext,tensorflow,keras" in result.stdout
    for name in RECORDINGS:
        assert not (out / f"{name}.jsonl").exists()  # only the compressed file stays
        run = runfile.load(out / f"{name}.jsonl.gz")
        assert run.finished and len(run.samples) > 0
        assert analysis.phases(run), name
        assert f"check {name}: phases: ok" in result.stdout
        assert f"check {name}: GPU utilization: skipped (rehearsal)" in result.stdout
    assert "step nvml: skipped (rehearsal" in result.stdout
    assert not (out / "nvml-real.txt").exists()
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8, files  # few files: easy to bring back from a remote GPU machine


@pytest.mark.slow
def test_figures_table_has_every_row_computed_from_the_recordings(rehearsal):
    out, result = rehearsal
    rows = figure_rows(out / "figures.md")
    assert list(rows) == list(ROWS)
    c = compare.comparison(runfile.load(out / "pipeline-serial.jsonl.gz"), runfile.load(out / "pipeline-overlapped.jsonl.gz"))
    assert rows["pipeline: overlapped vs serial"].startswith(f"{100 * c.change:+.1f}%")
    assert "82%" in (out / "figures.md").read_text()
    assert rows["NVML: one poll of the GPU (real driver)"].startswith("– (not measured: rehearsal")
    for row in ROWS[:7]:
        assert not rows[row].startswith("–"), (row, rows[row])
    assert rows[ROWS[8]] == "– (no usable recording: zero-code-loop)"  # only recorded when named
    assert "| figure | measured | source |" in result.stdout  # the same table printed


@pytest.mark.slow
def test_a_recording_without_phases_is_reported_failed_and_gives_no_figures(rehearsal, tmp_path):
    out, _ = rehearsal
    for path in out.iterdir():
        shutil.copy(path, tmp_path / path.name)
    broken = tmp_path / "pipeline-overlapped.jsonl.gz"
    with gzip.open(out / "pipeline-overlapped.jsonl.gz", "rt") as f:
        kept = [line for line in f if json.loads(line).get("type") != "event"]
    with gzip.open(broken, "wt") as f:
        f.writelines(kept)
    result = gpu_proof("--out", str(tmp_path), "--rehearse", "--check-only")
    assert result.returncode == 1
    assert "check pipeline-overlapped: phases: FAILED (no phases recorded)" in result.stdout
    assert "check pipeline-serial: phases: ok" in result.stdout
    rows = figure_rows(tmp_path / "figures.md")
    assert rows["pipeline: overlapped vs serial"] == "– (no usable recording: pipeline-overlapped)"
    assert not rows["training: CPU→cpu speedup per epoch"].startswith("–")
    assert "pipeline-overlapped: phases (no phases recorded)" in (tmp_path / "figures.md").read_text()


@pytest.mark.slow
def test_unmodified_user_scripts_are_recorded_when_named_and_join_the_figures(rehearsal, tmp_path):
    """The user scripts, as a second device call would record them (--only), then checked with
    the first call's recordings in one folder, as they are brought together here."""
    result = gpu_proof("--out", str(tmp_path), "--quick", "--rehearse", "--only", ",".join(ZERO_CODE))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures.md", *sorted(f"{n}.jsonl.gz" for n in ZERO_CODE)]
    for name in ZERO_CODE:
        assert f"check {name}: zero-code: ok (active in 1 process (torch" in result.stdout
        assert f"check {name}: epochs: ok (2 epochs)" in result.stdout
        assert f"check {name}: data wait: ok" in result.stdout
        run = runfile.load(tmp_path / f"{name}.jsonl.gz")
        assert {p.name for p in analysis.phases(run)} >= {"train", "validate"}
    assert "lightning" in result.stdout.split("check zero-code-lightning: zero-code: ok")[1].split("\n")[0]
    out, _ = rehearsal
    for path in out.glob("*.jsonl.gz"):
        shutil.copy(path, tmp_path / path.name)
    checked = gpu_proof("--out", str(tmp_path), "--rehearse", "--check-only")
    assert checked.returncode == 0, checked.stdout[-3000:]
    rows = figure_rows(tmp_path / "figures.md")
    assert list(rows) == list(ROWS)
    for row in ROWS[:7] + ROWS[8:10]:  # every row but the copies (none on the CPU path) and NVML
        assert not rows[row].startswith("–"), (row, rows[row])
    # The row's words, not its load-dependent figures: two epochs of train and validate, and the
    # loop's data wait measured. Its visible waits are data phases of their own where one is long
    # enough to draw, which a loaded machine makes more likely: data may or may not be listed.
    loop = re.match(r"(\d+) epochs, phases ([a-z, ]+); the training loop waited on its data \d+% of the time",
                    rows[ROWS[8]])
    assert loop is not None, rows[ROWS[8]]
    assert loop.group(1) == "2"
    assert {"train", "validate"} <= set(loop.group(2).split(", ")) <= {"data", "train", "validate"}, rows[ROWS[8]]


def test_missing_orjson_is_one_line_with_the_wheel_command(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['orjson'] = None\n")
    result = gpu_proof("--out", str(tmp_path / "out"), "--rehearse",
                       env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_proof: missing orjson"), result.stderr
    assert "make gpu-wheels" in lines[0] and "--target /tmp/site .whl/*.whl" in lines[0]
    assert not (tmp_path / "out").exists()
