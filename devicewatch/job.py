"""A job's name for its nodes' run files: ``--record runs/%j/%h.jsonl`` on every node.

A cluster's launcher (``srun``, a Kubernetes training job, ``torchrun`` by hand) starts one
recorder per node with one command line; each recorder fills in the pattern from its own
environment and writes the job's id into its header, so that a folder shared by several jobs
never mixes one job's nodes into another's.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping

from .errors import UsageError
from .runformat.header import JobId

# Where a launcher says which job this is, first found wins: ours (set it where the launcher
# has no variable of its own, e.g. from a Kubernetes label), then the batch systems', then
# torchrun's rendezvous id where the user exported it.
JOB_VARIABLES = ("DEVICEWATCH_JOB", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID",
                 "AWS_BATCH_JOB_ID", "TORCHELASTIC_RUN_ID")
# Which node of the job this is: ours, Slurm's, a Kubeflow PyTorchJob's (torchrun's --node-rank
# as PET_NODE_RANK), an Indexed Job's or JobSet's pod index, AWS Batch's.
NODE_VARIABLES = ("DEVICEWATCH_NODE", "SLURM_NODEID", "PET_NODE_RANK", "JOB_COMPLETION_INDEX",
                  "AWS_BATCH_JOB_NODE_INDEX")

# argparse formats help with %, so each % of the text is written %% here.
PATTERN_HELP = ("FILE may name a job's files: %%h the host, %%j the job's id (from $"
                + ", $".join(JOB_VARIABLES) + "), %%n the node's index (from $" + ", $".join(NODE_VARIABLES)
                + "), %%p the recorder's process id, %%%% a %%; e.g. --record runs/%%j/%%h.jsonl on every "
                "node. A name another recorder of the job took (two nodes on one host) gets -2, -3, … "
                "before .jsonl")

_FIELD = re.compile(r"%(.)")


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str] | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value, name
    return None


def job_of(environ: Mapping[str, str] | None = None) -> JobId | None:
    """The job this process runs in, from its launcher's variables; None outside a job."""
    environ = os.environ if environ is None else environ
    job = _first(environ, JOB_VARIABLES)
    if job is None:
        return None
    node = _first(environ, NODE_VARIABLES)
    return JobId(job[0], job[1], *(node if node else (None, None)))


def host_name() -> str:
    """The short host name (``gpu017`` of ``gpu017.cluster.example``)."""
    return socket.gethostname().split(".")[0] or "host"


def _safe(value: str) -> str:
    """A value fit for one path component: no separator, nothing a shell would trip on."""
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", value).strip("-") or "_"


def expand(pattern: str, environ: Mapping[str, str] | None = None, host: str | None = None,
           pid: int | None = None) -> str:
    """PATTERN with its %-fields filled in; a pattern without one comes back as it is.
    A field the environment cannot fill is a UsageError that names the variables looked at."""
    if "%" not in pattern:
        return pattern
    environ = os.environ if environ is None else environ

    def field(match: re.Match[str]) -> str:
        letter = match.group(1)
        if letter == "%":
            return "%"
        if letter == "h":
            return _safe(host or host_name())
        if letter == "p":
            return str(os.getpid() if pid is None else pid)
        if letter in "jn":
            names = JOB_VARIABLES if letter == "j" else NODE_VARIABLES
            found = _first(environ, names)
            if found is None:
                what = "job's id" if letter == "j" else "node's index"
                raise UsageError(f"--record {pattern}: %{letter} needs the {what}, and none of "
                                 f"${', $'.join(names)} is set")
            return _safe(found[0])
        raise UsageError(f"--record {pattern}: unknown field %{letter} (%h host, %j job, %n node, %p process, %% a %)")

    return _FIELD.sub(field, pattern)


def reserve(path: str) -> str:
    """PATH, or the first of PATH-2.jsonl, PATH-3.jsonl, … that no one holds, created empty and
    exclusively (a recorder takes an empty file as it is): two recorders of one job on one host
    given the same name never write into one file. The folders are made as needed."""
    folder = os.path.dirname(path)
    if folder:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {folder}: {exc.strerror}") from None
    stem, suffix = (path[:-6], ".jsonl") if path.endswith(".jsonl") else (path, "")
    n = 1
    while True:
        candidate = path if n == 1 else f"{stem}-{n}{suffix}"
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o664))
            return candidate
        except FileExistsError:
            n += 1
        except OSError as exc:
            raise UsageError(f"cannot create {candidate}: {exc.strerror}") from None


def record_path(pattern: str, environ: Mapping[str, str] | None = None) -> str:
    """Where a recorder given ``--record PATTERN`` writes: a plain file name as given (an
    existing recording there is refused by the recorder, as ever); a pattern filled in and
    its name reserved."""
    if "%" not in pattern:
        return pattern
    return reserve(expand(pattern, environ))
