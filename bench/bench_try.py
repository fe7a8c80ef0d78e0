"""What ``devicewatch try`` costs beyond its trials: a set of 3 variants against their trial time.

One ``devicewatch try --json`` of the script as written and two variants
(``--vary num_workers=1,2``) of tests/zero_code/trial_scripts/sleepy_dataset.py, timed whole
(wall clock, from the command's start to its exit); each trial's own time is its recording's
duration (the recorder's first sample to its end record: the script's start-up, warm-up,
window and end). The overhead is what the command adds around them: its own start-up, the
plan, reading and judging every recording, the advice and prediction, writing trials.json.

Budget (docs/benchmarks.md): a trial set of 3 variants ≤ its trial time plus 10%.

    python -m bench.bench_try [--runs 3] [--steps 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "zero_code" / "trial_scripts" / "sleepy_dataset.py"


def one(steps: int) -> tuple[float, float, list[float]]:
    """(wall seconds of the whole command, seconds of its trials, each trial's seconds)."""
    from devicewatch.runformat import runfile

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "trials"
        start = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "devicewatch", "try", "--vary", "num_workers=1,2",
                                 "--steps", str(steps), "--warmup", "5", "--out", str(out), "--json", "--",
                                 sys.executable, str(SCRIPT)], cwd=folder, capture_output=True, text=True)
        wall = time.monotonic() - start
        if result.returncode != 0:
            raise SystemExit(f"devicewatch try failed: {result.stderr[-2000:]}")
        said = json.loads(result.stdout)
        trials = [runfile.load(v["run_file"]).duration for v in said["variants"]]
    return wall, sum(trials), trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    ratios = []
    for i in range(args.runs):
        wall, trials, each = one(args.steps)
        ratios.append(wall / trials)
        print(f"run {i + 1}: whole {wall:.2f} s, trials {trials:.2f} s ({', '.join(f'{t:.2f}' for t in each)}): "
              f"{wall / trials:.3f}× the trial time (+{(wall - trials):.2f} s)", flush=True)
    print(f"median: {statistics.median(ratios):.3f}× the trial time (budget 1.10×)")


if __name__ == "__main__":
    main()
