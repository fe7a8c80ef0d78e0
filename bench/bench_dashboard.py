"""What the dashboard costs: its own CPU while following a live 10 Hz run, and the slowdown of a
CPU-bound workload watched by it.

The dashboard runs for real, in a pseudo-terminal of 200×50 (the bench reads everything it
draws, as a terminal would), via ``python -m devicewatch run``. Its CPU is read with psutil
from its process (the recorder and workload are separate processes), and cross-checked against
the ``watcher_cpu`` the recorder itself sampled.

The slowdown is that of a CPU-bound workload (one busy process per core, pure-Python loops)
watched by the dashboard. The machine may be shared with other work whose load drifts, and
separate whole runs differ by more than the effect, so the figure comes from one run of short
bursts of work, back to back, while the bench pauses and resumes the watchers in turn (SIGSTOP
/ SIGCONT): both paused (bare), the dashboard paused (recorder only), neither (watched). States
a second apart see the same outside load; the report gives the median of the per-cycle ratios
with its quartiles and extremes. Start-up is not in this figure; ``--repeats N`` adds timings
of whole separate runs of each kind (start-up included, interleaved in rotating order).

    python -m bench.bench_dashboard [--follow-seconds 30] [--cycles 60] [--period 1] [--repeats 0]
    python -m bench.bench_dashboard --cycles 0     # the dashboard's own CPU only

It prints its figures; the current ones, with how they were taken, are in docs/dashboard.md.
"""

from __future__ import annotations

import argparse
import fcntl
import math
import os
import pty
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import psutil

from devicewatch.runformat import runfile

ROOT = Path(__file__).resolve().parent.parent
COLUMNS, ROWS = 200, 50
BURN_SETTLE = 4.0  # seconds every burn waits before its timed work: the dashboard starts up meanwhile
BURN_SETTINGS = {"BURN_N": "12000000", "BURN_SETTLE": str(BURN_SETTLE)}

# The CPU work both scripts below run: a fixed pure-Python loop.
WORK = """
def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x
"""

# One process per core, each a fixed pure-Python loop; prints the wall time of the work alone.
BURN = """
import multiprocessing as mp, os, time
""" + WORK + """if __name__ == "__main__":
    n = int(os.environ.get("BURN_N", "6000000"))
    time.sleep(float(os.environ.get("BURN_SETTLE", "0")))
    with mp.Pool(os.cpu_count()) as pool:
        start = time.perf_counter()
        pool.map(work, [n] * os.cpu_count())
        print(f"burn seconds {time.perf_counter() - start:.4f}", flush=True)
"""
BURN_LINE = re.compile(r"burn seconds ([0-9.]+)")


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(ROWS),
               **BURN_SETTINGS, **extra)
    out.pop("DEVICEWATCH_EVENTS", None)
    return out


class PtyDashboard:
    """``python -m devicewatch ARGS`` (or ``launcher`` ARGS) in a 200×50 pseudo-terminal whose
    output is drained, as a terminal would read it."""

    def __init__(self, args: list[str], cwd: str, launcher: list[str] | None = None,
                 extra_env: dict[str, str] | None = None):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.master = master
        self.process = subprocess.Popen([*(launcher or [sys.executable, "-m", "devicewatch"]), *args], cwd=cwd,
                                        env=env(**(extra_env or {})),
                                        stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.received = 0
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.received += len(data)

    def press(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def cpu_seconds(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return times.user + times.system

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        os.close(self.master)


def newest_run(runs: Path) -> Path | None:
    files = sorted(runs.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return files[-1] if files else None


def wait_for(predicate, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def finished(path: Path | None) -> bool:
    if path is None:
        return False
    try:
        return runfile.load(path).finished
    except runfile.RunFileError:
        return False


def stop_and_quit(dash: PtyDashboard, runs: Path) -> None:
    dash.press("s")
    wait_for(lambda: finished(newest_run(runs)), 30)
    time.sleep(1.5)
    dash.press("q")
    try:
        dash.process.wait(15)
    except subprocess.TimeoutExpired:
        pass
    dash.close()


def measure_follow(seconds: float, warmup: float = 5.0) -> dict[str, float]:
    """Dashboard CPU (% of one core) while it follows a live demo run at the default 10 Hz."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        dash = PtyDashboard(["--runs-dir", str(runs), "run", "demo", "--epochs", "100000", "--samples", "4000"], tmp)
        try:
            if not wait_for(lambda: newest_run(runs) is not None, 60):
                raise SystemExit("the dashboard did not start a recording")
            time.sleep(warmup)
            cpu0, wall0 = dash.cpu_seconds(), time.monotonic()
            time.sleep(seconds)
            cpu1, wall1 = dash.cpu_seconds(), time.monotonic()
            run_path = newest_run(runs)
        finally:
            stop_and_quit(dash, runs)
        run = runfile.load(run_path)
        t_from = run.duration - seconds - 1
        watcher = [s["watcher_cpu"] for s in run.samples if "watcher_cpu" in s and s["t"] >= t_from]
        return {"dashboard_cpu_percent": 100 * (cpu1 - cpu0) / (wall1 - wall0),
                "watcher_cpu_mean_recorded": statistics.fmean(watcher) if watcher else float("nan"),
                "samples_per_second": len(run.samples) / max(run.duration, 1e-9),
                "seconds": wall1 - wall0}


def burn_bare(tmp: str) -> float:
    out = subprocess.run([sys.executable, "-c", BURN], env=env(), capture_output=True, text=True, check=True, cwd=tmp)
    return float(BURN_LINE.search(out.stdout).group(1))


def burn_recorded(tmp: str) -> float:
    path = Path(tmp) / f"rec-{time.monotonic_ns()}.jsonl"
    subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(path), "--quiet", "--",
                    sys.executable, "-c", BURN], env=env(), capture_output=True, text=True, check=True, cwd=tmp)
    return _burn_from(path)


def burn_dashboard(tmp: str) -> float:
    runs = Path(tmp) / f"runs-{time.monotonic_ns()}"
    dash = PtyDashboard(["--runs-dir", str(runs), "run", "--", sys.executable, "-c", BURN], tmp)
    try:
        if not wait_for(lambda: finished(newest_run(runs)), 300, step=0.5):
            raise SystemExit("the watched workload did not finish")
        time.sleep(1.5)  # let the dashboard read the end record before quitting
        dash.press("q")
        dash.process.wait(15)
    finally:
        dash.close()
    return _burn_from(newest_run(runs))


def _burn_from(path: Path) -> float:
    for record in runfile.load(path).logs:
        match = BURN_LINE.search(record.line)
        if match:
            return float(match.group(1))
    raise SystemExit(f"no timing line in {path}")


# Short bursts of the same work, back to back until a deadline; prints each burst's wall-clock span.
BURSTS = """
import multiprocessing as mp, os, time
""" + WORK + """if __name__ == "__main__":
    n, until = int(os.environ["BURST_N"]), float(os.environ["BURST_UNTIL"])
    with mp.Pool(os.cpu_count()) as pool:
        while time.time() < until:
            start = time.time()
            pool.map(work, [n] * os.cpu_count())
            print(f"burst {start:.6f} {time.time():.6f}", flush=True)
"""
# The dashboard as ``python -m devicewatch``, except that a SIGCONT does not make Textual set the
# terminal up again (its handler is for resuming after Ctrl+Z; the bench's SIGSTOP/SIGCONT
# pauses are not that, and a terminal re-initialisation per pause would be counted as watching).
PAUSABLE = """
import runpy, sys
from textual.drivers.linux_driver import LinuxDriver
LinuxDriver._sigcont_application = lambda self, *_: None
sys.argv = ["devicewatch", *sys.argv[1:]]
runpy.run_module("devicewatch", run_name="__main__", alter_sys=True)
"""
BURST_LINE = re.compile(r"burst ([0-9.]+) ([0-9.]+)")
STATES = ("bare", "recorder only", "dashboard")


def measure_toggled(cycles: int, period: float, burst_n: int, startup: float = 10.0) -> dict[str, list[float]]:
    """One watched run of back-to-back bursts whose watchers are paused and resumed in turn.

    Each cycle holds three periods: recorder and dashboard both stopped (SIGSTOP: bare),
    dashboard stopped (recorder only), both running (watched). A burst counts for a state when
    it lies wholly inside one of its periods. States a few seconds apart see the same load from
    the rest of the machine, so the ratio within a cycle is steady where separate runs are not.
    Returns, per state, the median burst time of each cycle.
    """
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        begin = time.time() + startup
        until = begin + cycles * len(STATES) * period
        environment = {"BURST_N": str(burst_n), "BURST_UNTIL": f"{until:.3f}"}
        os.environ.update(environment)
        try:
            dash = PtyDashboard(["--runs-dir", str(runs), "run", "--", sys.executable, "-c", BURSTS], tmp,
                                launcher=[sys.executable, "-c", PAUSABLE])
        finally:
            for key in environment:
                os.environ.pop(key, None)
        periods: list[tuple[str, int, float, float]] = []
        stopped: list[psutil.Process] = []
        try:
            if not wait_for(lambda: newest_run(runs) is not None, 60):
                raise SystemExit("the dashboard did not start a recording")
            time.sleep(max(begin - time.time(), 0.0))
            dashboard = psutil.Process(dash.process.pid)
            recorder = dashboard.children()[0]
            for cycle in range(cycles):
                for state in STATES:
                    for process in stopped:
                        process.resume()
                    stopped = [] if state == "dashboard" else [dashboard] if state == "recorder only" \
                        else [dashboard, recorder]
                    for process in stopped:
                        process.suspend()
                    start = time.time()
                    time.sleep(period)
                    periods.append((state, cycle, start, time.time()))
        finally:
            for process in stopped:
                process.resume()
        if not wait_for(lambda: finished(newest_run(runs)), 60, step=0.5):
            raise SystemExit("the burst workload did not finish")
        time.sleep(1.5)
        dash.press("q")
        try:
            dash.process.wait(15)
        finally:
            dash.close()
        bursts = [(float(m.group(1)), float(m.group(2))) for r in runfile.load(newest_run(runs)).logs
                  if (m := BURST_LINE.search(r.line))]
    per_cycle: dict[str, list[float]] = {state: [] for state in STATES}
    for state, cycle, start, end in periods:
        inside = [b - a for a, b in bursts if a >= start and b <= end]
        per_cycle[state].append(statistics.median(inside) if inside else float("nan"))
    return per_cycle


KINDS = {"bare": burn_bare, "recorder only": burn_recorded, "dashboard": burn_dashboard}


def measure_slowdown(repeats: int) -> dict[str, list[float]]:
    """Burn timings per kind; repetition ``i`` runs the kinds in an order rotated by ``i``."""
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    names = list(KINDS)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            for kind in names[i % 3:] + names[:i % 3]:
                times[kind].append(KINDS[kind](tmp))
            print(f"repetition {i + 1}/{repeats}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
                  file=sys.stderr, flush=True)
    return times


def ratio_summary(numerator: list[float], denominator: list[float]) -> dict[str, float]:
    """Median of the paired ratios, with quartiles and extremes (as % slower); NaN pairs dropped."""
    ratios = sorted(100 * (a / b - 1) for a, b in zip(numerator, denominator) if a == a and b == b)
    if not ratios:
        return {"median": math.nan, "q1": math.nan, "q3": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else ratios * 3
    return {"median": median, "q1": q1, "q3": q3, "min": ratios[0], "max": ratios[-1], "n": len(ratios)}


def _ratio_cell(r: dict[str, float]) -> str:
    return (f"{r['median']:+.1f}% (quartiles {r['q1']:+.1f}% to {r['q3']:+.1f}%, "
            f"range {r['min']:+.1f}% to {r['max']:+.1f}%, n={r['n']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_dashboard", description=__doc__.split("\n")[0])
    parser.add_argument("--follow-seconds", type=float, default=30.0)
    parser.add_argument("--cycles", type=int, default=60,
                        help="bare / recorder only / watched cycles of one toggled run (0: the dashboard's CPU only)")
    parser.add_argument("--period", type=float, default=1.0, help="seconds of each state in a cycle")
    parser.add_argument("--burst-n", type=int, default=2_000_000, help="loop iterations per process in one burst")
    parser.add_argument("--repeats", type=int, default=0,
                        help="also time whole separate runs, this many of each kind (start-up included)")
    parser.add_argument("--burn-n", type=int, default=int(BURN_SETTINGS["BURN_N"]),
                        help="loop iterations of each process in one separate run")
    args = parser.parse_args(argv)
    BURN_SETTINGS["BURN_N"] = str(args.burn_n)
    command = "python -m bench.bench_dashboard " + " ".join(argv if argv is not None else sys.argv[1:])
    follow = measure_follow(args.follow_seconds)
    cores = psutil.cpu_count()
    if args.cycles <= 0:  # the dashboard's own CPU only
        print(f"Command: `{command.strip()}` on {cores} cores ({os.uname().machine}, {time.strftime('%Y-%m-%d %H:%M')}, "
              f"load average {os.getloadavg()[0]:.1f}), terminal {COLUMNS}×{ROWS} (a real pty): dashboard CPU "
              f"following a live run ({follow['samples_per_second']:.1f} samples/s, {follow['seconds']:.0f} s, psutil) "
              f"{follow['dashboard_cpu_percent']:.1f}% of one core (as the recorder sampled it: "
              f"{follow['watcher_cpu_mean_recorded']:.1f}%); budget ≤ 5%.", flush=True)
        return 0
    cycles = measure_toggled(args.cycles, args.period, args.burst_n)
    watched = ratio_summary(cycles["dashboard"], cycles["bare"])
    recorder = ratio_summary(cycles["recorder only"], cycles["bare"])
    over_recorder = ratio_summary(cycles["dashboard"], cycles["recorder only"])
    lines = [
        f"Command: `{command.strip()}` on {cores} cores "
        f"({os.uname().machine}, {time.strftime('%Y-%m-%d')}), terminal {COLUMNS}×{ROWS} (a real pty).",
        "",
        "| figure | value | budget |",
        "|---|---|---|",
        f"| dashboard CPU following a live run ({follow['samples_per_second']:.1f} samples/s, "
        f"{follow['seconds']:.0f} s, psutil) | {follow['dashboard_cpu_percent']:.1f}% of one core | ≤ 5% |",
        f"| the same, as the recorder sampled it (`watcher_cpu` mean) | "
        f"{follow['watcher_cpu_mean_recorded']:.1f}% of one core | |",
        f"| CPU-bound bursts ({cores} processes × {args.burst_n:,} iterations), bare: median burst | "
        f"{statistics.median([x for x in cycles['bare'] if x == x]):.3f} s | |",
        f"| under the recorder alone, slower than bare (median of {args.cycles} per-cycle ratios) | "
        f"{_ratio_cell(recorder)} | |",
        f"| **watched by the dashboard, slower than bare** | {_ratio_cell(watched)} | ≤ 3% |",
        f"| the dashboard's share alone: watched vs recorder only | {_ratio_cell(over_recorder)} | |",
        "",
        "Per-cycle median bursts (s): " + "; ".join(f"{k}: {', '.join(f'{x:.3f}' for x in v)}"
                                                    for k, v in cycles.items()),
    ]
    if args.repeats:
        times = measure_slowdown(args.repeats)
        lines += [
            "",
            f"Whole separate runs ({cores} processes × {args.burn_n:,} iterations, timed after a "
            f"{BURN_SETTLE:.0f} s settle), {args.repeats} repetitions: dashboard vs bare "
            f"{_ratio_cell(ratio_summary(times['dashboard'], times['bare']))}; recorder only vs bare "
            f"{_ratio_cell(ratio_summary(times['recorder only'], times['bare']))}.",
            "",
            "All repetitions (s), in order: " + "; ".join(f"{k}: {', '.join(f'{x:.2f}' for x in v)}"
                                                           for k, v in times.items()),
        ]
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
