"""``devicewatch report``: a run's epochs, phase utilization, idle time, dips and verdict as text.

Rendered with rich tables, plus (in a terminal, or with ``--chart``) a plotext timeline of
utilization with epoch and phase marks: the headless form of the dip picture.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.table import Table

from .. import analysis
from ..runfile import Run
from ..safe_text import inert


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def straggler_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per epoch of a merged run (``analysis.straggler_rows``): the rank that finished
    last and how long the others waited for it."""
    lines = []
    for row in rows:
        waits = ", ".join(f"rank {r} {w:.3f}s" for r, w in row["waited"].items())
        lines.append(f"epoch {row['epoch']}: rank {row['last_rank']} finished last; waited: {waits}")
    return lines




def tables(run: Run, summary: dict[str, Any], width: int = 110) -> list[Any]:
    """The report as rich renderables; shared with the recorder's end-of-run summary."""
    out: list[Any] = []
    if summary["status"] != "ok" and summary["status"] != "cancelled" and not summary["lanes"]:
        # It failed before its first phase: what it said, and how it ended; its utilization
        # would describe the start-up only, and a verdict on it would mislead.
        error = analysis.last_error_line(run)
        if error:
            out.append(f"error: {error}")
        out.append(f"status: {summary['status_text']} after {summary['duration']:.1f}s, before its first phase")
        return out
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    host = summary["host"]
    status = summary["status_text"]
    head.add_row("run", f"{summary['workload']}  {run.path}")
    head.add_row("status", status)
    head.add_row("duration", f"{summary['duration']:.1f}s, {summary['samples']} samples")
    head.add_row("host", f"{host.get('cpu_model', '?')}, {host.get('cpu_count', '?')} cores"
                 + "".join(f"; {g.get('name')}" for g in host.get("gpus", [])))
    gpu = summary["gpu"]
    head.add_row("GPU", "sampled" if gpu["available"] else f"not sampled: {gpu['reason'] or 'unknown'}")
    if summary["run_info"]:
        head.add_row("workload info", ", ".join(f"{k}={v}" for k, v in summary["run_info"].items()))
    if summary["recorder_cpu_mean"] is not None:
        head.add_row("watching cost", f"recorder {summary['recorder_cpu_mean']:.1f}% of one core")
    if gpu["available"]:
        for g, period in enumerate(summary["gpu_driver_periods"]):
            head.add_row(f"GPU {g} rate", analysis.driver_rate_text(period))
    if summary["hosts"]:
        head.add_row("hosts", f"{', '.join(map(str, summary['hosts']))} (merged; {summary['alignment']})")
    out.append(head)

    if summary["epochs"]:
        table = Table(title="Epochs (seconds in each phase, lanes merged)", title_justify="left")
        names: list[str] = []
        for row in summary["epochs"]:
            names += [n for n in row.get("phase_seconds", {}) if n not in names]
        for column in ("epoch", "total", *names, "no phase"):
            table.add_column(column, justify="right")
        metric_names: list[str] = []
        for row in summary["epochs"]:
            for name in row["metrics"]:
                if name not in metric_names:
                    metric_names.append(name)
        for name in metric_names:
            table.add_column(name, justify="right")
        for row in summary["epochs"]:
            spent = row.get("phase_seconds", {})
            untracked = max(0.0, row["total"] - sum(spent.values())) if spent else row["other"]
            cells = [str(row["epoch"]), _secs(row["total"]), *[_secs(spent.get(n)) for n in names], _secs(untracked)]
            for name in metric_names:
                value = row["metrics"].get(name)
                cells.append(f"{value:.4g}" if isinstance(value, float) else str(value if value is not None else "-"))
            table.add_row(*cells)
        out.append(table)

    phases = summary["phases"]
    if phases:
        table = Table(title="Utilization per phase (mean / p95)", title_justify="left")
        table.add_column("phase")
        table.add_column("time", justify="right")
        table.add_column("CPU total", justify="right")
        cores = len(next(iter(phases.values()))["cores"])
        show_cores = cores <= max(0, (width - 40) // 14)  # each core's column needs about 14
        if show_cores:
            for c in range(cores):
                table.add_column(f"core {c}", justify="right")
        gpus = len(next(iter(phases.values()))["gpus"])
        for g in range(gpus):
            table.add_column(f"GPU {g}", justify="right")
        for name, entry in phases.items():
            cells = [name, _secs(entry["seconds"]),
                     f"{_pct(entry['cpu_total']['mean'])} / {_pct(entry['cpu_total']['p95'])}"]
            if show_cores:
                cells += [f"{_pct(c['mean'])} / {_pct(c['p95'])}" for c in entry["cores"]]
            cells += [f"{_pct(g['mean'])} / {_pct(g['p95'])}" for g in entry["gpus"]]
            table.add_row(*cells)
        out.append(table)

    if summary["devices"]:
        table = Table(title=f"Idle time and dips (below {analysis.DIP_THRESHOLD:.0f}%)", title_justify="left")
        for column in ("device", "mean", "idle", "dips", "dip time", "dips fall in"):
            table.add_column(column, justify="right" if column not in ("device", "dips fall in") else "left")
        for d in summary["devices"]:
            table.add_row(d["device"], _pct(d["mean"]), f"{d['idle_fraction']:.0%}", str(d["dips"]),
                          _secs(d["dip_seconds"]), ", ".join(d["dip_phases"]) or "-")
        out.append(table)

    if summary["per_host"]:
        table = Table(title="Per host (each node's own samples and ranks)", title_justify="left")
        for column in ("host", "machine", "samples", "CPU total", "busiest device", "verdict"):
            table.add_column(column, justify="right" if column in ("samples", "CPU total") else "left")
        for h in summary["per_host"]:
            busiest = max(h["devices"], key=lambda d: d["mean"], default=None)
            table.add_row(h["host"], str(h["hostname"] or "?"), str(h["samples"]), _pct(h["cpu_mean"]),
                          f"{busiest['device']} {_pct(busiest['mean'])}, {busiest['dips']} dips" if busiest else "-",
                          h["verdict"]["label"])
        out.append(table)

    if len(summary["lanes"]) > 1:
        overlap = summary["overlap"]
        out.append(f"Lanes {', '.join(summary['lanes'])}: two or more lanes active "
                   f"{overlap['overlap_fraction']:.0%} of the busy time ({overlap['overlap_seconds']:.1f}s)")

    if summary["results"]:
        table = Table(title="Results", title_justify="left")
        keys: list[str] = []
        for r in summary["results"]:
            keys += [k for k in r if k != "name" and k not in keys]
        table.add_column("name")
        for k in keys:
            table.add_column(k, justify="right")
        for r in summary["results"]:
            table.add_row(str(r["name"]), *[f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "-"))
                                             for k in keys])
        out.append(table)

    if summary["stragglers"]:
        out.append("Stragglers (the rank that finished each epoch last, and how long the others waited):")
        out += ["  " + line for line in straggler_lines(summary["stragglers"])]

    for notice in summary["notices"][:10]:
        out.append(f"note: {notice}")
    if summary["per_host"]:
        out += [f"verdict {h['host']}: {h['verdict']['text']}" for h in summary["per_host"]]
    else:
        out.append(f"verdict: {summary['verdict']['text']}")
    return out


def timeline_chart(run: Run, width: int = 100, height: int = 18) -> str:
    """Utilization over time with epoch boundaries, as plotext text (no colour codes)."""
    import plotext as plt

    s = analysis.series(run)
    all_phases = analysis.phases(run)
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    if len(s.t):
        plt.plot(s.t.tolist(), [0.0 if v != v else v for v in s.cpu_total.tolist()], label="CPU total %", marker="braille")
    for g in range(s.gpus):
        if s.gpu_t[g].size:
            plt.plot(s.gpu_t[g].tolist(), s.gpu_util[g].tolist(), label=f"GPU {g} %", marker="braille")
    starts = sorted({e.start for e in analysis.epochs(run, all_phases)})
    for start in starts:
        plt.vertical_line(start)
    plt.ylim(0, 100)
    plt.xlabel("seconds (vertical lines: epoch starts)")
    plt.title(f"Utilization: {run.title}")
    return plt.build()


def report_text(run: Run, chart: bool = False, width: int = 110) -> str:
    summary = analysis.summarize(run)
    buffer = io.StringIO()
    # No markup: every string here may come from the run file, and "[" in a name is just "[".
    console = Console(file=buffer, width=width, force_terminal=False, no_color=True, highlight=False,
                      markup=False, emoji=False)
    for item in tables(run, summary, width):
        console.print(item)
    text = buffer.getvalue()
    if chart and run.samples:
        try:
            text += "\n" + timeline_chart(run, width=min(width, 120)) + "\n"
        except (ImportError, AttributeError) as exc:  # plotext 6 dropped the API used here
            text += f"\n(timeline not drawn: this plotext lacks it: {exc})\n"
    return inert(text, newlines=True)  # the output has no escape codes of its own
