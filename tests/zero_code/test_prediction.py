"""What ``try`` predicts, from the figures the instrumentation measured (``advice.predict`` and
``advice.prediction`` on literal baselines): a loop that takes a new iterator every step, pinned
memory, and threads, where the model cannot know and a trial times the variant or a range is given."""

from __future__ import annotations

import pytest

from devicewatch.analysis.advice import (Baseline, Calibration, Prediction, _advice, _worth_it, calibrations, predict,
                                         prediction, text)
from devicewatch.integrations.zero_code.trial import LOADER_SETTLE_STEPS, MIN_CALIBRATION_STEPS, SETTLE_STEPS, Trial


def baseline(**figures: object) -> Baseline:
    """10 steps/s on 2 free cores, waiting 80% of the time on a DataLoader with 2 workers."""
    given: dict[str, object] = dict(steps_per_s=10.0, data_wait_share=0.8, cores=2, workload_cores=1.0,
                                    machine_cores=1.0, loading_cores=1.0,
                                    loader={"num_workers": 2, "persistent_workers": False, "prefetch_factor": None},
                                    threads=1, tf_data=None, gpus=0, instrumented=True, others_cores=0.0,
                                    loader_wait_share=0.2, restarts=1.0, worker_batch_s=0.005)
    given.update(figures)
    return Baseline(**given)  # type: ignore[arg-type]


def test_without_workers_a_restarting_loop_pays_its_compute_and_one_batch():
    # a step of 0.1 s: 0.02 s of compute, 0.08 s waiting; a worker made a batch in 0.005 s
    assert predict(baseline(), "num_workers", 0) == pytest.approx(1 / 0.025)


def test_persistent_workers_on_a_restarting_loop_wait_for_the_batches_read_ahead():
    # the reset waits for 2 batches a worker read ahead, then the first batch: 3 batches
    assert predict(baseline(), "persistent_workers", True) == pytest.approx(1 / (0.02 + 3 * 0.005))
    assert predict(baseline(loader={"num_workers": 2, "prefetch_factor": 4}), "persistent_workers", True) == \
        pytest.approx(1 / (0.02 + 5 * 0.005))


def test_persistent_workers_on_a_loop_that_runs_its_passes_out_save_their_start_up():
    b = baseline(restarts=0.01, worker_batch_s=None)   # the wait outside __next__ is the start-up
    assert predict(b, "persistent_workers", True) == pytest.approx(1 / (0.02 + 0.02))


def test_a_batch_untimed_in_the_workers_is_the_whole_wait_in_next():
    assert predict(baseline(worker_batch_s=None), "num_workers", 0) == pytest.approx(1 / (0.02 + 0.02))


def test_the_timed_teardown_of_a_dropped_iterator_is_input_whatever_its_samples_found():
    # a step of 0.1 s: the wait read at 50%, 20% of it in __next__; the dropped iterator's
    # workers took 40% of the time to shut down: the wait is at least 0.02 + 0.04 = 0.06 s,
    # the loop's own compute 0.04 s
    b = baseline(data_wait_share=0.5, teardown_share=0.4)
    assert predict(b, "num_workers", 0) == pytest.approx(1 / (0.04 + 0.005))
    # a teardown inside the wait already read leaves the compute as it was: 0.05 s
    assert predict(baseline(data_wait_share=0.5, teardown_share=0.1), "num_workers", 0) == \
        pytest.approx(1 / (0.05 + 0.005))


def test_a_trial_window_reports_the_teardown_it_measured_and_none_where_none_was_timed():
    said: list[dict] = []
    trial = Trial({"warmup": 1, "steps": 2, "seconds": None}, lambda: None,
                  say=lambda kind, **fields: said.append(fields))
    trial.teardown = 0.5                    # before the window: not its own
    trial.step(0.0)
    trial.teardown += 0.25
    trial.step(0.5)
    trial.step(1.0)
    assert said[-1]["stage"] == "done" and said[-1]["teardown_s"] == 0.25 and said[-1]["seconds"] == 1.0
    said.clear()
    quiet = Trial({"warmup": 0, "steps": 1, "seconds": None}, lambda: None, say=lambda kind, **fields: said.append(fields))
    quiet.step(0.0)
    quiet.step(1.0)
    assert said[-1]["stage"] == "done" and "teardown_s" not in said[-1]


COPY = {"bytes": 38_535_168, "pageable_s": 0.006, "pinned_s": 0.002, "pin_s": 0.001}


def test_pinned_memory_saves_the_copy_time_over_pinned_and_pays_the_pinning_where_it_is_made():
    # a step of 0.1 s, 0.02 s of it the loop's own: the copy saves 0.006 - 0.002 s a batch
    # without workers the loop pins each batch itself in __next__: 0.1 - 0.004 + 0.001
    assert predict(baseline(copy=COPY, loader={"num_workers": 0}), "pin_memory", True) == pytest.approx(1 / 0.097)
    # with workers the pin thread pins beside the loop: 0.1 - 0.004
    assert predict(baseline(copy=COPY), "pin_memory", True) == pytest.approx(1 / 0.096)
    # ... and hands it no more batches than it pins: a pinning slower than the step is the step
    slow_pin = dict(COPY, pin_s=0.2)
    assert predict(baseline(copy=slow_pin), "pin_memory", True) == pytest.approx(1 / 0.2)
    # the copy is the loop's own work after its batch is out: it saves at most the step's compute
    big = dict(COPY, pageable_s=0.05, pinned_s=0.01)
    assert predict(baseline(copy=big), "pin_memory", True) == pytest.approx(1 / 0.08)
    # a copy not probed (no CUDA in the process) or pinning switched off: not predicted
    assert predict(baseline(), "pin_memory", True) is None
    assert predict(baseline(copy=COPY), "pin_memory", False) is None


# -- where the model cannot know: a measured figure, or a range and why --------------------------

def threads_baseline(**figures: object) -> Baseline:
    """10 steps/s, no data wait (a step of 0.1 s of compute), PyTorch's 2 operator threads."""
    given: dict[str, object] = dict(data_wait_share=0.0, loader={"num_workers": 0}, threads=2, loader_wait_share=None,
                                    restarts=None, worker_batch_s=None, steps=200)
    given.update(figures)
    return baseline(**given)


def test_a_variant_timed_in_the_run_is_predicted_at_what_it_measured_whatever_the_model_says():
    b = threads_baseline(workload_cores=1.0, others_cores=1.0, waiting_cores=1.0,
                         calibrated=(Calibration("threads", 1, 40, 30.0),))
    assert prediction(b, "threads", 1) == Prediction(30.0, measured_steps=40)
    advised = _advice(b, "threads", 1, "contended")
    assert advised.predicted_gain == 3.0 and advised.measured and advised.predicted_from == 40
    assert advised.gain_range is None
    assert "measured 3.0× the steps/s, from 40 steps of it in the run" in text(advised)


def test_fewer_threads_beside_other_programs_are_a_range_from_the_parallelism_lost_to_the_waiting_removed():
    # its 2 threads kept 1 core busy and waited 1 core's worth: half the time they wanted a core.
    # Waiting removed: (1 - 0.5)^2 = a quarter of the compute, 0.025 s: 40 steps/s (4x).
    # Parallelism lost: its busy core's work on 1 thread, 0.1 s: 10 steps/s (1x).
    b = threads_baseline(workload_cores=1.0, others_cores=1.0, waiting_cores=1.0)
    found = prediction(b, "threads", 1)
    assert found is not None and found.steps_per_s is None
    assert (found.low, found.high) == (pytest.approx(10.0), pytest.approx(40.0))
    assert "other programs hold the cores" in (found.why or "")
    advised = _advice(b, "threads", 1, "contended")
    assert advised.predicted_gain is None and advised.gain_range == (1.0, 4.0) and advised.best_gain == 4.0
    said = text(advised)
    assert "predicted 1.0–4.0× the steps/s: other programs hold the cores" in said and "try measures it" in said


def test_fewer_threads_on_one_allowed_core_are_a_range_that_says_the_limit():
    # taskset -c 0: 1 of 2 cores allowed, nobody else on it; the 2 threads kept it busy, waited as much
    b = threads_baseline(allowed_cores=1.0, workload_cores=1.0, others_cores=0.0, waiting_cores=1.0)
    found = prediction(b, "threads", 1)
    assert found is not None and found.steps_per_s is None and found.high == pytest.approx(40.0)
    assert "it may use 1 of the 2 cores" in (found.why or "")


def test_fewer_threads_alone_may_lose_the_parallelism_they_had():
    # alone, 2 threads kept 1.8 cores busy and waited 0.2: a tenth of the time they wanted one.
    # Waiting removed: 0.9^2 = 0.81 of the compute: 1/0.081 steps/s. Its 1.8 cores' work on 1
    # thread: 0.18 s a step, 5.6 steps/s.
    b = threads_baseline(workload_cores=1.8, others_cores=0.0, waiting_cores=0.2)
    found = prediction(b, "threads", 1)
    assert found is not None and found.steps_per_s is None
    assert (found.low, found.high) == (pytest.approx(1 / 0.18), pytest.approx(1 / 0.081))
    assert "may lose parallelism" in (found.why or "")


def test_more_threads_are_a_range_from_a_serial_step_to_every_part_divided():
    # 1 thread on 2 free cores: 2 threads halve the compute at best (20 steps/s), nothing at worst
    b = threads_baseline(threads=1, workload_cores=1.0, others_cores=0.0, waiting_cores=0.0)
    found = prediction(b, "threads", 2)
    assert found is not None and (found.steps_per_s, found.low, found.high) == (None, 10.0, pytest.approx(20.0))
    # ... unless the trial timed it
    timed = threads_baseline(threads=1, workload_cores=1.0, calibrated=(Calibration("threads", 2, 30, 17.0),))
    assert prediction(timed, "threads", 2) == Prediction(17.0, measured_steps=30)


def test_the_loader_knobs_keep_the_models_one_figure_and_say_the_steps_it_rests_on():
    found = prediction(baseline(steps=340), "num_workers", 0)
    assert found == Prediction(pytest.approx(1 / 0.025))
    advised = _advice(baseline(steps=340), "num_workers", 0, "restarts")
    assert advised.predicted_gain == 4.0 and not advised.measured
    assert "predicted 4.0× the steps/s, from 340 steps" in text(advised)


def test_a_range_too_low_to_be_worth_it_is_held_back_at_its_top():
    # alone, waiting little: from 5.6 to 12.3 steps/s of 10 is worth a try (1.23x at most) ...
    b = threads_baseline(workload_cores=1.8, others_cores=0.0, waiting_cores=0.2)
    assert _worth_it(_advice(b, "threads", 1, "why"), b).knob == "threads"
    # ... waiting for nothing, at most 1.0x: held back, saying so
    quiet = threads_baseline(workload_cores=1.8, others_cores=0.0, waiting_cores=0.0)
    held = _worth_it(_advice(quiet, "threads", 1, "why"), quiet)
    assert held.knob is None and "threads=1 is predicted at most 1.00×" in held.why


def test_a_trials_calibrations_are_read_and_a_malformed_one_is_left_out():
    window = {"calibrated": [{"knob": "threads", "value": 1, "steps": 12, "seconds": 0.5, "steps_per_s": 24.0},
                             {"knob": "threads", "value": 4, "steps": 0, "steps_per_s": 0.0},
                             {"knob": 3, "steps": 5, "steps_per_s": 1.0}, "threads=2"]}
    assert calibrations(window) == (Calibration("threads", 1, 12, 24.0),)
    assert calibrations({}) == ()


class Threads:
    """PyTorch's operator threads, as the trial gets and sets them."""

    def __init__(self, n: int) -> None:
        self.n, self.set_to = n, []

    def get(self) -> int:
        return self.n

    def set(self, n: int) -> None:
        self.n = n
        self.set_to.append(n)


def test_a_trial_times_fewer_threads_after_its_window_and_gives_the_script_its_own_back(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    said: list[dict] = []
    threads = Threads(2)
    trial = Trial({"warmup": 1, "steps": 4, "seconds": None}, lambda: None, say=lambda kind, **f: said.append(f))
    trial.threads = (threads.get, threads.set)
    for now in (0.0, 1.0, 2.0, 3.0, 4.0):   # the warm-up's step, then the window's 4 steps: 4 s
        trial.step(now)
    assert threads.set_to == [1] and said[-1]["stage"] == "measuring"
    for i in range(1, SETTLE_STEPS):         # settling: the pool forms again, untimed
        trial.step(4.0 + i / 10)
    trial.step(5.0)                          # timed from here ...
    for i in range(1, 6):                    # ... 5 steps (the least) in 0.5 s: 10 steps/s
        trial.step(5.0 + i / 10)
    done = said[-1]
    assert done["stage"] == "done" and not done["partial"]
    assert (done["steps"], done["seconds"], done["steps_per_s"]) == (4, 4.0, 1.0)   # the window's own
    assert done["calibration_s"] == pytest.approx(1.5)   # the window ended at 4.0 s, the event at 5.5 s
    assert done["calibrated"] == [{"knob": "threads", "value": 1, "steps": 5, "seconds": pytest.approx(0.5),
                                   "steps_per_s": pytest.approx(10.0)}]
    assert threads.set_to == [1, 2]


def test_a_trial_with_fewer_threads_than_cores_times_every_core_and_one_ended_early_says_its_window(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    said: list[dict] = []
    threads = Threads(1)
    trial = Trial({"warmup": 0, "steps": 2, "seconds": None}, lambda: None, say=lambda kind, **f: said.append(f))
    trial.threads = (threads.get, threads.set)
    for now in (0.0, 1.0, 2.0):
        trial.step(now)
    assert threads.set_to == [4]
    trial.finish(2.5)                        # the script ended while 4 threads were being timed
    assert said[-1]["stage"] == "done" and said[-1]["steps"] == 2 and "calibrated" not in said[-1]
    assert threads.set_to == [4, 1]


def test_a_trial_without_threads_to_set_ends_at_its_window():
    said: list[dict] = []
    trial = Trial({"warmup": 0, "steps": 1, "seconds": None}, lambda: None, say=lambda kind, **f: said.append(f))
    trial.step(0.0)
    trial.step(1.0)
    assert said[-1]["stage"] == "done" and "calibrated" not in said[-1]


class Loader:
    """A DataLoader as a trial's calibration sees it: it refuses ``persistent_workers`` once made."""

    def __init__(self, workers: int) -> None:
        object.__setattr__(self, "num_workers", workers)
        object.__setattr__(self, "persistent_workers", False)
        object.__setattr__(self, "_iterator", None)
        object.__setattr__(self, "seen", [])

    def __setattr__(self, name: str, value: object) -> None:
        if name == "persistent_workers":
            raise ValueError("persistent_workers attribute should not be set after DataLoader is initialized")
        object.__setattr__(self, name, value)

    def new_iterator(self) -> None:
        """What its next iterator is made with, then held where its workers persist."""
        self.seen.append((self.num_workers, self.persistent_workers))
        if self.persistent_workers:
            object.__setattr__(self, "_iterator", "kept")


def test_a_loop_that_restarts_its_loaders_workers_gets_both_loader_knobs_timed_then_its_own_back():
    said: list[dict] = []
    loader = Loader(2)
    trial = Trial({"warmup": 0, "steps": 2, "seconds": None}, lambda: None, say=lambda kind, **f: said.append(f))
    trial.loader = lambda: loader
    now = 0.0

    def step() -> None:     # a step takes a new iterator, then trains: 0.1 s
        nonlocal now
        if loader.num_workers:
            trial.iterators += 1
        loader.new_iterator()
        now += 0.1
        trial.step(now)

    for _ in range(3):          # the window's start, then 2 steps
        step()
    assert said[-1]["stage"] != "done" and loader.num_workers == 0
    for _ in range(LOADER_SETTLE_STEPS + MIN_CALIBRATION_STEPS):
        step()
    assert loader.num_workers == 2 and loader.persistent_workers is True
    for _ in range(LOADER_SETTLE_STEPS + MIN_CALIBRATION_STEPS):
        step()
    done = said[-1]
    assert done["stage"] == "done" and [(c["knob"], c["value"], c["steps"]) for c in done["calibrated"]] == \
        [("num_workers", 0, 5), ("persistent_workers", True, 5)]
    assert all(c["steps_per_s"] == pytest.approx(10.0) for c in done["calibrated"])
    # the script's own again: 2 workers started anew, the calibration's persistent iterator let go
    assert (loader.num_workers, loader.persistent_workers, loader._iterator) == (2, False, None)
    assert (0, False) in loader.seen and (2, True) in loader.seen


def test_a_loop_that_keeps_its_iterator_gets_no_loader_knob_timed():
    said: list[dict] = []
    trial = Trial({"warmup": 0, "steps": 2, "seconds": None}, lambda: None, say=lambda kind, **f: said.append(f))
    trial.loader = lambda: Loader(2)
    trial.iterators = 1         # one iterator, before the window
    for now in (0.0, 1.0, 2.0):
        trial.step(now)
    assert said[-1]["stage"] == "done" and "calibrated" not in said[-1]


def test_a_variant_timed_slower_than_the_script_is_held_back_for_what_it_measured():
    # contended, but its 40 steps with one thread made 8 steps/s of the 10 as written: 0.8x
    b = threads_baseline(workload_cores=1.0, others_cores=1.0, waiting_cores=1.0,
                         calibrated=(Calibration("threads", 1, 40, 8.0),))
    held = _worth_it(_advice(b, "threads", 1, "contended"), b)
    assert held.knob is None
    assert held.why == "contended, and threads=1 is measured at 0.80× the steps/s over 40 steps of it timed in the run"


def test_a_loop_starved_of_cores_is_spread_by_the_work_it_did_not_by_its_time_waiting():
    # beside busy programs (1.29 of 2 cores: one core to be had) a sleepy loader's loop made 7
    # steps/s, half the time waiting: 71 ms of loading and 71 ms of "compute" a step, but the
    # process used only 0.37 of a core, 0.3 of one while loading: its compute kept
    # (0.37 - 0.5·0.3)/0.5 = 0.44 of a core busy, the rest of its 71 ms it waited for one.
    # Two workers: the longest of 71 ms (the loop), 36 ms (two loaders) and
    # (71·0.44 + 71·0.3)/1 = 53 ms (its CPU work on one core): the loop's 71 ms, 14 steps/s
    b = baseline(steps_per_s=7.0, data_wait_share=0.5, workload_cores=0.37, machine_cores=1.66, loading_cores=0.3,
                 others_cores=1.29, loader={"num_workers": 0}, threads=2, loader_wait_share=None, restarts=None,
                 worker_batch_s=None)
    assert predict(b, "num_workers", 2) == pytest.approx(14.0)
