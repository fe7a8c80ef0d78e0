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
from .errors import UnknownWorkload

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
