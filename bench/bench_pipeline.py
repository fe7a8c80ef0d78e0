"""Serial vs tf.data/DataLoader vs overlapped, every backend, at several thread counts.

The machine is shared, so the runs are interleaved: each repetition runs every
configuration once (in a rotated order), and the report gives per-repetition ratios to the
``serial`` run of the same repetition and backend, then their median. Each run is its own
process (framework thread pools are per process) and reports its timings through
``--summary``. Run from the repository root:

    python -m bench.bench_pipeline                       # 2 repetitions, threads 1 2 6
    python -m bench.bench_pipeline --reps 3 --epochs 10  # closer to the source's setup
    python -m bench.bench_pipeline --why                 # where the CPU goes, phase by phase

``--why`` records ``serial`` and ``overlapped`` (torch, the demo's settings) under the
devicewatch recorder and prints, for each kind of moment (training lane preparing data,
training, validation alone, training and validation together), how busy the machine's
cores were and how much of them the workload itself had.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = {"tensorflow": "tfdata", "torch": "dataloader"}
# (source's figure, what it compares): 002, Fig. 4 and 5, total train+validate time
SOURCE_FIGURES = {
    ("serial", 1): "−16.6% (vs NumPy, 1 thread)",
    ("framework", 1): "−11.6% (vs tf.data, 1 thread)",
    ("framework", 6): "−10.8% (vs tf.data, 6 threads); −22.4% with 1 GB",
}


def run_once(backend: str, variant: str, threads: int, workload_args: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.json"
        cmd = [sys.executable, "-m", "workloads.pipeline", "--backend", backend, "--variant", variant,
               "--threads", str(threads), "--summary", str(summary), *workload_args]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("DEVICEWATCH_EVENTS", None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(f"bench_pipeline: {' '.join(cmd[2:])} failed: {proc.stderr.strip().splitlines()[-1:]}")
        result = json.loads(summary.read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result["process_wall_s"] = round(wall, 3)
    result["cores_busy"] = round(cpu / wall, 3)  # whole process, start-up included
    result["load_avg"] = round(os.getloadavg()[0], 2)
    return result


def configurations(backends: list[str], threads: list[int]) -> list[tuple[str, str, int]]:
    configs = []
    for backend in backends:
        configs.append((backend, "serial", 1))  # serial has one thread whatever --threads says
        for n in threads:
            configs.append((backend, BASELINE[backend], n))
            configs.append((backend, "overlapped", n))
    return configs


def pct(new: float, old: float) -> str:
    return f"{100 * (new - old) / old:+.1f}%"


def report(runs: list[dict], threads: list[int], backends: list[str], epochs: int) -> str:
    def pick(rep: int, backend: str, variant: str, n: int) -> dict:
        return next(r for r in runs if (r["rep"], r["backend"], r["variant"], r["threads"]) == (rep, backend, variant, n))

    reps = sorted({r["rep"] for r in runs})
    lines = ["| backend | threads | variant | total s (median) | s/epoch | vs serial | vs "
             "tf.data/DataLoader | overlap efficiency | copy % of epoch training | cores busy | source |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for backend in backends:
        serial = [pick(rep, backend, "serial", 1) for rep in reps]
        t_serial = statistics.median(r["total_s"] for r in serial)
        lines.append(f"| {backend} | 1 | serial | {t_serial:.2f} | {t_serial / epochs:.2f} | — | — | — | "
                     f"— | {statistics.median(r['cores_busy'] for r in serial):.2f} | |")
        for n in threads:
            for variant in (BASELINE[backend], "overlapped"):
                mine = [pick(rep, backend, variant, n) for rep in reps]
                t = statistics.median(r["total_s"] for r in mine)
                vs_serial = statistics.median((m["total_s"] - s["total_s"]) / s["total_s"] for m, s in zip(mine, serial))
                vs_base = eff = copy = "—"
                source = ""
                if variant == "overlapped":
                    base = [pick(rep, backend, BASELINE[backend], n) for rep in reps]
                    vs_base = f"{100 * statistics.median((m['total_s'] - b['total_s']) / b['total_s'] for m, b in zip(mine, base)):+.1f}%"
                    # (T_serial - T) / (T_serial - T_bound), T_bound = serial's training lane + its last validation
                    eff = f"{statistics.median((s['total_s'] - m['total_s']) / (s['total_s'] - s['train_lane_s'] - s['last_validate_s']) for m, s in zip(mine, serial)):.2f}"
                    copy = f"{statistics.median(e['copy_share_pct'] for r in mine for e in r['epochs']):.3f}%"
                    source = "; ".join(v for (kind, k), v in SOURCE_FIGURES.items() if k == n)
                lines.append(f"| {backend} | {n} | {variant} | {t:.2f} | {t / epochs:.2f} | {100 * vs_serial:+.1f}% | "
                             f"{vs_base} | {eff} | {copy} | {statistics.median(r['cores_busy'] for r in mine):.2f} | {source} |")
    return "\n".join(lines)


def _moments(run) -> dict[str, list[dict]]:
    """Samples grouped by what the workload was doing at their time."""
    spans: list[tuple[float, float, str, str]] = []
    opened: dict[tuple, float] = {}
    for e in run.events:
        key = (e.get("lane"), e.get("name"), e.get("epoch"))
        if e["kind"] == "phase_begin":
            opened[key] = e["t"]
        elif e["kind"] == "phase_end" and key in opened:
            spans.append((opened.pop(key), e["t"], key[0], key[1]))
    groups: dict[str, list[dict]] = {}
    for sample in run.samples:
        t = sample["t"]
        active = [(lane, name) for a, b, lane, name in spans if a <= t < b]
        train = [name for lane, name in active if lane == "train"]
        validating = any(lane.startswith("validate") for lane, _ in active)
        if not train and not validating:
            continue
        what = ("train lane: " + train[0]) if train else "validation alone"
        if train and validating:
            what += " + validation"
        groups.setdefault(what, []).append(sample)
    return groups


def why(workload_args: list[str]) -> int:
    """Record serial and overlapped and say, per kind of moment, who had the cores."""
    from devicewatch.runformat import runfile

    for variant in ("serial", "overlapped"):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "run.jsonl"
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            env.pop("DEVICEWATCH_EVENTS", None)
            subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(path), "pipeline",
                            "--variant", variant, *workload_args], cwd=ROOT, env=env, capture_output=True,
                           check=True)
            run = runfile.load(str(path))
        result = next(e["values"] for e in run.events if e["kind"] == "result")
        cores = len(run.samples[0]["cpu"]) if run.samples else 0
        print(f"{variant}: total {result['total_s']:.2f} s, load average {os.getloadavg()[0]:.1f} on {cores} cores")
        print(f"  {'moment':36} {'time s':>7} {'machine busy':>13} {'workload cores':>15}")
        for what, samples in sorted(_moments(run).items()):
            busy = statistics.mean(s["cpu_total"] for s in samples)
            mine = statistics.mean(s.get("proc", {}).get("cpu", 0.0) for s in samples) / 100
            seconds = len(samples) * (run.header.interval or 0.1)
            print(f"  {what:36} {seconds:7.1f} {busy:12.0f}% {mine:15.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_pipeline", description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=2, help="interleaved repetitions (default 2)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2, 6], help="thread counts (default 1 2 6)")
    p.add_argument("--backends", nargs="+", default=["torch", "tensorflow"], choices=["torch", "tensorflow"])
    p.add_argument("--epochs", type=int, default=3, help="epochs per run (default 3, the demo's)")
    p.add_argument("--out", default=str(ROOT / "bench" / "out" / "pipeline.json"), help="raw results (JSON)")
    p.add_argument("--from-json", metavar="FILE", help="print the table again from a saved --out file")
    p.add_argument("--why", action="store_true", help="record serial and overlapped; CPU per kind of moment")
    p.add_argument("workload_args", nargs="*", help="more options for the workload, after --")
    args = p.parse_args(argv)
    workload_args = ["--epochs", str(args.epochs), *args.workload_args]
    if args.why:
        return why(workload_args)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        print(report(saved["runs"], args.threads, args.backends, saved["runs"][0]["epochs"][-1]["epoch"]))
        return 0
    configs = configurations(args.backends, args.threads)
    runs = []
    for rep in range(args.reps):
        shift = rep % len(configs)
        for backend, variant, n in configs[shift:] + configs[:shift]:
            result = run_once(backend, variant, n, workload_args)
            result["rep"] = rep
            runs.append(result)
            print(f"rep {rep} {backend:10} {variant:10} threads {n}: {result['total_s']:7.2f} s "
                  f"(train lane {result['train_lane_s']:.2f}, last validation {result['last_validate_s']:.2f}, "
                  f"cores busy {result['cores_busy']:.2f}, load {result['load_avg']})", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"argv": sys.argv[1:], "cpu_count": os.cpu_count(), "runs": runs}, indent=1))
    loads = [r["load_avg"] for r in runs]
    print(f"\nload average during the runs: {min(loads)} to {max(loads)} on {os.cpu_count()} cores")
    print()
    print(report(runs, args.threads, args.backends, args.epochs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
