"""An alternating run's paired bursts as figures: what ``bench_zero_code`` and
``bench_keras2_fetch`` both print (each burst hooked or bare, neighbours paired)."""

from __future__ import annotations

import statistics

CLOCKS = {"cpu": "the process's CPU time, paired bursts", "wall": "wall time, paired bursts",
          "total": "wall time, total of each kind"}


def alternation(printed: list[float]) -> dict[str, tuple[float, float]]:
    """What an alternating run printed, as {clock: (slowdown, bare steps/s)}."""
    bare, hooked, wall, wall_rate, cpu, cpu_rate = printed
    return {"cpu": (cpu - 1, cpu_rate), "wall": (wall - 1, wall_rate), "total": (bare / hooked - 1, bare)}


def line(figures: dict[str, tuple[float, float]]) -> str:
    return "; ".join(f"{clock} {100 * slowdown:+.2f}% ({1e6 / rate * slowdown:+.1f} µs a step at {rate:.0f} steps/s)"
                     for clock, (slowdown, rate) in figures.items())


def summary(name: str, runs: list[dict[str, tuple[float, float]]]) -> str:
    """Each clock's figures over the runs, and their medians."""
    text = [f"{name}:"]
    for clock, label in CLOCKS.items():
        slowdowns = [run[clock][0] for run in runs]
        costs = [1e6 / run[clock][1] * run[clock][0] for run in runs]
        rates = [run[clock][1] for run in runs]
        text.append(f"  {label}: " + ", ".join(f"{100 * s:+.2f}%" for s in slowdowns)
                    + f" (median {100 * statistics.median(slowdowns):+.2f}%), "
                    + ", ".join(f"{c:+.1f}" for c in costs) + f" µs a step (median {statistics.median(costs):+.1f}), "
                    + "bare " + ", ".join(f"{r:.0f}" for r in rates) + " steps/s")
    return "\n".join(text)
