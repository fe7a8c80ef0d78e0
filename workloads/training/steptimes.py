"""Per-step wall times of one epoch and their summary (mean and 95th percentile, in ms)."""

from __future__ import annotations

import math
import time


class StepTimes:
    """Collects step durations; ``start()``/``stop()`` around each step, ``summary()`` per epoch."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self._began = 0.0

    def start(self) -> None:
        self._began = time.perf_counter()

    def stop(self) -> None:
        self.durations.append(time.perf_counter() - self._began)

    def summary(self) -> dict[str, float]:
        return summarize(self.durations)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``fraction`` of values at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def summarize(durations: list[float]) -> dict[str, float]:
    """Step count, mean and p95 step time in milliseconds."""
    if not durations:
        return {"steps": 0, "step_ms_mean": float("nan"), "step_ms_p95": float("nan")}
    return {
        "steps": len(durations),
        "step_ms_mean": round(1000.0 * sum(durations) / len(durations), 3),
        "step_ms_p95": round(1000.0 * percentile(durations, 0.95), 3),
    }
