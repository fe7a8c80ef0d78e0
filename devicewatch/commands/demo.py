"""``devicewatch demo``: the lecture story in one command.

Source 002's picture, live: the ``pipeline`` workload trains and validates serially (the cores,
or the GPU, dip every epoch while validation runs), then with validation overlapped on a thread
pool (the dip fills), and the dashboard ends on the two runs side by side with the headline
("B finished N% sooner …"). The workload trains on CUDA where torch sees a GPU
(``--device auto``), so the same command tells the story on a laptop and on a GPU machine.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry
from ..analysis.contention import OTHERS_NOTABLE, cores_figure, cores_text
from ..errors import UsageError
from . import add_dashboard_options, add_sampling_options

if TYPE_CHECKING:
    from ..analysis import Verdict

NAME = "demo"
HELP = "the lecture story: pipeline serial, then overlapped, live, then side by side"

# Chosen so that the whole story (two runs and their start-up) takes about a minute on a quiet
# two-core laptop without a GPU (TO_COMPARISON), with an epoch long enough to see its dip at 10
# samples/s.
EPOCHS = 10
TRAIN_SAMPLES = 8000
VAL_SAMPLES = 8000


# From the command to the comparison screen with the defaults, as measured (docs/lecture-guide.md
# says how): on a quiet 2-core laptop without a GPU, and on the same beside other programs.
TO_COMPARISON = ("about 100 s on a quiet 2-core machine without a GPU (99 s measured), nearer 4 minutes "
                 "where other programs hold most of its cores (220 s measured beside 1.5 to 2 busy cores of 2)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Run the pipeline workload serially, then with validation overlapped, live in "
                          "the dashboard, and end on their comparison: " + TO_COMPARISON + ". Before the "
                          "first run, one line says where other programs leave the overlapped run too few "
                          "cores to finish sooner. q quits at any point.")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"epochs of each run (default {EPOCHS})")
    parser.add_argument("--train-samples", type=int, default=TRAIN_SAMPLES,
                        help=f"training samples (default {TRAIN_SAMPLES})")
    parser.add_argument("--val-samples", type=int, default=VAL_SAMPLES,
                        help=f"validation samples (default {VAL_SAMPLES})")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where the workload trains (default auto: CUDA when torch sees a GPU)")
    parser.add_argument("--pause", type=float, default=None, metavar="SECONDS",
                        help="how long a finished run stays on screen before the next step (default 4)")
    add_sampling_options(parser, default=argparse.SUPPRESS)
    add_dashboard_options(parser, default=argparse.SUPPRESS)


VARIANTS = ("serial", "overlapped")   # run A and run B


def targets(args: argparse.Namespace) -> list[registry.Target]:
    """Run A (serial) and run B (overlapped): the same options but the variant."""
    common = ["--epochs", str(args.epochs), "--train-samples", str(args.train_samples),
              "--val-samples", str(args.val_samples), "--device", args.device]
    return [registry.resolve(["pipeline", "--variant", variant, *common]) for variant in VARIANTS]


# The story's B (validation on a thread pool beside training) kept 1.3 cores busy on a quiet
# 2-core machine (docs/lecture-guide.md), and the recorder and dashboard take a little more: it
# finishes sooner than A only where about this many cores are free for it.
STORY_CORES = 1.5
LOAD_SAMPLE = 0.5   # seconds of /proc/stat read before the first run


@dataclass(frozen=True)
class Load:
    """The cores the demo may use just before its first run, and what other programs kept busy
    of them: whether the story's overlapped run can have the cores it gains from."""

    host_cores: int
    cores: int                  # those its affinity and cpuset allow
    others: float               # cores other programs kept busy among them
    quota: float | None = None  # a cgroup CPU quota, in cores

    @property
    def free(self) -> float:
        """Cores left to the demo: those allowed less what other programs took, at most the quota."""
        return max(0.0, min(self.cores - self.others, math.inf if self.quota is None else self.quota))

    def line(self) -> str | None:
        """One line where fewer than ``STORY_CORES`` are free: what holds them and how to get
        them back; None where the story has its cores."""
        if self.free >= STORY_CORES:
            return None
        limited = self.cores < self.host_cores
        others = self.others >= OTHERS_NOTABLE                    # other programs hold some of them
        allowed = self.cores < STORY_CORES or (self.quota is not None and self.quota < STORY_CORES)
        reasons = []
        if others:
            reasons.append(f"other programs are using {self.others:.1f} of "
                           f"{cores_text(self.cores if limited else None, self.host_cores)}")
        elif self.cores < STORY_CORES:
            reasons.append(f"the demo runs on {cores_text(self.cores if limited else None, self.host_cores)}")
        if self.quota is not None and self.quota < STORY_CORES:
            reasons.append(f"a CPU quota allows it {cores_figure(self.quota)} "
                           f"core{'s' * (cores_figure(self.quota) != '1')}")
        if others and allowed:
            fix = "close them and run the demo where more cores are allowed"
        elif others:
            fix = "close them, or run `devicewatch demo` on a quieter machine"
        elif allowed and (limited or self.quota is not None):
            fix = "run the demo where more cores are allowed"
        else:
            fix = "run the demo on a machine with two cores or more"
        return (f"{' and '.join(reasons)}: the demo's overlapped run needs about {cores_figure(STORY_CORES)} "
                f"cores free to finish sooner than the serial one; {fix}")


def measure_load(seconds: float = LOAD_SAMPLE) -> Load | None:
    """What other programs keep busy of the cores this process may use, over SECONDS (this
    process sleeps meanwhile); None where /proc cannot be read."""
    from ..probes import cpu_limits, procfs

    if not procfs.available():
        return None
    try:
        times = procfs.CoreTimes()
        time.sleep(seconds)
        busy = times.percent()
    except (OSError, ValueError):
        return None
    limits = cpu_limits.of_process(os.getpid())
    host = len(busy) or 1
    allowed = set(range(host))
    for cores in (None, None) if limits is None else (limits.affinity, limits.cpuset):
        if cores is not None:
            allowed &= set(cores)
    others = sum(busy[core] for core in allowed) / 100.0
    quota = None if limits is None else limits.quota_cores
    return Load(host, len(allowed), others, quota)


def run(args: argparse.Namespace) -> int:
    story = targets(args)  # bad options: one line, before the terminal is taken
    if args.pause is not None and not 0 <= args.pause <= 600:
        raise UsageError("demo: --pause must be between 0 and 600 seconds")
    try:
        Path(args.runs_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the runs folder {args.runs_dir}: {exc.strerror}") from None
    from ..tui.app import launch_story
    from .run import settings

    load = measure_load()
    notice = None if load is None else load.line()
    if notice:   # on the terminal (there again after the dashboard) and on the first run's screen
        print(f"devicewatch demo: {notice}", flush=True)
    code, headline, files = launch_story(settings(args), story, args.pause, notice)
    verdicts = [_verdict(path) for path in files]
    for label, variant, path, verdict in zip("AB", VARIANTS, files, verdicts):
        print(f"{label}: {path}")
        taken = _others_text(verdict)
        if taken:
            print(f"   other programs took {taken} during the {variant} run")
    if headline:
        print(headline)
        for line in _explains(files):
            print(f"why: {line}")
    contended = [variant for variant, verdict in zip(VARIANTS, verdicts) if verdict and verdict.label == "contended"]
    if contended:
        print(f"the {' and the '.join(contended)} run{'s were' if len(contended) > 1 else ' was'} contended (threads "
              "waited for a core): overlapping validation gains only from a core left free, so here its gain shrinks "
              "or vanishes; close other programs and run the demo again to see it")
    return code


def _explains(files: list[Path]) -> list[str]:
    """What explains the headline of A against B (``Comparison.explains``: why the epochs
    table reads otherwise), as the comparison screen showed it beside the headline."""
    from .. import compare
    from ..errors import RunFileError
    from ..runformat.runfile import load

    if len(files) != 2:
        return []
    try:
        return compare.comparison(load(files[0]), load(files[1])).explains
    except (RunFileError, OSError):
        return []


def _verdict(path: str | os.PathLike[str]) -> Verdict | None:
    """The run's verdict, None where its file cannot be read."""
    from .. import analysis
    from ..errors import RunFileError
    from ..runformat.runfile import load

    try:
        return analysis.run_figures(load(path)).verdict
    except (RunFileError, OSError):
        return None


def _others_text(verdict: Verdict | None) -> str | None:
    """``1.1 of 2 cores``: what other programs took during the run's phases, where it was
    enough to matter (``analysis.contention.OTHERS_NOTABLE``); None otherwise."""
    from .. import analysis
    from ..analysis.contention import OTHERS_NOTABLE

    figures = verdict.figures if verdict is not None else {}
    others = figures.get("others_cores")
    if not isinstance(others, (int, float)) or others < OTHERS_NOTABLE:
        return None
    return f"{others:.1f} of {analysis.Cores.of_figures(figures).machine_of()}"
