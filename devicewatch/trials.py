"""``devicewatch try``: the script as written and its variants, each run for a trial, side by side.

A trial is one recording of the unchanged command with a variant set from outside (the
zero-code instrumentation's knobs, ``integrations.zero_code.knobs``): a warm-up of optimizer
steps, then a window of N steps or S seconds measured by the instrumentation, then the
recorder ends the process on purpose (end status ``trial``). Before the trials each variant's
steps a second is predicted from the first trial's own figures (``advice.predict``); after,
the measured figure stands beside it. Without variants given, the first trial's advice names
them. Nothing is written but the recordings and ``trials.json`` in a folder of their own.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO
from collections.abc import Callable

import numpy as np

from .analysis import advice as advice_
from .analysis.wording import exception_line, failure, last_error_lines
from . import analysis, events
from .compare import LoadGap, load_gap
from .errors import UsageError
from .integrations.zero_code import TRIAL_VAR, VARY_VAR
from .recorder import RecordOptions, record
from .runformat.runfile import Run, load

TRIALS_FILE = "trials.json"
ERROR_LINES = 6        # the last lines of a failed script's stderr that try shows
LIMIT_FLOOR = 120.0    # seconds: the least a trial may take before it is stopped unmeasured
HELPS = 1.05           # a variant helps from this ratio of the script as written's steps/s
FROM_ADVICE = 3        # the most variants a set takes from the advice, the candidates it held back included


@dataclass(frozen=True)
class Variant:
    """The script as written (no knob), or one knob set to one value."""

    knob: str | None = None
    value: Any = None

    @property
    def label(self) -> str:
        if self.knob is None:
            return "as written"
        return f"{self.knob}={str(self.value).lower() if isinstance(self.value, bool) else self.value}"

    def environment(self, budget: dict[str, Any]) -> dict[str, str]:
        env = {TRIAL_VAR: json.dumps(budget)}
        if self.knob is not None:
            env[VARY_VAR] = json.dumps({self.knob: self.value})
        return env


@dataclass
class TrialResult:
    variant: Variant
    path: str
    status: str
    steps_per_s: float | None = None
    predicted_steps_per_s: float | None = None
    data_wait_share: float | None = None
    cores_busy: float | None = None
    gpu_busy: float | None = None
    verdict: str | None = None
    varied: list[str] = field(default_factory=list)        # "num_workers 0 → 2"
    not_applied: list[str] = field(default_factory=list)   # "prefetch_factor: needs workers…"
    note: str | None = None                                # why it was not measured
    others_cores: float | None = None    # what other programs took during its window, in cores
    allowed_cores: float | None = None   # the cores it may use
    waiting_cores: float | None = None   # cores' worth of its threads waiting for a core, in its window
    failed: str | None = None            # "exit code 1": its script failed (not ended on purpose)
    error_lines: list[str] = field(default_factory=list)   # the script's last lines on stderr, where it failed
    window_steps: int | None = None      # the steps its window measured
    window_seconds: float | None = None  # the seconds its window measured
    cut_short: bool = False              # the script ended before its window was full
    reason: str | None = None            # why its script failed, in one line (``analysis.failure``)
    machine_cores: int | None = None     # the machine's cores, which other programs' are counted of
    predicted_range: tuple[float, float] | None = None   # steps/s, where no one figure was predicted
    predicted_measured: bool = False     # the prediction is the variant's own steps timed in the first trial
    predicted_why: str | None = None     # why a range

    @property
    def predicted_text(self) -> str:
        """The table's cell: ``12.3``, ``12.3 m`` (measured in the first trial) or ``4.1–19``."""
        if self.predicted_steps_per_s is not None:
            return _num(self.predicted_steps_per_s) + (" m" if self.predicted_measured else "")
        if self.predicted_range is not None:
            return f"{_num(self.predicted_range[0])}–{_num(self.predicted_range[1])}"
        return "-"

    def window_text(self, budget: dict[str, Any]) -> str | None:
        """What the window measured against what was asked, where the script ended first:
        ``2.1 s of the 15 s window measured (40 steps): the script ended first``. None where
        it measured all that was asked (a script that ended with its window's last step)."""
        if not self.cut_short or self.window_seconds is None:
            return None
        seconds = f"{self.window_seconds:.2g}" if self.window_seconds < 10 else f"{self.window_seconds:.1f}"
        if budget.get("steps"):
            if self.window_steps is not None and self.window_steps >= int(budget["steps"]):
                return None
            asked = f"{self.window_steps} of the {budget['steps']} steps of its window measured, in {seconds} s"
        else:
            window = float(budget.get("seconds") or 0)
            if window and self.window_seconds >= window:
                return None
            steps = analysis.counted(self.window_steps, "step") if self.window_steps is not None else "no steps"
            asked = f"{seconds} s of the {window:g} s window measured ({steps})"
        return f"{asked}: the script ended first"

    def failure_text(self) -> str | None:
        """Why its script failed, in one line: ``failed (exit code 1): ValueError: …`` (from a set
        saved without it, its exit and its last line on stderr)."""
        if not self.failed:
            return None
        if self.reason:
            return self.reason
        line = exception_line(self.error_lines) or (self.error_lines[-1].strip() if self.error_lines else None)
        said = f": {line}" if line else " and wrote nothing on stderr"
        return f"failed ({self.failed}){said}"

    def to_json(self) -> dict[str, Any]:
        return {"knob": self.variant.knob, "value": self.variant.value, "label": self.variant.label,
                "steps_per_s": self.steps_per_s, "predicted_steps_per_s": self.predicted_steps_per_s,
                "predicted_range": list(self.predicted_range) if self.predicted_range else None,
                "predicted_measured": self.predicted_measured, "predicted_why": self.predicted_why,
                "data_wait_share": self.data_wait_share, "cores_busy": self.cores_busy,
                "others_cores": self.others_cores, "allowed_cores": self.allowed_cores,
                "waiting_cores": self.waiting_cores,
                "gpu_busy": self.gpu_busy, "verdict": self.verdict, "run_file": self.path,
                "status": self.status, "varied": self.varied, "not_applied": self.not_applied,
                "note": self.note, "failed": self.failed, "reason": self.reason, "error_lines": self.error_lines,
                "window": {"steps": self.window_steps, "seconds": self.window_seconds, "cut_short": self.cut_short},
                "machine_cores": self.machine_cores}


@dataclass
class TrialSet:
    command: list[str]
    budget: dict[str, Any]
    results: list[TrialResult] = field(default_factory=list)
    advice: list[advice_.Advice] = field(default_factory=list)
    stopped: str | None = None     # why the trials stopped before the last (Ctrl-C)
    held: list[advice_.Advice] = field(default_factory=list)   # candidates the advice held back (RunFigures.held_back)

    def headline(self) -> str:
        return headline(self.results, self.advice, self.stopped, self.held)

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "budget": self.budget, "headline": self.headline(),
                "load_moved": bool(load_moved(self.results)), "load": load_json(self.results),
                "advice": [a.to_json() for a in self.advice], "held_back": [a.to_json() for a in self.held],
                "stopped": self.stopped,
                "variants": [r.to_json() for r in self.results]}


def parse_vary(words: list[str]) -> list[Variant]:
    """``--vary num_workers=2,4`` (repeatable): one variant per value, in the order given."""
    from .integrations.zero_code import knob_value

    out: list[Variant] = []
    for word in words:
        knob, sep, values = word.partition("=")
        if not sep or not values.strip():
            raise UsageError(f"--vary takes KNOB=V1,V2,… (e.g. num_workers=2,4), not {word!r}")
        for text in values.split(","):
            try:
                variant = Variant(knob.strip(), knob_value(knob.strip(), text))
            except ValueError as exc:
                raise UsageError(f"--vary {word}: {exc}") from None
            if variant not in out:
                out.append(variant)
    return out


def budget_of(steps: int | None, seconds: float | None, warmup: int) -> dict[str, Any]:
    if steps is not None and seconds is not None:
        raise UsageError("give --steps or --seconds, not both")
    if warmup < 0:
        raise UsageError(f"--warmup must be 0 or more steps, not {warmup}")
    if steps is not None and steps < 1:
        raise UsageError(f"--steps must be at least 1, not {steps}")
    if seconds is not None and not 0 < seconds <= 3600:
        raise UsageError(f"--seconds must be over 0 and at most 3600, not {seconds}")
    if steps is None and seconds is None:
        seconds = 15.0
    return {"warmup": warmup, "steps": steps, "seconds": seconds}


def limit_of(budget: dict[str, Any]) -> float:
    """How long a trial may take before it is stopped unmeasured (start-up and warm-up included)."""
    return max(LIMIT_FLOOR, 4 * float(budget.get("seconds") or 0) + 60)


def plan_text(command: list[str], variants: list[Variant], budget: dict[str, Any], folder: str,
              more_from_advice: bool) -> str:
    """What will run, how many times, for how long: said before the first trial."""
    window = f"{budget['steps']} optimizer steps" if budget.get("steps") else f"{budget['seconds']:g} seconds"
    runs = len(variants)
    names = ", ".join(v.label for v in variants)
    lines = [f"devicewatch try will run `{' '.join(command)}` {runs} time{'s' * (runs != 1)}"
             + (" (then once per variant its advice names, and where none of them helps, once per further "
                f"candidate its figures point to, at most {FROM_ADVICE} variants)" if more_from_advice else "")
             + f": {names}.",
             f"Each trial: a warm-up of {budget['warmup']} optimizer steps, then {window} measured, then the "
             f"process is ended (at most {limit_of(budget):.0f} s a trial).",
             "The script runs unchanged each time: whatever it writes (checkpoints, logs) it writes each time. "
             f"devicewatch writes only the recordings, in {folder}/. Ctrl-C stops the trials, keeping what was measured."]
    return "\n".join(lines)


def trial_path(folder: str, index: int, variant: Variant) -> str:
    safe = "".join(c if c.isalnum() or c in "=._-" else "_" for c in variant.label.replace(" ", "-"))
    return os.path.join(folder, f"{index:02d}-{safe}.jsonl")


def run_trial(command: list[str], variant: Variant, budget: dict[str, Any], path: str,
              started: Callable[[Any], None] | None = None, interval: float = 0.1, gpu: bool = True,
              echo: bool = False, terminal: TextIO | None = None) -> Run:
    """Record one trial of COMMAND with VARIANT; returns its run. Stopped unmeasured at the
    limit; STARTED gets the recorder (its ``cancel(reason)`` stops the trial). TERMINAL takes
    what the recorder would write to ours (a dashboard's trials write nothing there)."""
    options = RecordOptions(output=path, command=command, interval=interval, gpu=gpu, echo=echo,
                            status_line=False, environment=variant.environment(budget), trial=True)
    limit = limit_of(budget)
    timers: list[threading.Timer] = []

    def on_start(recorder: Any) -> None:
        why = f"{STOPPED_BY} of {limit:.0f} s was reached before its window was measured"
        timer = threading.Timer(limit, recorder.cancel, args=(why,))
        timer.daemon = True
        timer.start()
        timers.append(timer)
        if started:
            started(recorder)

    try:
        record(options, on_start=on_start, out=terminal, err=terminal)
    finally:
        for timer in timers:
            timer.cancel()
    return load(path)


def result_of(figures: analysis.RunFigures, variant: Variant,
              predicted: float | advice_.Prediction | None = None) -> TrialResult:
    """A trial's figures from its run's FIGURES (``analysis.run_figures``), beside what was
    PREDICTED for it."""
    run = figures.run
    end = run.end
    if not isinstance(predicted, advice_.Prediction):
        predicted = advice_.Prediction(predicted) if predicted else None
    result = TrialResult(variant, str(run.path), end.status if end else "unknown")
    if predicted is not None:
        result.predicted_steps_per_s = round(predicted.steps_per_s, 3) if predicted.steps_per_s else None
        result.predicted_measured = predicted.measured_steps is not None
        if predicted.low is not None and predicted.high is not None:
            result.predicted_range = (round(predicted.low, 3), round(predicted.high, 3))
            result.predicted_why = predicted.why
    window = advice_.trial_of(run)
    for event in run.events.of(events.INSTRUMENT):
        state = event.get("state")
        if state == "varied":
            by = f" (set by the script to {event.get('was')})" if event.get("by") else ""
            was, now = _word(event.get("was")), _word(event.get("now"))
            line = f"{event.get('knob')} {was} → {now}{by}" if was != now else f"{event.get('knob')} {now}, as it was{by}"
            if line not in result.varied:
                result.varied.append(line)
        elif state == "not_applied":
            result.not_applied.append(f"{event.get('knob')}: {event.get('reason')}")
        elif state == "trial" and event.get("stage") == "unmeasured":
            result.note = str(event.get("reason"))
    if window is not None:
        result.steps_per_s = window.get("steps_per_s")
        result.data_wait_share = window.get("data_wait_share")
        result.window_steps = window.get("steps")
        result.window_seconds = window.get("seconds")
        result.cut_short = bool(window.get("partial"))
        if result.cut_short:
            result.note = f"the script ended before its window was full ({window.get('steps')} steps measured)"
    elif result.note is None:
        result.note = (end.reason if end else None) or "no training step was measured"
    found = failure(run)   # its own exit code or signal: a trial ended on purpose is "trial"
    if found is not None:
        result.failed = found.how
        result.reason = found.text
        result.error_lines = last_error_lines(run, ERROR_LINES)
    s, verdict = figures.series, figures.verdict
    result.verdict = verdict.label
    result.cores_busy = verdict.figures.get("workload_cores", verdict.figures.get("cores_busy"))
    result.allowed_cores = verdict.figures.get("allowed_cores", verdict.figures.get("cores"))
    machine = verdict.figures.get("cores")
    result.machine_cores = int(machine) if isinstance(machine, (int, float)) else None
    shared = _window_contention(run, s, window)
    if shared is not None:
        result.others_cores = None if shared.others is None else round(shared.others, 2)
        result.waiting_cores = None if shared.waiting is None else round(shared.waiting, 2)
    else:  # no window with samples in it: the phases the verdict judged
        result.others_cores = verdict.figures.get("others_cores")
        result.waiting_cores = verdict.figures.get("waiting_cores")
    if s.gpus:
        means = [float(np.nanmean(u)) for u in s.gpu_util if u.size]
        result.gpu_busy = round(max(means), 1) if means else None
    return result


def _window_contention(run: Run, s: analysis.Series, window: dict[str, Any] | None) -> analysis.Contention | None:
    """Who took the cores during the trial's measured window (its ``done`` event's time less the
    calibration after it, less its seconds), where two samples or more fall in it."""
    if window is None or not isinstance(window.get("t"), (int, float)) or not isinstance(window.get("seconds"), (int, float)):
        return None
    calibrated = window.get("calibration_s")   # the variants timed after the window, before its event
    end = float(window["t"]) - (float(calibrated) if isinstance(calibrated, (int, float)) else 0.0)
    in_window = (s.t >= end - float(window["seconds"])) & (s.t <= end)
    return analysis.contention(run, s, in_window) if int(in_window.sum()) >= 2 else None


def headline(results: list[TrialResult], given_advice: list[advice_.Advice] | None = None,
             stopped: str | None = None, held: list[advice_.Advice] | None = None) -> str:
    """The winner against the script as written, predicted beside measured, and the data wait;
    where none helps, each variant measured and the candidates HELD back that were not."""
    base = results[0] if results else None
    if base is None:
        return stopped or "no trial ran"
    if base.failed:
        return f"the script as written {base.failure_text()}"
    if not base.steps_per_s:
        return f"the script as written was not measured: {base.note or base.status}"
    measured = [r for r in results[1:] if r.steps_per_s and not r.failed]
    if not measured:
        if len(results) == 1 and stopped:
            return f"as written: {base.steps_per_s:.1f} steps/s; {stopped}"
        if len(results) == 1:
            why = next((a.why for a in given_advice or [] if a.knob is None), None)
            return f"as written: {base.steps_per_s:.1f} steps/s; nothing to try" + (f": {why}" if why else "")
        broken = [r.variant.label for r in results[1:] if r.failed]
        if broken:
            return f"as written: {base.steps_per_s:.1f} steps/s; the script failed with {', '.join(broken)}"
        return f"as written: {base.steps_per_s:.1f} steps/s; no variant was measured"
    best = max(measured, key=lambda r: r.steps_per_s or 0)
    ratio = (best.steps_per_s or 0) / base.steps_per_s
    if ratio < HELPS:
        each = ", ".join(f"{r.variant.label} {(r.steps_per_s or 0) / base.steps_per_s:.2f}×" for r in measured)
        tried = {r.variant for r in results}
        left = [a.label for a in held or [] if Variant(a.knob, a.value) not in tried]
        return (f"no variant helps: measured {each} the steps/s of the script as written ({base.steps_per_s:.1f})"
                + (f"; not measured: {', '.join(left)}" if left else ""))
    text = f"{best.variant.label}: {ratio:.1f}× the steps/s of the script as written"
    if best.predicted_steps_per_s:
        verb = "measured in the first trial" if best.predicted_measured else "predicted"
        text += f" ({verb} {best.predicted_steps_per_s / base.steps_per_s:.1f}×)"
    elif best.predicted_range:
        low, high = best.predicted_range
        text += f" (predicted {low / base.steps_per_s:.1f}–{high / base.steps_per_s:.1f}×)"
    if base.data_wait_share is not None and best.data_wait_share is not None:
        text += f"; data wait {base.data_wait_share:.0%} → {best.data_wait_share:.0%}"
    return text


STOPPED_BY = "the trial's limit"   # a cancel for this reason ends one trial, not the set


def run_set(command: list[str], variants: list[Variant], budget: dict[str, Any], folder: str,
            runner: Callable[..., Run] = run_trial, stop: Callable[[], str | None] = lambda: None,
            on_trial: Callable[[int, int, Variant, float | None, str], object] = lambda *a: None,
            on_result: Callable[[int, TrialResult, Run, TrialSet], object] = lambda *a: None,
            into: TrialSet | None = None) -> TrialSet:
    """The trials of a set, one after another: the script as written (VARIANTS[0]) first; each
    variant predicted from its figures before it runs, measured after. Given only the script as
    written, the variants are what its advice names. RUNNER(command, variant, budget, path) records
    one trial; STOP says why no further trial should run (None: go on), and a trial cancelled
    other than by its limit stops the set too (Ctrl-C). Where none of the advice's variants
    helps, the candidates it held back (``RunFigures.held_back``) are measured too, one at a time,
    until one helps or the set has FROM_ADVICE variants. ON_TRIAL(index, of, variant, predicted,
    path) and ON_RESULT(index, result, run, the set so far: the advice is in it after the first
    trial) follow it. The set is saved as trials.json however
    it ends, into INTO where given (the caller then holds what was measured if a trial raises)."""
    variants = list(variants)
    trial_set = into if into is not None else TrialSet(command, budget)
    base: advice_.Baseline | None = None
    from_advice = len(variants) == 1
    try:
        index = 0
        while index < len(variants) and not stop():
            variant = variants[index]
            predicted = advice_.prediction(base, variant.knob, variant.value) if base and variant.knob else None
            path = trial_path(folder, index + 1, variant)
            on_trial(index, len(variants), variant, predicted.steps_per_s if predicted else None, path)
            run = runner(command, variant, budget, path)
            figures = analysis.run_figures(run)
            result = result_of(figures, variant, predicted)
            trial_set.results.append(result)
            reason = (run.end.reason if run.end else None) or ""
            if result.status == "cancelled" and not reason.startswith(STOPPED_BY):
                trial_set.stopped = f"stopped after {index + 1} of {len(variants)} trials: {reason}"
                on_result(index, result, run, trial_set)
                break
            if index == 0 and result.failed:   # nothing is advised from, nor compared with, a failed script
                trial_set.stopped = f"the script as written failed ({result.failed}), so no variant was tried"
                on_result(index, result, run, trial_set)
                break
            if index == 0:
                base = figures.baseline
                trial_set.advice, trial_set.held = figures.advised, figures.held_back
            on_result(index, result, run, trial_set)
            if index == 0:
                if not result.steps_per_s:
                    trial_set.stopped = "the script as written was not measured, so no variant can be compared with it"
                    break
                if from_advice:
                    variants += [Variant(a.knob, a.value) for a in trial_set.advice if a.knob is not None]
            if from_advice and index == len(variants) - 1:
                variants += further(trial_set, variants)
            index += 1
        why = stop()
        if why and trial_set.stopped is None and len(trial_set.results) < len(variants):
            trial_set.stopped = f"stopped after {len(trial_set.results)} of {len(variants)} trials: {why}"
    finally:
        save(trial_set, folder)
    return trial_set


def further(trial_set: TrialSet, variants: list[Variant]) -> list[Variant]:
    """The next candidate to measure once the set's VARIANTS are measured: where none of them
    helps, the best the advice held back that is not measured yet (none once the set has
    FROM_ADVICE variants besides the script as written)."""
    if len(variants) > FROM_ADVICE or helps(trial_set.results):
        return []
    left = [Variant(a.knob, a.value) for a in trial_set.held if Variant(a.knob, a.value) not in variants]
    return left[:1]


def helps(results: list[TrialResult]) -> bool:
    """Whether a variant measured made HELPS times the script as written's steps/s or more."""
    base = results[0].steps_per_s if results else None
    return bool(base) and any((r.steps_per_s or 0) >= HELPS * (base or 0) for r in results[1:] if not r.failed)


def load_set(path: str) -> tuple[TrialSet, str]:
    """The set ``save`` wrote, read back, and its folder; or a one-line UsageError. A variant's
    run file is looked for beside trials.json first (the folder may have been moved)."""
    def number(value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{value!r} is not a number")
        return float(value)

    try:
        with open(path) as f:
            data = json.load(f)
        folder = os.path.dirname(path) or "."
        results = []
        for v in data["variants"]:
            saved = str(v.get("run_file") or "")
            beside = os.path.join(folder, os.path.basename(saved))
            results.append(TrialResult(
                Variant(v.get("knob"), v.get("value")), beside if os.path.exists(beside) else saved,
                str(v.get("status", "unknown")), number(v.get("steps_per_s")), number(v.get("predicted_steps_per_s")),
                number(v.get("data_wait_share")), number(v.get("cores_busy")), number(v.get("gpu_busy")),
                str(v["verdict"]) if v.get("verdict") is not None else None,
                [str(x) for x in v.get("varied") or []], [str(x) for x in v.get("not_applied") or []],
                str(v["note"]) if v.get("note") is not None else None,
                number(v.get("others_cores")), number(v.get("allowed_cores")), number(v.get("waiting_cores")),
                str(v["failed"]) if v.get("failed") is not None else None, [str(x) for x in v.get("error_lines") or []],
                *_window(v.get("window")), str(v["reason"]) if v.get("reason") is not None else None,
                machine_cores=int(v["machine_cores"]) if isinstance(v.get("machine_cores"), int) else None,
                predicted_range=_pair(v.get("predicted_range")), predicted_measured=v.get("predicted_measured") is True,
                predicted_why=str(v["predicted_why"]) if v.get("predicted_why") is not None else None))
        def advised_of(a: dict[str, Any]) -> advice_.Advice:
            steps = a.get("predicted_from")
            return advice_.Advice(a.get("knob"), a.get("value"), str(a.get("why", "")),
                                  number(a.get("predicted_steps_per_s")), number(a.get("predicted_gain")),
                                  _pair(a.get("predicted_range")), _pair(a.get("gain_range")),
                                  str(a["range_why"]) if a.get("range_why") is not None else None,
                                  int(steps) if isinstance(steps, int) and not isinstance(steps, bool) else None,
                                  a.get("measured") is True)

        advised = [advised_of(a) for a in data.get("advice") or []]
        held = [advised_of(a) for a in data.get("held_back") or []]
        stopped = data.get("stopped")
        trial_set = TrialSet([str(w) for w in data["command"]], dict(data["budget"]), results, advised,
                             str(stopped) if stopped is not None else None, held)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path} is not the trials.json of devicewatch try ({type(exc).__name__}: {exc})") from None
    return trial_set, folder


def load_gaps(results: list[TrialResult]) -> list[tuple[TrialResult, LoadGap]]:
    """Each variant whose trial ran beside a load of other programs unlike the script as
    written's, enough to explain (or hide) its difference in steps a second from it: the rule
    of ``devicewatch compare`` (``compare.load_gap``), a step's time for a run's."""
    base = results[0] if results else None
    if base is None or not base.steps_per_s:
        return []
    base_steps = base.steps_per_s
    out = []
    for r in results[1:]:
        if not r.steps_per_s or base.others_cores is None or r.others_cores is None:
            continue
        busier = r if r.others_cores > base.others_cores else base
        cores = float(max(base.allowed_cores or 0.0, r.allowed_cores or 0.0) or 1.0)
        gap = load_gap(base.others_cores, r.others_cores, cores, 1.0 / base_steps, 1.0 / r.steps_per_s,
                       busier.cores_busy, busier.waiting_cores)
        if gap is not None and gap.matters:
            out.append((r, gap))
    return out


def load_moved(results: list[TrialResult]) -> list[TrialResult]:
    """The variants whose measured figures the machine's load may explain (``load_gaps``)."""
    return [r for r, _gap in load_gaps(results)]


def load_moved_text(results: list[TrialResult]) -> str | None:
    """The legend of the ``*`` under the table, where the machine's load moved between trials."""
    gaps = load_gaps(results)
    if not gaps:
        return None
    base = results[0]
    each = ", ".join(f"{r.others_cores:.1f} during {r.variant.label}" for r, _gap in gaps)
    # Other programs run on every core of the machine: their cores are counted of its, where known.
    of = analysis.Cores(base.machine_cores, base.allowed_cores).machine_of() if base.machine_cores \
        else analysis.counted(gaps[0][1].cores, "core")
    return (f"* the machine's load moved: other programs took {base.others_cores:.1f} of "
            f"{of} during the script as written and {each}: the steps/s marked * "
            "may differ for them, not for the knob (run the set again on a quieter machine)")


def load_json(results: list[TrialResult]) -> dict[str, Any] | None:
    """trials.json's account of the load that moved: the legend and each marked variant's figures."""
    gaps = load_gaps(results)
    if not gaps:
        return None
    return {"line": load_moved_text(results),
            "variants": [{"label": r.variant.label, **gap.to_json()} for r, gap in gaps]}


def table_text(results: list[TrialResult], budget: dict[str, Any] | None = None) -> str:
    """The variants side by side, one line each; the steps a second of a variant whose trial ran
    beside a load of other programs unlike the script as written's is marked ``*``. Under it,
    what each variant changed, a window the script cut short (against BUDGET's), a failed
    script's last lines on stderr."""
    header = ["variant", "steps/s", "predicted", "data wait", "cores busy", "others", "GPU busy", "verdict"]
    rows = [header]
    moved = {id(r) for r in load_moved(results)}
    for r in results:
        mark = "*" if id(r) in moved else ""
        rows.append([r.variant.label, _num(r.steps_per_s) + mark, r.predicted_text if r.variant.knob else "-",
                     f"{r.data_wait_share:.0%}" if r.data_wait_share is not None else "not measured",
                     _num(r.cores_busy), _num(r.others_cores), f"{r.gpu_busy:.0f}%" if r.gpu_busy is not None else "-",
                     r.verdict or "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) if 0 < i < 7 else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    notes = []
    moved_text = load_moved_text(results)
    if moved_text:
        notes.append(moved_text)
    if any(r.predicted_measured for r in results):
        notes.append("m: predicted by timing the variant's own steps in the first trial, after its window")
    for r in results:
        if r.predicted_range is not None:
            notes.append(f"  {r.variant.label}: predicted as a range: {r.predicted_why}")
    for r in results:
        for line in r.varied:
            notes.append(f"  {r.variant.label}: {line}")
        for line in r.not_applied:
            notes.append(f"  {r.variant.label}: not applied: {line}")
        if r.note and not r.steps_per_s and not r.failed:
            notes.append(f"  {r.variant.label}: not measured: {r.note}")
        window = r.window_text(budget) if budget is not None else None
        if window:
            notes.append(f"  {r.variant.label}: {window}")
        notes += [f"  {line}" for line in failure_lines(r)]
    return "\n".join(lines + notes)


def failure_lines(result: TrialResult) -> list[str]:
    """A failed trial in lines: why it failed (``TrialResult.failure_text``), then its script's
    last lines on stderr."""
    said = result.failure_text()
    if said is None:
        return []
    if not result.error_lines:
        return [f"{result.variant.label}: the script {said}"]
    # Where the reason is one of the lines below (the exception's), it is not said twice: a short
    # terminal keeps the first lines of a failure, and the reason must be among them.
    below = tuple(f": {line.strip()}" for line in result.error_lines if line.strip())
    head = f"failed ({result.failed})" if said.endswith(below) else said
    return [f"{result.variant.label}: the script {head}; its last lines on stderr:",
            *[f"  | {line}" for line in result.error_lines]]


def failed(results: list[TrialResult]) -> list[TrialResult]:
    """The trials whose script failed: ``devicewatch try`` then exits non-zero."""
    return [r for r in results if r.failed]


def save(trial_set: TrialSet, folder: str) -> str:
    path = os.path.join(folder, TRIALS_FILE)
    with open(path, "w") as f:
        json.dump(trial_set.to_json(), f, indent=2, default=str)
    return path


def new_folder(given: str | None) -> str:
    """A folder of the trials' own: DIR as given when it is new or empty, else a refusal."""
    folder = given or os.path.join("runs", time.strftime("try-%Y%m%d-%H%M%S"))
    if os.path.exists(folder) and (not os.path.isdir(folder) or os.listdir(folder)):
        raise UsageError(f"{folder} already exists and is not an empty folder; nothing was changed "
                         "(give --out a new folder)")
    os.makedirs(folder, exist_ok=True)
    return folder


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _pair(saved: Any) -> tuple[float, float] | None:
    """A range saved as ``[low, high]`` back as a pair; anything else: none."""
    if isinstance(saved, list) and len(saved) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                           for x in saved):
        return float(saved[0]), float(saved[1])
    return None


def _window(saved: Any) -> tuple[int | None, float | None, bool]:
    """trials.json's ``window`` back as (steps, seconds, cut_short); a set saved before it: unknown."""
    if not isinstance(saved, dict):
        return None, None, False
    steps, seconds = saved.get("steps"), saved.get("seconds")
    return (int(steps) if isinstance(steps, (int, float)) and not isinstance(steps, bool) else None,
            float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None,
            saved.get("cut_short") is True)


def _word(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
