"""``devicewatch compare A B``: two runs side by side, in the dashboard or as a table.

``--pair WORKLOAD --a OPTS --b OPTS`` records the two runs first, one after the other: two
workloads at once would share the cores and each would measure the other. ``compare DIR`` (or
``DIR/trials.json``) shows the variants ``devicewatch try`` saved there, all of them, in the
trials view (or as ``try`` printed them, with ``--text``; ``--json``: the set).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from .. import analysis, registry, trials
from ..compare import comparison, to_dict
from ..errors import DevicewatchError, UsageError
from ..recorder import check_interval, record_argv
from ..render.compare_text import print_comparison
from ..job_files import load_run
from ..runformat.runfile import load
from . import add_presenter_option

NAME = "compare"
HELP = "two runs side by side (dashboard, --text table or --json)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Put two recorded runs side by side: totals and speedup, epochs, "
                          "utilization per phase, GPU idle time and dips, verdicts.")
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="two run files (or jobs' folders of their nodes' run files), A then B; or one folder "
                        "of devicewatch try (or its trials.json)")
    parser.add_argument("--text", action="store_true", help="print the comparison as a table")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_presenter_option(parser, default=argparse.SUPPRESS)
    parser.add_argument("--pair", metavar="WORKLOAD", help="record WORKLOAD twice (options --a, then --b), then compare")
    parser.add_argument("--a", dest="options_a", metavar="OPTIONS", default=None,
                        help='workload options of run A, one quoted string, e.g. --a="--device cpu"')
    parser.add_argument("--b", dest="options_b", metavar="OPTIONS", default=None,
                        help="workload options of run B")
    parser.add_argument("--out", metavar="DIR", help="where --pair writes a.jsonl and b.jsonl "
                        "(default runs/pair-DATE-TIME; a.jsonl and b.jsonl must not be there already)")
    parser.add_argument("--interval", dest="pair_interval", type=check_interval, metavar="SECONDS",
                        help="--pair: sampling period")
    parser.add_argument("--width", type=int, default=None, metavar="COLUMNS",
                        help="text width (default: the terminal's, else $COLUMNS, else 100)")


def run(args: argparse.Namespace) -> int:
    if args.text and args.json:
        raise UsageError("compare: choose --text or --json, not both")
    if args.pair:
        path_a, path_b = _record_pair_from_args(args)
    else:
        if args.options_a is not None or args.options_b is not None or args.out or args.pair_interval:
            raise UsageError("compare: --a, --b, --out and --interval go with --pair WORKLOAD")
        if len(args.files) == 1 and trials_file(args.files[0]) is not None:
            return _show_trials(args, trials_file(args.files[0]))  # type: ignore[arg-type]  # trials_file is not None: checked on the line above
        if len(args.files) != 2:
            raise UsageError(f"compare: give two run files, A and B, or a folder of devicewatch try "
                             f"(got {len(args.files)} files)")
        path_a, path_b = args.files
    run_a, run_b = (load_run(path, say=lambda line: print(f"devicewatch: {line}", file=sys.stderr))
                    for path in (path_a, path_b))
    if args.json:
        print(json.dumps(to_dict(comparison(run_a, run_b)), indent=2, default=str))
        return 0
    if not args.text:
        try:
            from ..tui.app import launch_compare
        except ImportError:
            print("devicewatch: the dashboard's comparison view is not available; printing the table",
                  file=sys.stderr)
        else:
            return launch_compare(run_a, run_b, presenter=bool(args.presenter))
    print_comparison(comparison(run_a, run_b), args.width)
    return 0


def _record_pair_from_args(args: argparse.Namespace) -> tuple[str, str]:
    if args.files:
        raise UsageError("compare: give two files or --pair WORKLOAD, not both")
    if args.options_a is None or args.options_b is None:
        raise UsageError('compare: --pair needs --a "OPTIONS" and --b "OPTIONS" (either may be "")')
    try:
        options_a, options_b = shlex.split(args.options_a), shlex.split(args.options_b)
    except ValueError as exc:
        raise UsageError(f"compare: cannot split the options: {exc}") from None
    out_dir = args.out or os.path.join("runs", time.strftime("pair-%Y%m%d-%H%M%S"))
    return record_pair(args.pair, options_a, options_b, out_dir, args.pair_interval)


def record_pair(workload: str, options_a: list[str], options_b: list[str], out_dir: str,
                interval: float | None = None, log: TextIO | None = None) -> tuple[str, str]:
    """Record A then B with the ordinary recorder, one after the other; return the two files.

    The recorder's output goes to ``log`` (stderr), so stdout stays clean for ``--json``.
    """
    log = sys.stderr if log is None else log
    targets = [registry.resolve([workload, *opts]) for opts in (options_a, options_b)]  # refuse bad options first
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out_dir}: {exc.strerror}") from None
    paths = [os.path.join(out_dir, f"{label}.jsonl") for label in "ab"]
    taken = [p for p in paths if os.path.exists(p) and os.path.getsize(p) > 0]
    if taken:  # an earlier pair's recordings are never replaced silently
        raise UsageError(f"compare: {taken[0]} already holds a recording; choose another --out (nothing was recorded)")
    for label, target, path in zip("AB", targets, paths):
        print(f"devicewatch: recording {label}: devicewatch --record {path} {workload} "
              f"{shlex.join(target.args)}".rstrip(), file=log, flush=True)
        code = subprocess.call(record_argv(path, target, interval), stdout=log, stderr=log)
        if code != 0:
            raise UsageError(f"recording {label} failed (exit code {code}){_last_error(path)}; "
                             "nothing compared")
    return paths[0], paths[1]


def _last_error(path: str) -> str:
    """Why a recording failed (``analysis.failure``: the exception's line, the start error)."""
    try:
        found = analysis.failure(load(path))
    except DevicewatchError:
        return ""
    return f": {found.said or found.text}" if found is not None else ""


# -- a saved set of devicewatch try ---------------------------------------------------------

def trials_file(path: str) -> Path | None:
    """The trials.json that PATH is, or holds (a folder of ``devicewatch try``); None otherwise."""
    p = Path(path)
    if p.is_dir():
        p = p / trials.TRIALS_FILE
        return p if p.is_file() else None
    return p if p.name == trials.TRIALS_FILE else None


def _show_trials(args: argparse.Namespace, path: Path) -> int:
    trial_set, folder = trials.load_set(str(path))
    if args.json:
        print(json.dumps(trial_set.to_json(), indent=2, default=str))
        return 0
    if not args.text:
        try:
            from ..tui.app import launch_trials
        except ImportError:
            print("devicewatch: the dashboard's trials view is not available; printing the table", file=sys.stderr)
        else:
            return launch_trials(trial_set, folder, presenter=bool(args.presenter))
    print(trials.table_text(trial_set.results))
    if trial_set.stopped:
        print(trial_set.stopped)
    print(trial_set.headline())
    return 0
