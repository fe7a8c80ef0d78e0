"""``devicewatch export FILE --format F -o OUT``: a run as a Perfetto trace, CSV tables or an SVG."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

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
                        help="perfetto: OUT.json; svg: OUT.svg; csv: OUT_samples.csv, OUT_epochs.csv "
                             "and OUT_phases.csv (a .csv suffix on OUT is dropped); parquet: the same "
                             "three tables as OUT_*.parquet; an existing directory: the files go "
                             "inside it, named after the run file")


def inside_directory(output: str, run_file: str, fmt: str) -> str:
    """``-o DIR`` for an existing directory: the files go inside it, named after the run file."""
    if not os.path.isdir(output):
        return output
    stem = Path(run_file).name.removesuffix(".jsonl") or "run"
    return os.path.join(output, stem + {"perfetto": ".json", "svg": ".svg"}.get(fmt, ""))


def run(args: argparse.Namespace) -> int:
    recording = load_run(args.file, say=lambda line: print(f"devicewatch: {line}", file=sys.stderr))
    args.output = inside_directory(args.output, args.file, args.format)
    try:
        if args.format == "perfetto":
            written = [args.output]
            with open(args.output, "w", encoding="utf-8") as handle:
                json.dump(export.perfetto(recording), handle, separators=(",", ":"), allow_nan=False, default=str)
        elif args.format == "csv":
            written = export.write_csv(recording, args.output)
        elif args.format == "parquet":
            written = export.write_parquet(recording, args.output)
        else:
            written = [args.output]
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(export.svg(recording))
    except IsADirectoryError:
        raise UsageError(f"export: {args.output} is a directory; give a file name") from None
    except OSError as exc:
        raise UsageError(f"export: cannot write {exc.filename or args.output}: {exc.strerror}") from None
    for path in written:
        print(path)
    return 0
