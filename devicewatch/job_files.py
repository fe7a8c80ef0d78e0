"""A run file, or a job's folder of its nodes' run files: the one loader every view reads through.

A job run with ``--record runs/%j/%h.jsonl`` leaves one file per node in one folder. ``report``,
``compare`` and ``export`` take that folder as they take the merged file (the nodes merged on
one time axis by ``merge``, in a temporary file of this process), and ``replay`` follows it
live. A folder holding files of several jobs is read as its newest job only: each node's
header names its job (``JobId``), so another job's file is never mixed in.
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import RunFileError
from .runformat.header import Header
from .runformat.runfile import Run, load, read_header


@dataclass(frozen=True)
class NodeFile:
    path: Path
    header: Header

    @property
    def job(self) -> str | None:
        return self.header.job.id if self.header.job else None


@dataclass(frozen=True)
class JobFolder:
    """The node files of one job in a folder, and what was left out and why."""

    folder: Path
    job: str | None                  # the job's id from the headers; None where they name none
    files: tuple[NodeFile, ...]
    left_out: tuple[str, ...] = field(default=())   # "name: why", one per file not read

    @property
    def paths(self) -> list[str]:
        return [str(f.path) for f in self.files]


def node_files(folder: str | os.PathLike[str], known: dict[Path, Header] | None = None) -> list[NodeFile | str]:
    """Every ``*.jsonl`` of FOLDER: a node's run file with its header, or "name: why not".
    KNOWN keeps the headers read, for a caller that asks again and again (a live view)."""
    found: list[NodeFile | str] = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        header = known.get(path) if known is not None else None
        if header is None:
            if not path.is_file():
                continue
            header = read_header(path)
            if header is not None and known is not None:
                known[path] = header
        if header is None:
            if path.stat().st_size > 0:   # an empty file: a recorder that has not yet begun
                found.append(f"{path.name}: not a devicewatch run file")
        elif header.nodes:
            found.append(f"{path.name}: already a merged run")
        else:
            found.append(NodeFile(path, header))
    return found


def job_folder(folder: str | os.PathLike[str], job: str | None = None,
               known: dict[Path, Header] | None = None) -> JobFolder:
    """The newest job's node files in FOLDER (or job JOB's): the job whose latest node started
    last. Files of other jobs and files that are no node's run are left out, each saying why."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RunFileError(f"no such folder: {folder}")
    found = node_files(folder, known)
    nodes = [f for f in found if isinstance(f, NodeFile)]
    left = [f for f in found if isinstance(f, str)]
    jobs: dict[str | None, list[NodeFile]] = {}
    for node in nodes:
        jobs.setdefault(node.job, []).append(node)
    if job is None and jobs:
        job = max(jobs, key=lambda j: max(n.header.started_unix or 0.0 for n in jobs[j]))
    chosen = jobs.get(job, [])
    for other, members in jobs.items():
        if other != job:
            left += [f"{n.path.name}: of job {other or '(none named)'}" for n in members]
    return JobFolder(folder, job, tuple(chosen), tuple(sorted(left)))


def job_paths(folder: str | os.PathLike[str]) -> JobFolder:
    """``job_folder``, refusing a folder with no node's run file in one line."""
    found = job_folder(folder)
    if not found.files:
        why = f" ({'; '.join(found.left_out)})" if found.left_out else ""
        raise RunFileError(f"{folder} holds no node's run file{why}")
    return found


_merged_dir: str | None = None


def _scratch() -> str:
    """A folder of this process for merged runs, gone when it exits."""
    global _merged_dir
    if _merged_dir is None:
        import tempfile  # only a job folder needs it: a report of one file starts without it

        _merged_dir = tempfile.mkdtemp(prefix="devicewatch-job-")
        atexit.register(shutil.rmtree, _merged_dir, True)
    return _merged_dir


def load_run(path: str | os.PathLike[str], say: Callable[[str], None] | None = None) -> Run:
    """A run file as ``runfile.load`` reads it; a job's folder as one run, its nodes merged
    (SAY is told of each file of the folder left out, and why). A merged folder's run names the
    folder as its path: the merged file is this process's scratch, gone when it exits, and
    every view that names the run (report's header, compare, export) names what the user gave."""
    if not os.path.isdir(path):
        return load(path)
    found = job_paths(path)
    for line in found.left_out:
        if say is not None:
            say(f"{path}: left out {line}")
    if len(found.files) == 1:
        return load(found.files[0].path)
    from . import merge  # the writer and re-encoder: only a folder of nodes is merged

    merged = merge.merge(found.paths)
    out = os.path.join(_scratch(), f"{abs(hash(os.path.realpath(path)))}-{len(os.listdir(_scratch()))}.jsonl")
    merge.write(merged, out)
    run = load(out)
    run.path = os.fspath(path)
    return run
