"""What ``try`` predicts for a loop that takes a new iterator over its DataLoader every step,
from the figures the instrumentation measured (``advice.predict`` on literal baselines)."""

from __future__ import annotations

import pytest

from devicewatch.analysis.advice import Baseline, predict


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
