"""A comparison of two runs as text: rich tables for ``compare --text`` and the dashboard.

The figures come from ``devicewatch.compare``; this module only lays them out.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import analysis
from ..analysis import wording
from ..compare import Comparison, load_lines
from ..loop_figures import STEPS
from ..safe_text import inert, inert_table
from .fit import DEFAULT_WIDTH, PER_CORE_TEXT_LIMIT, Column, fit, output_width

SECTIONS = ("runs", "epochs", "metrics", "utilization", "idle", "results")  # reading order


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}s"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _both(a: float | None, b: float | None) -> str:
    return f"{_percent(a)} → {_percent(b)}"


def _data_wait(row: analysis.EpochRow | None) -> str:
    """One side's data wait in an epoch (``wording.data_wait_text``), ``-`` where it has none."""
    return "-" if row is None else wording.data_wait_text(row.data_wait, row.loop_wait_share)


@dataclass
class Section:
    """One table of the comparison as columns: laid out whole for the dashboard, or fitted to
    a width (what does not fit goes on in a further table) for the text. ``lines`` say what
    the table cannot (a data wait not measured, and why): under the whole table, after the
    fitted ones."""

    title: str
    key: list[Column]
    columns: list[Column]
    lines: list[str] = field(default_factory=list)

    def table(self) -> Table:
        table = Table(title=self.title, title_justify="left", caption_justify="left")
        for column in [*self.key, *self.columns]:
            table.add_column(column.header, justify=column.justify)  # type: ignore[arg-type]  # rich's justify is a Literal; ours is one of its values
        for row in zip(*[c.cells for c in [*self.key, *self.columns]]):
            table.add_row(*row)
        if self.lines:
            table.caption = Text("\n".join(inert(line) for line in self.lines))
        return table

    def fitted(self, width: int) -> list[Table]:
        return fit(self.title, self.key, self.columns, width)


def _specs(c: Comparison) -> dict[str, Section]:
    """The comparison's sections by name (see SECTIONS), each present only when it has rows."""
    out: dict[str, Section] = {}
    rows: list[tuple[str, str, str]] = [
        ("command", c.a.command, c.b.command), ("file", c.a.run.path, c.b.run.path),
        ("status", c.a.status, c.b.status), ("whole run", _secs(c.a.duration), _secs(c.b.duration))]
    if c.a.epochs or c.b.epochs:
        if c.a.unit == c.b.unit:
            rows.append((analysis.units_text(c.a.unit), f"{len(c.a.epochs)} in {_secs(c.a.epoch_seconds)}",
                         f"{len(c.b.epochs)} in {_secs(c.b.epoch_seconds)}"))
        else:
            a_units, b_units = (f"{analysis.units_text(s.unit, len(s.epochs))} in {_secs(s.epoch_seconds)}"
                                for s in (c.a, c.b))
            rows.append((c.units, a_units, b_units))
    rows.append(("machine", analysis.counted(c.a.cores, "core") + "".join(f"; {g}" for g in c.a.gpu_names),
                 analysis.counted(c.b.cores, "core") + "".join(f"; {g}" for g in c.b.gpu_names)))
    for key in ("framework", "device", "params", "data"):
        if key in c.a.run_info or key in c.b.run_info:
            rows.append((key, str(c.a.run_info.get(key, "-")), str(c.b.run_info.get(key, "-"))))
    if c.a.others is not None or c.b.others is not None:
        rows.append(("other programs", c.a.others_text(), c.b.others_text()))
    rows.append(("verdict", c.a.verdict.label, c.b.verdict.label))
    speed = "-" if c.speedup is None else f"{c.speedup:.2f}x (A time / B time, over the {c.basis})"
    rows.append(("speedup of B", "", speed))
    out["runs"] = Section("Runs", [Column("", [r[0] for r in rows], "left")],
                          [Column("A", [r[1] for r in rows], "left", wrap=True),
                           Column("B", [r[2] for r in rows], "left", wrap=True)])

    if c.epochs:
        out.update(_epoch_sections(c))

    if c.phases:
        cores = c.a.cores if c.per_core and c.a.cores <= PER_CORE_TEXT_LIMIT else 0
        gpu_columns: list[tuple[str, int | None, int | None]] = []
        if c.per_gpu:
            gpu_columns = [(f"GPU {g}", g, g) for g in range(c.a.gpus)]
        elif c.a.gpus and not c.b.gpus:
            gpu_columns = [(f"GPU {g} (A only)", g, None) for g in range(c.a.gpus)]
        elif c.b.gpus and not c.a.gpus:
            gpu_columns = [(f"GPU {g} (B only)", None, g) for g in range(c.b.gpus)]
        columns = [Column("time A → B", [f"{_secs(p.seconds('a'))} → {_secs(p.seconds('b'))}" for p in c.phases]),
                   Column("CPU total", [_both(p.cpu_total("a"), p.cpu_total("b")) for p in c.phases])]
        columns += [Column(f"core {i}", [_both(p.core("a", i), p.core("b", i)) for p in c.phases]) for i in range(cores)]
        columns += [Column(title, [_both(None if ga is None else p.gpu("a", ga), None if gb is None else p.gpu("b", gb))
                                   for p in c.phases]) for title, ga, gb in gpu_columns]
        out["utilization"] = Section("Mean utilization per phase (A → B)",
                                     [Column("phase", [p.name for p in c.phases], "left", wrap=True)], columns)

    kind = {"GPU": "GPU", "CPU": "total CPU", "mixed": "GPU where sampled, else total CPU"}[c.idle_kind]
    cells: list[list[str]] = []
    for s in (c.a, c.b):
        d = s.idle_device
        if d is None:
            cells.append([s.label, "-", "-", "-", "-", "-", "too few samples"])
        else:
            cells.append([s.label, d.device, _percent(d.mean), f"{d.idle_fraction:.0%}", str(len(d.dips)),
                          _secs(d.dip_seconds), ", ".join(sorted({x.phase for x in d.dips})) or "-"])
    headers = ("run", "device", "mean", "idle", "dips", "dip time", "dips fall in")
    by_column = [Column(h, [row[i] for row in cells], "left" if h in ("run", "device", "dips fall in") else "right",
                        wrap=h in ("device", "dips fall in")) for i, h in enumerate(headers)]
    out["idle"] = Section(f"Idle time and dips ({kind}; dips below {analysis.DIP_THRESHOLD:.0f}%)",
                          by_column[:1], by_column[1:])

    names = list(dict.fromkeys([r["name"] for r in c.a.results] + [r["name"] for r in c.b.results]))
    if names:
        keys = list(dict.fromkeys(k for r in c.a.results + c.b.results for k in r if k != "name"))
        ra = {r["name"]: r for r in c.a.results}
        rb = {r["name"]: r for r in c.b.results}
        out["results"] = Section("Results (A → B)", [Column("name", [str(n) for n in names], "left", wrap=True)],
                                 [Column(k, [f"{_fmt(ra.get(n, {}).get(k))} → {_fmt(rb.get(n, {}).get(k))}"
                                             for n in names]) for k in keys])
    return out


def _epoch_sections(c: Comparison) -> dict[str, Section]:
    """The epochs table (titled segments where both runs count segments, both named where
    they differ), and the metrics both runs report per epoch."""
    pairs = c.epochs
    names = analysis.phase_names([r for p in pairs for r in (p.a, p.b) if r is not None])
    unit = c.a.unit if c.a.unit == c.b.unit else f"{c.a.unit}/{c.b.unit}"
    heading = (analysis.units_text(c.a.unit).capitalize() if c.a.unit == c.b.unit
               else f"{analysis.units_text(c.a.unit).capitalize()} of A beside {analysis.units_text(c.b.unit)} "
                    "of B, paired by number: not the same work")
    columns = [Column("A total", [_secs(p.a.total if p.a else None) for p in pairs]),
               Column("B total", [_secs(p.b.total if p.b else None) for p in pairs]),
               Column("Δ total", [_signed(p.delta("total")) for p in pairs]),
               Column("Δ %", ["-" if p.change() is None else f"{p.change() * 100:+.0f}%"  # type: ignore[operator]  # change() is not None there
                              for p in pairs])]
    explained = "Δ = B − A; each phase: A / B, lanes merged"
    waits = any(r.data_wait is not None for p in pairs for r in (p.a, p.b) if r is not None)
    if waits:
        columns += [Column(f"{wording.LOOP} A / B", [f"{_secs((p.a.train_loop if p.a else None) or None)} / "
                                                     f"{_secs((p.b.train_loop if p.b else None) or None)}"
                                                     for p in pairs]),
                    Column(f"{wording.DATA_WAIT} A → B", [f"{_data_wait(p.a)} → {_data_wait(p.b)}" for p in pairs])]
        explained += f"; {wording.DATA_WAIT_LEGEND}"
    columns += [Column(n, [f"{_secs(p.a.phases.get(n) if p.a else None)} / {_secs(p.b.phases.get(n) if p.b else None)}"
                           for p in pairs]) for n in wording.shown_phases(names, waits)]
    columns.append(Column("A / B in no phase",
                          [f"{_secs(p.a.untracked if p.a else None)} / {_secs(p.b.untracked if p.b else None)}"
                           for p in pairs]))
    steps = any(p.steps(w) is not None for p in pairs for w in "ab")
    if steps:
        columns.append(Column("steps A / B", [f"{_fmt(p.steps('a'))} / {_fmt(p.steps('b'))}" for p in pairs]))
    lines = [f"{s.label}: {s.unmeasured.text}" for s in (c.a, c.b) if s.unmeasured is not None]
    key = [Column(unit, [str(p.epoch) for p in pairs])]
    out = {"epochs": Section(f"{heading} ({explained})", key, columns, lines)}
    metric_names = [m for p in pairs if p.a for m in p.a.metrics.names()]
    shown = list(dict.fromkeys(m for m in metric_names if any(p.b and m in p.b.metrics.names() for p in pairs)))
    repeated = analysis.repeated_metrics(names, shown) | ({STEPS} if steps else set())
    common = [m for m in shown if m not in repeated]
    if common:
        word = c.a.unit.capitalize() if c.a.unit == c.b.unit else "Epoch/segment"
        out["metrics"] = Section(f"{word} metrics (A → B)", [Column(unit, [str(p.epoch) for p in pairs])],
                                 [Column(m, [f"{_fmt(p.a.metrics.get(m) if p.a else None)} → "
                                             f"{_fmt(p.b.metrics.get(m) if p.b else None)}" for p in pairs])
                                  for m in common])
    return out


def sections(c: Comparison) -> dict[str, Any]:
    """The comparison's tables by section name (see SECTIONS), each present only when it has
    rows, each whole (the dashboard scrolls them).

    The text and the dashboard pick sections by name, so neither depends on a table's title.
    """
    # Names, keys and statuses come from the run files: shown as text, never as markup.
    return {name: inert_table(spec.table()) for name, spec in _specs(c).items()}


def failure_lines(c: Comparison) -> list[str]:
    """Why A or B failed, where one did: the first lines of the text (``analysis.failure``)."""
    return [inert(s.failure.of(s.label)) for s in (c.a, c.b) if s.failure is not None]


def closing_lines(c: Comparison) -> list[str]:
    """What follows the tables in the text: verdicts, notes (but a failure, said first), and
    the headline last."""
    lines = []
    failed = failure_lines(c)
    if c.phases and c.per_core and c.a.cores > PER_CORE_TEXT_LIMIT:
        lines.append(f"{analysis.counted(c.a.cores, 'core')}: per-core columns are in --json only")
    lines += [f"verdict {s.label}: {s.verdict.text}" for s in (c.a, c.b)
              if analysis.verdict_beside(s.failure, s.verdict.label)]   # a failure is its news
    lines += [f"note: {note}" for note in c.notes if inert(note) not in failed]
    lines += [f"load: {line}" for line in load_lines(c)]
    lines.append(f"in short: {c.headline}")
    return [inert(line, newlines=True) for line in lines]


def renderables(c: Comparison, width: int | None = None) -> list[Any]:
    """The comparison as rich renderables in reading order: the tables (fitted to WIDTH, when
    given), then the closing lines."""
    specs = _specs(c)
    out: list[Any] = list(failure_lines(c))
    for name in SECTIONS:
        if name in specs:
            if width is None:
                out.append(inert_table(specs[name].table()))
            else:
                out += [inert_table(t) for t in specs[name].fitted(width)]
                out += [inert(line, newlines=True) for line in specs[name].lines]
    return out + closing_lines(c)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def comparison_text(c: Comparison, width: int = DEFAULT_WIDTH, color: bool = False) -> str:
    """The comparison as plain text WIDTH columns wide (no colour codes unless ``color``), for
    logs, pipes and tests."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, emoji=False, markup=False)
    for item in renderables(c, width):
        console.print(item, markup=False) if isinstance(item, str) else console.print(item)
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())  # rich pads to the width


def print_comparison(c: Comparison, width: int | None) -> None:
    """To a terminal in colour at its width, else as plain text at ``fit.output_width``."""
    width = output_width(width)
    if sys.stdout.isatty():
        console = Console(width=width, highlight=False, emoji=False, markup=False)
        for item in renderables(c, width):
            console.print(item, markup=False) if isinstance(item, str) else console.print(item)
    else:
        sys.stdout.write(comparison_text(c, width=width))
