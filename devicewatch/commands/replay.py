"""``devicewatch replay FILE``: the dashboard on a recorded run (or one still being written);
``replay DIR`` (or several files): a job's nodes followed live as one job."""

from __future__ import annotations

import argparse
import os

from ..live.source import open_replay
from . import add_presenter_option
from .run import settings

NAME = "replay"
HELP = "dashboard on a recorded run, or a job's nodes live (a folder)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Open a recorded run in the dashboard; a file still being written is followed. "
                          "A merged multi-node run shows one node's machine at a time: h for the next. "
                          "A job's folder (--record runs/%%j/%%h.jsonl on each node), or several nodes' files, "
                          "is followed live as one job: each node's machine, a lane per rank on one time "
                          "axis, each finished epoch's slowest rank, a node joining late or gone silent; "
                          "enter opens one node.")
    parser.add_argument("files", nargs="+", metavar="FILE|DIR",
                        help="a run file, e.g. runs/….jsonl; or a job's folder, or its nodes' run files")
    add_presenter_option(parser, default=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    if len(args.files) == 1 and not os.path.isdir(args.files[0]):
        source = open_replay(args.files[0])  # a missing or foreign file: one line, before the terminal is taken
        from ..tui.app import launch

        return launch(settings(args), source)
    from ..live.job import open_job

    job = open_job(args.files)  # bad input: one line, before the terminal is taken
    from ..tui.app import launch_job

    return launch_job(settings(args), job)
