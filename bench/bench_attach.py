"""What ``devicewatch attach`` costs the job it watches, what its sampler costs, and how close
its sampled shares come to the job's own timing.

    PYTHONPATH=. python bench/bench_attach.py [--periods 10] [--period 5] [--threads 1] [--epochs 10]
                                              [--only accuracy|slowdown] [--python314] [--width 512]

With ``--python314`` the job and the loop run on the Python 3.14 of ``make python314``, where
attach puts the zero-code hooks in by ``sys.remote_exec`` (and takes them out at each detach)
instead of sampling: the slowdown is then the hooks' own cost to the job, there is no sampler,
and the shares are measured, not sampled.

**Slowdown** (budget: the job's steps/s at most 2% lower while attached). One job runs
throughout: a PyTorch loop on THREADS threads that prints its steps and the monotonic time every
quarter of a second. With one thread the job leaves a core to devicewatch, as a job on a node
with cores to spare does; with as many threads as cores (``--threads 2`` here: OpenMP's threads
are those a stopped thread would stall) every cycle devicewatch takes is the job's. The bench
attaches (``devicewatch attach PID --record``) for PERIOD seconds, detaches (SIGINT) and leaves
it alone for PERIOD seconds, PERIODS times, so that the two kinds alternate and neighbouring
periods see the same outside load (pyperf's way). Each attached period is paired with the bare
one after it; the slowdown is the median over the pairs of bare steps/s over attached steps/s,
minus one. An attached period is timed from the recorder's first sample (an interpreter
importing devicewatch is no sampling), less its first half second; a bare one from a second
after the detach.

**The sampler's CPU** (budget: at most 3% of one core): austin's own CPU time over the attached
periods, from each run's end record (``instrument.sampled.sampler_cpu_s``), and the recorder's
own (its samples' ``recorder_cpu``).

**Accuracy** (the "±N points" every sampled figure carries): the input-bound loop of
tests/integration/test_attach_process.py, attached after its first epoch; for every whole pass
the sampled data, train and validate shares against the loop's own ``[truth]`` timing of that
epoch, and over the whole run: the worst and the mean error in percentage points.

The machine this ran on is shared with other programs: say so beside any figure from it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.test_attach_process import LOOP, Loop, passes, records, shares, whole_after  # noqa: E402

JOB = '''
import sys, time
import torch
torch.manual_seed(0)
torch.set_num_threads(int(sys.argv[2]))
WIDTH = int(sys.argv[3])
model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, WIDTH), torch.randint(0, 10, (64,))
end = time.monotonic() + float(sys.argv[1])
steps, mark = 0, time.monotonic()
while time.monotonic() < end:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
    now = time.monotonic()
    if now - mark >= 0.25:
        print(f"{now:.4f} {steps} {time.process_time():.4f}", flush=True)
        mark = now
'''


def python_argv(use_314: bool) -> tuple[list[str], dict[str, str]]:
    """The interpreter the job runs on and what its environment adds."""
    if not use_314:
        return [sys.executable], {}
    found = json.loads((ROOT / ".python314" / "python.json").read_text())
    return [found["python"]], found["env"]


def attach_argv(pid: int, output: Path) -> list[str]:
    return [sys.executable, "-m", "devicewatch", "attach", str(pid), "--record", str(output)]


def rate(marks: list[tuple[float, int, float]], start: float, end: float, per_cpu: bool = False) -> float | None:
    """Steps a second from START to END, or with PER_CPU steps a second of the job's own CPU time."""
    inside = [m for m in marks if start <= m[0] <= end]
    if len(inside) < 2:
        return None
    spent = inside[-1][2] - inside[0][2] if per_cpu else inside[-1][0] - inside[0][0]
    return (inside[-1][1] - inside[0][1]) / spent if spent > 0 else None


def slowdown(periods: int, period: float, threads: int, folder: Path, use_314: bool = False, width: int = 512) -> None:
    script = folder / "job.py"
    script.write_text(JOB)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    python, job_env = python_argv(use_314)
    seconds = 3 * periods * period + 30   # outlasts the periods, each attach's start and detach included
    job = subprocess.Popen([*python, str(script), str(seconds), str(threads), str(width)], stdout=subprocess.PIPE,
                           text=True, env={**os.environ, **job_env})
    marks: list[tuple[float, int, float]] = []

    def read() -> None:
        assert job.stdout is not None
        for line in job.stdout:
            t, n, cpu = line.split()
            marks.append((float(t), int(n), float(cpu)))

    threading.Thread(target=read, daemon=True).start()
    while not marks:   # torch imported, the loop going
        assert job.poll() is None, "the job ended"
        time.sleep(0.1)
    time.sleep(1)
    spans: list[tuple[str, float, float]] = []
    cpu: list[tuple[float, float, float]] = []
    try:
        for k in range(periods):
            out = folder / f"attached-{k}.jsonl"
            watcher = subprocess.Popen(attach_argv(job.pid, out), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while not (out.exists() and b'"sample"' in out.read_bytes()):   # the recorder is under way
                if watcher.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"attach {k + 1} did not start: {watcher.communicate()[1].decode()[-500:]}")
                time.sleep(0.05)
            began = time.monotonic()
            time.sleep(period)
            watcher.send_signal(signal.SIGINT)
            watcher.wait(timeout=60)
            spans.append(("attached", began + 0.5, began + period))
            run = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
            end = run[-1]
            own = [r["recorder_cpu"] for r in run if r.get("type") == "sample" and r.get("recorder_cpu") is not None]
            hooked = "hooked" in end["instrument"]
            assert hooked == use_314, f"attach {'sampled' if use_314 else 'hooked'} the job: {end['instrument']}"
            cpu.append((0.0 if hooked else end["instrument"]["sampled"]["sampler_cpu_s"], end["duration"],
                        statistics.fmean(own) if own else float("nan")))
            began = time.monotonic()
            time.sleep(period)
            spans.append(("bare", began + 1.0, began + period))
    finally:
        job.kill()
        job.wait()
    for per_cpu, unit in ((False, "steps/s"), (True, "steps per CPU-second")):
        ratios = []
        for k in range(0, len(spans), 2):
            attached, bare = rate(marks, *spans[k][1:], per_cpu), rate(marks, *spans[k + 1][1:], per_cpu)
            if attached and bare:
                ratios.append(bare / attached - 1)
                print(f"pair {k // 2 + 1}: bare {bare:.1f} {unit}, attached {attached:.1f} ({100 * (bare / attached - 1):+.1f}%)")
        print(f"slowdown while attached, in {unit} ({threads} job thread(s) on {os.cpu_count()} cores): median "
              f"{100 * statistics.median(ratios):+.1f}% over {len(ratios)} pairs, each {100 * min(ratios):+.1f}% to "
              f"{100 * max(ratios):+.1f}% (budget <= 2%)")
    sampler = sum(c for c, _, _ in cpu) / sum(d for _, d, _ in cpu)
    what = "no sampler (the hooks are in the job)" if use_314 else f"sampler (austin): {100 * sampler:.1f}% of one core"
    print(f"{what}; recorder: {statistics.fmean(r for _, _, r in cpu):.1f}% of one core (budget: sampler <= 3%)")


def attached_after_epoch_1(loop: Loop, folder: Path) -> list[dict[str, Any]]:
    """LOOP's run, attached to after its first epoch until it ends."""
    out = folder / "accuracy.jsonl"
    try:
        loop.wait_for("[truth] epoch 1 ", timeout=180)
        subprocess.run(attach_argv(loop.process.pid, out), cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                       stdout=subprocess.DEVNULL, check=True, timeout=600)
        loop.finish()
    finally:
        loop.kill()
    return records(out)


def accuracy(epochs: int, folder: Path, use_314: bool = False) -> None:
    if use_314:
        hooked(epochs, folder)
        return
    loop = Loop(folder, epochs, 0.004, 256)
    run = attached_after_epoch_1(loop, folder)
    sampled = passes(run)
    try:
        truths = whole_after(loop, run, sampled)
    except AssertionError as exc:
        print(f"accuracy: epochs counted wrong: sampled passes, then the epochs begun after the attach: {exc}")
        return
    errors = [abs(shares(sampled[n])[k] - shares(t)[k])
              for n, t in zip(sorted(sampled), truths) for k in ("data", "train", "validate")]
    seen = {k: sum(sampled[n][k] for n in sampled) for k in ("data", "train", "validate")}
    truth = {k: sum(t[k] for t in truths) for k in ("data", "train", "validate")}
    whole = max(abs(shares(seen)[k] - shares(truth)[k]) for k in seen)
    print(f"accuracy: {len(sampled)} whole passes sampled, {len(truths)} epochs whole after the attach; "
          f"over the run: worst share off by {whole:.1f} points; per epoch: worst {max(errors):.1f}, "
          f"mean {statistics.fmean(errors):.1f} points")
    end = run[-1]
    print(f"sampler (austin) over this {end['duration']:.0f} s attach: "
          f"{100 * end['instrument']['sampled']['sampler_cpu_s'] / end['duration']:.2f}% of one core; "
          f"{end['instrument']['sampled']['invalid']} of "
          f"{end['instrument']['sampled']['invalid'] + end['instrument']['sampled']['samples']} stacks read as they changed")


def hooked(epochs: int, folder: Path) -> None:
    """Accuracy with the hooks in (Python 3.14): each epoch's measured shares against its [truth]."""
    from tests.integration.test_attach_remote import Loop314

    loop = Loop314(folder, epochs, 0.004, 256)
    run = attached_after_epoch_1(loop, folder)
    seen = passes(run)
    truths = {t["epoch"]: t for t in loop.truths()}
    numbered = next(r for r in run if r.get("kind") == "instrument" and r.get("state") == "numbered")
    first = numbered["epoch"] + (0 if numbered["whole"] else 1)
    expected = sorted(n for n in truths if n >= first)
    errors = [abs(shares(seen[n])[k] - shares(truths[n])[k]) for n in seen if n in truths
              for k in ("data", "train", "validate")]
    total = {k: sum(seen[n][k] for n in seen) for k in ("data", "train", "validate")}
    truth = {k: sum(truths[n][k] for n in seen if n in truths) for k in ("data", "train", "validate")}
    whole = max(abs(shares(total)[k] - shares(truth)[k]) for k in total)
    print(f"accuracy (hooks, Python {run[-1]['instrument']['hooked']['python']}): epochs counted "
          f"{'exactly' if sorted(seen) == expected else f'WRONG: {sorted(seen)} for {expected}'} "
          f"({len(seen)} after the join, numbered by the loop variable from {first}); over the run: worst share "
          f"off by {whole:.1f} points; per epoch: worst {max(errors):.1f}, mean {statistics.fmean(errors):.1f} points")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--periods", type=int, default=10, help="attached periods (each paired with a bare one)")
    parser.add_argument("--period", type=float, default=5.0, help="seconds a period lasts")
    parser.add_argument("--threads", type=int, default=1, help="the job's threads (torch.set_num_threads)")
    parser.add_argument("--epochs", type=int, default=10, help="epochs of the accuracy loop")
    parser.add_argument("--width", type=int, default=512,
                        help="the slowdown job's layer width: wider, longer steps (512: about 2 ms a step here)")
    parser.add_argument("--only", choices=("accuracy", "slowdown"), help="measure one of the two")
    parser.add_argument("--python314", action="store_true",
                        help="the job on the Python 3.14 of `make python314`: the hooks, not the sampler")
    args = parser.parse_args()
    assert "[truth]" in LOOP
    with tempfile.TemporaryDirectory(prefix="bench-attach-") as folder:
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        if args.only != "slowdown":
            accuracy(args.epochs, Path(folder), args.python314)
        if args.only != "accuracy":
            slowdown(args.periods, args.period, args.threads, Path(folder), args.python314, args.width)


if __name__ == "__main__":
    main()
