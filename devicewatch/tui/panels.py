"""Text panels of the run screen: status line, epoch progress and verdict, epoch bars, watching cost.

Each is a pure function from the model to a ``rich.text.Text``; the screen compares the
result with what is shown and touches the widget only when it changed.
"""

from __future__ import annotations

import math

import numpy as np
from rich.text import Text

from .charts import format_seconds
from ..live.model import RunModel
from ..safe_text import inert

BAR_FULL = "█"
BAR_EMPTY = "░"


def _last(values: np.ndarray) -> float:
    valid = values[~np.isnan(values)] if values.size else values
    return float(valid[-1]) if valid.size else math.nan


def _recent_mean(values: np.ndarray, count: int = 20) -> float:
    """Mean of the last ``count`` samples: a per-sample CPU reading is too jumpy to read."""
    part = values[-count:]
    part = part[~np.isnan(part)]
    return float(part.mean()) if part.size else math.nan


def progress_text(model: RunModel, width: int = 30) -> Text:
    """``epoch 2/5 ██████░░░░ 40%  now: train``: from run_info ``epochs`` and finished epochs."""
    text = Text()
    total = model.epochs_total
    done = model.epochs_done
    if total:
        filled = round(width * min(done, total) / total)
        text.append(f"epoch {min(done + (0 if model.run.finished else 1), total)}/{total} ", style="bold")
        text.append(BAR_FULL * filled, style="green")
        text.append(BAR_EMPTY * (width - filled), style="grey37")
        text.append(f" {done}/{total} done ")
    elif model.epoch_rows:
        text.append(f"epoch {model.epoch_rows[-1].epoch} (total unknown) ", style="bold")
    else:
        text.append("no epochs reported ", style="grey50")
    if model.current_phase and not model.run.finished:
        text.append(" now: ")
        text.append(inert(model.current_phase), style="bold reverse")
    return text


def verdict_text(model: RunModel) -> Text:
    text = Text("verdict: ", style="bold")
    if model.verdict is None:
        text.append("waiting for samples…", style="grey50")
    else:
        text.append(inert(model.verdict.text))
        if not model.run.finished:
            text.append("  (so far)", style="grey50")
    return text


def status_text(model: RunModel, source_label: str, state: str, state_style: str, window: str,
                yscale: str, paused: bool) -> Text:
    text = Text()
    text.append(f" {state} ", style=state_style)
    text.append(f" {inert(model.run.title)} ", style="bold")
    text.append(f"· {format_seconds(model.latest)} · {len(model.run.samples)} samples · {source_label}")
    text.append(f" · window {window} · y {yscale}", style="grey70")
    if paused:
        text.append("  PAUSED ", style="bold black on yellow")
    return text


def epoch_bars(model: RunModel, width: int, max_rows: int = 40) -> Text:
    """One bar per epoch, train then validate then the rest, scaled to the longest epoch; the
    newest ``max_rows`` epochs when there are more."""
    rows = model.epoch_rows
    text = Text()
    if not rows:
        text.append("no epochs yet", style="grey50")
        return text
    text.append("█ train", style="green")
    text.append("  █ validate", style="yellow")
    text.append("  █ other   (seconds: total = train + validate + other)\n", style="grey50")
    longest = max(r.total for r in rows) or 1.0
    bar_w = max(10, width - 30)
    for row in rows[-max(1, max_rows):]:
        scale = bar_w / longest
        train = round(row.train * scale)
        validate = round(row.validate * scale)
        other = max(0, round(row.total * scale) - train - validate)
        text.append(f"{row.epoch:>4} ")
        text.append("█" * train, style="green")
        text.append("█" * validate, style="yellow")
        text.append("█" * other, style="grey50")
        text.append(" " * max(0, bar_w - train - validate - other))
        text.append(f" {row.total:5.1f}s = {row.train:.1f} + {row.validate:.1f} + {row.other:.1f}\n")
    return text


def cost_text(model: RunModel) -> Text:
    """The workload tree's CPU and memory now, and what watching it costs (% of one core)."""
    text = Text()
    cpu, rss, count = _last(model.proc_cpu.values), _last(model.proc_rss.values), _last(model.proc_count.values)
    text.append("workload ", style="bold")
    text.append("-" if math.isnan(cpu) else f"{cpu:.0f}% CPU")
    if not math.isnan(rss):
        text.append(f", {rss / 2**20:.0f} MiB RSS")
    if not math.isnan(count):
        text.append(f", {count:.0f} proc")
    text.append("\nwatching ", style="bold")
    rec, watch = _recent_mean(model.recorder_cpu.values), _recent_mean(model.watcher_cpu.values)
    text.append("recorder " + ("-" if math.isnan(rec) else f"{rec:.1f}%"))
    text.append(" · dashboard " + ("-" if math.isnan(watch) else f"{watch:.1f}%"))
    text.append(" of one core (last 20 samples)", style="grey50")
    return text
