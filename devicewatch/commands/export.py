"""``devicewatch export FILE --format F -o OUT``: a run as a Perfetto trace, CSV tables or an SVG."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..analysis import run_figures
from ..errors import UsageError
from ..render import export
from ..job_files import load_run

NAME = "export"
HELP = "a run as a Perfetto trace, CSV or Parquet tables, or an SVG chart"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Export a recorded run: a Perfetto/Chrome trace, CSV or Parquet tables for "
                          "pandas, polars and DuckDB, or an SVG chart for slides.")
    parser.add_argument("file", help="the run file, or a job's folder of its nodes' run files")
    parser.add_argument("--format", required=True, choices=export.FORMATS)
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="perfetto: OUT.json; svg: OUT.svg (the suffix added where OUT lacks it); "
                             "csv: OUT_samples.csv, OUT_epochs.csv and OUT_phases.csv (a .csv suffix on "
                             "OUT is dropped); parquet: the same three tables as OUT_*.parquet; an "
                             "existing directory: the files go inside it, named after the run file")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace files that already exist (refused otherwise, and nothing is written)")


def inside_directory(output: str, run_file: str) -> str:
    """``-o DIR`` for an existing directory: the files go inside it, named after the run file
    (the format's suffix added as to any OUT)."""
    if not os.path.isdir(output):
        return output
    stem = Path(run_file).name.removesuffix(".jsonl") or "run"
    return os.path.join(output, stem)


def claimed(paths: tuple[str, ...], overwrite: bool) -> None:
    """Refuse, before writing any of PATHS, where one already exists and the user did not say
    ``--overwrite``: an export never replaces a file silently (an SVG, then a trace to the same
    ``-o``, keeps the SVG)."""
    existing = [p for p in paths if os.path.lexists(p)]
    if existing and not overwrite:
        others = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise UsageError(f"export: {existing[0]}{others} already exists; nothing was written "
                         "(choose another name, or pass --overwrite to replace it)")


def run(args: argparse.Namespace) -> int:
    output = inside_directory(args.output, args.file)
    paths = export.output_paths(args.format, output)
    claimed(paths, args.overwrite)
    recording = load_run(args.file, say=lambda line: print(f"devicewatch: {line}", file=sys.stderr))
    figures = run_figures(recording)
    try:
        if args.format == "perfetto":
            written = [paths[0]]
            with open(paths[0], "w", encoding="utf-8") as handle:
                json.dump(export.perfetto(figures), handle, separators=(",", ":"), allow_nan=False, default=str)
        elif args.format == "csv":
            written = export.write_csv(figures, output)
        elif args.format == "parquet":
            written = export.write_parquet(figures, output)
        else:
            written = [paths[0]]
            with open(paths[0], "w", encoding="utf-8") as handle:
                handle.write(export.svg(figures))
    except IsADirectoryError as exc:
        raise UsageError(f"export: {exc.filename or paths[0]} is a directory; give a file name") from None
    except OSError as exc:
        raise UsageError(f"export: cannot write {exc.filename or paths[0]}: {exc.strerror}") from None
    for path in written:
        print(path)
    return 0
