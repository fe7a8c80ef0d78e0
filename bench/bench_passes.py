"""What finding the pass of a loop that reads no DataLoader costs a step (``passes.Passes``).

At each step's model call the hooks walk out from the model's caller to the ``for`` loop
around it; this times that walk (``Passes.call``) as the hooks make it, from a model's caller
in the loop itself and from a step function one and two frames below the loop, against the
same call of a function that does nothing (the floor of any hook), in interleaved rounds.
A DataLoader loop does not make the walk at all. Reported in microseconds a step, and as a
share of a step of a loop at 2,000 steps a second (500 µs).

    python -m bench.bench_passes [--steps 200000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from devicewatch.integrations.zero_code.passes import Passes

STEP_S = 1 / 2000   # a step of the zero-code budget's loop (docs/benchmarks.md: ~2,000 steps/s)


def loops(hook: Callable[[], None], steps: int) -> dict[str, Callable[[], float]]:
    """Training loops of STEPS steps whose model's call runs HOOK (as the wrapped
    ``Module.__call__`` runs the hooks' ``called``), each returning its seconds."""
    def model() -> None:
        hook()

    def direct() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            model()
        return time.perf_counter() - start

    def train_step() -> None:
        model()

    def outer_step() -> None:
        train_step()

    def step_function() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            train_step()
        return time.perf_counter() - start

    def two_below() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            outer_step()
        return time.perf_counter() - start

    return {"model called in the loop": direct, "from a step function": step_function,
            "two frames below the loop": two_below}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    passes = Passes()

    def find() -> None:   # as torch_hooks.called: frame 2 is the model's caller
        passes.call(sys._getframe(2))

    def nothing() -> None:
        sys._getframe(2)

    timed, floor = loops(find, args.steps), loops(nothing, args.steps)
    extra: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name in timed:
            extra[name].append((timed[name]() - floor[name]()) / args.steps)
    for name, seconds in extra.items():
        median = statistics.median(seconds)
        print(f"{name:28s} {median * 1e6:6.2f} µs a step (spread {min(seconds) * 1e6:.2f}-{max(seconds) * 1e6:.2f}), "
              f"{median / STEP_S:.2%} of a 500 µs step")


if __name__ == "__main__":
    main()
