"""What to try next, from a run's verdict and the figures it rests on, with the gain predicted.

Each piece of advice names a knob that ``devicewatch try`` can set from outside (the
DataLoader's ``num_workers``, ``persistent_workers``, ``pin_memory``; the operator
``threads``), the value to try, why (the figure it rests on), and the steps a second it
predicts; or says that no such knob helps, and why (the model itself is the cost, the input is
prepared in the loop itself). The figures come from the run alone: its steps a second, its data
wait, the cores its process used, how its training data was fed (the instrumentation's
``setup`` event) and, for a trial, its measured window.

The prediction (docs/zero-code.md, "What `try` predicts") splits a step of the script as written
into the time the loop waited for its batch, ``L``, and the rest, ``C`` (compute, on ``c``
cores). With ``k`` loader workers a step takes the longest of three bounds: ``C`` (the loop
itself), ``L·k0/k`` (the workers, each as fast as the single loader was; ``k0`` the workers it
had, 1 for none) and ``(C·c + L·u)/cores`` (all the CPU work of a step spread over every core,
``u`` the cores loading took while the loop waited; ``cores`` those it can get: the cores it may
use less what other programs took). More threads divide ``C`` at best by the ratio of threads
(an upper bound: serial parts do not divide). Fewer threads, where its threads waited for cores
they could not get (``contended``), remove that waiting: ``C`` becomes ``C·(1 − w)^T``, ``w`` the
share of the time its threads wanted a core that they waited for one and ``T`` its operator
threads (a parallel operator runs only while all ``T`` hold a core). A loop that takes a new
iterator every step or two (``restarts``, iterators a step) splits ``L`` into the wait in the
DataLoader's ``__next__``, ``N`` (a batch loaded, as fast by a worker as by the loop), and the
workers' start-up, ``S``; the workers of the iterator it drops are shut down after its batch is
out, ``T`` (a trial times it), so ``L`` is at least ``N + T`` whatever share of the rest of the
wait its samples found input: without workers a step takes ``C + N``; with persistent workers the
reset first waits for the ``p`` batches each worker had prefetched (``prefetch_factor``, 2 by
default), ``C + N·(1 + p·max(1, k/cores))``; a loop that runs its passes out loses only ``S``.

Where the model cannot know, it gives no one number. Fewer operator threads remove their waiting
for cores but may lose the parallelism the pool had, and how much either weighs depends on how
the pool's threads wait beside other programs, on a pinned core or under a quota (spinning for
a scheduler slice, or sleeping): a trial then times a few steps of each such value after its
window (``integrations.zero_code.trial``), and the prediction is that measurement; without one
it is a range, from the parallelism lost to the waiting removed, with why. More threads are a
range too, from no gain (a serial step) to the model's (every part divides).

Pinned memory saves on each batch's copy to the GPU what copying it from pageable memory took
over copying it from pinned memory (both timed once in the workload's process:
``integrations.zero_code.copy_probe``), at most ``C``, and costs the pinning: in the loop where
it has no workers, beside it where it has.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import events
from ..runformat.runfile import Run
from .core_sentences import OTHERS_NOTABLE, Cores, counted
from .epoch_rows import DataWait, EpochRow
from .pairing import Phase
from .utilization import Series
from .verdicts import Verdict, input_name

INPUT_BOUND_SHARE = 0.3     # a data wait from which more loader workers are worth a try
MAX_WORKERS = 8             # the most workers advice proposes, however many cores
MIN_RUNNING = 0.02          # the least share of a contended step taken as running: gains up to 50x
MIN_GAIN = 1.1              # a knob predicted to gain less is not advised: no core to spread the work over
MIN_CORES = 0.05           # the least share of a core a step's compute or loading is taken to keep busy
RESTARTS = 0.5              # new iterators a step from which the loop is read as re-creating its iterator
PREFETCH = 2                # batches each worker reads ahead where the loader does not say (PyTorch's default)


@dataclass(frozen=True)
class Advice:
    """One thing to try (``knob`` and ``value``), or none (``knob`` None) with why."""

    knob: str | None
    value: Any
    why: str
    predicted_steps_per_s: float | None = None
    predicted_gain: float | None = None     # predicted steps/s over the script's as written
    predicted_range: tuple[float, float] | None = None   # steps/s, where no one figure holds ...
    gain_range: tuple[float, float] | None = None        # ... and over the script's as written
    range_why: str | None = None                         # why a range
    predicted_from: int | None = None    # the steps the prediction rests on: the run's, or the variant's own
    measured: bool = False               # the variant's own steps timed inside the run (a trial's calibration)

    @property
    def best_gain(self) -> float | None:
        """The gain it may make: the predicted one, or its range's top."""
        return self.predicted_gain if self.predicted_gain is not None else \
            (self.gain_range[1] if self.gain_range else None)

    @property
    def label(self) -> str:
        return f"{self.knob}={_word(self.value)}" if self.knob else "nothing to vary"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """A variant's steps timed inside a trial, after its window (the ``calibrated`` of its
    ``done`` event): the variant's steps a second measured, not modelled."""

    knob: str
    value: Any
    steps: int
    steps_per_s: float


@dataclass(frozen=True)
class Prediction:
    """What a variant is predicted to make: one figure where it holds (the model's, or its own
    steps timed in the run, ``measured_steps``), else a range (``low``, ``high``) and why."""

    steps_per_s: float | None
    low: float | None = None
    high: float | None = None
    why: str | None = None
    measured_steps: int | None = None


@dataclass(frozen=True)
class Baseline:
    """The figures of a run that the prediction rests on."""

    steps_per_s: float | None
    data_wait_share: float | None
    cores: int
    workload_cores: float | None    # cores the workload's processes kept busy on average
    machine_cores: float            # cores busy on the whole machine, the workload's and others'
    loading_cores: float            # cores the process used while its loop waited for data
    loader: dict[str, Any] | None   # the training DataLoader's arguments (None: no DataLoader)
    threads: int | None             # operator threads
    tf_data: dict[str, Any] | None  # tf.data's maps, and how many the script left sequential
    gpus: int
    instrumented: bool              # the zero-code instrumentation saw the training loop
    allowed_cores: float | None = None   # the cores it may use, where fewer than the machine's
    others_cores: float | None = None    # cores other programs kept busy meanwhile
    waiting_cores: float | None = None   # cores' worth of its threads waiting for a core
    loader_wait_share: float | None = None  # the share of the time waited in the DataLoader's __next__
    restarts: float | None = None        # new iterators over the training data a step
    worker_batch_s: float | None = None  # what one batch took a loader worker to make
    teardown_share: float | None = None  # the share of the time spent shutting down dropped iterators' workers
    copy: dict[str, Any] | None = None   # a training batch's copy to the GPU, timed (the ``copy`` event)
    steps: int | None = None             # the training steps its figures rest on
    calibrated: tuple[Calibration, ...] = ()   # variants timed inside the run (a trial's calibration)

    @property
    def limit(self) -> float:
        """The cores the workload may use: those allowed, else the machine's."""
        return self.allowed_cores if self.allowed_cores is not None else float(self.cores)

    @property
    def usable_cores(self) -> float:
        """The cores the prediction lets the workload have: those it may use less what other
        programs kept busy during the run (at least one)."""
        return max(1.0, self.limit - (self.others_cores or 0.0))

    @property
    def free_cores(self) -> float:
        """Cores it may use that nobody kept busy."""
        if self.others_cores is not None and self.workload_cores is not None:
            return max(0.0, self.limit - self.others_cores - self.workload_cores)
        return max(0.0, self.limit - max(self.machine_cores, self.workload_cores or 0.0))

    @property
    def wait_share(self) -> float | None:
        """The share of the time its threads wanted a core that they waited for one."""
        if self.waiting_cores is None or self.workload_cores is None:
            return None
        wanted = self.waiting_cores + self.workload_cores
        return self.waiting_cores / wanted if wanted > 0 else None

    @property
    def workers(self) -> int:
        return int((self.loader or {}).get("num_workers") or 0)


def setup_of(run: Run) -> dict[str, Any] | None:
    """The instrumentation's last ``setup`` event (how the training data was fed)."""
    found = None
    for event in run.events.of(events.INSTRUMENT):
        if event.get("state") == "setup":
            found = event
    return found


def copy_of(run: Run) -> dict[str, Any] | None:
    """What the copy of a training batch to the GPU took, from pageable and from pinned memory,
    and the pinning (``integrations.zero_code.copy_probe``); None where it was not probed."""
    found = None
    for event in run.events.of(events.INSTRUMENT):
        if event.get("state") == "copy" and all(isinstance(event.get(k), (int, float))
                                                for k in ("pageable_s", "pinned_s", "pin_s")):
            found = event
    return found


def trial_of(run: Run) -> dict[str, Any] | None:
    """A trial's measured window (``stage: done``), or None."""
    for event in run.events.of(events.INSTRUMENT):
        if event.get("state") == "trial" and event.get("stage") == "done":
            return event
    return None


def baseline(run: Run, s: Series, all_phases: list[Phase], rows: list[EpochRow], wait: DataWait | None,
             verdict: Verdict) -> Baseline:
    """What the advice predicts from: RUN's figures as its VERDICT was judged on them (series S,
    its phases, epoch ROWS and their WAIT), or the trial's where ``devicewatch try`` timed one."""
    trial = trial_of(run)
    teardown = None
    calibrated: tuple[Calibration, ...] = ()
    if trial is not None:
        steps_per_s = trial.get("steps_per_s")
        share = trial.get("data_wait_share")
        steps = int(trial.get("steps") or 0)
        calibrated = calibrations(trial)
        if isinstance(trial.get("teardown_s"), (int, float)) and trial.get("seconds"):
            teardown = min(1.0, float(trial["teardown_s"]) / float(trial["seconds"]))
    else:
        steps = int(sum(n for r in rows if isinstance(n := r.metrics.steps, (int, float))))
        loop = sum(r.train_loop for r in rows)
        # Steps counted from stack samples (an attached run's) are a lower bound: no rate to predict from.
        sampled = any(r.metrics.figures is not None and r.metrics.figures.steps_sampled for r in rows)
        steps_per_s = steps / loop if steps and loop > 0 and not sampled else None
        share = wait.share if wait is not None else None
    loader_share, restarts, worker_batch = _loader_figures(rows, share)
    setup = setup_of(run)
    figures = verdict.figures
    return Baseline(
        steps_per_s=float(steps_per_s) if steps_per_s else None,
        data_wait_share=float(share) if share is not None else None,
        cores=int(figures.get("cores") or run.cores or 1),
        workload_cores=figures.get("workload_cores"),
        machine_cores=float(figures.get("cores_busy") or 0.0),
        loading_cores=_loading_cores(s, all_phases),
        loader=setup.get("loader") if setup else None,
        threads=setup.get("threads") if setup else None,
        tf_data=setup.get("tf_data") if setup else None,
        gpus=s.gpus,
        instrumented=setup is not None,
        allowed_cores=figures.get("allowed_cores"),
        others_cores=figures.get("others_cores"),
        waiting_cores=figures.get("waiting_cores"),
        loader_wait_share=loader_share,
        restarts=restarts,
        worker_batch_s=worker_batch,
        teardown_share=teardown,
        copy=copy_of(run),
        steps=steps or None,
        calibrated=calibrated)


def calibrations(trial: dict[str, Any]) -> tuple[Calibration, ...]:
    """The variants a trial timed after its window (``calibrated``), those that read as figures."""
    out = []
    for c in trial.get("calibrated") or []:
        if isinstance(c, dict) and isinstance(c.get("knob"), str) and isinstance(c.get("steps"), int) \
                and isinstance(c.get("steps_per_s"), (int, float)) and c["steps"] > 0 and c["steps_per_s"] > 0:
            out.append(Calibration(c["knob"], c.get("value"), c["steps"], float(c["steps_per_s"])))
    return tuple(out)


def _loader_figures(rows: list[Any], share: float | None) -> tuple[float | None, float | None, float | None]:
    """The part of the data wait SHARE spent in the DataLoader's ``__next__``, the new
    iterators a step, and what a batch took a worker to make, from the units that measured
    them (``loader_wait_s``, ``iterators``, ``worker_batch_s``)."""
    measured = [f for r in rows if (f := r.metrics.figures) is not None and isinstance(f.loader_wait_s, (int, float))]
    if not measured or share is None:
        return None, None, None
    made = [float(m.worker_batch_s) for m in measured if isinstance(m.worker_batch_s, (int, float))]
    loader = sum(float(m.loader_wait_s or 0.0) for m in measured)
    waited = sum(float(m.data_wait_s or 0.0) for m in measured)
    steps = sum(int(m.steps or 0) for m in measured)
    iterators = sum(int(m.iterators or 0) for m in measured)
    return ((share * min(1.0, loader / waited) if waited > 0 else 0.0), (iterators / steps if steps else None),
            sum(made) / len(made) if made else None)


def _loading_cores(s: Series, all_phases: list[Phase]) -> float:
    """Cores the workload used while its loop waited for data (its ``data`` phases), 1 where
    they hold no sample: loading taken to keep one core busy, the cautious guess. What it used,
    not what it wanted: the time its threads waited for a core is no work that more workers
    would have to share out."""
    spans = [(p.start, p.end) for p in all_phases if p.kind == "data"]
    if not spans or len(s.proc_cpu) != len(s.t):
        return 1.0
    inside = np.zeros(len(s.t), bool)
    for start, end in spans:
        inside |= (s.t >= start) & (s.t <= end)
    values = s.proc_cpu[inside]
    values = values[~np.isnan(values)]
    return float(np.clip(values.mean() / 100.0, MIN_CORES, 1.0)) if values.size >= 3 else 1.0


def predict(b: Baseline, knob: str, value: Any) -> float | None:
    """The steps a second the script would make with KNOB=VALUE (None: not predicted)."""
    if not b.steps_per_s or (b.data_wait_share is None and knob != "threads"):
        return None
    step = 1.0 / b.steps_per_s
    wait = step * (b.data_wait_share or 0.0)
    compute = step - wait
    busy = b.workload_cores if b.workload_cores is not None else 1.0
    waiting = b.data_wait_share or 0.0
    # the cores its compute kept busy: under one where its threads waited for cores other programs held
    # (a step's CPU work is what it used, C·c + L·u = the step × its busy cores, not its time on a core)
    compute_cores = float(np.clip((busy - waiting * b.loading_cores) / max(1e-6, 1 - waiting), MIN_CORES,
                                  max(MIN_CORES, b.usable_cores)))
    if knob in ("num_workers", "persistent_workers") and b.loader_wait_share is not None:
        # N: a batch, as a worker made it where timed, else the whole wait in the DataLoader's __next__
        batch = min(b.worker_batch_s, step) if b.worker_batch_s is not None else step * b.loader_wait_share
        restarting = (b.restarts or 0.0) >= RESTARTS
        # T: the dropped iterator's workers shut down after its batch is out, before the model's call,
        # in the loop's wait only at the share its samples found input; timed, it is input whole
        least = step * min(1.0, b.loader_wait_share + (b.teardown_share or 0.0))
        own = step - max(wait, least)
        if knob == "num_workers" and int(value) == 0 and restarting and b.workers:
            return 1.0 / (own + batch) if own + batch > 0 else None
        if knob == "persistent_workers" and value and b.workers:
            if not restarting:
                return 1.0 / (own + batch) if own + batch > 0 else None   # the start-up of each pass is gone
            prefetch = int((b.loader or {}).get("prefetch_factor") or PREFETCH)
            drained = prefetch * max(1.0, b.workers / b.usable_cores)
            return 1.0 / min(step, own + batch * (1 + drained))
    if knob in ("num_workers", "map_parallel"):
        workers = int(value)
        if workers <= 0:
            return None
        before = max(1, b.workers) if knob == "num_workers" else 1
        loading = wait * before   # one loader's time for a batch
        new_step = max(compute, loading / workers,
                       (compute * compute_cores + wait * b.loading_cores * before) / b.usable_cores)
        return 1.0 / new_step if new_step > 0 else None
    if knob == "pin_memory":
        return _pinned(b, step, compute) if value else None
    if knob == "threads":
        if not b.threads:
            return None
        if int(value) < b.threads:   # fewer threads, to remove their waiting for cores
            share = b.wait_share
            if share is None:
                return None
            # A parallel operator runs only while every one of its threads holds a core: each
            # held one (1 - share) of the time it wanted one, all of them (taken as independent)
            # (1 - share) ** threads of it. On the cores it can get, none waits.
            running = max((1.0 - min(share, 0.95)) ** b.threads, MIN_RUNNING)
            return 1.0 / (wait + compute * running)
        if int(value) == b.threads:
            return None
        scale = min(float(value), b.usable_cores) / min(float(b.threads), b.usable_cores)
        return 1.0 / (wait + compute / max(scale, 1.0))
    return None


def prediction(b: Baseline, knob: str, value: Any) -> Prediction | None:
    """What KNOB=VALUE is predicted to make, as far as it is known: the variant's own steps timed
    in the run where a trial calibrated it; the model's figure where the model holds; a range and
    why where it cannot know (``predict`` the model's top)."""
    for c in b.calibrated:
        if c.knob == knob and c.value == value:
            return Prediction(c.steps_per_s, measured_steps=c.steps)
    model = predict(b, knob, value)
    if model is None or not b.steps_per_s or knob != "threads" or not b.threads or int(value) == b.threads:
        return Prediction(model) if model is not None else None
    step = 1.0 / b.steps_per_s
    wait = step * (b.data_wait_share or 0.0)
    compute = step - wait
    if int(value) > b.threads:   # from a serial step (nothing divides) to every part divided
        return Prediction(None, min(b.steps_per_s, model), max(b.steps_per_s, model), range_why(b, knob, value))
    # fewer: from the parallelism the pool had lost (its busy cores' work on VALUE threads) to its waiting removed
    busy = max(1.0, min(float(b.threads), b.workload_cores or 1.0))
    lost = 1.0 / (wait + compute * max(1.0, busy / int(value)))
    return Prediction(None, min(lost, model), max(lost, model), range_why(b, knob, value))


def range_why(b: Baseline, knob: str, value: Any) -> str:
    """Why a prediction of threads is a range: what the model cannot know on this machine."""
    if int(value) > (b.threads or 0):
        return "how much of a step divides over more threads is not known until they run"
    if (b.others_cores or 0.0) >= 0.25:
        return "other programs hold the cores, and how much fewer threads gain there depends on how the pool's " \
               "threads wait"
    if b.limit < b.cores:
        return f"it may use {b.limit:g} of the {b.cores} cores, and what fewer threads gain there depends on how " \
               "the pool's threads wait"
    return "fewer threads wait less for cores but may lose parallelism, which the run's figures do not split"


def gain_text(a: Advice) -> str | None:
    """The predicted gain in words, or None where none is: ``predicted 2.1× the steps/s, from
    340 steps``, ``measured 1.4× …`` or ``predicted 0.6–2.9× …: why; try measures it``."""
    if a.predicted_gain is not None:
        verb = "measured" if a.measured else "predicted"
        source = f", from {a.predicted_from} steps{' of it in the run' if a.measured else ''}" \
            if a.predicted_from else ""
        return f"{verb} {a.predicted_gain:.1f}× the steps/s{source}"
    if a.gain_range is not None:
        low, high = a.gain_range
        return f"predicted {low:.1f}–{high:.1f}× the steps/s: {a.range_why}; try measures it"
    return None


def _pinned(b: Baseline, step: float, compute: float) -> float | None:
    """The steps a second with pinned memory: each batch's copy to the GPU saves what copying
    from pageable memory took over copying from pinned (at most the step's compute, where the
    loop copies, after its batch is out); the pinning is paid in ``__next__`` by a loader
    without workers, and by the pin thread beside the loop otherwise, which then hands the loop
    no more batches than it pins."""
    if b.copy is None:
        return None
    saved = min(max(0.0, float(b.copy["pageable_s"]) - float(b.copy["pinned_s"])), compute)
    pin = float(b.copy["pin_s"])
    new_step = max(step - saved, pin) if b.workers else step - saved + pin
    return 1.0 / new_step if new_step > 0 else None


def considered(run: Run, b: Baseline, verdict: Verdict) -> tuple[list[Advice], list[Advice]]:
    """What to try for RUN, from its baseline B and VERDICT: knobs with their predicted gain,
    first the one the verdict points at, or one Advice without a knob saying why none helps;
    and the knobs its figures point to that the advice leaves out (held back), each predicted
    under MIN_GAIN (or under another knob that is worth a try), best first: what ``devicewatch
    try`` measures too before it says that no variant helps."""
    if not b.instrumented:
        return [Advice(None, None, "the zero-code instrumentation did not see the training loop "
                                   "(report's zero-code line says why): there is nothing to set from outside")], []
    out: list[Advice] = []
    held: list[Advice] = []
    free = b.free_cores
    limit = max(1, int(b.limit + 0.05))
    share = b.data_wait_share
    if share is not None and (share >= INPUT_BOUND_SHARE or verdict.label == "input-bound"):
        sequential = int((b.tf_data or {}).get("sequential_maps") or 0)
        if b.loader is None and sequential:
            out.append(_advice(b, "map_parallel", limit,
                               f"the loop waited on its tf.data input {share:.0%} of the time and {sequential} of its "
                               f"maps run{'s' * (sequential == 1)} one element at a time (num_parallel_calls unset); "
                               f"{b.free_cores:.1f} of {_of_cores(b)} are free"))
        elif b.loader is None and b.tf_data:
            out.append(Advice(None, None, f"the loop waited on its tf.data input {share:.0%} of the time with its maps "
                                          "already parallel: the loading itself is the cost (make each element "
                                          "cheaper, cache or prefetch it)"))
        elif b.loader is None:
            out.append(Advice(None, None, f"the loop waited on its {input_name(run)} {share:.0%} of the time, but it "
                                          "reads no DataLoader on its training thread: how its batches are made is "
                                          "the script's own, which no knob set from outside reaches; a Dataset read "
                                          "by a DataLoader with workers could spread it"))
        elif b.workers and (b.restarts or 0.0) >= RESTARTS:
            every = f"every {1 / b.restarts:.0f} steps" if b.restarts and b.restarts < 0.95 else "every step"
            why = (f"the loop waited on its DataLoader {share:.0%} of the time and takes a new iterator {every}: "
                   f"its {counted(b.workers, 'worker')} start{'s' * (b.workers == 1)} anew each time")
            tried = [_advice(b, "num_workers", 0, f"{why}; without workers nothing starts")]
            if not (b.loader or {}).get("persistent_workers"):
                tried.append(_advice(b, "persistent_workers", True,
                                     f"{why}; persistent workers are not started again, but each new iterator "
                                     "waits for the batches they had read ahead"))
            worth = [a for a in tried if (a.best_gain or 0.0) >= MIN_GAIN]
            out += sorted(worth or tried, key=lambda a: -(a.best_gain or 0.0))
            held += [a for a in tried if worth and a not in worth]
        elif b.workers < min(limit, MAX_WORKERS):
            workers = min(limit, MAX_WORKERS) if b.workers == 0 else min(2 * b.workers, limit, MAX_WORKERS)
            why = (f"the loop waited on its DataLoader {share:.0%} of the time; the DataLoader has "
                   f"{b.workers} worker{'s' * (b.workers != 1)} and {max(0.0, free):.1f} of {_of_cores(b)} are free")
            out.append(_advice(b, "num_workers", workers, why))
        elif not (b.loader or {}).get("persistent_workers"):
            out.append(_advice(b, "persistent_workers", True,
                               f"the loop waited on its DataLoader {share:.0%} of the time with "
                               f"{counted(b.workers, 'worker')} that are started anew every epoch"))
        else:
            out.append(Advice(None, None, f"the loop waited on its DataLoader {share:.0%} of the time with "
                                          f"{counted(b.workers, 'persistent worker')} on {_of_cores(b)}: the loading itself "
                                          "is the cost (make each item cheaper, or cache it)"))
    if b.copy is not None and b.loader is not None and not b.loader.get("pin_memory"):
        copy = b.copy
        out.append(_advice(b, "pin_memory", True,
                           f"the loop copies each batch to the GPU from pageable host memory (pin_memory=False): "
                           f"{_ms(copy['pageable_s'])} a batch, {_ms(copy['pinned_s'])} from pinned memory, which "
                           f"pinning takes {_ms(copy['pin_s'])} to make "
                           f"({'beside the loop, in' if b.workers else 'in the loop, without'} loader workers)"))
    more = int(b.free_cores + 0.05)   # whole cores free: threads beyond them fight other programs
    obtainable = max(1, int(b.usable_cores + 0.05))
    if verdict.label == "contended" and b.threads is not None and b.threads > obtainable:
        out.append(_advice(b, "threads", obtainable,
                           f"contended: PyTorch runs its operators on {counted(b.threads, 'thread')}, which waited for "
                           f"a core {b.wait_share or 0:.0%} of the time they wanted one, and "
                           f"{_cores(b).can_get(b.others_cores)}"))
    elif verdict.label in ("single-core-bound", "partly parallel") and b.threads is not None and b.threads < limit \
            and more >= 1:
        out.append(_advice(b, "threads", min(limit, b.threads + more),
                           f"{verdict.label}: PyTorch runs its operators on {counted(b.threads, 'thread')} "
                           f"and {max(0.0, free):.1f} of {_of_cores(b)} are free"))
    worth = [_worth_it(a, b) for a in out]
    held += [a for a, kept in zip(out, worth) if kept is not a]
    out = worth
    if not out:
        if verdict.label == "contended":
            why = (f"contended: its threads waited for a core {b.wait_share or 0:.0%} of the time they wanted one, "
                   f"and none of its knobs asks for fewer cores ({_cores(b).others(b.others_cores or 0.0)}): run it "
                   "when they are done, or give it cores of its own")
        elif verdict.label == "CPU-bound":
            why = (f"every core is working ({_busy_text(b)}): the model itself is the cost, and no knob that leaves "
                   "its arithmetic alone makes it faster")
        elif verdict.label == "single-core-bound":
            why = ("one core does the work with every operator thread in use: the serial part is the script's "
                   "own Python, which no knob set from outside spreads")
        else:
            why = f"{verdict.label}: nothing the data feeding or the threads hold back"
        out.append(Advice(None, None, why))
    return out, sorted(held, key=lambda a: -(a.best_gain or 0.0))


def shown(run: Run, s: Series, all_phases: list[Phase], rows: list[EpochRow], wait: DataWait | None,
          verdict: Verdict) -> list[Advice]:
    """The advice a view shows beside the VERDICT, from the figures it was judged on: none for a
    run whose training loop the instrumentation did not see (a workload of devicewatch's own, a
    script run without it)."""
    if setup_of(run) is None:
        return []
    return considered(run, baseline(run, s, all_phases, rows, wait, verdict), verdict)[0]


def _advice(b: Baseline, knob: str, value: Any, why: str) -> Advice:
    found = prediction(b, knob, value)
    if found is None or not b.steps_per_s:
        return Advice(knob, value, why)
    if found.steps_per_s is not None:
        return Advice(knob, value, why, round(found.steps_per_s, 3), round(found.steps_per_s / b.steps_per_s, 3),
                      predicted_from=found.measured_steps or b.steps, measured=found.measured_steps is not None)
    assert found.low is not None and found.high is not None
    return Advice(knob, value, why, predicted_range=(round(found.low, 3), round(found.high, 3)),
                  gain_range=(round(found.low / b.steps_per_s, 3), round(found.high / b.steps_per_s, 3)),
                  range_why=found.why, predicted_from=b.steps)


def _worth_it(a: Advice, b: Baseline) -> Advice:
    """A knob whose predicted gain is under MIN_GAIN becomes advice to leave it: more loader
    workers or threads with no core free to run them only share the cores the loop has."""
    gain = a.best_gain
    if a.knob is None or gain is None or gain >= MIN_GAIN:
        return a
    at = f"{'measured' if a.measured else 'predicted'} at {'most ' * (a.predicted_gain is None)}{gain:.2f}×"
    if a.measured:   # its own steps were timed: what they made is the reason, not a model's
        return Advice(None, None, f"{a.why}, and {a.label} is {at} the steps/s over "
                                  f"{a.predicted_from} steps of it timed in the run")
    if a.knob in ("persistent_workers", "pin_memory"):  # no core is wanted: the reset's wait, the copy is the cost
        return Advice(None, None, f"{a.why}, and {a.label} is {at} the steps/s")
    return Advice(None, None, f"{a.why}, and {a.label} is {at} the steps/s: "
                              f"its work has no core to spread over: {_cores(b).can_get(b.others_cores)}")


def _cores(b: Baseline) -> Cores:
    """The machine's cores and those the workload may use, as every sentence counts them."""
    return Cores(b.cores, b.allowed_cores)


def _of_cores(b: Baseline) -> str:
    """``2 cores`` or ``4 cores allowed of 64``."""
    return _cores(b).of()


def _busy_text(b: Baseline) -> str:
    """``2.0 of 2 cores busy``, ``0.5 of 0.5 cores allowed of 2 busy`` (the workload's, where it
    may use fewer than the machine's), with what other programs took where it matters."""
    cores = _cores(b)
    text = f"{cores.used(b.workload_cores)} busy" if cores.limited and b.workload_cores is not None \
        else f"{cores.busy(b.machine_cores)} busy"
    if not cores.limited and b.workload_cores is not None and b.machine_cores - b.workload_cores >= 0.5:
        text += f", {b.workload_cores:.1f} of them by the workload"
    if b.others_cores is not None and b.others_cores >= OTHERS_NOTABLE:
        text += f"; {cores.others(b.others_cores)}"
    return text


def _ms(seconds: Any) -> str:
    return f"{float(seconds) * 1000:.2g} ms"


def _word(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# Advice for a job devicewatch attached to: it runs on as it was started, so a knob takes effect
# when it is started again.
NEXT_START = "on the next start: "


def attached_run(run: Run) -> bool:
    """Whether RUN recorded a process devicewatch attached to (``devicewatch attach``)."""
    return isinstance(run.header.raw.get("attached"), dict)


def text(advice: Advice) -> str:
    """One line: ``try num_workers=2: the DataLoader has … (predicted 2.6× the steps/s)``."""
    if advice.knob is None:
        return f"nothing to try from outside: {advice.why}"
    gain = gain_text(advice)
    return f"try {advice.label}: {advice.why}" + (f" ({gain})" if gain else "")
