"""What the zero-code instrumentation costs a training loop, and how many events it sends.

The workload is a loop of tiny steps (one-sample batches from a DataLoader into a 4-input
linear model: about 4,500 steps/s of CPU time here, the worst case for per-step hooks), recorded by
``devicewatch --record`` with the instrumentation on. ``--layers 8`` puts eight hidden 4-wide
layers in the model, which lengthens each step to about 2,000 steps/s here: the budget's own rate.

**Slowdown.** Whole runs with and without the instrumentation differ here by far more than
2% (the machine is shared: pairs of back-to-back runs came out -24% and +83%), so the figure
comes from one run that alternates: every BURST training steps the loop swaps PyTorch's own
``DataLoader.__next__`` and ``Module.train`` back in for the hooked ones (each hook keeps its
original as ``__wrapped__``; the backward hook has put PyTorch's own back by the first
optimizer step) and empties the optimizer's global post-step hooks, then puts them back, and
times each burst (training steps only: validation is in none). It swaps between a step's batch
and its optimizer step, where the hooked loop has no wait open: swapped after the optimizer
step, the loop's wait from that step to the next hooked batch spanned the bare bursts between,
long enough to start the watcher that samples a waiting loop's stack, which then sampled the
bare bursts (it ran in every alternating run before). Neighbouring bursts see the
same outside load, so they are paired (bursts 1 and 2, 3 and 4, ...: one of each kind, each
kind as often first), and the slowdown is the median over a run's pairs of the hooked burst's
time over the bare one's, minus one: a burst in which another program took the core spoils one
pair, not the figure, as pyperf reads interleaved runs. Its cost a step is that share of the
median bare burst's time a step. Each burst is timed twice: by the process's CPU time (what the
hooks cost the loop, steady while other programs take the cores: a burst waiting for a core
counts no time) and by wall time; the ratio of the two kinds' total wall times (the figure
before pairing, which one long preemption moves) is printed beside them. ``--runs`` repeats it to show
the spread, each time with a control run that swaps the same way but keeps the hooks in both
kinds of burst (its figure is what the method itself reads when there is nothing to find).

**Events a second** are read from run files of the loop fully instrumented: every event record
over the span from the first to the last, and the most in any one second, for epochs of
``--steps`` steps and for 20-step epochs (dozens of epochs a second), where the per-process
bound has to hold.

Budgets (docs/benchmarks.md): at most 2% slower, at most 50 events a second.

``--per-hook`` adds runs that take out only one hook in the "off" bursts, to say what each costs,
and runs whose "on" bursts have hooks in the same places that do nothing: the floor any
per-step hook pays. The DataLoader's hook alone is not a clean figure: in its "off" bursts the
loop sees steps and no batches, so it starts watching the model's calls (as for a loop that
reads no DataLoader), and that hook is then in both kinds of burst.

**Keras 2** (``tf_keras``): the same alternation over a ``fit`` of a tiny model
(``bench_keras2_fetch``, whose docstring says how), run after the loop's runs; ``--keras2-runs
0`` leaves it out, and it is left out with a line where ``tf_keras`` is not installed.
Budget: at most 5% slower.

    python -m bench.bench_zero_code [--runs 3] [--steps 2000] [--epochs 5] [--layers 8] [--per-hook] [--keras2-runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.paired_bursts import alternation, line, summary

ROOT = Path(__file__).resolve().parent.parent

LOOP = """
import statistics, sys, time
import torch
import torch.optim.optimizer as optimizer_module
from torch import nn
from torch.nn.modules.module import Module
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import _BaseDataLoaderIter

steps, epochs, mode, layers = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
alternate = mode in ("alternate", "control", "next", "step", "empty")
BURST = 50
torch.manual_seed(0)
torch.set_num_threads(1)
train = DataLoader(TensorDataset(torch.randn(steps, 4), torch.randn(steps, 1)), batch_size=1)
val = DataLoader(TensorDataset(torch.randn(max(1, steps // 10), 4), torch.randn(max(1, steps // 10), 1)), batch_size=1)
# LAYERS hidden 4-wide layers make each step longer (its own Python and dispatch, as a real model's)
model = nn.Sequential(*(m for _ in range(layers) for m in (nn.Linear(4, 4), nn.Tanh())), nn.Linear(4, 1)) \
    if layers else nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

# The hooked functions (the backward hook has put PyTorch's own back by the first step).
# Module.__call__ is hooked only for a loop that reads no DataLoader: not this one.
hooked = (_BaseDataLoaderIter.__next__, Module.train)
post_step = dict(optimizer_module._global_optimizer_post_hooks)
if alternate and not all(hasattr(f, "__wrapped__") for f in hooked):
    sys.exit("not instrumented: nothing to alternate")
if mode == "empty":  # hooks in the same places that do nothing: what PyTorch's calling them costs
    def empty_next(iterator, original=hooked[0].__wrapped__):
        return original(iterator)
    empty_next.__wrapped__ = hooked[0].__wrapped__
    hooked = (empty_next, hooked[1])
    post_step = {key: (lambda optimizer, args, kwargs: None) for key in post_step}


def hooks(on):
    # Which hooks the "off" bursts take out: both (alternate; empty, whose "on" bursts have hooks
    # that do nothing), the DataLoader's or the optimizer's alone (next, step: the cost of each),
    # or neither (control: what the method itself costs).
    swap_next, swap_step = mode in ("alternate", "next", "empty"), mode in ("alternate", "step", "empty")
    chosen = hooked if on or not swap_next else tuple(f.__wrapped__ for f in hooked)
    _BaseDataLoaderIter.__next__, Module.train = chosen
    optimizer_module._global_optimizer_post_hooks.clear()
    if on or not swap_step:
        optimizer_module._global_optimizer_post_hooks.update(post_step)


bursts = {}  # burst number -> (hooked, seconds, CPU seconds): 1 with 2, 3 with 4, ... are paired
done = 0
on = True
burst_start = cpu_start = None
start = time.perf_counter()
for epoch in range(epochs):
    model.train()
    for x, y in train:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        if alternate and done % BURST == 0:
            # Bursts end and begin here, between a step's batch and its optimizer step: the hooked
            # loop's wait between two steps is closed then, so it never spans a bare stretch (a wait
            # that long starts the watcher that samples a waiting loop, which would sample the bare
            # bursts).
            now, cpu_now = time.perf_counter(), time.process_time()
            if burst_start is not None:
                bursts[done // BURST] = (on, now - burst_start, cpu_now - cpu_start)
                # on, off, off, on, on, off, ...: each kind as often first as second
                on = on if (done // BURST) % 2 == 0 else not on
                hooks(on)
            burst_start, cpu_start = time.perf_counter(), time.process_time()
        optimizer.step()
        done += 1
    paused, cpu_paused = time.perf_counter(), time.process_time()  # training only: validation is in no burst
    model.eval()
    with torch.no_grad():
        for x, y in val:
            model(x)
    if burst_start is not None:
        burst_start += time.perf_counter() - paused
        cpu_start += time.process_time() - cpu_paused
hooks(True)
if alternate:
    # each hooked burst over its neighbour of the other kind (bursts 1 and 2, 3 and 4, ...: one of each)
    pairs = [(bursts[n], bursts[n + 1]) for n in bursts if n % 2 and n + 1 in bursts]
    seconds = {kind: sum(t for hooked, t, _ in bursts.values() if hooked == kind) for kind in (False, True)}
    counted = {kind: BURST * sum(hooked == kind for hooked, _, _ in bursts.values()) for kind in (False, True)}
    figures = [counted[False] / seconds[False], counted[True] / seconds[True]]
    for clock in (1, 2):  # wall time, then the process's CPU time
        figures.append(statistics.median(a[clock] / b[clock] if a[0] else b[clock] / a[clock] for a, b in pairs))
        figures.append(BURST / statistics.median(burst[clock] for burst in bursts.values() if not burst[0]))
    print(*figures)
else:
    print(done / (time.perf_counter() - start))
"""


HOOK_NAMES = {"next": "the DataLoader's __next__ hook alone (less the model-call hook it starts)",
              "step": "the optimizer's post-step hook alone",
              "empty": "both hooks doing nothing (what PyTorch's calling a Python hook there costs)"}


def record(script: Path, out: Path, steps: int, epochs: int, mode: str = "whole", layers: int = 0) -> list[float]:
    """Record one instrumented run of the loop; what it printed (its step rates)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DEVICEWATCH_EVENTS", "DEVICEWATCH_INSTRUMENT")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "devicewatch", "--record", str(out), "--quiet", "--", sys.executable,
               str(script), str(steps), str(epochs), mode, str(layers)]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"the recorded loop failed: {result.stderr[-2000:]}")
    from devicewatch.runformat import runfile

    logs = [log.line for log in runfile.load(out).logs if log.stream == "stdout"]
    return [float(v) for v in logs[-1].split()]


def event_rates(path: Path) -> tuple[int, float, int]:
    """(events, events a second over their span, the most in one second) of a run file."""
    times = []
    with open(path) as handle:
        for line in handle:
            if line.startswith('{"type":"event"'):
                times.append(json.loads(line)["t"])
    if len(times) < 2:
        return len(times), 0.0, len(times)
    times.sort()
    span = times[-1] - times[0]
    most = max(sum(1 for t in times[i:] if t < start + 1.0) for i, start in enumerate(times))
    return len(times), len(times) / span if span > 0 else 0.0, most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="alternating runs (default 3)")
    parser.add_argument("--steps", type=int, default=2000, help="training steps an epoch (default 2000)")
    parser.add_argument("--epochs", type=int, default=5, help="epochs a run (default 5)")
    parser.add_argument("--layers", type=int, default=0,
                        help="hidden layers that lengthen each step (default 0: the 4-input linear model; 8 makes a "
                             "loop of about 2,000 steps/s here, the budget's rate)")
    parser.add_argument("--keras2-runs", type=int, default=None,
                        help="alternating runs of Keras 2's fit (default: as many as --runs; 0: none)")
    parser.add_argument("--per-hook", action="store_true",
                        help="also each hook's own share: runs that take out only the DataLoader's or only the "
                             "optimizer's hook")
    args = parser.parse_args()
    from bench import bench_keras2_fetch

    keras2_runs = args.runs if args.keras2_runs is None else args.keras2_runs
    if keras2_runs and not bench_keras2_fetch.installed():
        print("Keras 2 (tf_keras) is not installed: its fit is not measured (`make setup` installs it)")
        keras2_runs = 0
    with tempfile.TemporaryDirectory(prefix="bench-zero-code-") as tmp:
        folder = Path(tmp)
        script = folder / "loop.py"
        script.write_text(LOOP)
        # per run: {"cpu"|"wall"|"total": (slowdown, bare steps/s)} of the alternating run and of its control
        runs: list[dict[str, tuple[float, float]]] = []
        controls: list[dict[str, tuple[float, float]]] = []
        per_hook: dict[str, list[dict[str, tuple[float, float]]]] = {}
        for run in range(args.runs):
            runs.append(alternation(record(script, folder / f"alternate-{run}.jsonl", args.steps, args.epochs,
                                           "alternate", args.layers)))
            print(f"run {run + 1}: {line(runs[-1])}", flush=True)
            controls.append(alternation(record(script, folder / f"control-{run}.jsonl", args.steps, args.epochs,
                                               "control", args.layers)))
            print(f"control {run + 1}, hooked both ways: {line(controls[-1])}", flush=True)
            for hook in ("next", "step", "empty") if args.per_hook else ():
                per_hook.setdefault(hook, []).append(
                    alternation(record(script, folder / f"{hook}-{run}.jsonl", args.steps, args.epochs, hook, args.layers)))
                print(f"{HOOK_NAMES[hook]} {run + 1}: {line(per_hook[hook][-1])}", flush=True)
        keras2 = bench_keras2_fetch.runs(keras2_runs, 4) if keras2_runs else None
        whole = folder / "whole.jsonl"
        (rate,) = record(script, whole, args.steps, args.epochs, layers=args.layers)
        whole_events = event_rates(whole)
        stress = folder / "stress.jsonl"
        record(script, stress, 20, 300)
        stress_events = event_rates(stress)
    print()
    print(f"slowdown hooked, {args.runs} runs alternating every 50 steps (budget +2%):")
    print(summary("hooked", runs))
    print(summary("control (hooked both ways: what the method reads when there is nothing to find)", controls))
    for hook, figures in per_hook.items():
        print(summary(HOOK_NAMES[hook], figures))
    if keras2 is not None:
        print(f"slowdown of Keras 2's fit (a tiny model), {keras2_runs} runs alternating every 50 steps (budget +5%):")
        print(summary("hooked", keras2[0]))
        print(summary("control (hooked both ways)", keras2[1]))
    print(f"events, {args.steps}-step epochs ({rate:.0f} steps/s fully instrumented): {whole_events[0]} in the run, "
          f"{whole_events[1]:.1f}/s over it, {whole_events[2]} in the busiest second (budget 50/s)")
    print(f"events, 20-step epochs (300 epochs): {stress_events[0]} in the run, {stress_events[1]:.1f}/s over it, "
          f"{stress_events[2]} in the busiest second (budget 50/s)")


if __name__ == "__main__":
    main()
