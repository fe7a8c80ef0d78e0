"""``devicewatch workloads [NAME]``: what each workload demonstrates, and its options."""

from __future__ import annotations

import argparse

from .. import registry

NAME = "workloads"
HELP = "the workloads, what each shows, their options"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "List the workloads, what each demonstrates, and their options."
    parser.add_argument("name", nargs="?", metavar="NAME", help="show only this workload")


def run(args: argparse.Namespace) -> int:
    for name in [args.name] if args.name else registry.available():
        info = registry.get(name)
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
