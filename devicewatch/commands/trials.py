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
HELP = "try the fix the verdict names on the unchanged script, variants side by side"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run COMMAND (a training script, unchanged) for a short trial as written, then once per variant: "
        "a DataLoader's num_workers, pin_memory, persistent_workers or prefetch_factor, or the operator "
        "threads, set from outside by the zero-code instrumentation (nothing that changes the model's "
        "arithmetic), or the num_parallel_calls of tf.data maps a script left sequential (map_parallel). Each trial is a warm-up of optimizer steps, then --steps steps or --seconds seconds "
        "measured, then the process is ended on purpose. Without --vary, the variants are what the advice "
        "of the first trial names (devicewatch report shows the same advice). Each variant's steps/s is "
        "predicted from the first trial's figures before it runs, and measured beside it after.")
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
    from .. import advice, trials

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
    trial_set = trials.TrialSet(command, budget)
    interval = getattr(args, "interval", None) or 0.1
    gpu = getattr(args, "gpu", None)
    base_figures = None
    index = 0
    while index < len(variants):
        variant = variants[index]
        predicted = advice.predict(base_figures, variant.knob, variant.value) if base_figures and variant.knob else None
        ahead = f" (predicted {predicted:.1f} steps/s)" if predicted else ""
        print(f"trial {index + 1}/{len(variants)}: {variant.label}{ahead} …", file=say, flush=True)
        path = trials.trial_path(folder, index + 1, variant)
        run_ = trials.run_trial(command, variant, budget, path, interval=interval,
                                gpu=True if gpu is None else gpu, echo=args.echo)
        result = trials.result_of(run_, variant, predicted)
        trial_set.results.append(result)
        measured = f"{result.steps_per_s:.1f} steps/s" if result.steps_per_s else f"not measured: {result.note}"
        wait = f", data wait {result.data_wait_share:.0%}" if result.data_wait_share is not None else ""
        print(f"  {measured}{wait}; {result.verdict}", file=say, flush=True)
        if result.status == "cancelled" and "limit" not in (run_.end or {}).get("reason", ""):
            trial_set.stopped = f"stopped after {index + 1} of {len(variants)} trials: {(run_.end or {}).get('reason')}"
            break
        if index == 0:
            base_figures = advice.baseline(run_)
            trial_set.advice = advice.advise(run_)
            if len(variants) == 1:
                variants += [trials.Variant(a.knob, a.value) for a in trial_set.advice if a.knob is not None]
                if len(variants) > 1:
                    print("advice: " + "; ".join(advice.text(a) for a in trial_set.advice if a.knob), file=say, flush=True)
            if not result.steps_per_s:
                trial_set.stopped = "the script as written was not measured, so no variant can be compared with it"
                break
        index += 1
    trials.save(trial_set, folder)
    if args.json:
        print(json.dumps(trial_set.to_json(), indent=2, default=str))
        return 0
    print()
    print(trials.table_text(trial_set.results))
    if trial_set.stopped:
        print(trial_set.stopped)
    print(trial_set.headline())
    print(f"recordings and trials.json in {folder}/", flush=True)
    if args.no_view or not sys.stdout.isatty():
        return 0
    try:
        from ..tui.app import launch_trials
    except ImportError:  # the dashboard's extra is not installed: the table above is the result
        return 0
    launch_trials(trial_set, folder, presenter=bool(getattr(args, "presenter", False)))
    return 0
