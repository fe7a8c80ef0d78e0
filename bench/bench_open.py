"""Opening a long recording in the dashboard: the replay screen and the compare screen, from the
start of the process to the first drawn frame (budget: a day of 64 cores and 8 GPUs at 10 Hz,
and a merged run of 4 nodes × 6 h, each ≤ 3 s).

    python -m bench.bench_open [--hours 1 24] [--merged 4 6] [--repeats 3] [--keep DIR]

The recordings are made by ``bench.make_recording`` (64 cores, 8 GPUs, 10 Hz) in DIR (default
bench/out), once. Each figure is a whole child process, as ``devicewatch replay FILE`` and
``devicewatch compare FILE FILE`` run: Python's start, the imports, reading the file(s), the
dashboard's model and the analysis it shows, until every heat strip on the screen has been
drawn once (Textual headless at 200×50; what a terminal would be sent is built, not written).
The child says when the file was read, when the first frame was drawn and, for a comparison, when
its figures were shown; the parent gives the run with the soonest first frame of ``--repeats``
(with its wall time) and the largest peak RSS (``wait4``). The comparison is of the
recording with itself: both sides are read, modelled and drawn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = (200, 50)
BUDGET_S = 3.0


def _child(kind: str, paths: list[str]) -> None:
    """Open ``paths`` the way the command does and report the moments (s since the process began)."""
    import psutil

    began = psutil.Process().create_time()
    from devicewatch.runformat import runfile
    from devicewatch.live.source import open_replay
    from devicewatch.tui.app import DashboardApp, DashboardSettings
    from devicewatch.tui.charts import HeatStrip

    if kind == "replay":
        app = DashboardApp(DashboardSettings(), open_replay(paths[0]))
    else:
        app = DashboardApp(DashboardSettings(), compare=(runfile.load(paths[0]), runfile.load(paths[-1])))
    read = time.time() - began

    async def first_frame() -> dict[str, float]:
        moments: dict[str, float] = {}
        async with app.run_test(size=SIZE) as pilot:
            while True:
                strips = list(app.screen.query(HeatStrip))
                if "drawn" not in moments and strips and all(strip.rebuilds for strip in strips):
                    moments["drawn"] = time.time() - began
                if kind == "compare" and getattr(app.screen, "comparison", None) is not None:
                    moments["figures"] = time.time() - began  # headline, verdicts and tables shown
                if "drawn" in moments and (kind == "replay" or "figures" in moments):
                    return moments
                await pilot.pause(0.02)

    print(json.dumps({"read": read, **asyncio.run(first_frame())}), flush=True)


def _run_child(kind: str, paths: list[Path]) -> tuple[float, float, dict[str, float]]:
    """Wall seconds, peak RSS (MB) and the child's own moments."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bench.bench_open", "--child", kind, *map(str, paths)],
                            stdout=subprocess.PIPE, env=env, cwd=ROOT)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"bench_open: the {kind} of {paths[0]} failed ({status})")
    return wall, usage.ru_maxrss / 1024, json.loads(out.decode().strip().splitlines()[-1])


def _make(path: Path, hours: float, nodes: int = 1) -> None:
    if path.exists():
        return
    argv = [sys.executable, "-m", "bench.make_recording", "--cores", "64", "--gpus", "8", "--hours", f"{hours:g}",
            "-o", str(path)]
    if nodes > 1:
        argv += ["--nodes", str(nodes)]
    subprocess.run(argv, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)


def _figure(label: str, kind: str, path: Path, repeats: int) -> None:
    paths = [path] if kind == "replay" else [path, path]
    results = [_run_child(kind, paths) for _ in range(repeats)]
    # The budget is the first frame: from the process's start to every chart drawn (the wall time
    # also counts the exit). A comparison's figures follow its charts; when they were shown is said.
    best = min(results, key=lambda r: r[2]["drawn"])
    peak = max(r[1] for r in results)
    first = best[2]["drawn"]
    verdict = "met" if first <= BUDGET_S else "missed"
    figures = f", figures shown at {best[2]['figures']:.2f} s" if "figures" in best[2] else ""
    print(f"{label:28s} {kind:8s} first frame {first:6.2f} s (file read at {best[2]['read']:.2f} s{figures}; "
          f"wall {best[0]:.2f} s), peak {peak:5.0f} MB; budget {BUDGET_S:g} s: {verdict}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_open", description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, nargs="*", default=[1.0, 24.0])
    parser.add_argument("--merged", type=float, nargs=2, default=[4, 6], metavar=("NODES", "HOURS"),
                        help="a merged run of NODES nodes of HOURS each (NODES 0 skips it)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=ROOT / "bench" / "out", help="folder of the recordings")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1:])
        return 0
    args.keep.mkdir(parents=True, exist_ok=True)
    print(f"Command: python -m bench.bench_open {' '.join(argv if argv is not None else sys.argv[1:])}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; best of {args.repeats}", flush=True)
    cases = [(f"{h:g} h (64 cores, 8 GPUs)", args.keep / f"open-{h:g}h.jsonl", h, 1) for h in args.hours]
    if args.merged[0] > 1:
        nodes, hours = int(args.merged[0]), args.merged[1]
        cases.append((f"merged {nodes} nodes × {hours:g} h", args.keep / f"open-merged-{nodes}x{hours:g}h.jsonl",
                      hours, nodes))
    for label, path, hours, nodes in cases:
        _make(path, hours, nodes)
        for kind in ("replay", "compare"):
            _figure(label, kind, path, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
