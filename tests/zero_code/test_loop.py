"""The training-loop state machine on literal observations: what phases and figures it says."""

from __future__ import annotations

from typing import Any

import pytest

from devicewatch.integrations.zero_code import loop as loop_module
from devicewatch.integrations.zero_code.loop import DATA_VISIBLE, Loop

TRAIN_SET, VAL_SET = "train-set", "val-set"


class Heard:
    """A voice that writes down what it is told (every data phase accepted)."""

    def __init__(self, accept_data: bool = True) -> None:
        self.said: list[tuple[Any, ...]] = []
        self.accept_data = accept_data
        self.units: list[str] = []

    def phase(self, kind: str, name: str, epoch: int | None, lane: str, at: float) -> None:
        self.said.append((kind, name, epoch, at))

    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool:
        if self.accept_data:
            self.said.append(("data", epoch, start, end))
        return self.accept_data

    def epoch(self, epoch: int, figures: Any, unit: str = "epoch") -> None:
        self.said.append(("epoch", epoch, figures.to_json()))
        self.units.append(unit)

    def setup(self, train_source: Any) -> None:
        self.said.append(("setup", train_source))

    def phases(self) -> list[tuple[Any, ...]]:
        return [s for s in self.said if s[0] in ("begin", "end")]

    def figures(self) -> dict[int, dict[str, Any]]:
        return {s[1]: s[2] for s in self.said if s[0] == "epoch"}


def no_loader_epochs(loop: Loop, start: float, steps: int = 3) -> float:
    """One epoch of a loop without a DataLoader: train(), STEPS backward passes a second
    apart, then eval() and a second of validation. Returns the time it ends."""
    t = start
    loop.mode(True, t)
    for _ in range(steps):
        t += 1.0
        loop.backward(t)
    t += 0.5
    loop.mode(False, t)
    return t + 1.0


def test_no_dataloader_train_validate_turns_are_segments():
    heard = Heard()
    loop = Loop(heard)
    t = no_loader_epochs(loop, 10.0)   # train 10-13.5, validate 13.5-14.5
    t = no_loader_epochs(loop, t)      # train 14.5-18.0, validate 18.0-19.0
    loop.finish(t)
    assert heard.phases() == [
        ("begin", "train", 1, 10.0), ("end", "train", 1, 13.5), ("begin", "validate", 1, 13.5),
        ("end", "validate", 1, 14.5), ("begin", "train", 2, 14.5), ("end", "train", 2, 18.0),
        ("begin", "validate", 2, 18.0), ("end", "validate", 2, 19.0)]
    # no optimizer ever stepped: the backward passes are the steps; 3 steps in 3.5 s of training;
    # no loader was read, so no data wait is claimed (not measured, not 0)
    assert heard.figures() == {1: {"steps": 3, "steps_per_s": round(3 / 3.5, 3)},
                               2: {"steps": 3, "steps_per_s": round(3 / 3.5, 3)}}
    # no pass over a data set: the units are the stretches between evaluations
    assert heard.units == ["segment", "segment"]


def answers(*verdicts: bool | None) -> Any:
    """A ``loop_left`` that gives VERDICTS in turn, as the hooks would at each evaluation."""
    given = iter(verdicts)
    return lambda: next(given)


def test_no_dataloader_passes_of_a_for_loop_left_before_each_evaluation_are_epochs():
    heard = Heard()
    loop = Loop(heard)
    loop.loop_left = answers(True, True)   # the for loop was left (its function returned) at each eval()
    t = no_loader_epochs(loop, 10.0)
    t = no_loader_epochs(loop, t)
    loop.finish(t)
    assert heard.units == ["epoch", "epoch"]
    # the same turns and figures as the segments they were before
    assert [p[1:4] for p in heard.phases()] == [
        ("train", 1, 10.0), ("train", 1, 13.5), ("validate", 1, 13.5), ("validate", 1, 14.5),
        ("train", 2, 14.5), ("train", 2, 18.0), ("validate", 2, 18.0), ("validate", 2, 19.0)]
    assert heard.figures() == {1: {"steps": 3, "steps_per_s": round(3 / 3.5, 3)},
                               2: {"steps": 3, "steps_per_s": round(3 / 3.5, 3)}}


def test_no_dataloader_evaluations_inside_the_for_loop_give_segments_even_after_it_ends():
    """A step-trainer: evaluations every N steps inside its loop, a last one after it."""
    heard = Heard()
    loop = Loop(heard)
    loop.loop_left = answers(False, False, True)
    t = 0.0
    for _ in range(3):
        t = no_loader_epochs(loop, t)
    loop.finish(t)
    assert heard.units == ["segment"] * 3
    # a while loop (no for loop found) or no look at all: segments, as without the hooks
    for verdicts in ((None, None), ()):
        heard = Heard()
        loop = Loop(heard)
        if verdicts:
            loop.loop_left = answers(*verdicts)
        t = no_loader_epochs(loop, 0.0)
        loop.finish(no_loader_epochs(loop, t))
        assert heard.units == ["segment", "segment"]


def test_no_dataloader_an_evaluation_inside_the_loop_after_a_pass_ended_stays_in_its_epoch():
    heard = Heard()
    loop = Loop(heard)
    loop.loop_left = answers(True, False, True)
    t = no_loader_epochs(loop, 0.0)       # epoch 1: 0-3.5, validated to 4.5
    loop.mode(True, t)
    loop.backward(t + 1.0)
    loop.mode(False, t + 1.5)             # an evaluation in the middle of epoch 2's pass ...
    loop.mode(True, t + 2.0)
    loop.backward(t + 3.0)
    loop.mode(False, t + 3.5)             # ... and the one after it
    loop.finish(t + 4.0)
    assert heard.units == ["epoch", "epoch"]
    assert [p[1:3] for p in heard.phases() if p[0] == "begin"] == [
        ("train", 1), ("validate", 1), ("train", 2), ("validate", 2), ("train", 2), ("validate", 2)]
    assert heard.figures()[2]["steps"] == 2


def test_the_trained_model_loaded_back_and_tested_after_validation_is_an_evaluation_of_its_own():
    heard = Heard()
    loop = Loop(heard)
    t = no_loader_epochs(loop, 0.0)          # validating from 3.5
    loop.mode(False, t + 0.2)                 # another eval() of the model: the same evaluation
    loop.mode(False, t + 0.5, reloaded=True)  # the best checkpoint, torch.load-ed: a test of its own
    loop.finish(t + 1.0)
    assert [p for p in heard.phases() if p[1] == "validate"] == [
        ("begin", "validate", 1, 3.5), ("end", "validate", 1, t + 0.5),
        ("begin", "validate", 1, t + 0.5), ("end", "validate", 1, t + 1.0)]
    assert list(heard.figures()) == [1]


def test_nothing_is_said_until_training_is_confirmed():
    heard = Heard()
    loop = Loop(heard)
    loop.mode(False, 1.0)                            # an inference script: eval() ...
    loop.fetch(VAL_SET, False, True, 1.0, 2.0)       # ... and batches under no_grad
    loop.mode(True, 3.0)
    loop.fetch(TRAIN_SET, True, True, 3.0, 3.1)      # gradients on, but no backward yet
    loop.finish(4.0)
    assert heard.said == []


def dataloader_epoch(loop: Loop, t: float, batches: int = 4, wait: float = 0.2, compute: float = 0.1) -> float:
    """model.train(), BATCHES batches of TRAIN_SET each waited for WAIT and trained on for
    COMPUTE (a backward and a step), the loader running out, then eval() and two validation
    batches under no_grad. Returns the time it ends."""
    loop.mode(True, t)
    for i in range(batches):
        loop.fetch(TRAIN_SET, True, i == 0, t, t + wait)
        t += wait + compute
        loop.backward(t - 0.01)
        loop.step(t)
    loop.exhausted(TRAIN_SET, t)
    loop.mode(False, t + 0.05)
    t += 0.05
    for i in range(2):
        loop.fetch(VAL_SET, False, i == 0, t, t + 0.1)
        t += 0.2
    loop.exhausted(VAL_SET, t)
    return t


def test_dataloader_passes_are_epochs_with_their_data_wait():
    heard = Heard()
    loop = Loop(heard)
    t = dataloader_epoch(loop, 0.0)      # train 0-1.25 (4 × 0.3 s, then eval at 1.25), validate to 1.65
    t = dataloader_epoch(loop, t)
    loop.finish(t)
    phases = heard.phases()
    assert [p[:3] for p in phases] == [
        ("begin", "train", 1), ("end", "train", 1), ("begin", "validate", 1), ("end", "validate", 1),
        ("begin", "train", 2), ("end", "train", 2), ("begin", "validate", 2), ("end", "validate", 2)]
    assert [p[3] for p in phases[:4]] == pytest.approx([0.0, 1.25, 1.25, 1.65])
    # the second epoch begins at its model.train() call, where the first one's validation ends
    assert phases[4][3] == pytest.approx(1.65)
    figures = heard.figures()
    # the loader ran out at 1.2; the epoch's training ends where validation begins (1.25):
    # 4 waits of 0.2 s, 4 steps in 1.25 s
    assert figures[1] == {"data_wait_s": pytest.approx(0.8), "steps": 4, "steps_per_s": round(4 / 1.25, 3),
                          # the loop's wait: each step's end to its next batch out of the loader
                          "wait_s": pytest.approx(0.8), "loader_wait_s": pytest.approx(0.8), "iterators": 1,
                          "waited_on": "DataLoader"}
    assert heard.units == ["epoch", "epoch"]
    assert figures[2] == figures[1]
    # every wait is long enough to see: four data phases an epoch, inside its train phase
    data = [s for s in heard.said if s[0] == "data"]
    assert [d[1] for d in data] == [1] * 4 + [2] * 4
    assert [(d[2], d[3]) for d in data[:4]] == [pytest.approx((0.3 * i, 0.3 * i + 0.2)) for i in range(4)]


def test_a_new_pass_without_the_loader_running_out_begins_the_next_epoch():
    """``for i, batch in enumerate(loader): if i == 2: break``: no StopIteration, a new pass."""
    heard = Heard()
    loop = Loop(heard)
    for epoch_start in (0.0, 10.0):
        loop.fetch(TRAIN_SET, True, True, epoch_start, epoch_start + 0.1)
        loop.backward(epoch_start + 0.5)
        loop.fetch(TRAIN_SET, True, False, epoch_start + 1.0, epoch_start + 1.1)
        loop.step(epoch_start + 1.5)
    loop.finish(12.0)
    assert heard.phases() == [("begin", "train", 1, 0.0), ("end", "train", 1, 10.0),
                              ("begin", "train", 2, 10.0), ("end", "train", 2, 12.0)]
    # the optimizer stepped once in each epoch (backward passes are not the steps then)
    assert heard.figures()[1]["steps"] == 1 and heard.figures()[2]["steps"] == 1
    assert heard.figures()[1]["data_wait_s"] == pytest.approx(0.2)


def test_validation_in_the_middle_of_an_epoch_stays_in_that_epoch():
    heard = Heard()
    loop = Loop(heard)
    loop.fetch(TRAIN_SET, True, True, 0.0, 0.1)
    loop.step(0.5)
    loop.mode(False, 1.0)                           # validate every N steps, inside the pass
    loop.fetch(VAL_SET, False, True, 1.0, 1.1)
    loop.mode(True, 2.0)
    loop.fetch(TRAIN_SET, True, False, 2.0, 2.1)    # the same pass goes on
    loop.step(2.5)
    loop.exhausted(TRAIN_SET, 3.0)
    loop.finish(3.0)
    assert heard.phases() == [("begin", "train", 1, 0.0), ("end", "train", 1, 1.0), ("begin", "validate", 1, 1.0),
                              ("end", "validate", 1, 2.0), ("begin", "train", 1, 2.0), ("end", "train", 1, 3.0)]
    figures = heard.figures()
    assert list(figures) == [1]
    assert {k: figures[1][k] for k in ("data_wait_s", "steps", "steps_per_s")} == \
        {"data_wait_s": pytest.approx(0.2), "steps": 2, "steps_per_s": round(2 / 2.0, 3)}
    # the wait after validation runs from model.train() to the batch: 0.1 s; the first step's 0.1 s
    assert figures[1]["wait_s"] == pytest.approx(0.2)


def test_batches_from_another_data_set_are_validation_even_with_gradients_on():
    """A script that validates without eval() and without no_grad: told apart by its data set."""
    heard = Heard()
    loop = Loop(heard)
    loop.fetch(TRAIN_SET, True, True, 0.0, 0.1)
    loop.step(0.5)
    loop.exhausted(TRAIN_SET, 1.0)
    loop.fetch(VAL_SET, True, True, 1.2, 1.3)
    loop.finish(2.0)
    assert [p[:3] for p in heard.phases()] == [("begin", "train", 1), ("end", "train", 1),
                                               ("begin", "validate", 1), ("end", "validate", 1)]
    assert heard.phases()[2][3] == 1.2


def test_short_waits_are_summed_but_not_drawn_and_touching_waits_are_drawn_as_one():
    heard = Heard()
    loop = Loop(heard)
    loop.fetch(TRAIN_SET, True, True, 0.0, 0.01)          # too short to see
    loop.step(0.1)
    loop.fetch(TRAIN_SET, True, False, 0.2, 0.24)         # 0.04 s ...
    loop.fetch(TRAIN_SET, True, False, 0.241, 0.28)       # ... and 0.039 s 1 ms later: one 0.08 s wait
    loop.step(0.3)
    loop.finish(0.4)
    assert [s for s in heard.said if s[0] == "data"] == [("data", 1, 0.2, 0.28)]
    assert heard.figures()[1]["data_wait_s"] == pytest.approx(0.01 + 0.04 + 0.039)


def test_data_phases_are_rate_bound_but_the_wait_is_exact():
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for i in range(200):  # visible waits 0.01 s apart (not joined), 16.7 a second for 12 s
        loop.fetch(TRAIN_SET, True, i == 0, t, t + DATA_VISIBLE + 0.001)
        loop.step(t + DATA_VISIBLE + 0.005)
        t += DATA_VISIBLE + 0.011
    loop.finish(t)
    drawn = [s for s in heard.said if s[0] == "data"]
    assert len(drawn) <= loop_module.DATA_PHASE_BURST + loop_module.DATA_PHASE_RATE * t < 200
    assert len(drawn) + loop.data.undrawn == 200
    assert heard.figures()[1]["data_wait_s"] == pytest.approx(200 * (DATA_VISIBLE + 0.001))


def test_a_callback_owning_the_phases_silences_the_loop_but_gets_the_wait_and_steps():
    heard = Heard()
    loop = Loop(heard)
    loop.declare_owner("lightning", 0.0)
    loop.fetch(TRAIN_SET, True, True, 0.0, 0.3)               # prefetched before the epoch begins
    loop.declared_phase("train", 1, "main", True, 0.5)
    loop.fetch(TRAIN_SET, True, False, 0.5, 0.6)
    loop.backward(0.8)
    loop.step(0.9)
    loop.mode(False, 1.0)                                    # Lightning's own eval(): no phase from it
    loop.declared_phase("train", 1, "main", False, 1.0)
    loop.declared_phase("validate", 1, "main", True, 1.0)
    loop.fetch(VAL_SET, False, True, 1.0, 1.5)               # validation waits are not training's
    loop.declared_phase("validate", 1, "main", False, 1.5)
    figures = loop.epoch_figures(1, 1.6)
    loop.finish(2.0)
    assert heard.phases() == []
    # how its training data is fed is said once; the 0.3 s prefetch is counted, not drawn
    assert [s[:2] for s in heard.said] == [("setup", TRAIN_SET), ("data", 1)]
    assert figures == {"data_wait_s": pytest.approx(0.3 + 0.1), "steps": 1, "steps_per_s": round(1 / 0.5, 3)}
    assert loop.epoch_figures(1, 1.7) == {}                  # taken once


def test_a_callback_arriving_mid_training_closes_the_loops_own_phase():
    heard = Heard()
    loop = Loop(heard)
    loop.fetch(TRAIN_SET, True, True, 0.0, 0.1)
    loop.step(0.5)
    loop.declare_owner("keras", 1.0)
    loop.step(1.5)
    loop.finish(2.0)
    assert heard.phases() == [("begin", "train", 1, 0.0), ("end", "train", 1, 1.0)]
    assert list(heard.figures()) == [1]


def test_a_fast_loops_tiny_waits_never_add_up_to_a_data_phase():
    """2,000 steps a second: 20 µs waits 480 µs apart, for 2 s. Joined, they would paint the
    whole train phase as data; the waits are 4% of it."""
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for i in range(4000):
        loop.fetch(TRAIN_SET, True, i == 0, t, t + 0.00002)
        loop.step(t + 0.0004)
        t += 0.0005
    loop.finish(t)
    assert [s for s in heard.said if s[0] == "data"] == []
    assert heard.figures()[1]["data_wait_s"] == pytest.approx(4000 * 0.00002)


def read_ahead_epoch(loop: Loop, t: float, batches: int = 4) -> float:
    """An Accelerate-style epoch: the wrapper reads one batch ahead, so the DataLoader runs out
    while the loop still holds its last batch, which is then trained on; eval() follows."""
    loop.mode(True, t)
    loop.fetch(TRAIN_SET, True, True, t, t + 0.1)          # the first batch, read ahead
    t += 0.1
    for i in range(batches):
        if i < batches - 1:
            loop.fetch(TRAIN_SET, True, False, t, t + 0.1)  # the next batch, before this one trains
            t += 0.1
        else:
            loop.exhausted(TRAIN_SET, t)                   # the loader ran out: one batch still held
        t += 0.2
        loop.backward(t - 0.01)
        loop.step(t)
    loop.mode(False, t + 0.05)
    t += 0.05
    loop.fetch(VAL_SET, False, True, t, t + 0.1)
    return t + 0.2


def test_a_loader_read_ahead_ends_the_epoch_at_the_loops_pass_not_the_loaders():
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for _ in range(3):
        t = read_ahead_epoch(loop, t)
    loop.finish(t)
    begins = [p[1:3] for p in heard.phases() if p[0] == "begin"]
    # three epochs, each with its validation; no fourth one-step epoch
    assert begins == [("train", 1), ("validate", 1), ("train", 2), ("validate", 2), ("train", 3), ("validate", 3)]
    assert [f["steps"] for f in heard.figures().values()] == [4, 4, 4]


def test_a_model_train_after_the_last_evaluation_leaves_no_empty_unit():
    """``estimate_loss()`` ends with model.train(); after the last one, the script ends."""
    heard = Heard()
    loop = Loop(heard)
    t = no_loader_epochs(loop, 0.0)
    loop.mode(True, t)          # model.train() at the end of the evaluation ...
    loop.finish(t + 0.5)        # ... and nothing trains after it
    assert [p[1:3] for p in heard.phases() if p[0] == "begin"] == [("train", 1), ("validate", 1)]
    assert list(heard.figures()) == [1]
    # the validate phase ends at the model.train() call
    assert heard.phases()[-1] == ("end", "validate", 1, t)


def test_an_endless_loader_is_read_in_segments_between_evaluations():
    heard = Heard()
    loop = Loop(heard)
    loop.endless(TRAIN_SET)
    t = 0.0
    loop.mode(True, t)
    for segment in range(2):
        for i in range(3):
            loop.fetch(TRAIN_SET, True, segment == 0 and i == 0, t, t + 0.1)
            t += 0.3
            loop.step(t)
        loop.mode(False, t)                       # evaluate every 3 steps
        loop.fetch(VAL_SET, False, True, t, t + 0.1)
        t += 0.5
        loop.mode(True, t)
    loop.finish(t)
    assert [p[1:3] for p in heard.phases() if p[0] == "begin"] == \
        [("train", 1), ("validate", 1), ("train", 2), ("validate", 2)]
    assert heard.units == ["segment", "segment"]
    # a DataLoader was read: its wait is measured, 3 waits of 0.1 s a segment
    assert [f["steps"] for f in heard.figures().values()] == [3, 3]
    assert [f["data_wait_s"] for f in heard.figures().values()] == [pytest.approx(0.3)] * 2


def test_a_rank_waiting_at_a_barrier_is_waiting_not_training():
    """Rank 1 of a run where rank 0 alone validates: it runs its pass out, then waits at a
    barrier until rank 0 is done."""
    heard = Heard()
    loop = Loop(heard, lane="rank 1")
    t = 0.0
    loop.mode(True, t)
    for i in range(3):
        loop.fetch(TRAIN_SET, True, i == 0, t, t + 0.1)
        t += 0.3
        loop.step(t)
    loop.exhausted(TRAIN_SET, t)
    loop.barrier(True, t + 0.01)
    loop.barrier(False, t + 2.0)                  # rank 0 validated for 2 s
    loop.fetch(TRAIN_SET, True, True, t + 2.0, t + 2.1)
    loop.step(t + 2.3)
    loop.finish(t + 2.3)
    phases = heard.phases()
    assert [p[:3] for p in phases] == [
        ("begin", "train", 1), ("end", "train", 1), ("begin", "wait", 1), ("end", "wait", 1),
        ("begin", "train", 2), ("end", "train", 2)]
    assert phases[1][3] == pytest.approx(t + 0.01) and phases[3][3] == pytest.approx(t + 2.0)
    # epoch 1's figures went out when it began waiting: 3 steps in 0.91 s
    assert heard.figures()[1]["steps"] == 3
    assert heard.figures()[1]["steps_per_s"] == round(3 / 0.91, 3)


def test_a_new_iterator_every_step_is_not_a_new_epoch():
    """``next(iter(loader))`` every step: one batch from each new iterator, none run out."""
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for _ in range(5):
        loop.fetch(TRAIN_SET, True, True, t, t + 0.2, length=100)
        loop.compute(t + 0.2)
        t += 0.3
        loop.step(t)
    loop.finish(t)
    assert [p[1:3] for p in heard.phases() if p[0] == "begin"] == [("train", 1)]
    assert heard.units == ["segment"]
    assert heard.figures()[1]["steps"] == 5


def test_a_pass_that_could_not_end_within_a_run_gives_segments_between_evaluations():
    """A sampler of a billion batches, read until a step count, with an evaluation every 3 steps."""
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for segment in range(2):
        for i in range(3):
            loop.fetch(TRAIN_SET, True, segment == 0 and i == 0, t, t + 0.1, length=10**9)
            t += 0.3
            loop.step(t)
        loop.mode(False, t)
        loop.fetch(VAL_SET, False, True, t, t + 0.1, length=4)
        t += 0.5
        loop.mode(True, t)
    loop.finish(t)
    assert heard.units == ["segment", "segment"]
    assert [f["steps"] for f in heard.figures().values()] == [3, 3]


def test_the_loops_wait_between_steps_is_input_in_the_share_the_watcher_found():
    """No DataLoader: the loop waits 0.3 s between its steps (from the optimizer step to the
    model's call); the watcher found two thirds of that wait in a queue, a third in logging."""
    heard = Heard()
    loop = Loop(heard)
    loop.mode(True, 0.0)
    loop.backward(0.1)
    loop.step(0.2)
    for _ in range(2):
        loop.sampled(loop_module.INPUT, "queue at train.py:9")
    loop.sampled(loop_module.OWN, "logging")
    t = 0.2
    for _ in range(4):
        loop.compute(t + 0.3)     # the wait ends at the model's call
        t += 0.5
        loop.step(t)              # ... its compute took 0.2 s
    loop.finish(t)
    figures = heard.figures()[1]
    assert heard.units == ["segment"]
    assert figures["wait_s"] == pytest.approx(1.2)
    assert figures["data_wait_s"] == pytest.approx(0.8)
    assert figures["waited_on"] == "queue at train.py:9"
    # the one wait whose samples found it taking its input is drawn as a data phase
    assert [s[2:] for s in heard.said if s[0] == "data"] == [pytest.approx((0.2, 0.5))]


def test_the_wait_across_an_evaluation_is_not_the_loops_and_unwatched_it_is_the_scripts_own():
    heard = Heard()
    loop = Loop(heard)
    loop.mode(True, 0.0)
    loop.step(1.0)
    loop.mode(False, 1.5)         # evaluation: the stretch since the step is not counted
    loop.mode(True, 3.0)          # training resumes: its wait runs until the model is called
    loop.compute(3.25)
    loop.step(4.0)
    loop.finish(4.0)
    second = heard.figures()[2]
    assert second["wait_s"] == pytest.approx(0.25)
    assert second["data_wait_s"] == 0       # nothing sampled it as input: not called input
    assert "waited_on" not in second


def test_what_a_waiting_loop_is_doing_is_named_from_its_stack():
    spent_on = loop_module.spent_on
    script = ("/home/u/train.py", "main", 42, False, False)
    lib = "/usr/lib/python3.11/"
    torch_data = "/venv/site-packages/torch/utils/data/dataloader.py"
    assert spent_on([(lib + "threading.py", "wait", 1, False, True), (lib + "queue.py", "get", 2, False, True),
                     script]) == (loop_module.INPUT, "queue at train.py:42")
    assert spent_on([(lib + "multiprocessing/queues.py", "get", 1, False, True),
                     (torch_data, "__next__", 2, False, True), script]) == (loop_module.LOADER, "DataLoader")
    assert spent_on([(lib + "logging/__init__.py", "emit", 1, False, True), (torch_data, "__init__", 2, False, True),
                     (torch_data, "__iter__", 3, False, True), script])[0] == loop_module.INPUT
    assert spent_on([("/home/u/data.py", "batches", 7, True, False), script]) == \
        (loop_module.INPUT, "generator batches() in data.py")
    assert spent_on([("/venv/site-packages/torch/serialization.py", "load", 1, False, True), script]) == \
        (loop_module.INPUT, "torch.load at train.py:42")
    assert spent_on([(lib + "logging/__init__.py", "info", 1, False, True), script]) == (loop_module.OWN, "logging")
    assert spent_on([script]) == (loop_module.OWN, "train.py:42")   # a .item() or a print on one of its lines


def test_a_function_of_the_script_that_the_loop_calls_while_waiting_is_its_input_unless_named_for_logging():
    spent_on = loop_module.spent_on
    loop_frame = ("/home/u/train.py", "<module>", 80, False, False)
    assert spent_on([("/home/u/train.py", "get_batch", 45, False, False), loop_frame], loop_at=1) == \
        (loop_module.INPUT, "get_batch() at train.py:45")
    assert spent_on([("/home/u/train.py", "log_metrics", 12, False, False), loop_frame], loop_at=1)[0] == loop_module.OWN
    assert spent_on([loop_frame], loop_at=0) == (loop_module.OWN, "train.py:80")   # the loop's own line


def test_an_evaluation_before_any_training_is_said_in_no_unit_once_training_is_confirmed():
    heard = Heard()
    loop = Loop(heard)
    loop.mode(False, 0.0)                          # model.eval() of the untrained model ...
    loop.fetch(VAL_SET, False, True, 0.1, 0.2)     # ... evaluated on a batch
    loop.mode(True, 1.0)                           # model.train(): the evaluation is over
    loop.mode(False, 1.5)                          # an eval() that evaluates nothing ...
    loop.mode(True, 1.51)                          # ... is no evaluation
    loop.fetch(TRAIN_SET, True, True, 2.0, 2.1)
    assert heard.phases() == []                    # nothing said until training is confirmed
    loop.step(2.5)
    loop.finish(3.0)
    assert heard.phases()[:2] == [("begin", "validate", None, 0.0), ("end", "validate", None, 1.0)]
    assert [p[1:3] for p in heard.phases()[2:]] == [("train", 1), ("train", 1)]


def test_a_loop_fed_by_a_thread_whose_loader_runs_out_has_epochs():
    """A thread reads the DataLoader into a queue; the loop reads the queue and validates after
    each pass: the thread's loader running out makes each pass an epoch."""
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for _ in range(2):
        loop.mode(True, t)
        for i in range(3):
            loop.compute(t + 0.1)
            t += 0.3
            loop.step(t)
            if i == 1:
                loop.exhausted_elsewhere(TRAIN_SET, t)   # read ahead: the thread is done first
        loop.mode(False, t)
        loop.fetch(VAL_SET, False, True, t, t + 0.1)
        t += 0.5
    loop.finish(t)
    assert heard.units == ["epoch", "epoch"]
    assert [f["steps"] for f in heard.figures().values()] == [3, 3]


def test_a_loop_that_replays_a_loader_it_ran_out_once_has_segments():
    """``itertools.cycle(loader)``: the loader runs out once, then the loop trains on the batches
    cycle kept, evaluating every 6 steps."""
    heard = Heard()
    loop = Loop(heard)
    t = 0.0
    for step in range(1, 13):
        if step <= 4:
            loop.fetch(TRAIN_SET, True, step == 1, t, t + 0.1, length=4)
            if step == 4:
                loop.exhausted(TRAIN_SET, t + 0.1)
        t += 0.3
        loop.step(t)
        if step % 6 == 0:
            loop.mode(False, t)
            loop.fetch(VAL_SET, False, True, t, t + 0.1)
            t += 0.5
            loop.mode(True, t)
    loop.finish(t)
    assert heard.units == ["segment", "segment"]
    assert [f["steps"] for f in heard.figures().values()] == [6, 6]


def watch_decision(gaps: list[float]) -> int | None:
    """A loop without a DataLoader whose steps take 4 ms of compute after each gap in GAPS
    (seconds between a step and the next model call): the step at which the watcher of its wait
    was started, or None."""
    started: list[int] = []
    loop = Loop(Heard())
    t = 0.0
    loop.mode(True, t)
    for n, gap in enumerate(gaps):
        loop.watch = lambda n=n: started.append(n)
        t += gap
        loop.compute(t)
        t += 0.004
        loop.step(t)
    return started[0] if started else None


def test_one_preemption_between_two_steps_does_not_start_the_watcher():
    # a fast loop with no wait of its own, preempted once for 12 ms on a busy machine: that span's
    # wait passes the share and the per-step gap, but one span alone is no wait worth sampling
    gaps = [0.0001] * 40
    gaps[12] = 0.012
    assert watch_decision(gaps) is None
    # a loop that waits 2 ms before every step is watched from the end of its first span of 8 steps
    assert watch_decision([0.002] * 40) == 7
    # one that waits 30 ms every eighth step (a prefetcher that falls behind) from its second
    assert watch_decision([0.03 if n % 8 == 0 else 0.0001 for n in range(40)]) == 15
