"""One module per subcommand, each with the same small interface:

    NAME = "report"                          the subcommand's name
    HELP = "one line for `devicewatch --help`"
    def add_arguments(parser: CommandParser) -> None
    def run(args: argparse.Namespace) -> int

`cli.py` builds a parser per command from `SUBCOMMANDS`, so usage and `--help` come from the
parsers themselves. A command raises `devicewatch.errors.UsageError` (or another
`DevicewatchError`) for bad input; `cli.main` prints it as one line. Nothing imports `cli`.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Iterable
from typing import NoReturn

from ..errors import UsageError

# In the order `devicewatch --help` lists them.
SUBCOMMANDS = ("run", "attach", "demo", "replay", "runs", "compare", "report", "try", "merge", "export", "workloads")
# Commands whose module has another name than the command (``try`` is a Python keyword).
MODULES = {"try": "trials"}


def wrap(text: str, width: int, indent: str = "", hanging: str | None = None) -> list[str]:
    """TEXT in lines of at most WIDTH, broken at spaces only: ``zero-code``, a path like
    ``runs/try-DATE-TIME`` and ``--a="--device cpu"`` stay whole (textwrap's default breaks
    after a hyphen); a word longer than the line is left long rather than cut."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent if hanging is None else hanging,
                         break_on_hyphens=False, break_long_words=False)


USAGE_PART = r"\(.*?\)+(?=\s|$)|\[.*?\]+(?=\s|$)|\S+"  # argparse's own: an option with its argument


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help as wide as the terminal (argparse reads it, ``$COLUMNS`` first), with no
    word broken across lines; a text's own line breaks are kept."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return wrap(" ".join(text.split()), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(line for paragraph in text.splitlines()
                         for line in wrap(" ".join(paragraph.split()), width, indent))

    def _format_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                      groups: Iterable[argparse._MutuallyExclusiveGroup], prefix: str | None) -> str:
        """argparse's usage, or where its options aligned after the program's name do not fit
        (a narrow terminal), the same words wrapped under it."""
        text = super()._format_usage(usage, actions, groups, prefix)
        if all(len(line) <= self._width for line in text.splitlines()):
            return text
        lines = [""]
        for part in re.findall(USAGE_PART, " ".join(text.split())):  # "[--epochs EPOCHS]" kept whole
            if lines[-1] and len(lines[-1]) + 1 + len(part) > self._width:
                lines.append("   ")
            lines[-1] += f" {part}" if lines[-1] else part
        return "\n".join(lines) + "\n\n"


class CommandParser(argparse.ArgumentParser):
    """argparse that reports bad input as a UsageError (one line, exit 2) instead of exiting."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)  # --rec is not --record: no guessing
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # argparse's keyword arguments, passed through

    def error(self, message: str) -> NoReturn:
        if self.prog == "devicewatch":
            if message.startswith("unrecognized arguments: "):
                option = message.split(": ", 1)[1].split()[0]
                raise UsageError(f"unknown option {option} (see devicewatch --help)")
            raise UsageError(message)
        raise UsageError(f"{self.prog.removeprefix('devicewatch ')}: {message}")


def check_interval(value: str) -> float:
    """``--interval``, checked by the recorder's own rule; imported here only when given, so
    that commands which never record (``report``) do not load the recorder and psutil."""
    from ..recorder import check_interval as check

    return check(value)


def gpu_switch(value: str) -> bool:
    if value not in ("on", "off"):
        raise UsageError(f"--gpu takes on or off, not {value!r}")
    return value == "on"


def add_sampling_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: object = None) -> None:
    """--interval and --gpu: how a recorder samples (the top level and `run` both take them)."""
    parser.add_argument("--interval", type=check_interval, metavar="SECONDS", default=default,
                        help="sampling period (default 0.1)")
    parser.add_argument("--gpu", type=gpu_switch, metavar="on|off", default=default,
                        help="sample NVIDIA GPUs through NVML (default on; off on machines without)")


def add_instrument_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: object = None) -> None:
    parser.add_argument("--no-instrument", action="store_true", default=default,
                        help="run a Python workload without the zero-code instrumentation (its train/"
                             "validate phases, epochs and data wait); also DEVICEWATCH_INSTRUMENT=0")


def add_dashboard_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: object = None) -> None:
    parser.add_argument("--runs-dir", metavar="DIR", default=default,
                        help="where the dashboard records its runs (default ./runs)")
    add_presenter_option(parser, default)


def add_presenter_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: object = None) -> None:
    """--presenter, before the command or after it (``devicewatch compare A B --presenter``)."""
    parser.add_argument("--presenter", action="store_true", default=default,
                        help="dashboard: fewer, larger panels in high contrast, for a projector")


def synopsis(parser: argparse.ArgumentParser) -> str:
    """``devicewatch report FILE [OPTIONS]``: the parser's positionals, from the parser itself.

    Options go last, except before a trailing ``WORKLOAD…`` or ``-- COMMAND``, which takes
    everything after it.
    """
    positionals, remainder = [], False
    for action in parser._actions:
        if action.option_strings or action.help == argparse.SUPPRESS:
            continue
        name = str(action.metavar or action.dest.upper())
        remainder = action.nargs == argparse.REMAINDER
        positionals.append({"*": f"[{name}…]", "?": f"[{name}]", "+": f"{name} [{name}…]"}.get(str(action.nargs), name))
    required = [f"{action.option_strings[0]} " + ("|".join(action.choices) if action.choices
                                                   else str(action.metavar or action.dest.upper()))
                for action in parser._actions if action.option_strings and action.required]
    has_options = any(action.option_strings and not action.required and action.help != argparse.SUPPRESS
                      and action.dest != "help" for action in parser._actions)
    words = [parser.prog, *positionals, *required]
    if has_options:
        words.insert(len(words) - 1 if remainder else len(words), "[OPTIONS]")
    return " ".join(words)
