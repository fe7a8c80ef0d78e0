"""Render the dashboard's screenshots from real recordings: ``python -m bench.screenshots``.

Records the demo workload with the headless recorder, then opens the recording in the
dashboard headless at a fixed size and saves SVGs under screenshots/; records the demo again
with half the samples and saves the comparison view of the two. PNGs are written too
when ``cairosvg`` is installed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (200, 50)


def record_demo(folder: Path, samples: int = 30000, name: str = "demo") -> Path:
    path = folder / f"{name}.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("DEVICEWATCH_EVENTS", None)
    subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(path), "--quiet", "demo", "--epochs", "4",
                    "--samples", str(samples)], env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return path


async def shoot(path: Path, name: str, presenter: bool = False, home: bool = False) -> Path:
    from devicewatch.live.source import open_replay
    from devicewatch.tui.app import DashboardApp, DashboardSettings

    settings = DashboardSettings(presenter=presenter, runs_dir=str(path.parent))
    app = DashboardApp(settings, None if home else open_replay(str(path)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        app.save_screenshot(f"{name}.svg", str(OUT))
    return OUT / f"{name}.svg"


async def shoot_compare(path_a: Path, path_b: Path, name: str) -> Path:
    from devicewatch import runfile
    from devicewatch.tui.app import DashboardApp

    app = DashboardApp(compare=(runfile.load(path_a), runfile.load(path_b)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        app.save_screenshot(f"{name}.svg", str(OUT))
    return OUT / f"{name}.svg"


def to_png(svg: Path) -> None:
    try:
        import cairosvg
    except ImportError:
        return
    cairosvg.svg2png(url=str(svg), write_to=str(svg.with_suffix(".png")))


def main() -> int:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        run = record_demo(Path(tmp))
        shots = [asyncio.run(shoot(run, "dashboard-demo-replay")),
                 asyncio.run(shoot(run, "dashboard-demo-presenter", presenter=True)),
                 asyncio.run(shoot(run, "dashboard-home", home=True))]
        # The same demo with half the samples per epoch, compared with the first recording.
        half = record_demo(Path(tmp), samples=15000, name="demo-half")
        shots.append(asyncio.run(shoot_compare(run, half, "dashboard-compare")))
    for svg in shots:
        to_png(svg)
        print(svg.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
