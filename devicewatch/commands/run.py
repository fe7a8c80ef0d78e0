"""``devicewatch run WORKLOAD|-- COMMAND``: the dashboard, starting a live run at once.

``devicewatch`` alone opens the same dashboard on its home screen (``home``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .. import registry
from ..errors import UsageError
from ..integrations.zero_code import SWITCH_VAR
from . import add_dashboard_options, add_instrument_option, add_sampling_options

NAME = "run"
HELP = "dashboard, starting WORKLOAD (or any -- COMMAND) at once"
TARGET = "WORKLOAD [OPTIONS…] | -- COMMAND [ARGS…]"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Open the dashboard and run a workload (or any command) live in it."
    # SUPPRESS: an option not given here keeps the value given before the subcommand.
    add_sampling_options(parser, default=argparse.SUPPRESS)
    add_instrument_option(parser, default=argparse.SUPPRESS)
    add_dashboard_options(parser, default=argparse.SUPPRESS)
    parser.add_argument("target", nargs=argparse.REMAINDER, metavar=TARGET)


def settings(args: argparse.Namespace):  # -> tui.app.DashboardSettings (imported lazily: Textual)
    from ..tui.app import DashboardSettings

    return DashboardSettings(runs_dir=args.runs_dir, interval=args.interval, gpu=args.gpu,
                             presenter=bool(args.presenter))


def run(args: argparse.Namespace) -> int:
    target = registry.resolve(args.target)
    try:
        Path(args.runs_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the runs folder {args.runs_dir}: {exc.strerror}") from None
    from ..live.source import LiveSource
    from ..tui.app import launch

    switch_instrumentation(args)
    return launch(settings(args), LiveSource(args.runs_dir, target, args.interval, args.gpu))


def home(args: argparse.Namespace) -> int:
    """``devicewatch`` with no command: the home screen (pick a workload, a recording)."""
    from ..tui.app import launch

    switch_instrumentation(args)
    return launch(settings(args), None)


def switch_instrumentation(args: argparse.Namespace) -> None:
    """--no-instrument: the recorders this dashboard starts inherit the switch."""
    if args.no_instrument:
        os.environ[SWITCH_VAR] = "0"
