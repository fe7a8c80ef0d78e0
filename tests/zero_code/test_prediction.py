"""What ``try`` predicts for a loop that takes a new iterator over its DataLoader every step,
from the figures the instrumentation measured (``advice.predict`` on literal baselines)."""

from __future__ import annotations

import pytest

from devicewatch.analysis.advice import Baseline, predict
from devicewatch.integrations.zero_code.trial import Trial


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
