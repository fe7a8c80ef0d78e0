"""What the live dashboard's frames cost, measured without a workload beside them: a recorded
run is fed to the run screen half a second at a time, as its recorder wrote it, on a clock the
bench moves, and the CPU time of each tick (poll, model, charts, text) and of each frame the
compositor makes of it (with the terminal output it would write) is read from inside.

``bench_btop`` and ``bench_dashboard`` measure the real thing, a live workload on the same two
cores, and their figures move by a tenth from one run to the next with the machine's load. This
bench gives the same frames every time (the same file, the same ticks, nothing else running), so
two versions of the code can be told apart by a few percent: its figures are for before/after
ratios, not for the budget.

The run is one of ``demo``, recorded headless once (``--record-seconds``, default 150) into
``bench/out/frames-demo.jsonl`` and reused; ``--run FILE`` feeds another. The screen is the one
``devicewatch run`` shows (a live run: the 60 s window sliding, the settled and live parts of each
chart, the text lines once a second and the bottom row every two); the file is read by the same
follower, in the same half-second steps; Textual renders every frame as for a terminal of
``--size``, and the bench turns each into the bytes a terminal would be sent (Textual's headless
mode would skip that step).

    python -m bench.bench_frames [--run FILE] [--from 15] [--seconds 120] [--size 200x50] [--repeat 3] [--profile FILE]

Printed: per second of run, the CPU of the ticks, of the compositor and of the terminal output
(ms), the frames, lines and bytes, and what the cyclic collector did while the bench fed the
run (passes, CPU, objects freed from reference cycles, per minute of run); the median over
``--repeat`` passes. With ``--profile``, also the Python function calls the ticks and frames
made per second of run: exact from one run to the next, a measure of the work done that the
machine's load leaves alone.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUN = ROOT / "bench" / "out" / "frames-demo.jsonl"
STEP = 0.5   # seconds of run per tick, as the dashboard's timer


def record(path: Path, seconds: float) -> None:
    """A headless recording of ``demo`` cut after ``seconds`` (Ctrl-C: the file is finished)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"recording {seconds:g} s of demo into {path} (once; reused after)…", file=sys.stderr, flush=True)
    process = subprocess.Popen([sys.executable, "-m", "devicewatch", "--record", str(path), "--overwrite", "--quiet",
                                "demo", "--epochs", "400"], cwd=ROOT, stdout=subprocess.DEVNULL)
    try:
        time.sleep(seconds)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)


def timed_lines(path: Path) -> tuple[bytes, list[tuple[float, bytes]]]:
    """The header line, and every other line with the run time it was written at (the last
    time seen for a line that carries none)."""
    lines = path.read_bytes().splitlines(keepends=True)
    out, t = [], 0.0
    for line in lines[1:]:
        record = orjson.loads(line)
        if isinstance(record, dict) and isinstance(record.get("t"), (int, float)):
            t = float(record["t"])
        if isinstance(record, dict) and record.get("type") == "end":
            break   # the run stays live to the last tick
        out.append((t, line))
    return lines[0], out


class Counters:
    def __init__(self) -> None:
        self.seconds = 0.0   # of run fed while measuring
        self.tick = self.compose = self.output = 0.0
        self.frames = self.lines = self.bytes = 0
        # The cyclic collector while measuring: its passes, their CPU, the objects they freed
        # (objects in reference cycles: what reference counting could not free).
        self.collections = self.collected = 0
        self.collecting = 0.0


def measure(run: Path, start: float, seconds: float, size: tuple[int, int], profile: Any = None) -> Counters:
    from textual.app import App
    from textual.screen import Screen

    from devicewatch.live import source as source_module
    from devicewatch.runformat.runfile import Follower
    from devicewatch.tui import run_screen
    from devicewatch.tui.app import DashboardApp, DashboardSettings

    header, lines = timed_lines(run)
    counters = Counters()
    clock = [1000.0]
    measuring = [False]

    class Followed(source_module.ReplaySource):
        """The growing file as the dashboard follows a live recording (but without a recorder
        process: the bench writes the file), keeping as few rows as ``LiveSource`` does."""
        live = True

        def __init__(self, path: Any):
            source_module.Source.__init__(self, path)
            self.follower = Follower(path, keep=source_module.LIVE_KEEP)
            self.follower.poll(final=False, collect=False)

        @property
        def running(self) -> bool:
            return True

    original_time = run_screen.time

    class BenchTime:
        """``time`` as the run screen sees it: its clock is the bench's (asyncio keeps the real one)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(original_time, name)

        @staticmethod
        def monotonic() -> float:
            return clock[0]
    original_refresh = Screen._compositor_refresh
    original_display = App._display

    def compositor_refresh(self: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.thread_time()
        if measuring[0] and profile is not None:
            profile.enable()
        try:
            return original_refresh(self, *args, **kwargs)
        finally:
            if profile is not None:
                profile.disable()
            if measuring[0]:
                counters.compose += time.thread_time() - began

    def display(self: Any, screen: Any, renderable: Any) -> None:
        # Headless Textual writes nothing: make the terminal output all the same, as the real
        # driver would, and count it.
        if renderable is not None and hasattr(renderable, "render_segments"):
            began = time.thread_time()
            text = renderable.render_segments(self.console)
            if measuring[0]:
                counters.output += time.thread_time() - began
                counters.frames += 1
                counters.lines += len(getattr(renderable, "spans", ()))
                counters.bytes += len(text.encode())
        return original_display(self, screen, renderable)

    collector_began = [0.0]

    def collector(phase: str, info: dict[str, Any]) -> None:
        if not measuring[0]:
            return
        if phase == "start":
            collector_began[0] = time.thread_time()
            return
        counters.collections += 1
        counters.collected += info["collected"]
        counters.collecting += time.thread_time() - collector_began[0]

    gc.callbacks.append(collector)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        at = 0
        with open(path, "wb") as out:
            out.write(header)
            while at < len(lines) and lines[at][0] <= start:
                out.write(lines[at][1])
                at += 1
        run_screen.time = BenchTime()   # type: ignore[assignment]
        Screen._compositor_refresh = compositor_refresh  # type: ignore[method-assign]
        App._display = display  # type: ignore[method-assign]
        try:
            # The screen's own timer never fires: the bench is the clock, one tick per step.
            app = DashboardApp(DashboardSettings(), Followed(str(path)), tick=3600.0)

            async def drive() -> None:
                async with app.run_test(size=size) as pilot:
                    for _ in range(100):
                        await pilot.pause(0.05)
                        if isinstance(app.screen, run_screen.RunScreen) and app.screen.model is not None:
                            break
                    screen = app.screen
                    assert isinstance(screen, run_screen.RunScreen) and screen.model is not None
                    screen.model.clock = lambda: clock[0]   # the verdict's cadence too
                    await pilot.pause(0.2)
                    t, end = start, min(start + seconds, lines[-1][0])
                    nonlocal at
                    measuring[0] = True
                    while t + STEP <= end:
                        t += STEP
                        clock[0] += STEP
                        with open(path, "ab") as out:
                            while at < len(lines) and lines[at][0] <= t:
                                out.write(lines[at][1])
                                at += 1
                        began = time.thread_time()
                        if profile is not None:
                            profile.enable()
                        screen._on_tick()
                        if profile is not None:
                            profile.disable()
                        counters.tick += time.thread_time() - began
                        await pilot.pause()   # the compositor's frame for this tick
                        await pilot.pause()
                    measuring[0] = False
                    counters.seconds = t - start

            asyncio.run(drive())
        finally:
            run_screen.time = original_time
            Screen._compositor_refresh = original_refresh  # type: ignore[method-assign]
            App._display = original_display  # type: ignore[method-assign]
            gc.callbacks.remove(collector)
    return counters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=None, help="a recorded run to feed (default: demo, recorded once)")
    parser.add_argument("--record-seconds", type=float, default=150.0)
    parser.add_argument("--from", dest="start", type=float, default=15.0, help="run time the screen opens at")
    parser.add_argument("--seconds", type=float, default=120.0, help="run time fed a tick at a time")
    parser.add_argument("--size", default="200x50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", type=Path, default=None,
                        help="write cProfile statistics of the ticks and frames to this file, and print the Python "
                             "function calls they made per second of run (exact run to run; times are slower)")
    args = parser.parse_args(argv)
    run = args.run
    if run is None:
        run = DEFAULT_RUN
        if not run.exists():
            record(run, args.record_seconds)
    if not run.exists():
        raise SystemExit(f"no such file: {run}")
    columns, rows = (int(x) for x in args.size.split("x"))
    passes = []
    for _ in range(args.repeat):
        profile = cProfile.Profile() if args.profile else None
        c = measure(run, args.start, args.seconds, (columns, rows), profile)
        s = c.seconds
        if profile is not None:
            profile.dump_stats(args.profile)
            # The calls made are the same from one pass to the next (the same file, the same
            # ticks): a figure of the work done that the machine's load does not move.
            calls = pstats.Stats(str(args.profile)).total_calls  # type: ignore[attr-defined]
            print(f"  Python function calls (ticks and frames): {calls / s:.0f} per second of run", file=sys.stderr)
        passes.append({"tick": 1000 * c.tick / s, "compose": 1000 * (c.compose - c.output) / s,
                       "output": 1000 * c.output / s, "frames": c.frames / s, "lines": c.lines / s,
                       "bytes": c.bytes / s, "collections": 60 * c.collections / s,
                       "collector": 60_000 * c.collecting / s, "collected": 60 * c.collected / s})
        print("  pass: " + ", ".join(f"{k} {v:.2f}" for k, v in passes[-1].items()), file=sys.stderr, flush=True)
    median = {k: statistics.median(p[k] for p in passes) for k in passes[0]}
    total = median["tick"] + median["compose"] + median["output"]
    print(f"Command: `python -m bench.bench_frames{' ' + ' '.join(argv or sys.argv[1:]) if (argv or sys.argv[1:]) else ''}`"
          f" on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}; "
          f"{run.name} from {args.start:g} s for {args.seconds:g} s at {args.size}, median of {args.repeat} passes.")
    print()
    print("| tick ms/s | compositor ms/s | terminal output ms/s | total ms/s | frames/s | lines/s | bytes/s |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {median['tick']:.1f} | {median['compose']:.1f} | {median['output']:.1f} | {total:.1f} | "
          f"{median['frames']:.2f} | {median['lines']:.0f} | {median['bytes']:.0f} |")
    print(f"\nThe cyclic collector while the run was fed, per minute of run: {median['collections']:.0f} "
          f"passes, {median['collector']:.0f} ms, {median['collected']:.0f} objects freed from cycles.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
