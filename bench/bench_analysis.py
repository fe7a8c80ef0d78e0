"""Open and analyse a one-hour recording of a big machine: 10 Hz, 64 cores, 8 GPUs.

Load + full analysis (what `devicewatch report` computes), in this process: the part of the
whole ``report --json`` budget (1 h ≤ 0.3 s, measured by ``bench.bench_scale``) that is not
Python's start and imports. The file is written by ``bench.make_recording`` (the recorder's
writer, schema 2, its columnar form written when the run ends): epochs of train and validate
phases with GPU dips, the driver's buffered samples, per-process GPU use.

    python -m bench.bench_analysis [--keep FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from bench.make_recording import generate as make
from devicewatch import analysis
from devicewatch.runformat.runfile import load

SECONDS, RATE, CORES, GPUS = 3600, 10, 64, 8


def generate(path: str) -> None:
    make(path, CORES, GPUS, SECONDS / 3600, RATE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", help="write the generated file here and keep it")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = args.keep or os.path.join(tempfile.mkdtemp(), "hour.jsonl")
    if not os.path.exists(path):
        started = time.perf_counter()
        generate(path)
        print(f"generated {path}: {os.path.getsize(path) / 1e6:.0f} MB in {time.perf_counter() - started:.1f}s")
    timings = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        run = load(path)
        loaded = time.perf_counter()
        summary = analysis.Summary.of(analysis.run_figures(run))
        done = time.perf_counter()
        timings.append((loaded - started, done - loaded, done - started))
    best = min(timings, key=lambda x: x[2])
    print(f"samples {len(run.samples)}, epochs {len(summary.epochs)}, verdict: {summary.verdict.label}, "
          f"read from {'the columnar form' if run.columnar else 'the journal'}")
    print(f"load {best[0]:.2f}s + analyse {best[1]:.2f}s = {best[2]:.2f}s (best of {args.repeats})")
    if not args.keep:
        for leftover in (path, path + ".columns"):
            if os.path.exists(leftover):
                os.remove(leftover)


if __name__ == "__main__":
    main()
