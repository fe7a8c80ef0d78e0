"""What a recording is asked to do, and the one builder of a ``--record`` command line."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from ..errors import UsageError
from ..job import JobId
from ..registry import Target

INTERVAL_RANGE = (0.01, 60.0)    # seconds: the sampling periods --interval accepts


@dataclass
class RecordOptions:
    output: str
    command: list[str]
    workload: str | None = None
    workload_args: list[str] = field(default_factory=list)
    interval: float = 0.1
    gpu: bool = True
    echo: bool = True
    status_line: bool | None = None   # None: only when stderr is a terminal
    watcher_pid: int | None = None    # a dashboard following this run: its CPU is sampled too
    grace: float = 3.0                # seconds between SIGINT, SIGTERM and SIGKILL on cancel
    # The workload's own grace after SIGTERM, SIGHUP or SIGQUIT from outside: the time Kubernetes
    # (terminationGracePeriodSeconds) and Slurm (KillWait) give by default, so that devicewatch
    # never kills a workload saving its checkpoint sooner than they would.
    outside_grace: float = 30.0
    control: bool = False             # read commands on stdin (devicewatch.control)
    instrument: bool = True           # offer the zero-code instrumentation to a Python workload
    overwrite: bool = False           # replace an existing recording at ``output``
    environment: dict[str, str] = field(default_factory=dict)  # added to the workload's (a trial's variant)
    trial: bool = False               # a trial of ``devicewatch try``: ended once its window is measured
    terminal: tuple[int, int] | None = None  # (rows, columns): a pseudo-terminal for a dashboard's panel
    job: JobId | None = None          # the job this node's run belongs to (its launcher's variables)


def check_interval(value: str | float) -> float:
    """``--interval`` as seconds, or a UsageError saying what is accepted."""
    try:
        interval = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"--interval needs a number of seconds, not {value!r}") from None
    low, high = INTERVAL_RANGE
    if not math.isfinite(interval) or not low <= interval <= high:
        raise UsageError(f"--interval must be between {low:g} and {high:g} seconds, not {value}")
    return interval


def record_argv(output: str, target: Target, interval: float | None = None, gpu: bool | None = None,
                quiet: bool = False, control: bool = False, watcher_pid: int | None = None,
                instrument: bool = True, overwrite: bool = False,
                terminal: tuple[int, int] | None = None) -> list[str]:
    """The command line of a headless recorder: the one way devicewatch starts another recorder
    (the dashboard's live runs, ``compare --pair``)."""
    argv = [sys.executable, "-m", "devicewatch", "--record", str(output)]
    if interval is not None:
        argv += ["--interval", f"{interval:g}"]
    if gpu is not None:
        argv += ["--gpu", "on" if gpu else "off"]
    argv += ["--quiet"] * quiet + ["--control"] * control + ["--no-instrument"] * (not instrument) \
        + ["--overwrite"] * overwrite
    if watcher_pid is not None:
        argv += ["--watcher-pid", str(watcher_pid)]
    if terminal is not None:
        argv += ["--terminal", f"{terminal[1]}x{terminal[0]}"]
    if target.workload:
        return argv + [target.workload, *target.args]
    return argv + ["--", *target.command]
