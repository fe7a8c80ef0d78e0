"""The prediction matrix: what ``devicewatch try`` predicts for a variant against what it then measures.

Twelve variants of four small PyTorch loops on the CPU (tests/zero_code/trial_scripts/ and
tests/zero_code/round3/), each predicted from the first trial (the script as written) and then
measured by its own trial, in one ``devicewatch try --json`` per script and condition:

* ``threads=1`` of ``compute_loop.py`` (PyTorch's own threads, one per core) beside a program
  that keeps a core busy; under ``taskset -c 0`` with ``OMP_NUM_THREADS=2`` (a script that asks
  for two threads on one core); in a cgroup with a CPU quota of half a core (where this user can
  make one: root, cgroup v1's ``cpu`` or v2's ``cpu.max``; else said and left out); alone;
* ``num_workers=2`` of ``sleepy_dataset.py`` (a Dataset that waits 4 ms an item) and of
  ``cpu_dataset.py`` (one that works about a millisecond an item), each quiet and beside the
  busy program;
* ``num_workers=0`` and ``persistent_workers=true`` of ``next_iter.py`` (a new iterator over a
  DataLoader with two workers every step), quiet and beside the busy program.

Each set measures the script as written twice (a control: the knob at the script's own value),
so that the table says how far apart two measurements of the same thing fall on this machine
at this load. A prediction holds when it is within 25% of what was measured (``|predicted − measured| ≤ 0.25 ×
measured``); a range holds when the measurement falls inside it. It prints one line per variant
and the count that held (the target: 10 of 12, docs/benchmarks.md). The busy program is its own:
run it on a machine with nothing else busy, or say what else ran beside the figures.

    python -m bench.bench_predictions [--seconds 3] [--only threads|num_workers|next-iter]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "zero_code" / "trial_scripts"
NEXT_ITER = ROOT / "tests" / "zero_code" / "round3" / "next_iter.py"
HOLDS = 0.25
QUOTA_CORES = 0.5
BUSY = "while True: pass"


@dataclass(frozen=True)
class Case:
    """One ``devicewatch try`` of SCRIPT under CONDITION with the variants VARY."""

    group: str
    script: Path
    condition: str          # alone, busy, taskset, quota
    vary: tuple[str, ...]
    window: tuple[str, ...]
    control: str            # the script's own value of a knob: the script as written measured again


def cases(seconds: float) -> list[Case]:
    timed = ("--seconds", f"{seconds:g}", "--warmup", "5")
    loop = SCRIPTS / "compute_loop.py"
    stepped = ("--steps", "10", "--warmup", "5")
    return [Case("threads", loop, "busy", ("threads=1",), timed, "threads=2"),
            Case("threads", loop, "taskset", ("threads=1",), timed, "threads=2"),
            Case("threads", loop, "quota", ("threads=1",), timed, "threads=2"),
            Case("threads", loop, "alone", ("threads=1",), timed, "threads=2"),
            Case("num_workers", SCRIPTS / "sleepy_dataset.py", "alone", ("num_workers=2",), timed, "num_workers=0"),
            Case("num_workers", SCRIPTS / "sleepy_dataset.py", "busy", ("num_workers=2",), timed, "num_workers=0"),
            Case("num_workers", SCRIPTS / "cpu_dataset.py", "alone", ("num_workers=2",), timed, "num_workers=0"),
            Case("num_workers", SCRIPTS / "cpu_dataset.py", "busy", ("num_workers=2",), timed, "num_workers=0"),
            Case("next-iter", NEXT_ITER, "alone", ("num_workers=0", "persistent_workers=true"), stepped, "num_workers=2"),
            Case("next-iter", NEXT_ITER, "busy", ("num_workers=0", "persistent_workers=true"), stepped, "num_workers=2")]


def quota_group() -> tuple[str | None, str]:
    """A cgroup with a CPU quota of QUOTA_CORES to run a trial set in: (its cgroup.procs, how it
    was made), or (None, why it could not be)."""
    period = 100_000
    v2 = Path("/sys/fs/cgroup")
    try:
        if (v2 / "cgroup.controllers").exists():
            group = v2 / "devicewatch-bench"
            group.mkdir(exist_ok=True)
            (group / "cpu.max").write_text(f"{int(QUOTA_CORES * period)} {period}")
            return str(group / "cgroup.procs"), f"cgroup v2 {group} cpu.max {int(QUOTA_CORES * period)} {period}"
        v1 = v2 / "cpu"
        if v1.is_dir():
            group = v1 / "devicewatch-bench"
            group.mkdir(exist_ok=True)
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(int(QUOTA_CORES * period)))
            return str(group / "cgroup.procs"), f"cgroup v1 {group} quota {int(QUOTA_CORES * period)}/{period} µs"
    except OSError as exc:
        return None, f"no cgroup with a CPU quota could be made here ({exc.strerror})"
    return None, "no cgroup file system with a cpu controller here"


def run_case(case: Case, procs: str | None) -> dict:
    """``devicewatch try --json`` of CASE; its trials.json as printed."""
    command = [sys.executable, "-m", "devicewatch", "try", *case.window, "--json"]
    for vary in (*case.vary, case.control):
        command += ["--vary", vary]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if case.condition == "taskset":
        command = ["taskset", "-c", "0", *command]
        env["OMP_NUM_THREADS"] = "2"

    def into_group() -> None:
        if case.condition == "quota" and procs is not None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

    busy = subprocess.Popen([sys.executable, "-c", BUSY]) if case.condition == "busy" else None
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = subprocess.run([*command, "--out", str(Path(folder) / "trials"), "--", sys.executable,
                                     str(case.script)], cwd=folder, env=env, capture_output=True, text=True,
                                    preexec_fn=into_group, timeout=900)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    if result.returncode != 0:
        raise SystemExit(f"devicewatch try failed for {case}: {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def held(predicted: float | None, low: float | None, high: float | None, measured: float | None) -> bool | None:
    """Whether the prediction held: a figure within HOLDS of the measured, a range around it."""
    if not measured:
        return None
    if predicted:
        return abs(predicted - measured) <= HOLDS * measured
    if low is not None and high is not None:
        return low <= measured <= high
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="each trial's measured window (default 3)")
    parser.add_argument("--only", choices=("threads", "num_workers", "next-iter"))
    args = parser.parse_args()
    procs, how = quota_group()
    print(f"quota: {how}", flush=True)
    print(f"{'knob':<12} {'script':<18} {'condition':<8} {'variant':<24} {'as written':>10} {'predicted':>13} "
          f"{'measured':>9} {'off':>6}  held", flush=True)
    count = total = steady = steady_held = 0
    noise: list[float] = []
    for case in cases(args.seconds):
        if args.only and case.group != args.only:
            continue
        if case.condition == "quota" and procs is None:
            print(f"{case.group:<12} {case.script.name:<18} {case.condition:<8} not run: {how}", flush=True)
            total += len(case.vary)
            continue
        said = run_case(case, procs)
        base, *variants = said["variants"]
        control = variants.pop()
        again = control.get("steps_per_s")
        if again and base.get("steps_per_s"):
            noise.append(abs(again / base["steps_per_s"] - 1))
        print(f"{'':<12} {case.script.name:<18} {case.condition:<8} {'control: ' + control['label']:<24} "
              f"{base.get('steps_per_s') or 0:>10.1f} {'-':>13} {again or 0:>9.1f} "
              f"{(again / base['steps_per_s'] - 1 if again and base.get('steps_per_s') else 0):+6.0%}  "
              f"(the script as written again; others {control.get('others_cores')})", flush=True)
        moved_labels = {m["label"] for m in (said.get("load") or {}).get("variants", [])}
        for v in variants:
            total += 1
            moved = v["label"] in moved_labels
            measured, predicted = v.get("steps_per_s"), v.get("predicted_steps_per_s")
            low, high = v.get("predicted_range") or (None, None)
            ok = held(predicted, low, high, measured)
            count += bool(ok)
            if not moved:
                steady += 1
                steady_held += bool(ok)
            if predicted:
                shown = f"{predicted:.1f}" + (" m" if v.get("predicted_measured") else "")
            elif low is not None:
                shown = f"{low:.1f}–{high:.1f}"
            else:
                shown = "-"
            off = f"{predicted / measured - 1:+.0%}" if predicted and measured else "-"
            print(f"{case.group:<12} {case.script.name:<18} {case.condition:<8} {v['label']:<24} "
                  f"{base.get('steps_per_s') or 0:>10.1f} {shown:>13} {measured or 0:>9.1f} {off:>6}  "
                  f"{'yes' if ok else 'NO' if ok is False else 'not measured'}{' *' if moved else ''}"
                  f"  (others {v.get('others_cores')}, as written {base.get('others_cores')})", flush=True)
    if procs is not None:
        try:
            os.rmdir(os.path.dirname(procs))   # the quota's cgroup, empty once its trials ended
        except OSError:
            pass
    print(f"held: {count} of {total} (target 10 of 12; a figure within {HOLDS:.0%} of the measured, "
          "a range around it; m: the variant's own steps timed in the first trial)")
    print(f"of the {steady} whose trial ran under the load the script as written ran under (no *: try's own rule, "
          f"trials.json's load), {steady_held} held")
    if noise:
        print(f"the script as written measured twice: {sorted(noise)[len(noise) // 2]:.0%} apart at the median, "
              f"{max(noise):.0%} at most (the machine's own noise: a prediction cannot be closer than its measurement)")


if __name__ == "__main__":
    main()
