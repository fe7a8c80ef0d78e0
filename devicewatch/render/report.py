"""``devicewatch report``: a run's epochs, phase utilization, idle time, dips and verdict as text.

Rendered with rich tables, plus (in a terminal, or with ``--chart``) a plotext timeline of
utilization with epoch and phase marks: the headless form of the dip picture.
"""

from __future__ import annotations

import io
import textwrap
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from .. import analysis
from ..analysis import advice, wording
from ..analysis.stragglers import tally
from ..analysis.contention import CONTENDED_WAIT, OTHERS_NOTABLE
from ..analysis.utilization import MeanP95, active_mask
from ..loop_figures import STEPS
from ..runformat.downsample import minmax
from ..runformat.runfile import Run
from ..safe_text import inert
from .fit import DEFAULT_WIDTH, PER_CORE_TEXT_LIMIT, Column, fit, output_width


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def straggler_lines(rows: list[analysis.StragglerFigures], unit: str = analysis.EPOCH_UNIT) -> list[str]:
    """A merged run's stragglers (``Summary.stragglers``, the job screen's rule): the job in
    one line, then one line per epoch (or segment, UNIT)."""
    return [tally(rows, unit)] + [row.text for row in rows] if rows else []


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value if value is not None else "-")


def epoch_tables(summary: analysis.Summary, width: int) -> list[Any]:
    """The epoch table (titled segments for a run of segments): the total, then where the data
    wait is measured the training loop's seconds and its data wait, seconds and share (what the
    verdict judges: a loop that mostly waited shows its time, not "train 0.0s"), every phase's
    seconds (the data phases' only where no data wait is shown: one data figure a row), then
    the workload's own metrics but those that repeat a phase; what does not fit goes on in a
    further table."""
    rows = summary.epochs
    unit = summary.unit
    names = list(dict.fromkeys(n for row in rows for n in row.phase_seconds))
    metrics = [row.metrics.to_json() for row in rows]   # the loop's figures among them: the steps are a column
    metric_names = list(dict.fromkeys(m for row in metrics for m in row))
    repeated = analysis.repeated_metrics(names, metric_names)
    columns = [Column("total", [_secs(row.total) for row in rows])]
    title = f"{unit.capitalize()}s (seconds in each phase, lanes merged)"
    waits = any(row.data_wait is not None for row in rows)
    if waits:
        columns += [Column(wording.LOOP, [_secs(row.train_loop or None) for row in rows]),
                    Column(wording.DATA_WAIT, [wording.data_wait_text(row.data_wait, row.loop_wait_share)
                                               for row in rows])]
        title = f"{unit.capitalize()}s ({wording.DATA_WAIT_LEGEND}; seconds per phase, lanes merged)"
    columns += [Column(n, [_secs(row.phase_seconds.get(n)) for row in rows])
                for n in wording.shown_phases(names, waits)]
    columns.append(Column("no phase", [_secs(row.untracked) for row in rows]))
    columns += [Column(m, [_cell(row.get(m)) for row in metrics]) for m in metric_names if m not in repeated]
    if any(row.metrics.figures and row.metrics.figures.steps_sampled for row in rows):   # a lower bound
        columns = [Column("steps (sampled)", [row.metrics.figures.steps_text() if row.metrics.figures else "-"
                                              for row in rows]) if c.header == STEPS else c for c in columns]
    return fit(title, [Column(unit, [epoch_label(row.epoch, row.partial) for row in rows])], columns, width)


PARTIAL = "partial"


def epoch_label(epoch: int, partial: bool) -> str:
    """An epoch's number in a table, ``3 partial`` where it never ended."""
    return f"{epoch} {PARTIAL}" if partial else str(epoch)


def partial_text(summary: analysis.Summary) -> str | None:
    """What a partial row is, said once under the table where it has one."""
    cut = [row.epoch for row in summary.epochs if row.partial]
    if not cut:
        return None
    which = summary.unit + "s" * (len(cut) > 1)
    return (f"{PARTIAL}: {which} {', '.join(map(str, cut))} never ended (the run ended inside "
            f"{'it' if len(cut) == 1 else 'them'}); {'its' if len(cut) == 1 else 'their'} seconds run to the end")


def phase_clocks(run: Run, all_phases: list[analysis.Phase], names: list[str]) -> list[str] | None:
    """Each phase's mean core clock in MHz (every core's readings while it was active, as its
    utilization counts samples), "-" where it had none; None where the run recorded no clock."""
    mhz = run.samples.cpu_mhz
    if not mhz.size or np.isnan(mhz).all():
        return None
    read = ~np.isnan(mhz).all(axis=1)
    t, mean = run.samples.t[read], np.nanmean(mhz[read], axis=1)
    intervals: dict[str, list[tuple[float, float]]] = {}
    for phase in all_phases:
        intervals.setdefault(phase.name, []).append((phase.start, phase.end))
    active = {name: active_mask(t, spans) for name, spans in intervals.items()}  # the analysis's rule
    outside = ~np.logical_or.reduce(list(active.values())) if active else np.ones(len(t), bool)
    cells = []
    for name in names:
        chosen = mean[active[name] if name in active else outside]
        cells.append(f"{chosen.mean():.0f}" if chosen.size else "-")
    return cells



def tables(figures: analysis.RunFigures, width: int = DEFAULT_WIDTH) -> list[Any]:
    """The report of a run's FIGURES as rich renderables laid out for WIDTH; shared with the
    recorder's end-of-run summary."""
    run, summary = figures.run, analysis.Summary.of(figures)
    # Why it failed comes first: it is the news, whatever the figures after it say.
    out: list[Any] = [inert(summary.failure.text)] if summary.failure is not None else []
    if summary.status not in ("ok", "trial", "cancelled") and not summary.lanes:
        # It failed before its first phase: what it said, and how it ended; its utilization
        # would describe the start-up only, and a verdict on it would mislead.
        error = analysis.last_error_line(run) if summary.failure is None else None
        if error:
            out.append(f"error: {error}")
        out.append(f"status: {summary.status_text} after {summary.duration:.1f}s, before its first phase")
        return out
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    head.add_column(overflow="fold")  # a long path or option list wraps; nothing is cut
    host = summary.host
    head.add_row("run", f"{summary.workload}  {run.path}")
    head.add_row("status", summary.status_text)
    head.add_row("duration", f"{summary.duration:.1f}s, {summary.samples} samples")
    head.add_row("host", f"{host.get('cpu_model', '?')}, "
                 + (analysis.counted(host['cpu_count'], 'core') if isinstance(host.get('cpu_count'), int) else "? cores")
                 + "".join(f"; {g.get('name')}" for g in host.get("gpus", [])))
    limited = analysis.limits_text(run.cpu_limits, run.duration)
    if limited:
        head.add_row("cores", limited)
    shared = _shared_text(summary.verdict.figures)
    if shared:
        head.add_row("beside it", shared)
    gpu = summary.gpu
    head.add_row("GPU", "sampled" if gpu.available else f"not sampled: {gpu.reason or 'unknown'}")
    if summary.instrumentation:
        head.add_row("zero-code", summary.instrumentation)
    if summary.run_info:
        head.add_row("workload info", ", ".join(f"{k}={v}" for k, v in summary.run_info.items()))
    if summary.recorder_cpu_mean is not None:
        head.add_row("watching cost", f"recorder {summary.recorder_cpu_mean:.1f}% of one core")
    if gpu.available:
        for g, period in enumerate(summary.gpu_driver_periods):
            head.add_row(f"GPU {g} rate", analysis.driver_rate_text(period))
    if summary.hosts:
        head.add_row("hosts", f"{', '.join(map(str, summary.hosts))} (merged; {summary.alignment})")
        for node in run.header.nodes:   # each node's own file and command, as its recorder wrote them
            command = " ".join(node.workload.command) or node.workload.name or "?"
            head.add_row(node.label, f"{node.raw.get('file') or '?'} on {node.host.hostname or '?'}: {command} "
                                     f"({node.raw.get('status') or 'unknown'})")
    out.append(head)

    if summary.epochs:
        out += epoch_tables(summary, width)
        cut = partial_text(summary)
        if cut:
            out.append(cut)
        if summary.data_wait_unmeasured:
            out.append(summary.data_wait_unmeasured.text)

    phases = summary.phases
    if phases:
        entries = list(phases.values())
        cores = len(entries[0].cores)
        gpus = len(entries[0].gpus)
        def both(stats: MeanP95) -> str:
            return f"{_pct(stats.mean)} / {_pct(stats.p95)}"
        columns = [Column("time", [_secs(e.seconds) for e in entries]),
                   Column("CPU total", [both(e.cpu_total) for e in entries])]
        if cores <= PER_CORE_TEXT_LIMIT:
            columns += [Column(f"core {c}", [both(e.cores[c]) for e in entries]) for c in range(cores)]
        columns += [Column(f"GPU {g}", [both(e.gpus[g]) for e in entries]) for g in range(gpus)]
        clocks = phase_clocks(run, figures.phases, list(phases))
        if clocks is not None:
            columns.append(Column("clock MHz", clocks))
        out += fit("Utilization per phase (mean / p95)", [Column("phase", list(phases), "left", wrap=True)],
                   columns, width)
        if cores > PER_CORE_TEXT_LIMIT:
            out.append(f"{analysis.counted(cores, 'core')}: per-core columns are in --json only")

    if summary.devices:
        devices = summary.devices
        out += fit(f"Idle time and dips (below {analysis.DIP_THRESHOLD:.0f}%)",
                   [Column("device", [d.device for d in devices], "left", wrap=True)],
                   [Column("mean", [_pct(d.mean) for d in devices]),
                    Column("idle", [f"{d.idle_fraction:.0%}" for d in devices]),
                    Column("dips", [str(d.dips) for d in devices]),
                    Column("dip time", [_secs(d.dip_seconds) for d in devices]),
                    Column("dips fall in", [", ".join(d.dip_phases) or "-" for d in devices], "left", wrap=True)],
                   width)

    if summary.per_host:
        hosts = summary.per_host
        busiest = [max(h.devices, key=lambda d: d.mean, default=None) for h in hosts]
        out += fit("Per host (each node's own samples and ranks)", [Column("host", [h.host for h in hosts], "left")],
                   [Column("machine", [str(h.hostname or "?") for h in hosts], "left", wrap=True),
                    Column("samples", [str(h.samples) for h in hosts]),
                    Column("CPU total", [_pct(h.cpu_mean) for h in hosts]),
                    Column("busiest device", [f"{b.device} {_pct(b.mean)}, {b.dips} dips" if b else "-"
                                              for b in busiest], "left", wrap=True),
                    Column("verdict", [h.verdict.label for h in hosts], "left", wrap=True)], width)

    if len(summary.lanes) > 1:
        overlap = summary.overlap
        out.append(f"Lanes {', '.join(summary.lanes)}: two or more lanes active "
                   f"{overlap['overlap_fraction']:.0%} of the busy time ({overlap['overlap_seconds']:.1f}s)")

    if summary.results:
        results = summary.results
        keys = list(dict.fromkeys(k for r in results for k in r if k != "name"))
        out += fit("Results", [Column("name", [str(r["name"]) for r in results], "left", wrap=True)],
                   [Column(k, [_cell(r.get(k)) for r in results]) for k in keys], width)

    if summary.stragglers:
        out.append(f"Stragglers (the rank whose work ended each {summary.unit} last, and how long the others "
                   f"waited; under {analysis.NOISE_SECONDS:g} s or {analysis.NOISE_SHARE:.0%} of the {summary.unit}, none):")
        out += ["  " + line for line in straggler_lines(summary.stragglers, summary.unit)]

    for notice in summary.notices[:10]:
        out.append(f"note: {notice}")
    if summary.per_host:
        out += [f"verdict {h.host}: {h.verdict.text}" for h in summary.per_host]
    else:
        out.append(f"verdict: {summary.verdict.text}")
        out += ["advice: " + advice.text(a) for a in figures.advice]
    return out


# The timeline's series are told apart by their marker, not their colour: (plotext's name, its look).
MARKERS = [("hd", "▚"), ("braille", "⢕"), ("dot", "•"), ("+", "+"), ("x", "x"), ("o", "o"), ("*", "*"), ("#", "#")]


def timeline_chart(figures: analysis.RunFigures, width: int = 100, height: int = 18) -> str:
    """Utilization over time with epoch boundaries, as plotext text (no colour codes); from the
    run's FIGURES (its series and epoch rows). Drawn with plotext 6's
    figure API; each series reaches plotext as at most a minimum and a maximum per braille dot
    column (so a dip survives), so an hour's run draws as fast as a minute's."""
    import plotext as plt

    s = figures.series
    fig = plt.figure
    fig.clear()
    plt.terminal.limit(False, False)  # the report chose the size; plotext must not shrink it to the terminal's
    fig.plot_size(width, height)
    fig.theme("colorless")
    lines: list[tuple[np.ndarray, np.ndarray, str]] = []
    for t, values, label in [(s.t, s.cpu_total, "CPU total %"),
                             *((s.gpu_t[g], s.gpu_util[g], f"GPU {g} %") for g in range(s.gpus))]:
        read = np.isfinite(t) & np.isfinite(values)  # a sample without a reading is no point (plotext aborts on NaN)
        if read.any():
            lines.append((t[read], values[read], label))
    markers = [MARKERS[i % len(MARKERS)] for i in range(len(lines))]
    for (t, values, _), (marker, _) in zip(lines, markers):
        t, values = minmax(t, values, buckets=2 * width)
        fig.draw(fig.signal(t.tolist(), values.tolist(), marker=marker).lines())
    for start in sorted({e.start for e in figures.epoch_rows}):
        fig.line(start, orientation="vertical")
    first, last = min((t[0] for t, _, _ in lines), default=0.0), max((t[-1] for t, _, _ in lines), default=0.0)
    if last > first:
        fig.ruler("x").lim(float(first), float(last))  # the samples' span: epoch lines do not widen it
    fig.ruler("y").lim(0, 100)
    fig.label(f"seconds (vertical lines: {figures.unit} starts)")
    title = f"Utilization: {figures.run.title}"
    fig.title(title if len(title) < width else title[:width - 2] + "…")  # plotext drops a title too long
    chart = "\n".join(line.rstrip() for line in str(fig.build().string(colorless=True)).splitlines())
    key = "   ".join(f"{look} {label}" for (_, _, label), (_, look) in zip(lines, markers))
    return chart + "\n" + "".join(line + "\n" for line in textwrap.wrap(key, width, break_on_hyphens=False))


def report_text(figures: analysis.RunFigures, chart: bool = False, width: int | None = None) -> str:
    """The report of a run's FIGURES as plain text WIDTH columns wide (default: ``fit.output_width``)."""
    width = output_width(width)
    buffer = io.StringIO()
    # No markup: every string here may come from the run file, and "[" in a name is just "[".
    console = Console(file=buffer, width=width, force_terminal=False, no_color=True, highlight=False,
                      markup=False, emoji=False)
    for item in tables(figures, width):
        console.print(item)
    text = "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())  # rich pads to the width
    if chart and figures.run.samples:
        try:
            text += "\n" + timeline_chart(figures, width=min(width, 120))
        except ImportError:
            text += "\n(timeline not drawn: plotext is not installed)\n"
    return inert(text, newlines=True)  # the output has no escape codes of its own


def _shared_text(figures: dict[str, Any]) -> str | None:
    """What the machine's other programs took and how long the workload's threads waited for a
    core, where either is large enough to tell (the verdict's figures)."""
    others, waiting = figures.get("others_cores"), figures.get("waiting_cores")
    parts = []
    if isinstance(others, (int, float)) and others >= OTHERS_NOTABLE:
        parts.append(analysis.Cores.of_figures(figures).others(others))
    if isinstance(waiting, (int, float)) and waiting >= CONTENDED_WAIT:
        parts.append(f"its threads waited {waiting:.1f} cores' worth for a core")
    return "; ".join(parts) or None
