"""``devicewatch demo``: the lecture story in one command.

Source 002's picture, live: the ``pipeline`` workload trains and validates serially (the cores,
or the GPU, dip every epoch while validation runs), then with validation overlapped on a thread
pool (the dip fills), and the dashboard ends on the two runs side by side with the headline
("B finished N% sooner …"). The workload trains on CUDA where torch sees a GPU
(``--device auto``), so the same command tells the story on a laptop and on a GPU machine.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry
from ..errors import UsageError
from . import add_dashboard_options, add_sampling_options

if TYPE_CHECKING:
    from ..analysis import Verdict

NAME = "demo"
HELP = "the lecture story: pipeline serial, then overlapped, live, then side by side"

# Chosen so that the whole story (two runs and their start-up) takes about two minutes on a
# two-core laptop without a GPU, with an epoch long enough to see its dip at 10 samples/s.
EPOCHS = 10
TRAIN_SAMPLES = 8000
VAL_SAMPLES = 8000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Run the pipeline workload serially, then with validation overlapped, live in "
                          "the dashboard, and end on their comparison. q quits at any point.")
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

    code, headline, files = launch_story(settings(args), story, args.pause)
    verdicts = [_verdict(path) for path in files]
    for label, variant, path, verdict in zip("AB", VARIANTS, files, verdicts):
        print(f"{label}: {path}")
        taken = _others_text(verdict)
        if taken:
            print(f"   other programs took {taken} during the {variant} run")
    if headline:
        print(headline)
    contended = [variant for variant, verdict in zip(VARIANTS, verdicts) if verdict and verdict.label == "contended"]
    if contended:
        print(f"the {' and the '.join(contended)} run{'s were' if len(contended) > 1 else ' was'} contended (threads "
              "waited for a core): overlapping validation gains only from a core left free, so here its gain shrinks "
              "or vanishes; close other programs and run the demo again to see it")
    return code


def _verdict(path: str | os.PathLike[str]) -> Verdict | None:
    """The run's verdict, None where its file cannot be read."""
    from .. import analysis
    from ..errors import RunFileError
    from ..runformat.runfile import load

    try:
        return analysis.verdict(load(path))
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
