"""``devicewatch merge FILE FILE… -o OUT``: several torchrun nodes' runs as one run file."""

from __future__ import annotations

import argparse
import os

from .. import analysis, merge
from ..runformat import runfile
from ..render.report import straggler_lines
from ..errors import UsageError

NAME = "merge"
HELP = "several torchrun nodes' runs on one time axis: hosts apart, a lane per rank"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="one run file per node (devicewatch --record)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="the merged run file to write")


def run(args: argparse.Namespace) -> int:
    output = os.path.realpath(args.output)
    if any(os.path.realpath(path) == output for path in args.files):
        raise UsageError(f"{args.output} is one of the files to merge; write the merged run elsewhere")
    merged = merge.merge(args.files)
    merge.write(merged, args.output)
    nodes = ", ".join(f"{n.name} ({n.label}: rank {', '.join(map(str, n.ranks))}; {n.status})"
                      for n in merged.nodes)
    print(f"merged {nodes} into {args.output}")
    print(f"alignment: {merged.alignment['text']}")
    figures = analysis.run_figures(runfile.load(args.output))
    for line in straggler_lines(analysis.straggler_figures(figures.stragglers, figures.unit)):
        print(line)
    return 0
