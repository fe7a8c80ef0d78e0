"""``devicewatch try -- COMMAND``: the fix the verdict names, tried on the unchanged script.

The script as written runs first, for a trial; then each variant (``--vary``, or what the first
trial's advice names), each predicted from the first trial's figures and then measured. The
variants side by side, the winner in one line; ``--json`` for one object. On a terminal the
trials view then opens on the set (``--no-view`` not to).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import UsageError

NAME = "try"
FAILED = 1   # the exit status of a set in which the script failed (its own status is in trials.json)
HELP = "try the fix the verdict names on the unchanged script, variants side by side"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run COMMAND (a training script, unchanged) for a short trial as written, then once per variant: "
        "a DataLoader's num_workers, pin_memory, persistent_workers or prefetch_factor, or the operator "
        "threads, set from outside by the zero-code instrumentation (nothing that changes the model's "
        "arithmetic), or the num_parallel_calls of tf.data maps a script left sequential (map_parallel). "
        "Each trial is a warm-up of optimizer steps, then --steps steps or --seconds seconds "
        "measured, then the process is ended on purpose. Without --vary, the variants are what the advice "
        "of the first trial names (devicewatch report shows the same advice), and where none of them makes "
        "1.05x the steps/s, the further candidates its figures point to, up to 3 variants. Each variant's "
        "steps/s is predicted from the first trial's figures before it runs, and measured beside it after.")
    parser.add_argument("--vary", action="append", default=[], metavar="KNOB=V1,V2",
                        help="a variant per value (repeatable); knobs: num_workers, pin_memory, "
                             "persistent_workers, prefetch_factor, threads, map_parallel (tf.data)")
    window = parser.add_mutually_exclusive_group()
    window.add_argument("--steps", type=int, metavar="N", help="measure N optimizer steps per trial")
    window.add_argument("--seconds", type=float, metavar="S", help="measure S seconds per trial (default 15)")
    parser.add_argument("--warmup", type=int, default=10, metavar="N",
                        help="optimizer steps before the measured window (default 10)")
    parser.add_argument("--out", metavar="DIR", help="a new folder for the recordings (default runs/try-DATE-TIME)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--echo", action="store_true", help="show the script's output during the trials")
    parser.add_argument("--no-view", action="store_true",
                        help="do not open the trials view at the end (it opens when stdout is a terminal)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="the command to try, after --")


def run(args: argparse.Namespace) -> int:
    from .. import trials
    from ..analysis import advice

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("try needs a command after --, e.g. devicewatch try -- python train.py")
    budget = trials.budget_of(args.steps, args.seconds, args.warmup)
    variants = [trials.Variant()] + trials.parse_vary(args.vary)
    folder = trials.new_folder(args.out)
    say = sys.stderr if args.json else sys.stdout
    print(trials.plan_text(command, variants, budget, folder, more_from_advice=len(variants) == 1), file=say, flush=True)
    interval = getattr(args, "interval", None) or 0.1
    gpu = getattr(args, "gpu", None)

    def runner(command: list[str], variant: trials.Variant, budget: dict, path: str):
        return trials.run_trial(command, variant, budget, path, interval=interval,
                                gpu=True if gpu is None else gpu, echo=args.echo)

    def on_trial(index: int, of: int, variant: trials.Variant, predicted: float | None, path: str) -> None:
        ahead = f" (predicted {predicted:.1f} steps/s)" if predicted else ""
        print(f"trial {index + 1}/{of}: {variant.label}{ahead} …", file=say, flush=True)

    def on_result(index: int, result: trials.TrialResult, run: object, so_far: trials.TrialSet) -> None:
        if result.steps_per_s:
            measured = f"{result.steps_per_s:.1f} steps/s"
        else:
            measured = "not measured" + ("" if result.failed else f": {result.note}")
        wait = f", data wait {result.data_wait_share:.0%}" if result.data_wait_share is not None else ""
        print(f"  {measured}{wait}; {result.verdict}", file=say, flush=True)
        window = result.window_text(budget)
        if window:
            print(f"  {window}", file=say, flush=True)
        if result.failed:   # its last lines on stderr come with the table
            print(f"  the script {result.failure_text()}", file=say, flush=True)
        if index == 0 and len(variants) == 1 and not result.failed:
            print("advice: " + "; ".join(advice.text(a) for a in so_far.advice), file=say, flush=True)
            if so_far.held:
                held = ", ".join(f"{a.label}" + (f" (predicted {'at most ' * (a.predicted_gain is None)}"
                                                 f"{a.best_gain:.2f}×)" if a.best_gain else "") for a in so_far.held)
                print(f"held back, measured where no variant advised helps: {held}", file=say, flush=True)

    trial_set = trials.run_set(command, variants, budget, folder, runner, on_trial=on_trial, on_result=on_result)
    # A script that failed in any trial is a failure of the set, whatever else was measured.
    code = FAILED if trials.failed(trial_set.results) else 0
    if args.json:
        print(json.dumps(trial_set.to_json(), indent=2, default=str))
        return code
    print()
    print(trials.table_text(trial_set.results, trial_set.budget))
    if trial_set.stopped:
        print(trial_set.stopped)
    print(trial_set.headline())
    print(f"recordings and trials.json in {folder}/", flush=True)
    if args.no_view or not sys.stdout.isatty():
        return code
    try:
        from ..tui.app import launch_trials
    except ImportError:  # the dashboard's extra is not installed: the table above is the result
        return code
    launch_trials(trial_set, folder, presenter=bool(getattr(args, "presenter", False)))
    return code
