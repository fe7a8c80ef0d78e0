"""``devicewatch run WORKLOAD|-- COMMAND``: the dashboard, starting a live run at once.

``devicewatch`` alone opens the same dashboard on its home screen (``home``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry
from ..errors import UsageError
from ..integrations.zero_code import SWITCH_VAR
from ..safe_text import inert
from . import add_dashboard_options, add_instrument_option, add_sampling_options

if TYPE_CHECKING:
    from ..live.source import LiveSource

NAME = "run"
HELP = "dashboard, starting WORKLOAD (or any -- COMMAND) at once"
TARGET = "WORKLOAD [OPTIONS…] | -- COMMAND [ARGS…]"
ENDING_WAIT = 10.0  # seconds a run left from the home screen may take to finish its file


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
    from ..tui.app import RUN_ENDING_WAIT, launch_run

    switch_instrumentation(args)
    source = LiveSource(args.runs_dir, target, args.interval, args.gpu)
    closed = launch_run(settings(args), source)
    sig = closed.ending_signal
    lines = ending(source, closed.left_recording, wait=ENDING_WAIT if sig is None else RUN_ENDING_WAIT)
    if sig != signal.SIGHUP:   # after a hang-up there is no terminal to say it on
        for line in lines:
            print(line)
        if source.error:
            print(f"devicewatch: {inert(source.error)}", file=sys.stderr)
    return closed.code if sig is None else signalled_status(source, sig)


def signalled_status(source: LiveSource, sig: signal.Signals) -> int:
    """The exit status after SIG ended the dashboard: the workload's, as a headless recorder
    exits with it, once its run has ended; 128 + SIG, a shell's way of saying it, if not."""
    from ..runformat.runfile import RunFileError, load

    try:
        end = load(source.path).end
    except (OSError, RunFileError):
        end = None
    return end.exit_code if end is not None and end.exit_code is not None else 128 + sig


def ending(source: LiveSource, left_recording: bool, wait: float = ENDING_WAIT) -> list[str]:
    """What ``devicewatch run`` says once its dashboard has closed, as ``demo`` names its files:
    where the recording is, and for a finished run how it ended and its verdict, in report's
    words; a run that failed says why first, and its verdict only where it judged something. A
    run still ending (left from the home screen, or given a signal) has WAIT seconds."""
    from ..analysis import failure, run_figures, status_text, verdict_beside
    from ..runformat.runfile import RunFileError, load

    if left_recording:
        return [f"recording: {source.path} (still recording; `devicewatch runs` lists it)"]
    if source.process is not None:
        try:  # left from the home screen, the run is being ended now: its end record comes
            source.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
    try:
        run = load(source.path)
    except (OSError, RunFileError):
        return []  # nothing recorded: the recorder's error says why
    if not run.finished:
        return [f"recording: {source.path} (not finished)"]
    judged = run_figures(run).verdict
    found = failure(run)
    if found is None:
        return [f"recording: {source.path} ({status_text(run)})", inert(f"verdict: {judged.text}")]
    return [inert(found.text), f"recording: {source.path}",
            *([inert(f"verdict: {judged.text}")] if verdict_beside(found, judged.label) else [])]


def home(args: argparse.Namespace) -> int:
    """``devicewatch`` with no command: the home screen (pick a workload, a recording)."""
    from ..tui.app import launch

    switch_instrumentation(args)
    return launch(settings(args), None)


def switch_instrumentation(args: argparse.Namespace) -> None:
    """--no-instrument: the recorders this dashboard starts inherit the switch."""
    if args.no_instrument:
        os.environ[SWITCH_VAR] = "0"
