"""``devicewatch try`` on a machine it does not own: its predictions against what it measured.

Three loops (tests/zero_code/trial_scripts/), each run by ``devicewatch try --json`` with no
``--vary`` (the variants are what the first trial's advice names), in one run of this bench:

* ``compute_loop.py`` beside one program that keeps a core busy: its operator threads wait for
  cores; the advice is ``threads`` (fewer), predicted from its own steps timed in the first
  trial after its window (the waiting model alone cannot know how the pool's threads wait);
* ``cpu_dataset.py`` (one thread, a Dataset that works a millisecond an item, no workers)
  beside the same program, with ``--vary num_workers=2``: workers predicted from the cores
  free (the advice itself says none is worth it where no core is: ``advice.MIN_GAIN``);
* ``compute_loop.py`` alone: the verdict and advice, which should name no contention.

For each variant: predicted and measured steps a second and measured / predicted (the budget:
every prediction within 25%, docs/benchmarks.md). Run it on a machine with nothing else busy:
the busy program is its own.

    python -m bench.bench_contention [--seconds 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "zero_code" / "trial_scripts"


def trials(script: str, seconds: float, busy: bool, vary: tuple[str, ...] = ()) -> dict:
    """``devicewatch try --json`` of SCRIPT, with a busy program beside it when BUSY."""
    program = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run([sys.executable, "-m", "devicewatch", "try", "--seconds", str(seconds),
                                     "--warmup", "10", "--out", str(Path(folder) / "trials"), "--json", *vary, "--",
                                     sys.executable, str(SCRIPTS / script)], cwd=folder, capture_output=True,
                                    text=True)
    finally:
        if program is not None:
            program.kill()
            program.wait()
    if result.returncode != 0:
        raise SystemExit(f"devicewatch try failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    worst = 0.0
    for script, busy, vary in (("compute_loop.py", True, ()), ("cpu_dataset.py", True, ("--vary", "num_workers=2")),
                               ("compute_loop.py", False, ())):
        said = trials(script, args.seconds, busy, vary)
        base, *variants = said["variants"]
        beside = "beside a busy program" if busy else "alone"
        print(f"{script} {beside}: as written {base['steps_per_s']:.1f} steps/s, verdict {base['verdict']}",
              flush=True)
        for advice in said.get("advice", []):
            print(f"  advice: {advice.get('knob')}={advice.get('value')}: {advice.get('why')}")
        for v in variants:
            predicted, measured = v.get("predicted_steps_per_s"), v["steps_per_s"]
            ratio = measured / predicted if predicted and measured else None
            if ratio is not None:
                worst = max(worst, abs(ratio - 1.0))
            print(f"  {v['label']}: measured {measured:.1f} steps/s ({measured / base['steps_per_s']:.2f}×), "
                  f"predicted {predicted if predicted is None else round(predicted, 1)}"
                  + (f", measured / predicted {ratio:.2f}" if ratio is not None else ""), flush=True)
    print(f"the furthest prediction: {worst:.0%} off (budget 25%)")


if __name__ == "__main__":
    main()
