"""The command line. Bad input gets one clear line on stderr and a non-zero exit, never a traceback.

    devicewatch                                   dashboard; pick a workload and run it
    devicewatch run WORKLOAD [OPTIONS…]           dashboard, starting WORKLOAD at once
    devicewatch run -- COMMAND [ARGS…]            dashboard watching any command
    devicewatch --record FILE WORKLOAD [OPTIONS…] headless: no UI, writes FILE, prints a summary
    devicewatch --record FILE -- COMMAND [ARGS…]  headless, any command
    devicewatch replay FILE                       dashboard on a recorded run
    devicewatch compare FILE_A FILE_B [--text|--json]   side by side (dashboard, or a table)
    devicewatch compare --pair WORKLOAD --a=OPTS --b=OPTS   record two runs, then compare
    devicewatch report FILE [--json]              epochs, phase times, utilization, verdict
    devicewatch export FILE --format perfetto|csv|svg -o OUT
    devicewatch workloads                         the workloads, what each shows, their options
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from .errors import DevicewatchError, UsageError

USAGE = __doc__.split("\n\n", 1)[1].rstrip() + "\n"

GLOBAL_HELP = """\
options (before the workload or command):
  --record FILE        headless: record to FILE without the dashboard, print a summary
  --interval SECONDS   sampling period (default 0.1)
  --gpu on|off         sample NVIDIA GPUs through NVML (default on; off on machines without)
  --runs-dir DIR       where the dashboard records its runs (default ./runs)
  --presenter          dashboard: fewer, larger panels in high contrast, for a projector
  --quiet              headless: do not echo the workload's output
  --control            headless: read marker commands, one JSON line each, on stdin (the
                       dashboard's channel: {"kind": "marker", "label": "..."})
  --version            print the version and exit
  -h, --help           this help; `devicewatch workloads` lists the workloads and their options

A run file is JSON Lines (docs/run-format.md). The exit status of --record is the workload's.
"""


@dataclass
class Invocation:
    command: str = "dashboard"
    record: str | None = None
    interval: float = 0.1
    gpu: bool = True
    quiet: bool = False
    presenter: bool = False
    runs_dir: str = "runs"
    watcher_pid: int | None = None
    control: bool = False
    grace: float = 3.0
    workload: str | None = None
    rest: list[str] = field(default_factory=list)  # workload options, or the raw command


SUBCOMMANDS = ("run", "replay", "compare", "report", "export", "workloads")
# --grace is left out of --help on purpose (docs/reliability.md): tests and the dashboard use it.
VALUE_OPTIONS = ("--record", "--interval", "--gpu", "--runs-dir", "--watcher-pid", "--grace")
FLAG_OPTIONS = ("--quiet", "--presenter", "--control")


def _take_options(argv: list[str], inv: Invocation) -> list[str]:
    """Consume leading devicewatch options; return what is left."""
    while argv:
        token = argv[0]
        name, eq, inline = token.partition("=")
        if name in VALUE_OPTIONS:
            if eq:
                value, argv = inline, argv[1:]
            elif len(argv) >= 2:
                value, argv = argv[1], argv[2:]
            else:
                raise UsageError(f"{name} needs a value")
            _set_option(inv, name, value)
        elif token in FLAG_OPTIONS:
            setattr(inv, token[2:], True)
            argv = argv[1:]
        elif token in ("-h", "--help"):
            raise SystemExit(_print_help())
        elif token == "--version":
            print(f"devicewatch {__version__}")
            raise SystemExit(0)
        else:
            break
    return argv


def _set_option(inv: Invocation, name: str, value: str) -> None:
    if name == "--record":
        inv.record = value
    elif name == "--interval":
        try:
            interval = float(value)
        except ValueError:
            raise UsageError(f"--interval needs a number of seconds, not {value!r}") from None
        if not math.isfinite(interval) or not 0.01 <= interval <= 60:
            raise UsageError(f"--interval must be between 0.01 and 60 seconds, not {value}")
        inv.interval = interval
    elif name == "--gpu":
        if value not in ("on", "off"):
            raise UsageError(f"--gpu takes on or off, not {value!r}")
        inv.gpu = value == "on"
    elif name == "--runs-dir":
        inv.runs_dir = value
    elif name == "--watcher-pid":
        if not value.isdigit():
            raise UsageError(f"--watcher-pid needs a process id, not {value!r}")
        inv.watcher_pid = int(value)
    elif name == "--grace":
        try:
            grace = float(value)
        except ValueError:
            raise UsageError(f"--grace needs a number of seconds, not {value!r}") from None
        if not math.isfinite(grace) or not 0 <= grace <= 60:
            raise UsageError(f"--grace must be between 0 and 60 seconds, not {value}")
        inv.grace = grace


def _print_help() -> int:
    print("usage:\n" + USAGE + "\n" + GLOBAL_HELP)
    return 0


def parse(argv: list[str]) -> Invocation:
    inv = Invocation()
    argv = _take_options(list(argv), inv)
    if inv.record is not None:
        inv.command = "record"
    elif argv and argv[0] in SUBCOMMANDS:
        inv.command = argv[0]
        argv = argv[1:]
        if inv.command == "run":
            argv = _take_options(argv, inv)
    elif argv:
        if argv[0] == "--":
            raise UsageError("to watch a command, use `devicewatch run -- COMMAND` or `devicewatch --record FILE -- COMMAND`")
        if argv[0].startswith("-"):
            raise UsageError(f"unknown option {argv[0]} (see devicewatch --help)")
        raise UsageError(f"unknown command {argv[0]!r} (see devicewatch --help)")
    if inv.command in ("record", "run"):
        if not argv:
            raise UsageError("name a workload (see devicewatch workloads) or give -- COMMAND")
        if argv[0] == "--":
            if len(argv) < 2:
                raise UsageError("nothing to run after --")
            inv.rest = argv[1:]
        else:
            inv.workload, inv.rest = argv[0], argv[1:]
            if inv.workload.startswith("-"):
                raise UsageError(f"unknown option {inv.workload} (devicewatch options go before the workload)")
    else:
        inv.rest = argv
    return inv


def _workload_command(inv: Invocation) -> list[str]:
    """Resolve and check the workload's options here, before anything is launched."""
    if inv.workload is None:
        return inv.rest
    from . import registry

    try:
        info = registry.get(inv.workload)
    except registry.UnknownWorkload as exc:
        raise UsageError(str(exc)) from None

    def refuse(message: str) -> None:
        raise UsageError(f"{inv.workload}: {message} (see devicewatch workloads)")

    info.parser.error = refuse  # type: ignore[method-assign]
    try:
        info.parser.parse_args(inv.rest)
    except SystemExit as exc:  # --help of the workload
        raise SystemExit(exc.code) from None
    return info.command(inv.rest)


def _sub_parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"devicewatch {prog}", description=description)

    def refuse(message: str) -> None:
        raise UsageError(f"{prog}: {message}")

    parser.error = refuse  # type: ignore[method-assign]
    return parser


# -- commands ----------------------------------------------------------------------------------

def cmd_record(inv: Invocation) -> int:
    from .recorder import RecordOptions, record
    from .runfile import load
    from .report import render_text

    command = _workload_command(inv)
    options = RecordOptions(output=inv.record or "", command=command, workload=inv.workload,
                            workload_args=inv.rest if inv.workload else [], interval=inv.interval,
                            gpu=inv.gpu, echo=not inv.quiet, watcher_pid=inv.watcher_pid,
                            control=inv.control, grace=inv.grace)
    if os.path.isdir(options.output):
        raise UsageError(f"--record needs a file, and {options.output} is a directory")
    code = record(options)
    run = load(options.output)
    try:
        print(render_text(run), end="", file=sys.stdout)
        sys.stdout.flush()
    except OSError:  # nobody reads our output any more (a closed viewer): the status still counts
        try:  # what is still buffered goes nowhere, so flushing at exit cannot fail and change it
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return code


def cmd_report(inv: Invocation) -> int:
    from .analysis import summarize
    from .report import render_text
    from .runfile import load

    parser = _sub_parser("report", "Epochs, phase times, utilization per phase, GPU idle time and dips, verdict.")
    parser.add_argument("file")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--chart", action="store_true", help="draw the utilization timeline even when not on a terminal")
    parser.add_argument("--no-chart", action="store_true", help="never draw the timeline")
    args = parser.parse_args(inv.rest)
    run = load(args.file)
    if args.json:
        print(json.dumps(summarize(run), indent=2, default=str))
        return 0
    chart = (args.chart or sys.stdout.isatty()) and not args.no_chart
    print(render_text(run, chart=chart), end="")
    return 0


def cmd_workloads(inv: Invocation) -> int:
    from . import registry

    parser = _sub_parser("workloads", "List the workloads, what each demonstrates, and their options.")
    parser.add_argument("name", nargs="?", help="show only this workload")
    args = parser.parse_args(inv.rest)
    names = [args.name] if args.name else registry.available()
    for name in names:
        try:
            info = registry.get(name)
        except registry.UnknownWorkload as exc:
            raise UsageError(str(exc)) from None
        print(f"{info.name}: {info.title}")
        if info.source:
            print(f"  recreates {info.source}")
        print(f"  run: devicewatch run {info.name} [OPTIONS]   record: devicewatch --record FILE {info.name} [OPTIONS]")
        help_text = info.options_help().split("\n")
        start = next((i for i, line in enumerate(help_text) if line.startswith("options")), None)
        if start is not None:
            print("\n".join("  " + line for line in help_text[start:]).rstrip())
        print()
    return 0


def cmd_dashboard(inv: Invocation) -> int:
    try:
        from .tui.app import launch
    except ImportError as exc:
        raise UsageError(f"the dashboard is not available: {exc}") from None
    command = _workload_command(inv) if inv.command == "run" else None
    return launch(inv, command)


def cmd_compare(inv: Invocation) -> int:
    try:
        from .compare import main as compare_main
    except ImportError:
        raise UsageError("compare is not available in this build") from None
    return compare_main(inv.rest, presenter=inv.presenter)


def cmd_export(inv: Invocation) -> int:
    try:
        from .export import main as export_main
    except ImportError:
        raise UsageError("export is not available in this build") from None
    return export_main(inv.rest)


COMMANDS = {"record": cmd_record, "report": cmd_report, "workloads": cmd_workloads,
            "dashboard": cmd_dashboard, "run": cmd_dashboard, "replay": cmd_dashboard,
            "compare": cmd_compare, "export": cmd_export}


def main(argv: list[str] | None = None) -> int:
    try:
        inv = parse(sys.argv[1:] if argv is None else argv)
        return COMMANDS[inv.command](inv)
    except DevicewatchError as exc:
        print(f"devicewatch: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("devicewatch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `devicewatch report x | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
