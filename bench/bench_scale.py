"""Long runs at scale: 64 cores, 8 GPUs, 10 Hz, recordings made by ``bench.make_recording``.

    python -m bench.bench_scale [--hours 1 6 24] [--events 1000000] [--follow-minutes 60] [--keep DIR]

For each length: file size per hour (budget ≤ 30 MB), wall time and peak memory of the whole
``devicewatch report --json`` process (1 h: ≤ 1.0 s; 6 h: ≤ 7× 1 h and ≤ 1 GiB). Then a run
with a million events: ``report`` peak memory (≤ 300 MB). Then the dashboard's model
following a growing file (fast-forwarded: the file is written ahead of the follower, which
polls every 0.25 s of run time): its memory and the CPU of a poll after 60 minutes against
after 1 minute (within 10%). Peak memory is the child's maximum RSS (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _child_run(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a whole ``python -m devicewatch …`` process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "devicewatch", *argv], stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"devicewatch {' '.join(argv)} failed ({status})")
    return wall, usage.ru_maxrss / 1024


def _make(path: Path, hours: float, events: int = 0) -> float:
    if not path.exists():
        from bench.make_recording import generate

        generate(str(path), 64, 8, hours, 10.0, events)
    return path.stat().st_size / 1e6


def report_figures(folder: Path, hours: list[float], repeats: int) -> dict[float, tuple[float, float]]:
    out = {}
    for h in hours:
        path = folder / f"scale-{h:g}h.jsonl"
        size = _make(path, h)
        runs = [_child_run(["report", "--json", str(path)]) for _ in range(repeats)]
        wall = min(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        out[h] = (wall, peak)
        print(f"{h:g} h: {size:.1f} MB ({size / h:.1f} MB/h, budget 30); report --json {wall:.2f}s "
              f"(best of {repeats}), peak {peak:.0f} MB", flush=True)
    if 1 in out and 6 in out:
        print(f"6 h / 1 h report time: {out[6][0] / out[1][0]:.1f}x (budget 7x); 6 h peak {out[6][1]:.0f} MB (budget 1024)")
    return out


def events_figure(folder: Path, events: int) -> None:
    path = folder / f"scale-events-{events}.jsonl"
    size = _make(path, 1.0, events)
    wall, peak = _child_run(["report", "--json", str(path)])
    print(f"1 h with {events} extra events ({size:.0f} MB): report --json {wall:.2f}s, peak {peak:.0f} MB (budget 300)")


def _follow(source: Path, folder: Path, minutes: float, memory: bool) -> dict[float, float]:
    """Feed ``source`` into a growing file and poll the live model as the dashboard does (every
    0.25 s of run time); at 1 minute and at the end, the model's memory (``memory``: traced
    allocations) or its CPU per poll over the last minute of polls (untraced: tracemalloc's own
    cost grows with what it tracks, and would be measured instead of the model)."""
    import orjson

    from devicewatch.live.model import RunModel
    from devicewatch.live.source import LIVE_KEEP
    from devicewatch.runfile import Follower

    lines = source.read_bytes().split(b"\n")
    growing = folder / "growing.jsonl"
    poll_every = 0.25  # run seconds between polls (the dashboard polls at 4 Hz)
    figures: dict[float, float] = {}
    with open(growing, "wb") as out:
        out.write(lines[0] + b"\n")
        out.flush()
        follower = Follower(growing, keep=LIVE_KEEP)
        follower.poll()
        model = RunModel(follower.run)
        if memory:
            tracemalloc.start()
        cpu_window: list[float] = []
        next_poll = poll_every
        for line in lines[1:]:
            if not line:
                continue
            out.write(line + b"\n")
            if not line.startswith(b'{"type":"sample"'):
                continue
            t = orjson.loads(line)["t"]
            if t < next_poll:
                continue
            out.flush()
            next_poll += poll_every
            started = time.process_time()
            model.ingest(follower.poll())
            model.refresh_phases()
            cpu_window.append(time.process_time() - started)
            for mark in (1.0, minutes):
                if mark not in figures and t >= mark * 60:
                    recent = cpu_window[-240:]  # the last minute of polls
                    figures[mark] = (tracemalloc.get_traced_memory()[0] / 1e6 if memory
                                     else 1000 * sum(recent) / len(recent))
        if memory:
            tracemalloc.stop()
    return figures


def follow_figure(folder: Path, minutes: float) -> None:
    """Drive the live model on a file that grows, as the dashboard does, minus Textual."""
    from bench.make_recording import generate

    source = folder / f"scale-follow-{minutes:g}m.jsonl"
    if not source.exists():
        generate(str(source), 64, 8, minutes / 60, 10.0)
    mem = _follow(source, folder, minutes, memory=True)
    cpu = _follow(source, folder, minutes, memory=False)
    if 1.0 in mem and minutes in mem:
        print(f"live model after 1 min: {mem[1.0]:.1f} MB, {cpu[1.0]:.2f} ms per poll; after {minutes:g} min: "
              f"{mem[minutes]:.1f} MB, {cpu[minutes]:.2f} ms per poll (memory {mem[minutes] / mem[1.0] - 1:+.0%}, "
              f"CPU {cpu[minutes] / cpu[1.0] - 1:+.0%}; budget ±10%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, nargs="*", default=[1, 6, 24])
    parser.add_argument("--events", type=int, default=1_000_000, help="0 skips the events run")
    parser.add_argument("--follow-minutes", type=float, default=60, help="0 skips the live-model run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", help="folder for the generated recordings (reused when there)")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="devicewatch-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    report_figures(folder, args.hours, args.repeats)
    if args.events:
        events_figure(folder, args.events)
    if args.follow_minutes:
        follow_figure(folder, args.follow_minutes)
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
