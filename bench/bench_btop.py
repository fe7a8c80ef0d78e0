"""Watching a live run against btop at its fastest update: devicewatch's dashboard and recorder
must cost at most 0.7 of the CPU btop takes redrawing every 100 ms, side by side on the same
machine.

For each live workload, the dashboard (``python -m devicewatch run WORKLOAD …``, which starts
the recorder and through it the workload) and btop start at the same moment, each in a 200×50
pseudo-terminal whose output is drained as a terminal would read it. btop shows the whole
machine, the workload included; it reads its settings from a file in a temporary
``XDG_CONFIG_HOME`` holding ``update_ms = 100`` (its fastest), so the user's own btop settings
play no part. After a warm-up, the CPU time (user + system, psutil) of every process counted is
read at the same instants at the start and end of each window:

- devicewatch: the dashboard's process plus its recorder's (the recorder's watchdog included;
  the workload is not counted, it is what both watch);
- btop: its one process.

Per window, each as % of one core and their ratio (devicewatch / btop); the report gives the
median and the range over the windows. A window during which the workload ended is dropped.
The recorder's own share and the run file's sample rate are reported too (the recorder's budget
is ≤ 1% of one core at 10 samples/s).

    python -m bench.bench_btop [--windows 6] [--window-seconds 20] [--warmup 15] [--workload pipeline|demo]

btop must be installed (``apt-get install btop``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.bench_dashboard import COLUMNS, ROWS, PtyDashboard, finished, newest_run, stop_and_quit, wait_for
from devicewatch.runformat import runfile

BUDGET = 0.7   # dashboard + recorder over btop at 100 ms: at most 0.7 of its CPU

WORKLOADS = {"pipeline": ["pipeline", "--epochs", "60"], "demo": ["demo", "--epochs", "200"]}
BTOP_UPDATE_MS = 100


@dataclass
class Window:
    seconds: float
    dashboard: float   # % of one core
    recorder: float    # the recorder and its watchdog
    btop: float

    @property
    def devicewatch(self) -> float:
        return self.dashboard + self.recorder

    @property
    def ratio(self) -> float:
        return self.devicewatch / self.btop if self.btop > 0 else float("nan")


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        times = process.cpu_times()
        total += times.user + times.system
    return total


def recorder_processes(dashboard: psutil.Process) -> list[psutil.Process]:
    """The dashboard's recorder (``--record``) and the recorder's watchdog; not the workload."""
    found = []
    for child in dashboard.children():
        if "--record" in command_line(child):
            found.append(child)
            found += [c for c in child.children() if "devicewatch.watchdog" in " ".join(command_line(c))]
    return found


def command_line(process: psutil.Process) -> list[str]:
    """Its command line; none for a process that has exited (a short-lived child, not yet
    reaped, is a zombie whose command line cannot be read)."""
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def btop_config(folder: Path) -> dict[str, str]:
    """An ``XDG_CONFIG_HOME`` whose btop.conf sets the fastest update; the rest is btop's default."""
    (folder / "btop").mkdir(parents=True, exist_ok=True)
    (folder / "btop" / "btop.conf").write_text(f"update_ms = {BTOP_UPDATE_MS}\n")
    return {"XDG_CONFIG_HOME": str(folder), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def measure(workload: list[str], windows: int, seconds: float, warmup: float) -> tuple[list[Window], float]:
    """Windows of one live run watched by both; and the run file's samples per second."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        dash = PtyDashboard(["--runs-dir", str(runs), "run", *workload], tmp)
        btop = PtyDashboard([], tmp, launcher=["btop", "--utf-force"], extra_env=btop_config(Path(tmp) / "config"))
        measured: list[Window] = []
        try:
            dashboard = psutil.Process(dash.process.pid)
            if not wait_for(lambda: newest_run(runs) is not None and recorder_processes(dashboard), 60):
                raise SystemExit("the dashboard did not start a recording")
            recorder = recorder_processes(dashboard)
            btop_process = psutil.Process(btop.process.pid)
            time.sleep(warmup)
            for _ in range(windows):
                try:
                    before = (cpu_seconds([dashboard]), cpu_seconds(recorder), cpu_seconds([btop_process]),
                              time.monotonic())
                    time.sleep(seconds)
                    after = (cpu_seconds([dashboard]), cpu_seconds(recorder), cpu_seconds([btop_process]),
                             time.monotonic())
                except psutil.NoSuchProcess:
                    break  # the run ended (its recorder and watchdog exit)
                if finished(newest_run(runs)):
                    break  # the workload ended inside this window: the window is not steady watching
                wall = after[3] - before[3]
                measured.append(Window(wall, *(100 * (a - b) / wall for a, b in zip(after[:3], before[:3]))))
                print(f"  {workload[0]} window {len(measured)}: dashboard+recorder {measured[-1].devicewatch:.2f}%, "
                      f"btop {measured[-1].btop:.2f}%", file=sys.stderr, flush=True)
            run_path = newest_run(runs)
        finally:
            stop_and_quit(dash, runs)
            btop.press("q")
            try:
                btop.process.wait(5)
            except Exception:
                pass
            btop.close()
        run = runfile.load(run_path)
        rate = run.samples.total / max(run.duration, 1e-9)
    return measured, rate


def spread(values: list[float], digits: int = 2) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_btop", description=__doc__.split("\n")[0])
    parser.add_argument("--windows", type=int, default=6, help="measuring windows per workload")
    parser.add_argument("--window-seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds after the recording starts")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append",
                        help="only this workload (repeatable); default: all")
    args = parser.parse_args(argv)
    if shutil.which("btop") is None:
        print("bench_btop: error: btop is not installed (apt-get install btop)", file=sys.stderr)
        return 2
    command = "python -m bench.bench_btop " + " ".join(argv if argv is not None else sys.argv[1:])
    rows = []
    for name in args.workload or list(WORKLOADS):
        windows, rate = measure(WORKLOADS[name], args.windows, args.window_seconds, args.warmup)
        rows.append((name, windows, rate))
    print(f"Command: `{command.strip()}` on {psutil.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"load average {os.getloadavg()[0]:.1f}; terminals {COLUMNS}×{ROWS}; btop update_ms = {BTOP_UPDATE_MS}.")
    print("Median (range) over the windows, % of one core:\n")
    print("| live workload | windows | dashboard + recorder | of which recorder | btop @100 ms | ratio | samples/s |")
    print("|---|---|---|---|---|---|---|")
    medians, worst = [], 0.0
    for name, windows, rate in rows:
        ratios = [w.ratio for w in windows]
        medians.append(statistics.median(ratios) if ratios else float("nan"))
        worst = max([worst, *ratios])
        print(f"| `{' '.join(WORKLOADS[name])}` | {len(windows)} × {args.window_seconds:.0f} s | "
              f"{spread([w.devicewatch for w in windows])} | {spread([w.recorder for w in windows])} | "
              f"{spread([w.btop for w in windows])} | {spread(ratios)} | {rate:.1f} |")
    met = all(0 < m <= BUDGET for m in medians)
    print(f"\nbudget, median ratio ≤ {BUDGET} for every workload: {'met' if met else 'missed'} "
          f"(medians {', '.join(f'{m:.2f}' for m in medians)}; highest single window {worst:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
