"""The GPU proof in one call: record the four experiments with the real recorder, check each
recording on the spot, and put the figures beside the sources'.

    python -m bench.gpu_proof --out DIR [--quick] [--rehearse] [--only STEP,...]
    python -m bench.gpu_proof --out DIR --check-only     # re-check DIR and recompute figures.md

Steps, one after another, each a ``devicewatch --record`` subprocess (``STEP.jsonl``, then
gzipped to ``STEP.jsonl.gz``, which ``runfile.load`` reads):

- ``training-cpu``, ``training-cuda``: the source's CNN, same steps on each device;
- ``pipeline-serial``, ``pipeline-dataloader``, ``pipeline-overlapped`` on cuda, 5 epochs each;
- ``conv``: the numba.cuda naive and shared-memory tiled kernels and cuDNN on SqueezeNet,
  Tiny-darknet (data parallel over CUDA streams too) and U-Net;
- ``nvml``: ``bench.bench_gpu_sampling --nvml real`` (each NVML call's cost), into ``nvml-real.txt``.

Each recording is checked with devicewatch's own reader (samples, phases, the device the
workload ran on, GPU utilization present and moving), one line per check, and the next step
runs whatever the result. ``figures.md`` is rewritten after every step from the recordings in
DIR, so a call cut short still leaves the table of what was done.

``--rehearse`` runs the same sequence on a machine without a GPU: ``--device cpu`` where cuda
is asked, tiny sizes, no real NVML, GPU checks skipped, and the packages the GPU machine lacks
(apart from those ``bench/gpu_wheels.txt`` carries) hidden from every process. The conv step
runs the CPU's counterparts (mcmk, tiled, torch for naive, tiled, cuDNN): the numba.cuda
kernels under numba's CUDA simulator take over ten minutes for even the smallest network
(``tests/workloads/test_conv_gpu.py`` checks them there on single layers instead).
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
WHEELS = Path(__file__).resolve().parent / "gpu_wheels.txt"
# What a typical GPU machine's image lacks (Python, PyTorch, numba-cuda, nvidia-ml-py, psutil, rich, numpy there).
ABSENT_ON_GPU = ("orjson", "textual", "plotext", "tensorflow", "keras")
# What this script and the recorder import (module names).
NEEDED = ("orjson", "numpy", "psutil", "pynvml", "rich")
INSTALL = ("python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade "
           "--target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD")
INTERVAL = 0.1
PIPELINE_THREADS = 1  # the source's −16.6% (vs NumPy) and −11.6% (vs tf.data) are at 1 thread
STEPS = ("training-cpu", "training-cuda", "pipeline-serial", "pipeline-dataloader",
         "pipeline-overlapped", "conv", "nvml")
# Unmodified user scripts (bench/user_scripts/) recorded through the zero-code instrumentation:
# asked for by name (--only), so that one call's folder stays within the 8 files a remote GPU
# machine hands back.
ZERO_CODE_STEPS = ("zero-code-loop", "zero-code-lightning")
USER_SCRIPTS = Path(__file__).resolve().parent / "user_scripts"


class Stopped(Exception):
    """SIGTERM (a ``timeout`` around the run): finish with what was recorded."""


def _stop(signum: int, frame: Any) -> None:
    raise Stopped()


@dataclass
class Step:
    name: str
    argv: list[str]          # the workload and its options, after --record FILE
    device: str              # where the workload was asked to run: cpu or cuda
    timeout: float           # seconds before the recorder is asked to stop
    epochs: bool = True      # the workload reports epochs
    env: dict[str, str] = field(default_factory=dict)
    user_script: bool = False  # knows nothing of devicewatch: no run_info of its own, phases from instrumentation


@dataclass
class Plan:
    mode: str                # full, quick or rehearse
    gpu: str                 # the device asked for where the GPU is meant: cuda, or cpu in a rehearsal
    conv_naive: str          # the conv step's method names for naive, tiled, cuDNN
    conv_tiled: str
    conv_cudnn: str
    conv_nets: list[str]
    steps: list[Step]

    @property
    def rehearse(self) -> bool:
        return self.mode.startswith("rehearse")


def make_plan(quick: bool, rehearse: bool) -> Plan:
    """The steps and their sizes. Full: a few minutes on one H100 and 16 cores (docs/gpu-proof.md)."""
    gpu = "cpu" if rehearse else "cuda"
    if rehearse:
        train = ["--epochs", "2", "--steps-per-epoch", "3" if quick else "5", "--val-steps", "1",
                 "--train-samples", "2000"]
        pipe = ["--epochs", "5", "--train-samples", "512" if quick else "1024", "--val-samples", "256"]
        conv_nets = ["tinydarknet", "unet"]
        conv = ["--net", ",".join(conv_nets), "--input-size", "16", "--unet-shape", "16x16", "--width", "2",
                "--repeats", "1", "--threads", "1"]
        methods = ("mcmk", "tiled", "torch")
        timeouts = (120.0, 120.0, 120.0)
        user = ["--epochs", "2", "--train-samples", "256", "--val-samples", "128"]
    elif quick:
        train = ["--epochs", "2", "--steps-per-epoch", "30"]
        pipe = ["--epochs", "5", "--train-samples", "6000", "--val-samples", "2000"]
        conv_nets = ["squeezenet", "unet"]
        conv = ["--net", ",".join(conv_nets), "--batch", "2", "--repeats", "2", "--streams", "2"]
        methods = ("naive", "tiled", "cudnn")
        timeouts = (120.0, 120.0, 180.0)
        user = ["--epochs", "2", "--train-samples", "4000", "--val-samples", "1000"]
    else:
        train = ["--epochs", "3", "--steps-per-epoch", "300"]
        pipe = ["--epochs", "5", "--train-samples", "60000", "--val-samples", "10000"]
        conv_nets = ["squeezenet", "tinydarknet", "unet"]
        conv = ["--net", ",".join(conv_nets), "--batch", "8", "--repeats", "5", "--streams", "2"]
        methods = ("naive", "tiled", "cudnn")
        timeouts = (300.0, 150.0, 240.0)
        user = ["--epochs", "3", "--train-samples", "20000", "--val-samples", "4000"]
    t_train, t_pipe, t_conv = timeouts
    steps = [
        Step("training-cpu", ["training", "--device", "cpu", *train], "cpu", t_train),
        Step("training-cuda", ["training", "--device", gpu, *train], gpu, t_train),
    ]
    for variant in ("serial", "dataloader", "overlapped"):
        steps.append(Step(f"pipeline-{variant}", ["pipeline", "--variant", variant, "--device", gpu,
                                                  "--threads", str(PIPELINE_THREADS), *pipe], gpu, t_pipe))
    steps.append(Step("conv", ["conv", "--device", gpu, "--methods", ",".join(methods), *conv], gpu, t_conv,
                      epochs=False))
    # The scripts pick cuda themselves when there is one (a rehearsal has none): as users write them.
    steps.append(Step("zero-code-loop", ["--", sys.executable, str(USER_SCRIPTS / "cifar_loop.py"), *user], gpu,
                      t_train, user_script=True))
    steps.append(Step("zero-code-lightning", ["--", sys.executable, str(USER_SCRIPTS / "lightning_fit.py"), *user],
                      gpu, t_train, user_script=True))
    mode = "rehearse" if rehearse else ("quick" if quick else "full")
    return Plan(mode, gpu, *methods, conv_nets, steps)


# -- what must be importable -------------------------------------------------------------------

def wheel_names() -> list[str]:
    """The distributions bench/gpu_wheels.txt carries (NAME==VERSION lines)."""
    names = []
    for line in WHEELS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line.split("==", 1)[0].strip().lower())
    return names


def missing_modules() -> list[str]:
    missing = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def hiding_env(tmp: str) -> dict[str, str]:
    """Environment that hides from every Python process what the GPU machine lacks and the
    wheels do not bring: a sitecustomize that puts None in sys.modules for those names."""
    hidden = [name for name in ABSENT_ON_GPU if name not in wheel_names()]
    Path(tmp, "sitecustomize.py").write_text(
        "import sys\n"
        f"for _name in {hidden!r}:\n"
        "    sys.modules[_name] = None  # import raises ImportError, as where it is not installed\n")
    path = os.pathsep.join([tmp, str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {"PYTHONPATH": path, "GPU_PROOF_HIDDEN": ",".join(hidden)}


# -- recording and checking --------------------------------------------------------------------

def record(step: Step, out: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run one recording; returns the recorder's exit status and its last output lines."""
    path = out / f"{step.name}.jsonl"
    for stale in (path, out / f"{step.name}.jsonl.gz"):
        stale.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "devicewatch", "--record", str(path), "--interval", str(INTERVAL), "--quiet",
            *step.argv]
    with tempfile.TemporaryFile("w+") as log, tempfile.TemporaryDirectory(prefix="gpu-proof-cwd-") as scratch:
        # A user script runs from a folder of its own (Lightning writes its logs and checkpoints there).
        proc = subprocess.Popen(argv, cwd=scratch if step.user_script else ROOT, env={**os.environ, **env, **step.env},
                                stdout=log, stderr=subprocess.STDOUT, text=True)
        stopped = False
        try:
            code = proc.wait(timeout=step.timeout)
        except Stopped:
            stopped = True
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # the recorder stops the workload and writes its end record
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            print(f"  {step.name}: stopped after {step.timeout:.0f} s (its time limit)", flush=True)
        log.seek(0)
        tail = [line.rstrip() for line in log.read().splitlines() if line.strip()][-3:]
    if path.exists():
        with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        path.unlink()
    Path(str(path) + ".columns").unlink(missing_ok=True)  # the columnar form of a journal now gzipped
    if stopped:
        raise Stopped()
    return code, "\n".join(tail)


@dataclass
class Check:
    what: str
    ok: bool | None          # None: skipped
    detail: str

    def line(self, name: str) -> str:
        verdict = "skipped" if self.ok is None else ("ok" if self.ok else "FAILED")
        return f"check {name}: {self.what}: {verdict} ({self.detail})"


def check_recording(path: Path, device: str, epochs: bool, rehearse: bool,
                    user_script: bool = False) -> tuple[Any, list[Check]]:
    """Read one recording with devicewatch's reader and check what the proof relies on."""
    import numpy as np

    from devicewatch import analysis
    from devicewatch.runformat import runfile
    from devicewatch.errors import RunFileError

    try:
        run = runfile.load(path)
    except (RunFileError, OSError, EOFError) as exc:
        return None, [Check("readable", False, str(exc))]
    checks = [Check("ended", analysis.status_text(run) == "ok", analysis.status_text(run)
                    + (f"; last error: {analysis.last_error_line(run)}" if analysis.status_text(run) != "ok"
                       and analysis.last_error_line(run) else ""))]
    n = len(run.samples)
    checks.append(Check("samples", n >= 5, f"{n} samples"))
    all_phases = analysis.phases(run)
    names = sorted({p.name for p in all_phases})
    checks.append(Check("phases", bool(all_phases),
                        f"{len(all_phases)} phases: {', '.join(names[:6])}" if all_phases else "no phases recorded"))
    if epochs:
        rows = analysis.epochs(run, all_phases)
        checks.append(Check("epochs", bool(rows), f"{len(rows)} epochs"))
    ran_on = analysis.run_info(run).get("device")
    if not user_script:
        checks.append(Check("device", ran_on == device, f"the workload says device={ran_on}, asked {device}"))
    else:  # nobody asked it for a device: it picks cuda when there is one
        instrumented = analysis.instrumentation_text(run) or "no instrumentation record"
        checks.append(Check("zero-code", instrumented.startswith("active"), instrumented))
        if ran_on is not None:
            checks.append(Check("device", str(ran_on).startswith(device), f"the run says device={ran_on}"))
        wait = analysis.data_wait(analysis.epochs(run, all_phases))
        checks.append(Check("data wait", wait is not None, "not measured" if wait is None else
                            f"{100 * wait.share:.0f}% of {wait.train_loop:.1f} s of training loop ({wait.source})"))
    if rehearse:
        checks.append(Check("GPU utilization", None, "rehearsal"))
        return run, checks
    s = analysis.series(run)
    if not s.gpus:
        reason = run.gpu_status[0].get("reason") if run.gpu_status else "no gpu_status record"
        checks.append(Check("GPU utilization", False, f"no GPU sampled: {reason}"))
        return run, checks
    util = s.gpu_util[0][np.isfinite(s.gpu_util[0])]
    if len(util) < 3:
        checks.append(Check("GPU utilization", False, f"{len(util)} utilization values"))
    elif device == "cpu":  # sampled, and the CPU run must leave the GPU alone
        checks.append(Check("GPU utilization", float(util.mean()) < analysis.IDLE_THRESHOLD,
                            f"{len(util)} values, mean {util.mean():.1f}% on a CPU run (idle below "
                            f"{analysis.IDLE_THRESHOLD:.0f}%)"))
    else:
        moving = float(util.max() - util.min()) > 0
        checks.append(Check("GPU utilization", moving and float(util.max()) > 0,
                            f"{len(util)} values, {util.min():.0f}–{util.max():.0f}%, mean {util.mean():.1f}%"
                            + ("" if moving else ", constant")))
    return run, checks


# -- figures -----------------------------------------------------------------------------------

@dataclass
class Row:
    figure: str
    measured: str
    source: str


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}%"


def _result(run: Any, name: str) -> dict[str, Any] | None:
    from devicewatch import analysis

    found = [r for r in analysis.results(run) if r.get("name") == name]
    return found[-1] if found else None


def figures(runs: dict[str, Any], plan: Plan, nvml_text: str | None) -> list[Row]:
    """The proof's figures, each computed from the recordings (a missing one gives "–")."""
    import numpy as np

    from devicewatch import analysis, compare

    rows: list[Row] = []

    def add(figure: str, source: str, compute: Callable[[], str], *needs: str) -> None:
        lacking = [n for n in needs if runs.get(n) is None]
        if lacking:
            rows.append(Row(figure, f"– (no usable recording: {', '.join(lacking)})", source))
            return
        try:
            rows.append(Row(figure, compute(), source))
        except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError) as exc:
            rows.append(Row(figure, f"– ({type(exc).__name__}: {exc})", source))

    def training_epoch() -> str:
        c = compare.comparison(runs["training-cpu"], runs["training-cuda"])
        last = [p for p in c.epochs if p.a and p.b][-1]
        return (f"{c.speedup:.1f}× over {len(c.epochs)} epochs ({c.seconds_a:.1f} s vs {c.seconds_b:.1f} s, "
                f"basis {c.basis}); last epoch {last.a.total / last.b.total:.1f}×")

    def step_ms(run: Any) -> float:
        values = [r.metrics.get("step_ms_mean") for r in analysis.epochs(run, analysis.phases(run))]
        values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
        return float(np.median(values))

    def training_step() -> str:
        a, b = step_ms(runs["training-cpu"]), step_ms(runs["training-cuda"])
        return f"{a / b:.1f}× ({a:.1f} ms vs {b:.2f} ms a step, median of epochs)"

    gpu = plan.gpu
    if runs.get("training-cuda") is not None:
        gpu = str(analysis.run_info(runs["training-cuda"]).get("device", gpu))
    add(f"training: CPU→{gpu} speedup per epoch", "~15× (288–360 s vs ~21 s an epoch)", training_epoch,
        "training-cpu", "training-cuda")
    add(f"training: CPU→{gpu} speedup per step", "~15× (216–271 ms vs 15–17 ms a step)", training_step,
        "training-cpu", "training-cuda")

    def pipeline(base: str) -> Callable[[], str]:
        def compute() -> str:
            c = compare.comparison(runs[f"pipeline-{base}"], runs["pipeline-overlapped"])
            return f"{_pct(c.change)} ({c.seconds_a:.1f} s → {c.seconds_b:.1f} s, basis {c.basis})"
        return compute

    add("pipeline: overlapped vs serial", "−16.6% (1 thread, vs NumPy)", pipeline("serial"),
        "pipeline-serial", "pipeline-overlapped")
    add("pipeline: overlapped vs dataloader", "−11.6% (1 thread, vs tf.data); −22.4% (1 GB, 6 threads)",
        pipeline("dataloader"), "pipeline-dataloader", "pipeline-overlapped")

    def dips() -> str:
        parts = []
        for name in ("serial", "dataloader", "overlapped"):
            run = runs.get(f"pipeline-{name}")
            if run is None:
                continue
            idle = compare.side(run, name).idle_device
            if idle is None:
                parts.append(f"{name} –")
            else:
                parts.append(f"{name} {len(idle.dips)} dips, {idle.dip_seconds:.1f} s, idle "
                             f"{100 * idle.idle_fraction:.0f}% ({idle.device})")
        return "; ".join(parts)

    add("pipeline: dips under 30% (busiest device)", "periodic dips every epoch; far shallower overlapped (Fig. 1)",
        dips, "pipeline-serial", "pipeline-overlapped")

    naive, tiled, cudnn, nets = plan.conv_naive, plan.conv_tiled, plan.conv_cudnn, plan.conv_nets
    if runs.get("conv") is not None:  # what the recording says it ran, not what this call planned
        info = analysis.run_info(runs["conv"])
        if info.get("device") == "cpu":
            naive, tiled, cudnn = "mcmk", "tiled", "torch"
        nets = [n for n in info.get("net", nets) if isinstance(n, str)]

    def tiled_vs_naive() -> str:
        parts = []
        for net in nets:
            a, b = _result(runs["conv"], f"{naive}/{net}"), _result(runs["conv"], f"{tiled}/{net}")
            if a and b:
                parts.append(f"{net} {a['ms'] / b['ms']:.2f}× ({a['ms']:.2f} → {b['ms']:.2f} ms)")
        if not parts:
            raise ValueError(f"no {naive}/{tiled} results in the recording")
        return "; ".join(parts)

    add(f"conv: {tiled} vs {naive} (time ratio)", "shared-memory tiling faster (no ratio given)", tiled_vs_naive,
        "conv")

    def unet_share() -> str:
        parts = []
        for m in (cudnn, tiled, naive):
            r = _result(runs["conv"], f"{m}/unet")
            if r and "conv_share" in r:
                parts.append(f"{m} {100 * r['conv_share']:.1f}%")
        if not parts:
            raise ValueError("no U-Net results in the recording")
        return "; ".join(parts)

    add("conv: U-Net's convolution share", "82%", unet_share, "conv")

    def transfers() -> str:
        parts = []
        for net in nets:
            r, k = _result(runs["conv"], f"{cudnn}/{net}/transfers"), _result(runs["conv"], f"{cudnn}/{net}")
            if r and k:
                parts.append(f"{net} copies {r['h2d_ms'] + r['d2h_ms']:.2f} ms, kernels {k['ms']:.2f} ms, "
                             f"{r['streams']} streams with copies {r['dataparallel_ms']:.2f} ms")
        return "; ".join(parts) or "– (no transfer results: the CPU path has none)"

    add(f"conv: {cudnn} host↔device copies vs kernels", "unoptimised GPU conv 0.74 s slower than CPU (copies)",
        transfers, "conv")

    def recorder_cost() -> str:
        parts = []
        for name, run in runs.items():
            if run is None or name == "nvml":
                continue
            s = analysis.series(run)
            cpu = s.recorder_cpu[np.isfinite(s.recorder_cpu)]
            gaps = np.abs(np.diff(s.t) - (run.header.interval or INTERVAL)) * 1000
            if len(cpu) and len(gaps):
                parts.append((name, float(cpu.mean()), float(np.percentile(gaps, 99)), s.gpus))
        if not parts:
            raise ValueError("no recordings")
        worst_cpu = max(parts, key=lambda p: p[1])
        worst_p99 = max(parts, key=lambda p: p[2])
        gpus = max(p[3] for p in parts)
        return (f"CPU {min(p[1] for p in parts):.2f}–{worst_cpu[1]:.2f}% of a core (highest {worst_cpu[0]}); "
                f"interval p99 error up to {worst_p99[2]:.1f} ms ({worst_p99[0]}); {gpus} GPU(s) sampled")

    def unmodified(name: str) -> Callable[[], str]:
        def compute() -> str:
            f = analysis.run_figures(runs[name])
            all_phases, rows, s, devices, verdict, wait = f.phases, f.epoch_rows, f.series, f.devices, f.verdict, f.data_wait
            text = f"{len(rows)} epochs, phases {', '.join(sorted({p.name for p in all_phases}))}"
            if wait is not None:
                text += f"; the training loop waited on its data {100 * wait.share:.0f}% of the time"
            utilization = f.utilization
            if s.gpus:
                means = [f"{phase} {entry['gpus'][0]['mean']:.0f}%" for phase, entry in utilization.items()
                         if entry.get("gpus") and entry["gpus"][0].get("mean") is not None]
                text += f"; GPU 0 mean while {', '.join(means)}"
            busiest = max(devices, key=lambda d: d.mean) if devices else None
            if busiest is not None:
                text += f"; {busiest.device} idle {100 * busiest.idle_fraction:.0f}%, {len(busiest.dips)} dips"
            return text + f"; verdict {verdict.label}"
        return compute

    add("zero-code: an unmodified PyTorch loop (bench/user_scripts/cifar_loop.py)",
        "the GPU waits while the CPU augments each batch; no line of the script changed", unmodified("zero-code-loop"),
        "zero-code-loop")
    add("zero-code: an unmodified Lightning fit (bench/user_scripts/lightning_fit.py)",
        "train and validate phases and epochs from Lightning itself; no line changed",
        unmodified("zero-code-lightning"), "zero-code-lightning")

    add("recorder: own CPU and interval p99 error", "budgets ≤ 1% of a core, p99 ≤ 20 ms (docs/benchmarks.md)",
        recorder_cost)

    if nvml_text is None:
        rows.append(Row("NVML: one poll of the GPU (real driver)", "– (not measured: "
                        + ("rehearsal, no real NVML)" if plan.rehearse else "no nvml-real.txt)"),
                        "200 µs a call assumed (docs/benchmarks.md)"))
    else:
        found = re.search(r"whole poll: (.*)", nvml_text)
        slowest = re.findall(r"^\s+(nvml\w+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", nvml_text, re.M)
        text = found.group(1) if found else "– (no 'whole poll' line in nvml-real.txt)"
        if slowest:
            name, calls, mean, p99 = max(slowest, key=lambda r: float(r[2]))
            text += f"; slowest call {name} mean {mean} µs, p99 {p99} µs"
        rows.append(Row("NVML: one poll of the GPU (real driver)", text, "200 µs a call assumed (docs/benchmarks.md)"))
    return rows


def machine(runs: dict[str, Any]) -> str:
    for run in runs.values():
        if run is not None:
            host = run.header.host
            gpus = ", ".join(run.gpu_names) or "no GPU sampled"
            return f"{host.cpu_model or '?'}, {host.cpu_count or '?'} cores; {gpus}"
    return "no recording"


def table(rows: list[Row]) -> str:
    lines = ["| figure | measured | source |", "|---|---|---|"]
    lines += [f"| {r.figure} | {r.measured.replace('|', '/')} | {r.source} |" for r in rows]
    return "\n".join(lines)


def write_figures(out: Path, plan: Plan, runs: dict[str, Any], checks: dict[str, list[Check]]) -> str:
    nvml = out / "nvml-real.txt"
    rows = figures(runs, plan, nvml.read_text() if nvml.exists() else None)
    failed = [f"{name}: {c.what} ({c.detail})" for name, cs in checks.items() for c in cs if c.ok is False]
    text = "\n".join([
        f"# GPU proof: figures ({plan.mode})", "",
        f"Computed by `python -m bench.gpu_proof` from the recordings in this folder with "
        f"`devicewatch.analysis` and `devicewatch.compare`.",
        f"Machine: {machine(runs)}.", "",
        table(rows), "",
        "Failed checks: " + ("none" if not failed else "; ".join(failed)) + ".", ""])
    (out / "figures.md").write_text(text)
    return table(rows)


# -- the sequence ------------------------------------------------------------------------------

def nvml_step(out: Path, plan: Plan, env: dict[str, str]) -> None:
    if plan.rehearse:
        print("step nvml: skipped (rehearsal: no real NVML here)", flush=True)
        return
    started = time.monotonic()
    path = out / "nvml-real.txt"
    with open(path, "w") as f:
        code = subprocess.run([sys.executable, "-m", "bench.bench_gpu_sampling", "--nvml", "real"], cwd=ROOT,
                              env={**os.environ, **env}, stdout=f, stderr=subprocess.STDOUT, timeout=180).returncode
    ok = code == 0 and "whole poll" in path.read_text()
    print(f"step nvml: {'ok' if ok else f'FAILED (exit {code})'} in {time.monotonic() - started:.0f} s → {path.name}",
          flush=True)


def usable(run: Any, found: list[Check]) -> bool:
    """A recording gives figures when it reads and has samples and phases (a workload that
    exits non-zero after its work, as conv does on a disagreement, still counts)."""
    return run is not None and all(c.ok is not False for c in found if c.what in ("samples", "phases"))


def load_existing(out: Path, plan: Plan, checks: dict[str, list[Check]]) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for step in plan.steps:
        path = out / f"{step.name}.jsonl.gz"
        if path.exists():
            run, found = check_recording(path, step.device, step.epochs, plan.rehearse, step.user_script)
            checks[step.name] = found
            for c in found:
                print(c.line(step.name), flush=True)
            runs[step.name] = run if usable(run, found) else None
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_proof", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, metavar="DIR", help="where the recordings and figures.md go")
    parser.add_argument("--quick", action="store_true", help="much smaller sizes (a minute or two on a GPU)")
    parser.add_argument("--rehearse", action="store_true",
                        help="on a machine without a GPU: cpu for cuda, tiny sizes, no real NVML")
    parser.add_argument("--only", metavar="STEP,...",
                        help=f"run only these steps (of {', '.join(STEPS)}; and, only when named, the unmodified "
                             f"user scripts {', '.join(ZERO_CODE_STEPS)}); the figures use every recording in DIR")
    parser.add_argument("--check-only", action="store_true",
                        help="record nothing: check the recordings already in DIR and rewrite figures.md")
    args = parser.parse_args(argv)
    missing = missing_modules()
    if missing:
        print(f"gpu_proof: missing {', '.join(missing)} (the recorder and its reader import them); on a machine "
              f"without a package registry, bring the wheels of bench/gpu_wheels.txt (`make gpu-wheels` where pip "
              f"works) in .whl/ and install them with: {INSTALL}", file=sys.stderr)
        return 2
    plan = make_plan(args.quick, args.rehearse)
    only = set(STEPS) if not args.only else {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(STEPS) - set(ZERO_CODE_STEPS)
    if unknown:
        print(f"gpu_proof: unknown step {', '.join(sorted(unknown))} (choose from "
              f"{', '.join(STEPS + ZERO_CODE_STEPS)})", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    checks: dict[str, list[Check]] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpu-proof-") as tmp:
        env = hiding_env(tmp) if plan.rehearse else {"PYTHONPATH": os.pathsep.join(
            p for p in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if p)}
        signal.signal(signal.SIGTERM, _stop)
        if plan.rehearse:
            print(f"gpu_proof: rehearsal ({plan.mode}): device cpu for cuda, hidden from every process: "
                  f"{env['GPU_PROOF_HIDDEN']}", flush=True)
        signal.signal(signal.SIGTERM, _stop)
        if args.check_only:
            runs = load_existing(out, plan, checks)
        else:
            runs = run_steps(plan, only, out, env, checks)
        text = write_figures(out, plan, runs, checks)
    failed = sum(1 for cs in checks.values() for c in cs if c.ok is False)
    print(f"\nfigures ({plan.mode}, {time.monotonic() - started:.0f} s), also in {out / 'figures.md'}:\n{text}")
    print(f"\ngpu_proof: {'all checks ok' if not failed else f'{failed} check(s) FAILED'}; "
          f"files: {', '.join(sorted(p.name for p in out.iterdir()))}", flush=True)
    return 1 if failed else 0


def run_steps(plan: Plan, only: set[str], out: Path, env: dict[str, str],
              checks: dict[str, list[Check]]) -> dict[str, Any]:
    """Record, check and gzip each step in turn; rewrite figures.md after each."""
    runs: dict[str, Any] = {}
    try:
        for step in plan.steps:
            if step.name not in only:
                continue
            began = time.monotonic()
            print(f"step {step.name}: devicewatch --record {step.name}.jsonl {' '.join(step.argv)}", flush=True)
            code, tail = record(step, out, env)
            print(f"step {step.name}: recorder exit {code} after {time.monotonic() - began:.0f} s", flush=True)
            if code != 0 and tail:
                print("  " + tail.replace("\n", "\n  "), flush=True)
            run, found = check_recording(out / f"{step.name}.jsonl.gz", step.device, step.epochs, plan.rehearse,
                                         step.user_script)
            checks[step.name] = found
            for c in found:
                print(c.line(step.name), flush=True)
            runs[step.name] = run if usable(run, found) else None
            write_figures(out, plan, {**load_others(out, plan, runs), **runs}, checks)
        if "nvml" in only:
            nvml_step(out, plan, env)
    except Stopped:
        print("gpu_proof: stopped (SIGTERM): the figures of what was recorded follow", flush=True)
        checks.setdefault("stopped", []).append(Check("whole sequence", False, "stopped by SIGTERM"))
    return {**load_others(out, plan, runs), **runs}


def load_others(out: Path, plan: Plan, runs: dict[str, Any]) -> dict[str, Any]:
    """Recordings in DIR from an earlier call (``--only``), read for the figures without checks."""
    from devicewatch.runformat import runfile
    from devicewatch.errors import RunFileError

    others: dict[str, Any] = {}
    for step in plan.steps:
        path = out / f"{step.name}.jsonl.gz"
        if step.name not in runs and path.exists():
            try:
                others[step.name] = runfile.load(path)
            except (RunFileError, OSError, EOFError):
                others[step.name] = None
    return others


if __name__ == "__main__":
    sys.exit(main())
