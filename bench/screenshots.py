"""Render the dashboard's screenshots from real runs: ``python -m bench.screenshots`` (``make screenshots``).

The lecture story of ``devicewatch demo``, shot as it happens: the ``pipeline`` workload runs
serially live in the dashboard (one shot mid-run, one when it has finished and shows the whole
run), then overlapped; their comparison is shot, the serial run in presenter mode at 100×30,
and the home screen with every workload. Then ``devicewatch try`` runs for real on a training
script whose Dataset waits on each item (``tests/zero_code/trial_scripts/sleepy_dataset.py``,
copied as ``train.py``): the script as written and the variant its advice names, and the
trials view of that set is shot (``try``). ``--only try`` shoots that alone. They go under screenshots/ as SVG only: Textual
writes SVG itself (no converter to install), the text in it stays text (searchable, diffable,
sharp at any size on a slide), and the README and docs show SVG directly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (200, 50)
PRESENTER_SIZE = (100, 30)


def story_targets() -> list:
    from devicewatch.commands import demo

    args = argparse.Namespace(epochs=demo.EPOCHS, train_samples=demo.TRAIN_SAMPLES, val_samples=demo.VAL_SAMPLES,
                              device="auto")
    return demo.targets(args)


async def shoot_live(runs: Path, target, live_name: str, done_name: str) -> Path:
    """Run ``target`` live; shoot it once half its epochs are done and again when it has ended."""
    from devicewatch.live.source import LiveSource
    from devicewatch.tui.app import DashboardApp, DashboardSettings

    source = LiveSource(str(runs), target, 0.1, True)
    app = DashboardApp(DashboardSettings(runs_dir=str(runs)), source)
    async with app.run_test(size=SIZE) as pilot:
        shot_live = False
        for _ in range(3000):
            await pilot.pause(0.2)
            model = app.screen.model
            if model is None:
                continue
            if not shot_live and model.epochs_total and model.epochs_done >= model.epochs_total // 2:
                app.save_screenshot(f"{live_name}.svg", str(OUT))
                shot_live = True
            if model.run.finished:
                break
        await pilot.pause(1.0)
        app.save_screenshot(f"{done_name}.svg", str(OUT))
    source.close()
    return source.path


async def shoot(path: Path | None, name: str, presenter: bool = False, size: tuple[int, int] = SIZE,
                runs: Path | None = None) -> None:
    from devicewatch.live.source import open_replay
    from devicewatch.tui.app import DashboardApp, DashboardSettings

    settings = DashboardSettings(presenter=presenter, runs_dir=str(runs or (path.parent if path else ".")))
    app = DashboardApp(settings, open_replay(str(path)) if path else None)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.8)
        app.save_screenshot(f"{name}.svg", str(OUT))


async def shoot_compare(path_a: Path, path_b: Path, name: str) -> None:
    from devicewatch.runformat import runfile
    from devicewatch.tui.app import DashboardApp

    app = DashboardApp(compare=(runfile.load(path_a), runfile.load(path_b)))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(300):  # the figures fill in after the charts
            await pilot.pause(0.1)
            if getattr(app.screen, "comparison", None) is not None:
                break
        await pilot.pause(0.8)
        app.save_screenshot(f"{name}.svg", str(OUT))


TRY_SCRIPT = ROOT / "tests" / "zero_code" / "trial_scripts" / "sleepy_dataset.py"


async def shoot_trials(folder: Path, name: str) -> None:
    from devicewatch.trials import load_set as load_trials
    from devicewatch.tui.app import DashboardApp
    from devicewatch.tui.charts import AreaChart

    app = DashboardApp(trial_set=load_trials(folder / "trials.json"))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.1)
            charts = list(app.screen.query(AreaChart))
            if charts and all(c.rebuilds for c in charts):
                break
        await pilot.pause(0.5)
        app.save_screenshot(f"{name}.svg", str(OUT))


def shoot_try(name: str = "try") -> None:
    """``devicewatch try`` for real (the script as written, then what its advice names), then
    the trials view of the set it saved. Run in a folder of its own, as ``python train.py``:
    the command and the folder in the picture are what a user types."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(TRY_SCRIPT, work / "train.py")
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                   PYTHONPATH=str(ROOT))
        subprocess.run([sys.executable, "-m", "devicewatch", "try", "--steps", "40", "--warmup", "5", "--out", "try",
                        "--no-view", "--", "python", "train.py"], cwd=work, env=env, check=True)
        here = os.getcwd()
        os.chdir(work)  # the folder shown is the relative one the command was given
        try:
            asyncio.run(shoot_trials(Path("try"), name))
        finally:
            os.chdir(here)


def main() -> int:
    parser = argparse.ArgumentParser(description="Render the dashboard's screenshots under screenshots/.")
    parser.add_argument("--only", choices=["try"], help="shoot only the trials view of a real try")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    if args.only == "try":
        shoot_try()
        print((OUT / "try.svg").relative_to(ROOT))
        return 0
    serial, overlapped = story_targets()
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        path_a = asyncio.run(shoot_live(runs, serial, "dashboard-pipeline-live", "dashboard-pipeline-serial"))
        path_b = asyncio.run(shoot_live(runs, overlapped, "dashboard-pipeline-overlapped-live",
                                        "dashboard-pipeline-overlapped"))
        asyncio.run(shoot_compare(path_a, path_b, "dashboard-compare"))
        asyncio.run(shoot(path_a, "dashboard-presenter", presenter=True, size=PRESENTER_SIZE))
        asyncio.run(shoot(None, "dashboard-home", runs=runs))
    shoot_try()
    names = ["dashboard-compare", "dashboard-pipeline-live", "dashboard-pipeline-serial",
             "dashboard-pipeline-overlapped-live", "dashboard-pipeline-overlapped", "dashboard-presenter",
             "dashboard-home", "try"]
    for name in names:
        print((OUT / f"{name}.svg").relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
