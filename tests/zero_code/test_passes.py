"""Where a loop that reads no DataLoader is in its pass, read from real frames: small training
loops of plain functions, with ``model()``, ``step()`` and ``evaluate()`` standing where the
hooks hear the model's call, the optimizer's step and an evaluation's start."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from devicewatch.integrations.zero_code.passes import Passes


class Hooks:
    """What torch_hooks tells ``Passes``: the frame that called the model, an optimizer step
    (where ``check``), and an evaluation's start, whose answers are kept in ``verdicts``."""

    def __init__(self, check: bool = True) -> None:
        self.passes = Passes()
        self.check = check
        self.verdicts: list[bool | None] = []

    def model(self) -> None:
        self.passes.call(sys._getframe(1))

    def step(self) -> None:
        if self.check:
            self.passes.stepped(sys._getframe())

    def evaluate(self) -> None:
        self.verdicts.append(self.passes.left(sys._getframe()))


def run(loop: Callable[[Hooks], None], check: bool = True) -> list[bool | None]:
    """LOOP run on a thread of its own, so that no loop of the test runner's is around it."""
    hooks = Hooks(check)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            loop(hooks)
        except BaseException as exc:
            errors.append(exc)
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    assert not errors, errors
    return hooks.verdicts


def test_an_inner_for_loop_left_before_each_evaluation_ended_its_pass() -> None:
    def loop(hooks: Hooks) -> None:
        for _epoch in range(3):
            for _batch in range(4):
                hooks.model()
                hooks.step()
            hooks.evaluate()
    assert run(loop) == [True, True, True]


def test_a_function_that_loops_over_an_epoch_and_returns_ended_its_pass() -> None:
    def train_epoch(hooks: Hooks) -> None:
        for _batch in range(4):
            hooks.model()
            hooks.step()

    def loop(hooks: Hooks) -> None:
        for _epoch in range(3):
            train_epoch(hooks)
            hooks.evaluate()
    assert run(loop) == [True, True, True]


def test_a_step_function_called_from_the_loop_finds_the_callers_loop() -> None:
    def train_step(hooks: Hooks) -> None:
        hooks.model()
        hooks.step()

    def loop(hooks: Hooks) -> None:
        for _epoch in range(2):
            for batch in range(6):
                train_step(hooks)
                if batch == 2:
                    hooks.evaluate()   # in the middle of the pass
            hooks.evaluate()           # after it
    assert run(loop) == [False, True, False, True]


def test_an_evaluation_inside_the_loops_body_every_n_steps_is_no_passs_end() -> None:
    def loop(hooks: Hooks) -> None:
        for it in range(9):
            hooks.model()
            hooks.step()
            if it % 3 == 2:
                hooks.evaluate()
    assert run(loop) == [False, False, False]


def test_a_while_loop_has_no_pass_to_end() -> None:
    def loop(hooks: Hooks) -> None:
        it = 0
        while it < 6:
            hooks.model()
            hooks.step()
            it += 1
            if it % 3 == 0:
                hooks.evaluate()
    assert run(loop) == [None, None]


def test_a_micro_batch_loop_inside_the_step_is_passed_over_for_the_loop_around_the_step() -> None:
    """Gradient accumulation: the model's call is in a loop that ends before the optimizer
    steps; the pass is the loop around the whole step."""
    def loop(hooks: Hooks) -> None:
        for it in range(6):
            for _micro in range(2):
                hooks.model()
            hooks.step()
            if it % 3 == 2:
                hooks.evaluate()
    assert run(loop) == [False, False]

    def epochs(hooks: Hooks) -> None:
        for _epoch in range(2):
            for _batch in range(3):
                for _micro in range(2):
                    hooks.model()
                hooks.step()
            hooks.evaluate()
    assert run(epochs) == [True, True]
    # unchecked (no optimizer ever steps), the micro-batch loop is taken for the pass
    assert run(loop, check=False) == [True, True]


def test_a_step_function_with_its_own_micro_batch_loop_finds_the_callers_loop() -> None:
    def train_step(hooks: Hooks) -> None:
        for _micro in range(2):
            hooks.model()
        hooks.step()

    def loop(hooks: Hooks) -> None:
        for it in range(6):
            train_step(hooks)
            if it % 3 == 2:
                hooks.evaluate()
    assert run(loop) == [False, False]


def test_no_evaluation_since_the_last_step_has_no_loop_to_judge() -> None:
    def loop(hooks: Hooks) -> None:
        for _batch in range(3):
            hooks.model()
            hooks.step()
        hooks.evaluate()
        hooks.evaluate()   # a second evaluation, no step between: nothing is held
    assert run(loop) == [True, None]


def test_the_returned_loops_locals_are_not_kept_alive_until_the_evaluation() -> None:
    class Batch:
        pass

    kept: list[Any] = []

    def train_epoch(hooks: Hooks) -> None:
        for _ in range(2):
            batch = Batch()
            kept.append(weakref.ref(batch))
            hooks.model()
            hooks.step()

    def loop(hooks: Hooks) -> None:
        train_epoch(hooks)
        assert [ref() for ref in kept] == [None, None]   # freed as the function returned
        hooks.evaluate()
    assert run(loop) == [True]
