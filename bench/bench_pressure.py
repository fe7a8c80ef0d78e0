"""The sampler under pressure: does the 10 Hz schedule hold, and what does the recorder cost,
while the workload forks thousands of short-lived processes a second, holds thousands of
threads, floods the event channel, or writes gigabytes of output?

Budgets (docs/benchmarks.md): sample-interval error p99 at most 20 ms; recorder CPU at most
1% of one core with an idle workload (the pressures below are the opposite of idle: their
recorder CPU is reported so that the cost of each path is visible). Measured from outside
with bench_recorder's ``record`` and ``interval_errors_ms``. Notices the recorder wrote (what
a bound left out) are printed too.

    python -m bench.bench_pressure [--seconds 20] [--scale 1.0] [--only NAME] [--terminal]

``--scale 0.05`` runs every pressure at a twentieth of its size, for a quick check.
``--terminal`` gives the workload a pseudo-terminal (as the dashboard does, and headless in a
terminal) instead of pipes: the output flood then goes through it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

from bench.bench_recorder import interval_errors_ms, record
from devicewatch.runformat.runfile import load

PRESSURES = {
    # name: (script, what it does at scale 1)
    "forks": ("""
import os, sys, time
rate, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    began = time.monotonic()
    for _ in range(rate // 10):
        if os.fork() == 0:
            os._exit(0)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    time.sleep(max(0.0, 0.1 - (time.monotonic() - began)))
""", 2000, "short-lived processes forked per second"),
    "threads": ("""
import sys, threading, time
n, seconds = int(sys.argv[1]), float(sys.argv[2])
stop = threading.Event()
threads = [threading.Thread(target=stop.wait, daemon=True) for _ in range(n)]
for t in threads: t.start()
time.sleep(seconds)
""", 4000, "threads held"),
    "events": ("""
import sys, time
from devicewatch import events
rate, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
i = 0
while time.monotonic() < end:
    events.marker(f"m{i}")
    i += 1
""", 0, "events written as fast as the channel takes them"),
    "output": ("""
import sys, time
total, seconds = int(sys.argv[1]), float(sys.argv[2])
line = b"y" * 1023 + b"\\n"
out = sys.stdout.buffer
written, end = 0, time.monotonic() + seconds
while written < total and time.monotonic() < end:
    out.write(line * 64)
    written += 64 * len(line)
out.flush()
time.sleep(max(0.0, end - time.monotonic()))
""", 2 * 1024**3, "bytes of stdout (at most, within the run)"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each recording")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of each pressure's size")
    parser.add_argument("--only", choices=sorted(PRESSURES), help="run one pressure")
    parser.add_argument("--terminal", action="store_true", help="the workload on a pseudo-terminal, not pipes")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-pressure-")
    for name, (source, size, what) in PRESSURES.items():
        if args.only and name != args.only:
            continue
        script = os.path.join(folder, f"{name}.py")
        with open(script, "w") as f:
            f.write(source)
        amount = max(1, int(size * args.scale)) if size else 0
        out = os.path.join(folder, f"{name}.jsonl")
        cpu = record([sys.executable, script, str(amount), str(args.seconds)], out, 2.0, args.seconds - 1.0,
                     ("--terminal", "80x24") if args.terminal else ())
        run = load(out)
        errors = interval_errors_ms(run)
        print(f"{name}: {amount or 'unbounded'} {what}: recorder {cpu:.1f}% of one core; interval error "
              f"p50 {np.percentile(errors, 50):.1f} ms, p99 {np.percentile(errors, 99):.1f} ms, "
              f"max {errors.max():.1f} ms over {len(errors)} intervals (budget p99 20 ms); "
              f"{len(run.events)} events, {len(run.logs)} log lines" + (" (pseudo-terminal)" if args.terminal else ""))
        for notice in run.notices:
            print(f"  notice: {notice.message}")
        os.unlink(out)


if __name__ == "__main__":
    main()
