"""What recording costs, and whether samples arrive on time when the machine is saturated.

1. The recorder's CPU at the default 10 samples/s while the workload sleeps (budget: at most
   0.6% of one core), measured from outside: the recorder process's CPU time between two
   instants well after start-up (its threads' scheduler nanoseconds: ``cpu_seconds``),
   divided by the wall time between them.
2. Sample-interval error while the workload keeps every core busy (budget: p99 at most
   20 ms): the gaps between consecutive samples' times minus the interval.
3. The recorder's CPU while the workload starts workers that end again (four an "epoch" of two
   seconds, each living a second and a half, as a DataLoader's do without
   ``persistent_workers``), from the moment over sixty have come and gone: what the recorder
   does for every process it has seen must not grow with them (``--churn`` alone).
4. The recorder's CPU while the workload's tree holds 200 threads (four processes of 50, mostly
   waiting, a few waking every millisecond), beside the idle workload's figure of the same run:
   every thread's run-queue delay is read each sample (``--threads`` alone; budget 0.6%).
5. Where one sample's time goes (``--profile``): the recorder run in this process on the idle
   workload and on the 200 threads' (or one of them: ``--profile one``), each part of its
   sampling loop timed in CPU microseconds of the sampling thread (``time.thread_time_ns``),
   which a busy machine inflates less than a share of a core. Run with another checkout first
   on ``PYTHONPATH`` to profile that code: a part it lacks is left out.

   With ``--against CHECKOUT`` (``--threads`` only), the fourth alternates this checkout's
   recorder with another's, pair by pair, and prints each pair's ratio and the medians; with
   ``--at-once``, each pair's four recorders run side by side, read over the same window.

    python -m bench.bench_recorder [--seconds 30] [--churn | --threads [--against DIR] | --profile [one|many]]
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import numpy as np
import psutil

from devicewatch.runformat.runfile import load

SATURATE = """
import multiprocessing as mp, time
def spin(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
if __name__ == "__main__":
    seconds = float(__import__("sys").argv[1])
    procs = [mp.Process(target=spin, args=(seconds,)) for _ in range(mp.cpu_count())]
    for p in procs: p.start()
    for p in procs: p.join()
"""

# Four workers an "epoch" of two seconds, each living 1.5 s: the sampler sees each (it looks for
# new processes once a second), and they end before the next epoch's start.
CHURN = """
import subprocess, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    workers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"]) for _ in range(4)]
    time.sleep(2.0)
    for worker in workers:
        worker.wait()
"""

# Four processes of 50 threads each: 200 threads in the tree, as a DataLoader with workers and
# operator pools has; a few of them wake every millisecond, so their delays move.
THREADS = """
import subprocess, sys, threading, time
seconds = float(sys.argv[1])
if len(sys.argv) == 2:
    children = [subprocess.Popen([sys.executable, __file__, sys.argv[1], "child"]) for _ in range(3)]
def wait(): time.sleep(seconds)
def tick():
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.001)
threads = [threading.Thread(target=tick if i < 4 else wait, daemon=True) for i in range(49)]
for t in threads: t.start()
time.sleep(seconds)
if len(sys.argv) == 2:
    for child in children: child.wait()
"""


def cpu_seconds(pid: int) -> float:
    """The CPU time PID's threads have run, in seconds: the scheduler's own nanoseconds of each
    thread (``/proc/PID/task/TID/schedstat``) where the kernel keeps them, else the process's
    user + system time, which comes in 10 ms ticks: 0.06% of a core over a 16 s window, as
    large as a change worth measuring. The recorder's threads live as long as it does, so none
    of their time is lost with an ended thread inside the window."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        return sum(psutil.Process(pid).cpu_times()[:2])


def record(workload: list[str], out: str, measure_from: float, measure_to: float,
           options: tuple[str, ...] = (), code: str | None = None) -> float:
    """Record WORKLOAD; return the recorder's CPU (% of one core) between the two instants.
    OPTIONS: more of the recorder's (``--terminal 80x24``: the workload on a pseudo-terminal).
    CODE: the checkout whose recorder runs (first on ``PYTHONPATH``), else this process's."""
    env = None if code is None else dict(os.environ, PYTHONPATH=os.pathsep.join(
        [code, *filter(None, [os.environ.get("PYTHONPATH")])]))
    recorder = subprocess.Popen([sys.executable, "-m", "devicewatch", "--record", out, "--quiet", *options,
                                 "--", *workload], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(measure_from)
    cpu_start, wall_start = cpu_seconds(recorder.pid), time.monotonic()
    time.sleep(measure_to - measure_from)
    cpu_end, wall_end = cpu_seconds(recorder.pid), time.monotonic()
    recorder.wait()
    return 100.0 * (cpu_end - cpu_start) / (wall_end - wall_start)


# The parts of a sample timed by --profile: (module, class or None for a module's function,
# method, label); a label's indent says which part it is inside of. ``Recorder._sample`` is the
# probes, ``_write`` the run file. A refresh that makes no walk (nothing new can have joined the
# tree) shows as fewer calls of the walk than of the refresh.
PARTS = (
    ("devicewatch.recorder.recorder", "Recorder", "_sample", "probes (one sample)"),
    ("devicewatch.probes.cpu", "CpuProbe", "sample", "  cores, memory, clocks"),
    ("devicewatch.probes.procfs", "CoreTimes", "percent", "    cores (/proc/stat)"),
    ("devicewatch.probes.procfs", "MemInfo", "read", "    memory (/proc/meminfo)"),
    ("devicewatch.probes.cpu", "CoreClocks", "read", "    clocks (1/s)"),
    ("devicewatch.probes.process", "ProcessTreeProbe", "sample", "  process tree"),
    ("devicewatch.probes.procfs", "TaskStat", "read", "    members' /proc/PID/stat"),
    ("devicewatch.probes.process", "ProcessTreeProbe", "_refresh", "    tree refresh (1/s)"),
    ("devicewatch.probes.process", None, "descendants", "      the walk (calls: walks made)"),
    ("devicewatch.probes.procfs", "ThreadDelays", "waited", "    threads' waits"),
    ("devicewatch.probes.process", "SelfProbe", "sample", "  recorder's own CPU"),
    ("devicewatch.recorder.recorder", "Recorder", "_write", "run file (every record)"),
    ("devicewatch.runformat.schema", "Encoder", "encode", "  encode a sample"),
    ("devicewatch.runformat.encode", "SampleEncoder", "encode", "  encode a sample"),
    ("devicewatch.runformat.writer", "_Columns", "feed", "  columns"),
    ("devicewatch.recorder.event_channel", "EventChannel", "read_ready", "events"),
    ("devicewatch.recorder.workload", "Workload", "poll", "workload's exit"),
    ("devicewatch.recorder.recorder", "Recorder", "_follow_state", "workload's state (2/s)"),
    ("devicewatch.recorder.recorder", "Recorder", "_check_limits", "cores allowed (1/s)"),
    ("devicewatch.recorder.recorder", "Recorder", "_pass_outside_signals", "signals from outside"),
    ("devicewatch.recorder.recorder", "Recorder", "_sample_until_exit", "the whole loop, sleeps left out"),
)


def profile(workload: list[str]) -> tuple[int, dict[str, tuple[float, int]]]:
    """Record WORKLOAD in this process with each of PARTS timed on the sampling thread; the
    number of samples and, by label, (CPU µs a sample, calls)."""
    import importlib

    from devicewatch.recorder import recorder as recorder_module
    from devicewatch.recorder.options import RecordOptions

    spent: dict[str, int] = collections.defaultdict(int)
    calls: collections.Counter[str] = collections.Counter()
    sampler = threading.get_ident()
    undo = []

    def timed(function: Any, label: str) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != sampler:
                return function(*args, **kwargs)
            began = time.thread_time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.thread_time_ns() - began
                calls[label] += 1
        return wrapper

    labels = []
    for module_name, class_name, method, label in PARTS:
        module = importlib.import_module(module_name)
        owner = module if class_name is None else getattr(module, class_name, None)
        if owner is None or method not in owner.__dict__:
            continue   # not in the code profiled
        original = owner.__dict__[method]
        undo.append((owner, method, original))
        setattr(owner, method, timed(original, label))
        labels.append(label)
    try:
        with tempfile.TemporaryDirectory() as folder, open(os.devnull, "w") as devnull:
            options = RecordOptions(output=os.path.join(folder, "profile.jsonl"), command=workload,
                                    echo=False, status_line=False)
            recorder_module.record(options, out=devnull, err=devnull)
    finally:
        for owner, method, original in undo:
            setattr(owner, method, original)
    samples = calls[PARTS[0][3]]
    return samples, {label: (spent[label] / 1000 / samples, calls[label]) for label in labels if calls[label]}


def interval_errors_ms(run) -> np.ndarray:
    """How far each gap between consecutive samples is from the interval, in milliseconds."""
    times = np.array([s["t"] for s in run.samples])
    return np.abs(np.diff(times) - run.header.interval) * 1000


def together(runs: dict[tuple[str, str], tuple[list[str], str, str]], measure_from: float,
             measure_to: float) -> dict[tuple[str, str], float]:
    """Each run's recorder (KEY: workload, checkout, output) started at once, each one's CPU (%
    of one core) read over the same window: the machine's moment falls on all alike."""
    recorders = {}
    for key, (workload, code, out) in runs.items():
        env = dict(os.environ, PYTHONPATH=code)
        recorders[key] = subprocess.Popen([sys.executable, "-m", "devicewatch", "--record", out, "--quiet", "--",
                                           *workload], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(measure_from)
    start, wall_start = {key: cpu_seconds(r.pid) for key, r in recorders.items()}, time.monotonic()
    time.sleep(measure_to - measure_from)
    end, wall_end = {key: cpu_seconds(r.pid) for key, r in recorders.items()}, time.monotonic()
    for recorder in recorders.values():
        recorder.wait()
    return {key: 100.0 * (end[key] - start[key]) / (wall_end - wall_start) for key in recorders}


def against(other: str, pairs: int, seconds: float, script: str, folder: str, at_once: bool = False) -> None:
    """The recorder of this checkout (``new``) and of OTHER (``old``) on the one-thread and the
    200-thread workloads, in turn, PAIRS times: a busy machine's drift falls on both alike.
    AT_ONCE: the four recorders side by side at the same time, read from 8 s on (a start slowed
    by a busy machine stays out of the window)."""
    mine = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    workloads = {"one thread": [sys.executable, "-c", f"import time; time.sleep({seconds})"],
                 "200 threads": [sys.executable, script, str(seconds)]}
    figures: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for pair in range(pairs):
        order = [("old", other), ("new", mine)]
        if at_once:
            runs = {(label, name): (workload, code, os.path.join(folder, f"{label}-{pair}-{name[:3]}.jsonl"))
                    for label, code in order for name, workload in workloads.items()}
            for key, cpu in together(runs, 8.0, seconds - 1.0).items():
                figures[key].append(cpu)
        for label, code in (order if pair % 2 == 0 else order[::-1]) if not at_once else ():
            for name, workload in workloads.items():
                out = os.path.join(folder, f"{label}-{pair}-{name[:3]}.jsonl")
                figures[label, name].append(record(workload, out, 3.0, seconds - 1.0, code=code))
        load = os.getloadavg()[0]
        print(f"pair {pair + 1} (load {load:.1f}): " + "; ".join(
            f"{name} old {figures['old', name][-1]:.2f}% new {figures['new', name][-1]:.2f}% "
            f"(new/old {figures['new', name][-1] / figures['old', name][-1]:.2f})" for name in workloads), flush=True)
    for name in workloads:
        old, new = figures["old", name], figures["new", name]
        ratios = [b / a for a, b in zip(old, new)]
        print(f"{name}: old median {np.median(old):.2f}% ({np.median(old) * 1000:.0f} CPU µs a sample at 10 Hz), "
              f"new median {np.median(new):.2f}% ({np.median(new) * 1000:.0f} µs); new/old pair by pair "
              f"{', '.join(f'{r:.2f}' for r in ratios)}, median {np.median(ratios):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each recording")
    parser.add_argument("--churn", action="store_true",
                        help="only the third: workers that come and go (a 60 s recording, measured over its last 25 s)")
    parser.add_argument("--threads", action="store_true",
                        help="only the fourth: 200 threads in the workload's tree, beside an idle workload")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="with --threads: this checkout's recorder and CHECKOUT's in turn, pair by pair "
                             "(the order swapped each pair), each pair's ratio and the medians")
    parser.add_argument("--pairs", type=int, default=3, help="with --against: how many pairs (default 3)")
    parser.add_argument("--at-once", action="store_true",
                        help="with --against: each pair's four recorders side by side at the same time")
    parser.add_argument("--profile", nargs="?", const="both", choices=("one", "many", "both"),
                        help="only the fifth: the CPU µs of each part of a sample, in this process "
                             "(one thread, the 200 threads' workload, or both)")
    args = parser.parse_args()
    seconds = args.seconds
    folder = tempfile.mkdtemp()
    if args.profile:
        script = os.path.join(folder, "threads.py")
        with open(script, "w") as f:
            f.write(THREADS)
        workloads = {"one": [sys.executable, "-c", f"import time; time.sleep({seconds})"],
                     "many": [sys.executable, script, str(seconds)]}
        for name in ("one", "many") if args.profile == "both" else (args.profile,):
            samples, parts = profile(workloads[name])
            print(f"{'one thread' if name == 'one' else '200 threads'}: CPU µs a sample on the sampling thread, "
                  f"{samples} samples")
            for label, (micros, count) in parts.items():
                print(f"  {label:34s} {micros:8.1f}   ({count} calls)")
        return
    if args.threads:
        script = os.path.join(folder, "threads.py")
        with open(script, "w") as f:
            f.write(THREADS)
        if args.against:
            against(args.against, args.pairs, seconds, script, folder, args.at_once)
            return
        idle_cpu = record([sys.executable, "-c", f"import time; time.sleep({seconds})"],
                          os.path.join(folder, "one.jsonl"), 3.0, seconds - 1.0)
        many_out = os.path.join(folder, "many.jsonl")
        many_cpu = record([sys.executable, script, str(seconds)], many_out, 3.0, seconds - 1.0)
        many = load(many_out)
        threads = np.nanmax(many.samples.proc("threads"))
        waited = many.samples.proc("cpu_wait")
        print(f"recorder CPU at 10 Hz: one thread {idle_cpu:.2f}%, {threads:.0f} threads in the tree "
              f"{many_cpu:.2f}% of one core (budget 0.6%; their wait for a core read every sample, "
              f"{np.count_nonzero(~np.isnan(waited))} of {len(waited)} samples)")
        return
    if args.churn:
        script = os.path.join(folder, "churn.py")
        with open(script, "w") as f:
            f.write(CHURN)
        churn_out = os.path.join(folder, "churn.jsonl")
        churn_cpu = record([sys.executable, script, "60"], churn_out, 34.0, 59.0)
        print(f"recorder CPU at 10 Hz, four workers an epoch of 2 s coming and going, from 34 s (over 60 "
              f"gone) to 59 s: {churn_cpu:.2f}% of one core")
        return

    idle_out = os.path.join(folder, "idle.jsonl")
    idle_cpu = record([sys.executable, "-c", f"import time; time.sleep({seconds})"], idle_out, 3.0, seconds - 1.0)
    idle = load(idle_out)
    print(f"recorder CPU at 10 Hz, idle workload: {idle_cpu:.2f}% of one core "
          f"(budget 0.6%; {len(idle.samples)} samples in {idle.duration:.1f}s)")

    script = os.path.join(folder, "saturate.py")
    with open(script, "w") as f:
        f.write(SATURATE)
    busy_out = os.path.join(folder, "busy.jsonl")
    busy_cpu = record([sys.executable, script, str(seconds)], busy_out, 3.0, seconds - 1.0)
    busy = load(busy_out)
    errors_ms = interval_errors_ms(busy)
    cpu_total = np.mean([s["cpu_total"] for s in busy.samples[10:-10]])
    print(f"recorder CPU at 10 Hz, every core saturated ({cpu_total:.0f}% CPU): {busy_cpu:.2f}% of one core")
    print(f"sample-interval error while saturated: p50 {np.percentile(errors_ms, 50):.1f} ms, "
          f"p99 {np.percentile(errors_ms, 99):.1f} ms, max {errors_ms.max():.1f} ms "
          f"over {len(errors_ms)} intervals (budget p99 20 ms)")


if __name__ == "__main__":
    main()
