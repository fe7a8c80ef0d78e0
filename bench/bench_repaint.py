"""What the dashboard repaints: frames, lines, Segments and cells sent to the terminal per second
while it follows a live run, beside its CPU. Textual's compositor turns every repainted line's
strips into terminal output, and its cost grows with the lines and Segments it is given, so
these counts show a change's effect on the part of the dashboard that costs most, in numbers
that do not drift with the machine's load as CPU time does.

The dashboard runs for real (``python -m devicewatch run WORKLOAD``) in a 200×50 (or
``--size``) pseudo-terminal whose output is drained, with Textual's compositor counted from
inside the process: a launcher wraps ``Compositor.render_partial_update`` and
``render_full_update`` (the two places a frame is made) and counts, per frame, the lines
repainted, the Segments of the strips those lines are cut into and the cells they cover; and
``StylesCache.render_line``, the widget lines built again (a widget's content line through its
borders and padding: the widget-side work of a repaint); and the cyclic collector (its CPU time
and the objects it freed: garbage that refcounting could not free). The counters go to a file twice a
second; the bench reads them, and the dashboard's CPU time, at the start and end of each window.

    python -m bench.bench_repaint [--workload demo|pipeline] [--windows 3] [--window-seconds 10] [--size 200x50]

Run it as every bench, alone: ``flock -x /tmp/dw-machine.lock python -m bench.bench_repaint``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

import bench.bench_dashboard as dashboard_bench
from bench.bench_btop import WORKLOADS
from bench.bench_dashboard import PtyDashboard, newest_run, stop_and_quit, wait_for

# ``python -m devicewatch`` with the compositor counted; the counts go to $REPAINT_COUNTS.
COUNTING = """
import gc, json, os, runpy, sys, threading, time
from textual._compositor import Compositor
from textual._styles_cache import StylesCache

counts = {"frames": 0, "full_frames": 0, "lines": 0, "segments": 0, "cells": 0, "widget_lines": 0,
          "full_collections": 0, "collected": 0, "collector_ms": 0.0}
started = [0.0]

def collector(phase, info):
    # The cyclic collector's time (CPU of this thread) and the garbage it found: objects only
    # it can free are work a repaint left behind.
    if phase == "start":
        started[0] = time.thread_time()
        return
    counts["collector_ms"] += 1000 * (time.thread_time() - started[0])
    counts["collected"] += info["collected"]
    counts["full_collections"] += info["generation"] == 2

gc.callbacks.append(collector)

def count_spans(update):
    for y, x1, x2 in update.spans:
        counts["lines"] += 1
        counts["cells"] += x2 - x1
        for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items()):
            if strip is not None and x < x2 and end > x1:
                counts["segments"] += len(strip)

partial, full, line = Compositor.render_partial_update, Compositor.render_full_update, StylesCache.render_line

def render_partial_update(self):
    update = partial(self)
    if update is not None:
        counts["frames"] += 1
        count_spans(update)
    return update

def render_full_update(self, simplify=False):
    update = full(self, simplify)
    counts["frames"] += 1
    counts["full_frames"] += 1
    for strips in update.strips:
        counts["lines"] += 1
        for strip in strips:
            counts["segments"] += len(strip)
            counts["cells"] += strip.cell_length
    return update

def render_line(self, *args, **kwargs):
    counts["widget_lines"] += 1
    return line(self, *args, **kwargs)

Compositor.render_partial_update = render_partial_update
Compositor.render_full_update = render_full_update
StylesCache.render_line = render_line

def write_counts():
    path = os.environ["REPAINT_COUNTS"]
    while True:
        with open(path + ".tmp", "w") as out:
            json.dump(counts, out)
        os.replace(path + ".tmp", path)
        time.sleep(0.5)

threading.Thread(target=write_counts, daemon=True).start()
sys.argv = ["devicewatch", *sys.argv[1:]]
runpy.run_module("devicewatch", run_name="__main__", alter_sys=True)
"""
COUNTERS = ("frames", "full_frames", "lines", "segments", "cells", "widget_lines", "full_collections", "collected",
            "collector_ms")


def read_counts(path: Path) -> dict[str, int]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {name: 0 for name in COUNTERS}


def measure(workload: list[str], windows: int, seconds: float, warmup: float) -> list[dict[str, float]]:
    """Per window: each counter per second, the bytes written to the terminal per second, and
    the dashboard's CPU as % of one core."""
    with tempfile.TemporaryDirectory() as tmp:
        runs, counts = Path(tmp) / "runs", Path(tmp) / "counts.json"
        dash = PtyDashboard(["--runs-dir", str(runs), "run", *workload], tmp,
                            launcher=[sys.executable, "-c", COUNTING], extra_env={"REPAINT_COUNTS": str(counts)})
        measured: list[dict[str, float]] = []
        try:
            if not wait_for(lambda: newest_run(runs) is not None and counts.exists(), 60):
                raise SystemExit("the dashboard did not start a recording")
            process = psutil.Process(dash.process.pid)
            time.sleep(warmup)
            for _ in range(windows):
                before, sent0, cpu0, wall0 = read_counts(counts), dash.received, dash.cpu_seconds(), time.monotonic()
                time.sleep(seconds)
                after, sent1, cpu1, wall1 = read_counts(counts), dash.received, dash.cpu_seconds(), time.monotonic()
                if not process.is_running():
                    break
                wall = wall1 - wall0
                window = {name: (after[name] - before[name]) / wall for name in COUNTERS}
                window["bytes"] = (sent1 - sent0) / wall
                window["cpu"] = 100 * (cpu1 - cpu0) / wall
                measured.append(window)
                print(f"  {workload[0]} window {len(measured)}: " + ", ".join(f"{k} {v:.1f}" for k, v in window.items()),
                      file=sys.stderr, flush=True)
        finally:
            stop_and_quit(dash, runs)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_repaint", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="demo")
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--window-seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds after the recording starts")
    parser.add_argument("--size", default="200x50", help="the terminal's COLUMNSxROWS")
    args = parser.parse_args(argv)
    try:
        columns, rows = (int(part) for part in args.size.lower().split("x"))
    except ValueError:
        print(f"bench_repaint: error: --size {args.size!r} is not COLUMNSxROWS", file=sys.stderr)
        return 2
    dashboard_bench.COLUMNS, dashboard_bench.ROWS = columns, rows
    command = "python -m bench.bench_repaint " + " ".join(argv if argv is not None else sys.argv[1:])
    windows = measure(WORKLOADS[args.workload], args.windows, args.window_seconds, args.warmup)
    print(f"Command: `{command.strip()}` on {psutil.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load average {os.getloadavg()[0]:.1f}; terminal {columns}×{rows}; following `{' '.join(WORKLOADS[args.workload])}`.")
    print("Median (range) per second over the windows:\n")
    print("| frames | of them full | lines repainted | Segments | cells | widget lines built | bytes out | "
          "collector ms | cyclic garbage objects | dashboard CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    def cell(name: str, digits: int = 0, unit: str = "") -> str:
        values = [w[name] for w in windows]
        if not values:
            return "-"
        return (f"{statistics.median(values):.{digits}f}{unit} "
                f"({min(values):.{digits}f}–{max(values):.{digits}f})")

    print(f"| {cell('frames', 1)} | {cell('full_frames', 1)} | {cell('lines')} | {cell('segments')} | {cell('cells')} | "
          f"{cell('widget_lines')} | {cell('bytes')} | {cell('collector_ms', 1)} | {cell('collected')} | "
          f"{cell('cpu', 2, '%')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
