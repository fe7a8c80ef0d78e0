"""``devicewatch attach [PID]``: the dashboard (or, with ``--record``, a headless recording) on a
training job devicewatch did not start; without a PID, a pick-list of Python processes."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..safe_text import inert
from . import add_dashboard_options, add_sampling_options, wrap

if TYPE_CHECKING:
    from ..attach.target import AttachTarget
    from ..runformat.runfile import Run

NAME = "attach"
HELP = "dashboard on a job already running (PID), with its phases: hooked on Python 3.14+, else sampled"
REFUSED = 2   # the exit status when the stacks could not be read (the run holds what /proc allows)
RATE_RANGE = (1, 200)


def _rate(value: str) -> int:
    try:
        rate = int(value)
    except ValueError:
        raise UsageError(f"--rate needs a whole number of samples a second, not {value!r}") from None
    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise UsageError(f"--rate must be between {RATE_RANGE[0]} and {RATE_RANGE[1]}, not {value}")
    return rate


def _pid(value: str) -> int:
    try:
        pid = int(value)
    except ValueError:
        raise UsageError(f"attach needs a process id (a number), not {value!r}") from None
    if pid <= 0:
        raise UsageError(f"attach needs a process id above 0, not {value}")
    return pid


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..attach.sampler import RATE

    parser.description = (
        "Watch a job that is already running: its cores, threads and GPUs from /proc and NVML, and "
        "its train, validate and data-wait phases. On Python 3.14 or newer the phases come from "
        "devicewatch's own hooks, put into the job by sys.remote_exec and taken out again at the "
        "detach, exact as in a launched run. On an older Python (or with --sample) they are sampled "
        "from outside by austin (non-blocking: the job is never stopped): shares within a few points "
        f"of the job's own timing (default {RATE} samples a second), steps those seen, a lower bound. "
        "s, q or Ctrl-C detaches; the job runs on, its output not captured. Either way needs the right "
        "to trace the job: the same user with kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE "
        "(docs/attach.md). Epochs are numbered by the script's loop variable where it can be read, "
        "else from the attach. Advice is for the next start.")
    parser.add_argument("pid", nargs="?", type=_pid, metavar="PID",
                        help="the process to watch (none: pick from the busiest Python processes)")
    parser.add_argument("--record", metavar="FILE", default=argparse.SUPPRESS,
                        help="headless: record to FILE without the dashboard, print a summary")
    parser.add_argument("--rate", type=_rate, metavar="HZ", default=RATE,
                        help=f"stack samples a second (default {RATE})")
    parser.add_argument("--sample", action="store_true", default=argparse.SUPPRESS,
                        help="sample the phases from outside even where the hooks could go in")
    add_sampling_options(parser, default=argparse.SUPPRESS)
    parser.add_argument("--overwrite", action="store_true", default=argparse.SUPPRESS,
                        help="headless: replace FILE if it already holds a recording")
    add_dashboard_options(parser, default=argparse.SUPPRESS)


def pick(listed: list[tuple[AttachTarget, float]]) -> int:
    """The PID chosen from LISTED on a terminal: a numbered list, read by number."""
    if not listed:
        raise UsageError("no Python process is running that devicewatch may attach to; give a PID")
    lines = [f"{n:>2}. {target.pid:>7}  {share:5.0f}%  {inert(' '.join(target.command) or target.name)[:60]}"
             for n, (target, share) in enumerate(listed, 1)]
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("attach needs a PID here (no terminal to pick on); Python processes by CPU share: "
                         + "; ".join(f"{t.pid} ({share:.0f}%)" for t, share in listed[:5]))
    print("Python processes, busiest first (CPU in % of one core):")
    print("\n".join(lines))
    answer = input(f"attach to which (1-{len(listed)}, Enter: none)? ").strip()
    if not answer:
        raise SystemExit(0)
    if not answer.isdigit() or not 1 <= int(answer) <= len(listed):
        raise UsageError(f"{answer!r} is not one of 1-{len(listed)}")
    return listed[int(answer) - 1][0].pid


def record_path(args: argparse.Namespace, pid: int) -> str:
    if getattr(args, "record", None):
        if os.path.isdir(args.record):
            raise UsageError(f"--record needs a file, and {args.record} is a directory")
        return str(args.record)
    from datetime import datetime

    os.makedirs(args.runs_dir, exist_ok=True)
    return os.path.join(args.runs_dir, f"attach-{pid}-{datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")


def run(args: argparse.Namespace) -> int:
    from ..attach.target import of_pid, python_processes

    pid = args.pid if args.pid is not None else pick(python_processes())
    target = of_pid(pid)
    if not getattr(args, "record", None):
        return dashboard(args, target)
    return headless(args, target, str(args.record))


def headless(args: argparse.Namespace, target: AttachTarget, output: str) -> int:
    from ..attach.recorder import attach
    from ..recorder import RecordOptions
    from ..runformat.runfile import load

    options = RecordOptions(output=output, command=target.command, interval=args.interval, gpu=args.gpu,
                            echo=False, watcher_pid=args.watcher_pid, control=args.control,
                            overwrite=bool(getattr(args, "overwrite", False)), instrument=False)
    recorder = attach(options, target, args.rate, hooks=not getattr(args, "sample", False))
    try:
        print(closing_text(load(output)), end="", flush=True)
    except OSError:
        pass
    return REFUSED if recorder.refusal else 0


def closing_text(run: Run) -> str:
    """The report as for any run, its advice for a job that cannot be restarted now, and a line
    saying its phases were sampled and within how many points."""
    from ..analysis import run_figures
    from ..analysis.advice import NEXT_START
    from ..render.fit import output_width
    from ..render.report import report_text

    lines = report_text(run_figures(run)).splitlines()
    # The advice comes last, each wrapped from its "advice: " line on: wrapped again with the prefix.
    first = next((n for n, line in enumerate(lines) if line.startswith("advice: ")), len(lines))
    advice: list[str] = []
    for line in lines[first:]:
        if line.startswith("advice: "):
            advice.append("advice: " + NEXT_START + line.removeprefix("advice: "))
        elif advice:
            advice[-1] += " " + line.strip()
    lines = lines[:first] + [part for text in advice for part in wrap(text, output_width())]
    said = phases_lines(run)
    return "\n".join([*lines, *(part for text in said for part in wrap(text, output_width()))]) + "\n"


def phases_lines(run: Run) -> list[str]:
    """Where the attached run's phases came from: the hooks, or the sampler and how closely."""
    instrument = (run.end.instrument or {}) if run.end else {}
    hooked = instrument.get("hooked")
    if isinstance(hooked, dict):
        out = " and taken out at the detach" if hooked.get("taken_out") else " until the process ended"
        return [f"phases: from devicewatch's hooks, put into the process by sys.remote_exec (Python "
                f"{hooked.get('python')}){out}; measured as in a launched run, not sampled",
                f"epochs: {hooked.get('epochs_from')}; a pass under way at the join is partial and has no epoch"]
    sampled = instrument.get("sampled") or {}
    read = sampled.get("samples", sampled.get("windows"))   # recordings before austin counted py-spy's windows
    said = [sampled_line(run.header.raw.get("attached"), read)]
    if read and isinstance(sampled.get("epochs_from"), str):
        said.append(f"epochs: {sampled['epochs_from']}")
    return said


def sampled_line(attached: Any, samples: Any) -> str:
    sampler = attached.get("sampler") if isinstance(attached, dict) else None
    if not isinstance(sampler, dict) or not samples:
        return "phases: none sampled (the notices say why)"
    return (f"phases: sampled from outside by {sampler.get('tool')} at {sampler.get('rate')} a second, "
            f"±{sampler.get('error_points')} points; steps: those seen, at least (a step shorter than "
            "the time between two samples goes unseen)")


def dashboard(args: argparse.Namespace, target: AttachTarget) -> int:
    """The dashboard on TARGET, as ``run`` opens it on a launched run, recording into the runs
    folder; on closing, where the recording is and its verdict, and the refusal if there was one."""
    from ..live.source import AttachSource
    from ..tui.app import launch_run
    from .run import ENDING_WAIT, ending, settings

    try:
        os.makedirs(args.runs_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the runs folder {args.runs_dir}: {exc.strerror}") from None
    source = AttachSource(args.runs_dir, target.pid, target.command, args.interval, args.gpu, args.rate,
                          sample=bool(getattr(args, "sample", False)))
    closed = launch_run(settings(args), source)
    from ..analysis.advice import NEXT_START

    for line in ending(source, closed.left_recording, wait=ENDING_WAIT):
        print(line.replace("advice: ", "advice: " + NEXT_START, 1))
    said = source.stderr_tail()
    if said:
        print(said, file=sys.stderr)
    return REFUSED if "permission denied" in said else closed.code
