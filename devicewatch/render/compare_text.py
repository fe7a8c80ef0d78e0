"""A comparison of two runs as text: rich tables for ``compare --text`` and the dashboard.

The figures come from ``devicewatch.compare``; this module only lays them out.
"""

from __future__ import annotations

import io
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from .. import analysis
from ..compare import Comparison
from ..safe_text import inert, inert_table

PER_CORE_TEXT_LIMIT = 16  # more cores than this: per-core columns only in --json
SECTIONS = ("runs", "epochs", "metrics", "utilization", "idle", "results")  # reading order


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}s"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _both(a: float | None, b: float | None) -> str:
    return f"{_percent(a)} → {_percent(b)}"


def sections(c: Comparison) -> dict[str, Any]:
    """The comparison's tables by section name (see SECTIONS), each present only when it has rows.

    The text and the dashboard pick sections by name, so neither depends on a table's title.
    """
    out: dict[str, Any] = {}
    head = Table(title="Runs", title_justify="left")
    head.add_column("")
    head.add_column("A")
    head.add_column("B")
    head.add_row("command", c.a.command, c.b.command)
    head.add_row("file", c.a.run.path, c.b.run.path)
    head.add_row("status", c.a.status, c.b.status)
    head.add_row("whole run", _secs(c.a.duration), _secs(c.b.duration))
    if c.a.epochs or c.b.epochs:
        head.add_row("epochs", f"{len(c.a.epochs)} in {_secs(c.a.epoch_seconds)}",
                     f"{len(c.b.epochs)} in {_secs(c.b.epoch_seconds)}")
    head.add_row("machine", f"{c.a.cores} cores" + "".join(f"; {g}" for g in c.a.gpu_names),
                 f"{c.b.cores} cores" + "".join(f"; {g}" for g in c.b.gpu_names))
    for key in ("framework", "device", "params", "data"):
        if key in c.a.run_info or key in c.b.run_info:
            head.add_row(key, str(c.a.run_info.get(key, "-")), str(c.b.run_info.get(key, "-")))
    speed = "-" if c.speedup is None else f"{c.speedup:.2f}x (A time / B time, over the {c.basis})"
    head.add_row("speedup of B", "", speed)
    out["runs"] = head

    if c.epochs:
        table = Table(title="Epochs (Δ = B − A; each phase: A / B, lanes merged)", title_justify="left")
        names = analysis.phase_names([r for p in c.epochs for r in (p.a, p.b) if r is not None])
        for column in ("epoch", "A total", "B total", "Δ total", "Δ %", *names, "A / B in no phase"):
            table.add_column(column, justify="right")
        for p in c.epochs:
            change = p.change()
            table.add_row(str(p.epoch), _secs(p.a and p.a.total), _secs(p.b and p.b.total),
                          _signed(p.delta("total")), "-" if change is None else f"{change * 100:+.0f}%",
                          *[f"{_secs(p.a and p.a.phases.get(n))} / {_secs(p.b and p.b.phases.get(n))}" for n in names],
                          f"{_secs(p.a and p.a.untracked)} / {_secs(p.b and p.b.untracked)}")
        out["epochs"] = table
        metric_names = [m for p in c.epochs if p.a for m in p.a.metrics]
        common = list(dict.fromkeys(m for m in metric_names
                                    if any(p.b and m in p.b.metrics for p in c.epochs)))
        if common:
            table = Table(title="Epoch metrics (A → B)", title_justify="left")
            table.add_column("epoch", justify="right")
            for m in common:
                table.add_column(m, justify="right")
            for p in c.epochs:
                cells = [str(p.epoch)]
                for m in common:
                    va = p.a.metrics.get(m) if p.a else None
                    vb = p.b.metrics.get(m) if p.b else None
                    cells.append(f"{_fmt(va)} → {_fmt(vb)}")
                table.add_row(*cells)
            out["metrics"] = table

    if c.phases:
        table = Table(title="Mean utilization per phase (A → B)", title_justify="left")
        table.add_column("phase")
        table.add_column("time A → B", justify="right")
        table.add_column("CPU total", justify="right")
        cores = c.a.cores if c.per_core and c.a.cores <= PER_CORE_TEXT_LIMIT else 0
        for i in range(cores):
            table.add_column(f"core {i}", justify="right")
        gpu_columns: list[tuple[str, int | None, int | None]] = []
        if c.per_gpu:
            gpu_columns = [(f"GPU {g}", g, g) for g in range(c.a.gpus)]
        elif c.a.gpus and not c.b.gpus:
            gpu_columns = [(f"GPU {g} (A only)", g, None) for g in range(c.a.gpus)]
        elif c.b.gpus and not c.a.gpus:
            gpu_columns = [(f"GPU {g} (B only)", None, g) for g in range(c.b.gpus)]
        for title, _, _ in gpu_columns:
            table.add_column(title, justify="right")
        for p in c.phases:
            cells = [p.name, f"{_secs(p.seconds('a'))} → {_secs(p.seconds('b'))}",
                     _both(p.cpu_total("a"), p.cpu_total("b"))]
            cells += [_both(p.core("a", i), p.core("b", i)) for i in range(cores)]
            cells += [_both(None if ga is None else p.gpu("a", ga), None if gb is None else p.gpu("b", gb))
                      for _, ga, gb in gpu_columns]
            table.add_row(*cells)
        out["utilization"] = table

    kind = {"GPU": "GPU", "CPU": "total CPU", "mixed": "GPU where sampled, else total CPU"}[c.idle_kind]
    table = Table(title=f"Idle time and dips ({kind}; dips below {analysis.DIP_THRESHOLD:.0f}%)",
                  title_justify="left")
    for column in ("run", "device", "mean", "idle", "dips", "dip time", "dips fall in"):
        table.add_column(column, justify="left" if column in ("run", "device", "dips fall in") else "right")
    for s in (c.a, c.b):
        d = s.idle_device
        if d is None:
            table.add_row(s.label, "-", "-", "-", "-", "-", "too few samples")
        else:
            table.add_row(s.label, d.device, _percent(d.mean), f"{d.idle_fraction:.0%}", str(len(d.dips)),
                          _secs(d.dip_seconds), ", ".join(sorted({x.phase for x in d.dips})) or "-")
    out["idle"] = table

    names = list(dict.fromkeys([r["name"] for r in c.a.results] + [r["name"] for r in c.b.results]))
    if names:
        table = Table(title="Results (A → B)", title_justify="left")
        keys = list(dict.fromkeys(k for r in c.a.results + c.b.results for k in r if k != "name"))
        table.add_column("name")
        for k in keys:
            table.add_column(k, justify="right")
        ra = {r["name"]: r for r in c.a.results}
        rb = {r["name"]: r for r in c.b.results}
        for n in names:
            table.add_row(str(n), *[f"{_fmt(ra.get(n, {}).get(k))} → {_fmt(rb.get(n, {}).get(k))}" for k in keys])
        out["results"] = table
    # Names, keys and statuses come from the run files: shown as text, never as markup.
    return {name: inert_table(table) for name, table in out.items()}


def closing_lines(c: Comparison) -> list[str]:
    """What follows the tables in the text: verdicts, notes, and the headline last."""
    lines = []
    if c.phases and c.per_core and c.a.cores > PER_CORE_TEXT_LIMIT:
        lines.append(f"{c.a.cores} cores: per-core columns are in --json only")
    lines += [f"verdict A: {c.a.verdict.text}", f"verdict B: {c.b.verdict.text}"]
    lines += [f"note: {note}" for note in c.notes]
    lines.append(f"in short: {c.headline}")
    return [inert(line, newlines=True) for line in lines]


def renderables(c: Comparison) -> list[Any]:
    """The comparison as rich renderables in reading order: the tables, then the closing lines."""
    tables = sections(c)
    return [tables[name] for name in SECTIONS if name in tables] + closing_lines(c)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def comparison_text(c: Comparison, width: int = 120, color: bool = False) -> str:
    """The comparison as plain text (no colour codes unless ``color``), for logs and tests."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, emoji=False, markup=False)
    for item in renderables(c):
        console.print(item, markup=False) if isinstance(item, str) else console.print(item)
    return buffer.getvalue()


def print_comparison(c: Comparison, width: int | None) -> None:
    """To a terminal with its width, else as plain text at ``width`` (default 120)."""
    if sys.stdout.isatty():
        console = Console(width=width, highlight=False, emoji=False, markup=False)
        for item in renderables(c):
            console.print(item, markup=False) if isinstance(item, str) else console.print(item)
    else:
        sys.stdout.write(comparison_text(c, width=width or 120))
