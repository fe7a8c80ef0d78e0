"""``devicewatch runs``: the runs recording now on this machine, to follow or stop.

A dashboard's run ends with its dashboard unless the user chose "Quit, keep recording"; a
headless recorder ends with its terminal unless started under ``nohup``. Whatever is still
recording, from any dashboard or terminal of this user, is listed here (and on the home
screen), so that nothing runs unseen.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .. import active_runs
from ..errors import UsageError
from ..safe_text import inert

NAME = "runs"
HELP = "the runs recording now: file, age, PID; stop one"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("List the runs this user is recording now, from any dashboard or terminal, "
                          "with their file, age and recorder PID. Follow one live with "
                          "`devicewatch replay FILE`; stop one with --stop.")
    parser.add_argument("--stop", metavar="FILE|PID", action="append",
                        help="stop this run (its workload is cancelled and the file finished); may be repeated")
    parser.add_argument("--wait", type=float, default=10.0, metavar="SECONDS",
                        help="--stop: how long to wait for the file to be finished (default 10)")
    parser.add_argument("--json", action="store_true", help="the list as JSON")


def run(args: argparse.Namespace) -> int:
    if args.stop:
        return _stop(args.stop, args.wait)
    found = active_runs.active_runs()
    if args.json:
        print(json.dumps([{"pid": r.pid, "file": r.path, "age_s": round(r.age, 1), "title": r.title,
                           "started_unix": r.started_unix, "watched": r.watched} for r in found], indent=1))
        return 0
    if not found:
        print("no run is recording now")
        return 0
    rows = [("PID", "AGE", "WATCHED", "FILE", "WORKLOAD")]
    rows += [(str(r.pid), active_runs.age_text(r.age), "yes" if r.watched else "no", r.path, inert(r.title))
             for r in found]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    print("\nfollow one: devicewatch replay FILE · stop one: devicewatch runs --stop FILE|PID")
    return 0


def _stop(which: list[str], wait: float) -> int:
    chosen = []
    for name in which:
        run = active_runs.find(name)
        if run is None:
            raise UsageError(f"no run recording now matches {name!r} (see devicewatch runs)")
        chosen.append(run)
    for run in chosen:
        if active_runs.stop(run):
            print(f"stopping {run.path} (recorder {run.pid})")
    deadline = time.monotonic() + wait
    left = chosen
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [r for r in left if active_runs.find(str(r.pid)) is not None]
    for run in left:
        print(f"{run.path}: the recorder {run.pid} is still finishing after {wait:g}s", file=sys.stderr)
    return 1 if left else 0
