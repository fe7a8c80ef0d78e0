"""``devicewatch --record FILE WORKLOAD|-- COMMAND``: headless recording, then the summary.

Not a subcommand but the top level's ``--record`` mode; the exit status is the workload's.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from .. import job, registry
from ..errors import UsageError

if TYPE_CHECKING:
    from ..recorder import RecordOptions


def options_of(args: argparse.Namespace) -> RecordOptions:
    """The recorder's options from the command line: ``--grace``, where given, is every grace
    (a cancel's steps and the workload's own after a signal from outside), else each its own."""
    from ..recorder import RecordOptions

    target = registry.resolve(args.target)
    if os.path.isdir(args.record):
        raise UsageError(f"--record needs a file, and {args.record} is a directory")
    output = job.record_path(args.record)   # a pattern (runs/%j/%h.jsonl) filled in and reserved
    return RecordOptions(output=output, job=job.job_of(), command=target.command, workload=target.workload,
                         workload_args=target.args, interval=args.interval, gpu=args.gpu,
                         echo=not args.quiet, watcher_pid=args.watcher_pid, control=args.control,
                         overwrite=args.overwrite, instrument=not args.no_instrument, terminal=args.terminal,
                         **({} if args.grace is None else {"grace": args.grace, "outside_grace": args.grace}))


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: cli imports this module for every command, and only --record
    # needs the recorder (psutil, the probes) and the report's tables (rich).
    from ..analysis import run_figures
    from ..recorder import record
    from ..render.report import report_text
    from ..runformat.runfile import load

    options = options_of(args)
    code = record(options)
    summary = report_text(run_figures(load(options.output)))  # as wide as `report` makes it: the terminal's, or COLUMNS
    try:
        print(summary, end="", file=sys.stdout)
        sys.stdout.flush()
    except OSError:  # nobody reads our output any more (a closed viewer): the status still counts
        try:  # what is still buffered goes nowhere, so flushing at exit cannot fail and change it
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return code
