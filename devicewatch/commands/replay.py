"""``devicewatch replay FILE``: the dashboard on a recorded run (or one still being written)."""

from __future__ import annotations

import argparse

from ..live.source import open_replay
from .run import settings

NAME = "replay"
HELP = "dashboard on a recorded run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Open a recorded run in the dashboard; a file still being written is followed. "
                          "A merged multi-node run shows one node's machine at a time: h for the next.")
    parser.add_argument("file", help="a run file, e.g. runs/….jsonl")


def run(args: argparse.Namespace) -> int:
    source = open_replay(args.file)  # a missing or foreign file: one line, before the terminal is taken
    from ..tui.app import launch

    return launch(settings(args), source)
