"""The workloads devicewatch knows by name, each resolving to ``python -m workloads.NAME``.

A workload module describes itself (``TITLE``, ``SOURCE``, ``build_parser()``); this module only
lists the names and reads those attributes, importing no framework.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import NoReturn

from .errors import UnknownWorkload, UsageError

NAMES = ("demo", "training", "pipeline", "conv")

@dataclass
class WorkloadInfo:
    name: str
    title: str
    source: str
    parser: argparse.ArgumentParser

    def command(self, args: list[str]) -> list[str]:
        return [sys.executable, "-m", f"workloads.{self.name}", *args]

    def options_help(self) -> str:
        return self.parser.format_help()


def available() -> list[str]:
    """The registered names whose module is present in this installation."""
    found = []
    for name in NAMES:
        try:
            importlib.util.find_spec(f"workloads.{name}")
        except ImportError:
            continue
        if importlib.util.find_spec(f"workloads.{name}") is not None:
            found.append(name)
    return found


def get(name: str) -> WorkloadInfo:
    if name not in available():
        known = ", ".join(available()) or "none"
        raise UnknownWorkload(f"unknown workload {name!r} (known: {known}; or use -- COMMAND to watch any program)")
    module = importlib.import_module(f"workloads.{name}")
    return WorkloadInfo(name, module.TITLE, getattr(module, "SOURCE", ""), module.build_parser())


@dataclass
class Target:
    """What a run launches: a registered workload with its options, or any command."""

    workload: str | None
    args: list[str]          # the workload's options; empty for a raw command
    command: list[str]       # the argv that is launched

    @property
    def label(self) -> str:
        return self.workload or (self.command[0].rsplit("/", 1)[-1] if self.command else "command")


def resolve(argv: list[str]) -> Target:
    """``WORKLOAD [OPTIONS…]`` or ``-- COMMAND [ARGS…]`` as a Target, the options checked here,
    before anything is launched."""
    if not argv:
        raise UsageError("name a workload (see devicewatch workloads) or give -- COMMAND")
    if argv[0] == "--":
        if len(argv) < 2:
            raise UsageError("nothing to run after --")
        return Target(None, [], list(argv[1:]))
    name, args = argv[0], list(argv[1:])
    if name.startswith("-"):
        raise UsageError(f"unknown option {name} (devicewatch options go before the workload)")
    info = get(name)

    def refuse(message: str) -> NoReturn:
        raise UsageError(f"{name}: {message} (see devicewatch workloads)")

    info.parser.error = refuse  # type: ignore[method-assign]  # argparse's own way to fail is replaced, not extended
    info.parser.parse_args(args)  # --help of the workload prints and exits here
    return Target(name, args, info.command(args))
