"""Long runs at scale: 64 cores, 8 GPUs, 10 Hz, recordings made by ``bench.make_recording``.

    python -m bench.bench_scale [--hours 1 24] [--merged 4 6] [--events 1000000] [--follow-minutes 60]
                                [--keep DIR] [--repeats 3] [--baseline CHECKOUT] [--instructions]

For each length: file size per hour (budget ≤ 30 MB), wall time and peak memory of the whole
``devicewatch report --json`` process, first open after the run ended (1 h: ≤ 0.3 s; 24 h:
≤ 3 s and ≤ 1 GiB), read from the columnar form the end of the run wrote; and, when a file
is generated here, what that end of the run cost (the generating process's peak is an upper
bound: it includes the generator's own arrays). ``--merged NODES HOURS``: the same for a
merged run of that many nodes (4 × 6 h: ≤ 3 s and ≤ 1 GiB). ``--baseline CHECKOUT``: every
``report`` also run by another checkout of devicewatch (main, say), alternating with this one,
on the same files: before and after from one run. Both run with compiled bytecode in a cache of
their own, as an installed devicewatch does. Then a run with a million events: ``report`` peak
memory (≤ 300 MB). Then the dashboard's model following a growing file (fast-forwarded: the
file is written ahead of the follower, which polls every 0.25 s of run time): its memory and
the CPU of a poll after 60 minutes against after 1 minute (within 10%). Peak memory is the
child's maximum RSS (``ru_maxrss``). ``--instructions``: the 1 h report's instructions counted by
valgrind (this checkout's and the baseline's), which a busy machine does not change.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _env(root: Path) -> dict[str, str]:
    """Run ``root``'s devicewatch with its bytecode cached apart from any other checkout's."""
    env = dict(os.environ, PYTHONPATH=str(root),
               PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "devicewatch-bench-pycache",
                                                str(root).strip(os.sep).replace(os.sep, "_")))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile(root: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "devicewatch")], env=_env(root), check=True)


def _child(args: list[str], root: Path = ROOT) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds (user + system) of a whole ``python ARGS``
    process. On a busy machine the wall time grows with the load; the CPU time much less."""
    started = time.perf_counter()
    # cwd: ``python -m`` looks in the working directory first, before PYTHONPATH
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, env=_env(root), cwd=root)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"python {' '.join(args)} failed ({status})")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _child_run(argv: list[str], root: Path = ROOT) -> tuple[float, float, float]:
    """The same of a whole ``python -m devicewatch …`` process."""
    return _child(["-m", "devicewatch", *argv], root)


def _make(path: Path, hours: float, events: int = 0, nodes: int = 1) -> float:
    """Generate the recording (its run ended as the recorder ends one) unless it is there."""
    if not path.exists():
        argv = ["--cores", "64", "--gpus", "8", "--hours", str(hours), "--events", str(events), "-o", str(path)]
        if nodes > 1:
            argv += ["--nodes", str(nodes)]
        out = subprocess.run([sys.executable, "-c", "import resource, sys, runpy; sys.argv = ['make_recording'] + "
                              "sys.argv[1:]; runpy.run_module('bench.make_recording', run_name='__main__'); "
                              "print(f'generator peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB')",
                              *argv], env=_env(ROOT), capture_output=True, text=True, check=True).stdout
        end = re.search(r"end of run \(.*\) ([0-9.]+)s", out)
        peak = re.search(r"generator peak ([0-9]+) MB", out)
        if end and peak:
            print(f"  {path.name}: end of run (writer closed, columnar form written) {float(end.group(1)):.2f}s; "
                  f"generating process peak {peak.group(1)} MB; columnar form "
                  f"{os.path.getsize(str(path) + '.columns') / 1e6:.1f} MB", flush=True)
    return path.stat().st_size / 1e6


def _report(path: Path, repeats: int, baseline: Path | None,
            baseline_repeats: int = 1) -> dict[str, tuple[float, float, float]]:
    """Best wall time, worst peak and best CPU time of ``report --json``, by this checkout and the
    baseline, alternating."""
    runs: dict[str, list[tuple[float, float, float]]] = {"this": [], "baseline": []}
    for i in range(repeats):
        runs["this"].append(_child_run(["report", "--json", str(path)]))
        if baseline is not None and i < baseline_repeats:
            runs["baseline"].append(_child_run(["report", "--json", str(path)], baseline))
    return {who: (min(r[0] for r in rs), max(r[1] for r in rs), min(r[2] for r in rs)) for who, rs in runs.items() if rs}


def instructions(argv: list[str], root: Path = ROOT) -> int | None:
    """Instructions a whole ``python ARGV`` process executes (valgrind's count; None without
    valgrind): a figure the machine's load does not move, where its wall and CPU times do."""
    import shutil

    if shutil.which("valgrind") is None:
        return None
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=_env(root), cwd=root).stderr
    found = re.findall(r"Collected : ([0-9]+)", out)
    return int(found[-1]) if found else None


def instructions_figure(folder: Path, baseline: Path | None) -> None:
    """``report --json`` of the 1 h recording counted in instructions, and the baseline's."""
    path = folder / "scale-1h.jsonl"
    _make(path, 1.0)
    argv = ["-m", "devicewatch", "report", "--json", str(path)]
    this = instructions(argv)
    if this is None:
        print("instructions: valgrind is not installed", flush=True)
        return
    text = f"1 h: report --json executes {this / 1e9:.3f} G instructions"
    before = instructions(argv, baseline) if baseline is not None else None
    if before is not None:
        text += f"; baseline {before / 1e9:.3f} G: {this / before - 1:+.1%}"
    print(text, flush=True)


def _line(label: str, size: float, figures: dict[str, tuple[float, float, float]], repeats: int, budget: str) -> str:
    wall, peak, cpu = figures["this"]
    text = (f"{label}: {size:.1f} MB; report --json {wall:.2f}s (best of {repeats}; CPU {cpu:.2f}s), "
            f"peak {peak:.0f} MB ({budget})")
    if "baseline" in figures:
        before, before_peak, before_cpu = figures["baseline"]
        text += (f"; baseline {before:.2f}s (CPU {before_cpu:.2f}s), peak {before_peak:.0f} MB: "
                 f"{before / wall:.2f}x the time, {before_cpu / cpu:.2f}x the CPU, {before_peak / peak:.2f}x the memory")
    return text


def floor_figure(repeats: int) -> None:
    """What any ``report`` pays before it reads a byte: the interpreter and numpy, in this sitting."""
    interpreter = min(_child(["-c", "pass"])[0] for _ in range(repeats))
    imports = min(_child(["-c", "import numpy, orjson, dataclasses, argparse, json"])[0] for _ in range(repeats))
    print(f"floor: python starts in {interpreter:.3f}s; with numpy, orjson, dataclasses, argparse and json "
          f"imported {imports:.3f}s (best of {repeats})", flush=True)


def report_figures(folder: Path, hours: list[float], repeats: int, baseline: Path | None, baseline_repeats: int) -> None:
    budgets = {1: "budget 0.3 s", 24: "budget 3 s, 1024 MB"}
    for h in hours:
        path = folder / f"scale-{h:g}h.jsonl"
        size = _make(path, h)
        _child_run(["report", "--json", str(path)])  # the file in the page cache, as after its run ended
        figures = _report(path, repeats, baseline, baseline_repeats if h > 1 else repeats)
        budget = "; ".join(b for b in (f"{size / h:.1f} MB/h, budget 30", budgets.get(h)) if b)
        print(_line(f"{h:g} h", size, figures, repeats, budget), flush=True)


def merged_figure(folder: Path, nodes: int, hours: float, repeats: int, baseline: Path | None,
                  baseline_repeats: int) -> None:
    path = folder / f"scale-merged-{nodes}x{hours:g}h.jsonl"
    size = _make(path, hours, nodes=nodes)
    _child_run(["report", "--json", str(path)])
    figures = _report(path, repeats, baseline, baseline_repeats)
    print(_line(f"merged {nodes} nodes × {hours:g} h", size, figures, repeats, "budget 3 s, 1024 MB"), flush=True)


def compact_figure(folder: Path) -> None:
    """``compact`` of a journal written elsewhere (no writer's columns at hand): it reads the journal."""
    path = folder / "scale-1h.jsonl"
    _make(path, 1.0)
    columns = Path(str(path) + ".columns")
    kept = columns.with_name(columns.name + ".kept")
    columns.rename(kept)
    try:
        wall, peak, _ = _child(["-c", f"from devicewatch.runformat.writer import compact; compact({str(path)!r})"])
    finally:
        kept.replace(columns)
    print(f"compacting a 1 h journal by reading it (an older recording): {wall:.2f}s, peak {peak:.0f} MB", flush=True)


def events_figure(folder: Path, events: int) -> None:
    path = folder / f"scale-events-{events}.jsonl"
    size = _make(path, 1.0, events)
    wall, peak, _ = _child_run(["report", "--json", str(path)])
    print(f"1 h with {events} extra events ({size:.0f} MB): report --json {wall:.2f}s, peak {peak:.0f} MB (budget 300)")


def _follow(source: Path, folder: Path, minutes: float, memory: bool) -> dict[float, float]:
    """Feed ``source`` into a growing file and poll the live model as the dashboard does (every
    0.25 s of run time); at 1 minute and at the end, the model's memory (``memory``: traced
    allocations) or its CPU per poll over the last minute of polls (untraced: tracemalloc's own
    cost grows with what it tracks, and would be measured instead of the model)."""
    import orjson

    from devicewatch.live.model import RunModel
    from devicewatch.live.source import LIVE_KEEP
    from devicewatch.runformat.runfile import Follower

    lines = source.read_bytes().split(b"\n")
    growing = folder / "growing.jsonl"
    poll_every = 0.25  # run seconds between polls (the dashboard polls at 4 Hz)
    figures: dict[float, float] = {}
    with open(growing, "wb") as out:
        out.write(lines[0] + b"\n")
        out.flush()
        follower = Follower(growing, keep=LIVE_KEEP)
        follower.poll()
        model = RunModel(follower.run)
        if memory:
            tracemalloc.start()
        cpu_window: list[float] = []
        next_poll = poll_every
        for line in lines[1:]:
            if not line:
                continue
            out.write(line + b"\n")
            if not line.startswith(b'{"type":"sample"'):
                continue
            t = orjson.loads(line)["t"]
            if t < next_poll:
                continue
            out.flush()
            next_poll += poll_every
            started = time.process_time()
            model.ingest(follower.poll())
            model.refresh_phases()
            cpu_window.append(time.process_time() - started)
            for mark in (1.0, minutes):
                if mark not in figures and t >= mark * 60:
                    recent = cpu_window[-240:]  # the last minute of polls
                    figures[mark] = (tracemalloc.get_traced_memory()[0] / 1e6 if memory
                                     else 1000 * sum(recent) / len(recent))
        if memory:
            tracemalloc.stop()
    return figures


def follow_figure(folder: Path, minutes: float) -> None:
    """Drive the live model on a file that grows, as the dashboard does, minus Textual."""
    from bench.make_recording import generate

    source = folder / f"scale-follow-{minutes:g}m.jsonl"
    if not source.exists():
        generate(str(source), 64, 8, minutes / 60, 10.0)
    mem = _follow(source, folder, minutes, memory=True)
    cpu = _follow(source, folder, minutes, memory=False)
    if 1.0 in mem and minutes in mem:
        print(f"live model after 1 min: {mem[1.0]:.1f} MB, {cpu[1.0]:.2f} ms per poll; after {minutes:g} min: "
              f"{mem[minutes]:.1f} MB, {cpu[minutes]:.2f} ms per poll (memory {mem[minutes] / mem[1.0] - 1:+.0%}, "
              f"CPU {cpu[minutes] / cpu[1.0] - 1:+.0%}; budget ±10%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, nargs="*", default=[1, 24])
    parser.add_argument("--merged", type=float, nargs=2, default=[4, 6], metavar=("NODES", "HOURS"),
                        help="a merged run of NODES nodes of HOURS each (NODES 0 skips it)")
    parser.add_argument("--baseline", type=Path, help="another checkout of devicewatch to compare with (main)")
    parser.add_argument("--baseline-repeats", type=int, default=1,
                        help="its runs on recordings over an hour (a minute each before the columnar form)")
    parser.add_argument("--events", type=int, default=1_000_000, help="0 skips the events run")
    parser.add_argument("--follow-minutes", type=float, default=60, help="0 skips the live-model run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", help="folder for the generated recordings (reused when there)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the instructions of the 1 h report (valgrind), this checkout's and the baseline's")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="devicewatch-scale-")).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    _compile(ROOT)
    if args.baseline is not None:
        _compile(args.baseline.resolve())
    baseline = args.baseline.resolve() if args.baseline is not None else None
    floor_figure(max(args.repeats, 5))
    report_figures(folder, args.hours, args.repeats, baseline, args.baseline_repeats)
    if args.instructions:
        instructions_figure(folder, baseline)
    if args.merged[0] > 1:
        merged_figure(folder, int(args.merged[0]), args.merged[1], args.repeats, baseline, args.baseline_repeats)
    compact_figure(folder)
    if args.events:
        events_figure(folder, args.events)
    if args.follow_minutes:
        follow_figure(folder, args.follow_minutes)
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
