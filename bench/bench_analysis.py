"""Open and analyse a one-hour recording of a big machine: 10 Hz, 64 cores, 8 GPUs.

Budget: load + full analysis (what `devicewatch report` computes) in at most 1 s.
The file is generated here with the real writer: utilization that dips every epoch on the
GPUs, 60 epochs of train and validate phases, and the driver's buffered GPU samples.

    python -m bench.bench_analysis [--keep FILE]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import tempfile
import time

from devicewatch import analysis
from devicewatch.runfile import RunWriter, load

SECONDS, RATE, CORES, GPUS = 3600, 10, 64, 8


def generate(path: str) -> None:
    rng = random.Random(0)
    header = {"devicewatch": "bench", "started": "2026-01-01T00:00:00+00:00", "started_unix": 0.0,
              "interval": 1 / RATE,
              "host": {"cpu_model": "synthetic", "cpu_count": CORES,
                       "gpus": [{"index": g, "name": f"GPU {g}", "mem_total": 80 << 30} for g in range(GPUS)]},
              "workload": {"name": "synthetic", "args": [], "command": ["synthetic"]}}
    writer = RunWriter(path, header)
    epoch_seconds = 60.0
    for i in range(1, SECONDS * RATE + 1):
        t = i / RATE
        epoch, into = int(t // epoch_seconds) + 1, t % epoch_seconds
        if into < 1 / RATE:
            if epoch > 1:
                writer.write({"type": "event", "t": t, "kind": "phase_end", "name": "validate", "epoch": epoch - 1, "lane": "main", "pid": 1})
            writer.write({"type": "event", "t": t, "kind": "phase_begin", "name": "train", "epoch": epoch, "lane": "main", "pid": 1})
        if abs(into - 50.0) < 1e-9:
            writer.write({"type": "event", "t": t, "kind": "phase_end", "name": "train", "epoch": epoch, "lane": "main", "pid": 1})
            writer.write({"type": "event", "t": t, "kind": "phase_begin", "name": "validate", "epoch": epoch, "lane": "main", "pid": 1})
        validating = into >= 50.0
        gpu_level = 10.0 if validating else 90.0
        cores = [round(min(100.0, max(0.0, (80.0 if validating else 40.0) + rng.gauss(0, 10))), 1) for _ in range(CORES)]
        gpus = []
        for g in range(GPUS):
            util = [[round(t - 0.1 + k / 60, 4), round(min(100.0, max(0.0, gpu_level + rng.gauss(0, 5))), 0)] for k in range(6)]
            gpus.append({"index": g, "util": util[-1][1], "util_samples": util, "mem_util": 40,
                         "mem_used": 20 << 30, "mem_total": 80 << 30, "power_w": 300.0, "temp_c": 60,
                         "sm_clock_mhz": 1980, "procs": [{"pid": 1000 + g, "mem": 20 << 30, "util": util[-1][1]}]})
        writer.write({"type": "sample", "t": round(t, 4), "cpu": cores, "cpu_total": round(sum(cores) / CORES, 1),
                      "freq_mhz": 3000.0, "mem": {"used": 1 << 36, "total": 1 << 38, "swap_used": 0, "swap_total": 0},
                      "proc": {"cpu": 2400.0, "rss": 1 << 34, "threads": 200, "count": 9}, "gpus": gpus,
                      "recorder_cpu": 0.5})
    writer.write({"type": "event", "t": SECONDS, "kind": "phase_end", "name": "validate", "epoch": int(SECONDS / epoch_seconds), "lane": "main", "pid": 1})
    writer.write({"type": "end", "t": SECONDS, "status": "ok", "exit_code": 0, "signal": None,
                  "duration": SECONDS, "reason": "the workload finished"})
    writer.close()


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
        summary = analysis.summarize(run)
        done = time.perf_counter()
        timings.append((loaded - started, done - loaded, done - started))
    best = min(timings, key=lambda x: x[2])
    print(f"samples {len(run.samples)}, epochs {len(summary['epochs'])}, verdict: {summary['verdict']['label']}")
    print(f"load {best[0]:.2f}s + analyse {best[1]:.2f}s = {best[2]:.2f}s (best of {args.repeats}; budget 1.0s)")
    if not args.keep:
        os.remove(path)


if __name__ == "__main__":
    main()
