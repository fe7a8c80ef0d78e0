"""What the dashboard costs: its own CPU while following a live 10 Hz run, and the slowdown of a
CPU-bound workload watched by it.

The dashboard runs for real, in a pseudo-terminal of 200×50 (the bench reads everything it
draws, as a terminal would), via ``python -m devicewatch run``. Its CPU is read with psutil
from its process (the recorder and workload are separate processes), and cross-checked against
the ``watcher_cpu`` the recorder itself sampled. The slowdown compares the same CPU-bound
workload (one busy process per core, a fixed amount of pure-Python work, timed inside the
workload) run bare, under the headless recorder, and in the dashboard, interleaved.

    python -m bench.bench_dashboard [--follow-seconds 30] [--repeats 3] [--write-docs]
"""

from __future__ import annotations

import argparse
import fcntl
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

from devicewatch import runfile

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "dashboard.md"
COLUMNS, ROWS = 200, 50

# One process per core, each a fixed pure-Python loop; prints the wall time of the work alone.
BURN = """
import multiprocessing as mp, os, time
def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x
if __name__ == "__main__":
    n = int(os.environ.get("BURN_N", "6000000"))
    with mp.Pool(os.cpu_count()) as pool:
        start = time.perf_counter()
        pool.map(work, [n] * os.cpu_count())
        print(f"burn seconds {time.perf_counter() - start:.4f}", flush=True)
"""
BURN_LINE = re.compile(r"burn seconds ([0-9.]+)")


def env() -> dict[str, str]:
    out = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(ROWS))
    out.pop("DEVICEWATCH_EVENTS", None)
    return out


class PtyDashboard:
    """``python -m devicewatch ARGS`` in a 200×50 pseudo-terminal whose output is drained."""

    def __init__(self, args: list[str], cwd: str):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.master = master
        self.process = subprocess.Popen([sys.executable, "-m", "devicewatch", *args], cwd=cwd, env=env(),
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
        match = BURN_LINE.search(record.get("line", ""))
        if match:
            return float(match.group(1))
    raise SystemExit(f"no timing line in {path}")


def measure_slowdown(repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"bare": [], "recorder only": [], "dashboard": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            times["bare"].append(burn_bare(tmp))
            times["recorder only"].append(burn_recorded(tmp))
            times["dashboard"].append(burn_dashboard(tmp))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_dashboard", description=__doc__.split("\n")[0])
    parser.add_argument("--follow-seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-docs", action="store_true", help="put the figures into docs/dashboard.md")
    args = parser.parse_args(argv)
    command = "python -m bench.bench_dashboard " + " ".join(argv if argv is not None else sys.argv[1:])
    follow = measure_follow(args.follow_seconds)
    times = measure_slowdown(args.repeats)
    median = {k: statistics.median(v) for k, v in times.items()}
    lines = [
        f"Command: `{command.strip()}` on {psutil.cpu_count()} cores "
        f"({os.uname().machine}, {time.strftime('%Y-%m-%d')}), terminal {COLUMNS}×{ROWS} (a real pty).",
        "",
        "| figure | value | budget |",
        "|---|---|---|",
        f"| dashboard CPU following a live run ({follow['samples_per_second']:.1f} samples/s, "
        f"{follow['seconds']:.0f} s, psutil) | {follow['dashboard_cpu_percent']:.1f}% of one core | ≤ 5% |",
        f"| the same, as the recorder sampled it (`watcher_cpu` mean) | "
        f"{follow['watcher_cpu_mean_recorded']:.1f}% of one core | |",
        f"| CPU-bound workload, bare (median of {args.repeats}) | {median['bare']:.2f} s | |",
        f"| the same under the headless recorder | {median['recorder only']:.2f} s "
        f"({100 * (median['recorder only'] / median['bare'] - 1):+.1f}%) | |",
        f"| the same watched by the dashboard | {median['dashboard']:.2f} s "
        f"({100 * (median['dashboard'] / median['bare'] - 1):+.1f}% vs bare, "
        f"{100 * (median['dashboard'] / median['recorder only'] - 1):+.1f}% vs recorder only) | ≤ 3% |",
        "",
        "All repetitions (s): " + "; ".join(f"{k}: {', '.join(f'{x:.2f}' for x in v)}" for k, v in times.items()),
    ]
    report = "\n".join(lines)
    print(report)
    if args.write_docs:
        text = DOC.read_text() if DOC.exists() else "# The dashboard\n"
        head, marker, _ = text.partition("## Benchmarks")
        DOC.write_text(head + "## Benchmarks\n\n" + report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
