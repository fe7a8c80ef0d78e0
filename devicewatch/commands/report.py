"""``devicewatch report FILE``: epochs, phase times, utilization per phase, idle time, verdict."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis import Summary, run_figures
from ..job_files import load_run

NAME = "report"
HELP = "epochs, phase times, utilization, verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Epochs, phase times, utilization per phase, GPU idle time and dips, verdict. "
                          "For a merged multi-node run (devicewatch merge), the stragglers per epoch, and "
                          "each node's devices, dips and verdict from its own machine's samples.")
    parser.add_argument("file", help="a run file (.jsonl, or .jsonl.gz), or a job's folder "
                        "of its nodes' run files")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--chart", action="store_true", help="draw the utilization timeline even when not on a terminal")
    parser.add_argument("--no-chart", action="store_true", help="never draw the timeline")
    parser.add_argument("--width", type=int, default=None, metavar="COLUMNS",
                        help="text width (default: the terminal's, else $COLUMNS, else 100)")


def run(args: argparse.Namespace) -> int:
    recording = load_run(args.file, say=lambda line: print(f"devicewatch: {line}", file=sys.stderr))
    figures = run_figures(recording)
    if args.json:
        print(json.dumps(dict(Summary.of(figures).to_json(), advice=[a.to_json() for a in figures.advice]),
                         indent=2, default=str))
        return 0
    from ..render.report import report_text  # rich and plotext: not for --json

    chart = (args.chart or sys.stdout.isatty()) and not args.no_chart
    print(report_text(figures, chart=chart, width=args.width), end="")
    return 0
