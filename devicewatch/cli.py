"""The command line: global options, then dispatch to one module of ``commands/``.

Bad input gets one clear line on stderr and exit status 2, never a traceback. Nothing imports
this module; ``--help`` is generated from the parsers the commands build.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import sys
from types import ModuleType

from . import __version__
from .commands import (MODULES, SUBCOMMANDS, CommandParser, HelpFormatter, add_dashboard_options,
                       add_instrument_option, add_sampling_options, synopsis, wrap)
from .errors import DevicewatchError, UsageError
from .job import PATTERN_HELP
from .safe_text import inert

DEFAULTS = {"interval": 0.1, "gpu": True, "runs_dir": "runs", "presenter": False, "no_instrument": False}


def _command_name(name: str) -> str:
    return f"devicewatch.commands.{MODULES.get(name, name)}"


def _command(name: str) -> ModuleType:
    """A command's module, imported when it runs: ``report`` needs neither the recorder's
    options nor the workload registry."""
    return importlib.import_module(_command_name(name))


def _command_parser(name: str) -> CommandParser:
    module = _command(name)
    parser = CommandParser(prog=f"devicewatch {name}", description=module.HELP)
    module.add_arguments(parser)
    return parser


def top_parser(width: int | None = None) -> CommandParser:
    """The global options; their help WIDTH columns wide (default: the terminal's)."""
    parser = CommandParser(prog="devicewatch", add_help=False, usage=argparse.SUPPRESS,
                           formatter_class=functools.partial(HelpFormatter, width=width))
    options = parser.add_argument_group("options (before the workload or command)")
    options.add_argument("--record", metavar="FILE",
                         help="headless: record to FILE without the dashboard, print a summary. " + PATTERN_HELP)
    add_sampling_options(options)
    add_instrument_option(options)
    add_dashboard_options(options)
    options.add_argument("--quiet", action="store_true", help="headless: do not echo the workload's output")
    options.add_argument("--overwrite", action="store_true",
                         help="headless: replace FILE if it already holds a recording (refused otherwise)")
    options.add_argument("--control", action="store_true",
                         help="headless: read the dashboard's commands, one JSON line each, on stdin "
                              '({"kind": "marker", "label": "..."}, {"kind": "stop"}, {"kind": "detach"}); the end of stdin '
                              "without a detach stops the run (its dashboard has gone)")
    options.add_argument("--version", action="store_true", help="print the version and exit")
    options.add_argument("-h", "--help", action="store_true",
                         help="this help; `devicewatch COMMAND --help` for one command's options")
    # Left out of --help on purpose (docs/reliability.md): the dashboard and tests use them.
    options.add_argument("--watcher-pid", type=int, help=argparse.SUPPRESS)
    options.add_argument("--grace", type=_grace, default=None, help=argparse.SUPPRESS)
    options.add_argument("--terminal", type=_terminal, help=argparse.SUPPRESS)   # COLSxROWS: the dashboard's panel
    parser.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)  # the command and its own
    parser.set_defaults(**{k: None for k in DEFAULTS})
    return parser


def _terminal(value: str) -> tuple[int, int]:
    from .recorder.pseudo_terminal import parse_size

    size = parse_size(value)
    if size is None:
        raise UsageError(f"--terminal needs COLUMNSxROWS (120x40), not {value!r}")
    return size


def _grace(value: str) -> float:
    try:
        grace = float(value)
    except ValueError:
        raise UsageError(f"--grace needs a number of seconds, not {value!r}") from None
    if not 0 <= grace <= 60:
        raise UsageError(f"--grace must be between 0 and 60 seconds, not {value}")
    return grace


def usage_lines(width: int | None = None) -> list[str]:
    """The command table of ``--help`` (and, unlimited, of the README): each way to start
    devicewatch and what it does, side by side where WIDTH allows; else the synopsis on its
    line(s) and what it does indented under it."""
    rows = [("devicewatch", "dashboard; pick a workload and run it")]
    for name in SUBCOMMANDS:
        rows.append((synopsis(_command_parser(name)), _command(name).HELP))
    rows.insert(2, (f"devicewatch --record FILE {_command('run').TARGET}", "headless: no UI, writes FILE, prints a summary"))
    left = max(len(synopsis_) for synopsis_, _ in rows)
    if width is None or left + 2 + max(len(text) for _, text in rows) <= width:
        return [f"{synopsis_:<{left}}  {text}" for synopsis_, text in rows]
    return [line for synopsis_, text in rows
            for line in wrap(synopsis_, width, hanging="    ") + wrap(text, width, indent="      ")]


def help_width() -> int:
    """The width argparse gives its help: the terminal's (``$COLUMNS`` first) less a margin of 2."""
    return shutil.get_terminal_size().columns - 2


def help_text(width: int | None = None) -> str:
    """``devicewatch --help`` WIDTH columns wide; left out, unwrapped (the README quotes it)."""
    table_width = None if width is None else width - 2  # each line indented 2
    parser = top_parser(width=10**6 if width is None else width)
    parser.epilog = ("A run file is JSON Lines (docs/run-format.md). The exit status of --record is "
                     "the workload's.\n`devicewatch workloads` lists the workloads and their options.")
    table = "usage:\n" + "\n".join("  " + line for line in usage_lines(table_width))
    return table + "\n\n" + parser.format_help()


def parse(argv: list[str]) -> tuple[ModuleType, argparse.Namespace]:
    """Which command runs, and its arguments with the global options merged in."""
    args = top_parser().parse_args(argv)
    if args.help:
        print(help_text(help_width()), end="")
        raise SystemExit(0)
    if args.version:
        print(f"devicewatch {__version__}")
        raise SystemExit(0)
    words = args.words
    if args.record is not None:
        args.target = words
        module: ModuleType = _command("record")
    elif not words:
        module, args.target = _command("run"), None
    elif words[0] in SUBCOMMANDS:
        module = _command(words[0])
        vars(args).update(vars(_command_parser(words[0]).parse_args(words[1:])))
    elif words[0] == "--":
        raise UsageError("to watch a command, use `devicewatch run -- COMMAND` or `devicewatch --record FILE -- COMMAND`")
    elif words[0].startswith("-"):
        raise UsageError(f"unknown option {words[0]} (see devicewatch --help)")
    else:
        raise UsageError(f"unknown command {words[0]!r} (see devicewatch --help)")
    for key, value in DEFAULTS.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return module, args


def main(argv: list[str] | None = None) -> int:
    try:
        module, args = parse(sys.argv[1:] if argv is None else argv)
        if module.__name__ == _command_name("run") and args.target is None:
            return module.home(args)
        return module.run(args)
    except DevicewatchError as exc:  # names in it may come from the user or a file: one inert line
        print(f"devicewatch: error: {inert(str(exc))}", file=sys.stderr)
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
