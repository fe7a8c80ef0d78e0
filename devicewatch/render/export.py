"""``devicewatch export``: a recorded run as a Perfetto trace, CSV tables, or an SVG chart.

    devicewatch export RUN.jsonl --format perfetto -o OUT        OUT.json: Chrome trace JSON (ui.perfetto.dev)
    devicewatch export RUN.jsonl --format csv -o OUT             OUT_samples.csv, OUT_epochs.csv, OUT_phases.csv
    devicewatch export RUN.jsonl --format svg -o OUT             OUT.svg: utilization charts for slides
    devicewatch export RUN.jsonl --format parquet -o OUT         OUT_samples/_epochs/_phases.parquet

Everything reads the run through ``runfile.load`` and ``analysis``, like the report, so an
exported figure is the same figure the report and the dashboard show. The SVG is written by
hand with the standard library: no plotting dependency for a chart on a slide.
"""

from __future__ import annotations

import csv
import math
from typing import Any
from collections.abc import Iterable
from xml.sax.saxutils import escape

from .. import analysis, events
from ..runformat import downsample
from ..runformat.runfile import Run
from ..safe_text import csv_cell
from .palette import PRINT

FORMATS = ("perfetto", "csv", "svg", "parquet")
PID = 1
# The suffix of a one-file format's file, added to ``-o OUT`` where OUT does not end with it.
SUFFIX = {"perfetto": ".json", "svg": ".svg"}


def output_paths(fmt: str, out: str) -> tuple[str, ...]:
    """The files an export of format FMT to ``-o OUT`` writes, as ``export --help`` names them:
    OUT.json or OUT.svg (the suffix added where OUT lacks it), or the three tables of csv and
    parquet. Known before anything is written, so that none of them is replaced unasked."""
    if fmt == "csv":
        return csv_paths(out)
    if fmt == "parquet":
        return parquet_paths(out)
    suffix = SUFFIX[fmt]
    return (out if out.lower().endswith(suffix) else out + suffix,)


# -- tracks ---------------------------------------------------------------------------------

# An SVG chart's lines (label, times, values, colour, width) and its band (times, low, high).
_Series = list[tuple[str, list[float], list[float], str, float]]
_Band = tuple[list[float], list[float], list[float]]

def assign_tracks(spans: Iterable[tuple[float, float]]) -> list[int]:
    """Give each span a track index so that no two spans on one track overlap.

    Greedy in start order: a span goes on the first track whose last span has ended, else on a
    new track. Spans that touch (one ends exactly where the next begins) share a track.
    """
    spans = list(spans)
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1]))
    track_ends: list[float] = []
    tracks = [0] * len(spans)
    for i in order:
        start, end = spans[i]
        for k, last_end in enumerate(track_ends):
            if last_end <= start:
                track_ends[k] = end
                tracks[i] = k
                break
        else:
            track_ends.append(end)
            tracks[i] = len(track_ends) - 1
    return tracks


def _us(seconds: float) -> int:
    return round(seconds * 1_000_000)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# -- Perfetto / Chrome trace ----------------------------------------------------------------

def perfetto(figures: analysis.RunFigures) -> dict[str, Any]:
    """A run's FIGURES as Chrome trace JSON ("traceEvents"), which ui.perfetto.dev and chrome://tracing open.

    One process per machine (a merged multi-node run has one per host, its ranks' lanes as its
    tracks): a counter track ("C") per core, total CPU, the workload's CPU and memory, and per
    GPU its utilization, memory and power; one thread track per lane with the phases as
    complete slices ("X"), extra tracks where phases in one lane overlap; epochs on their own
    track; markers and epoch metrics as instants ("i"). Timestamps are microseconds since the
    run started.
    """
    run = figures.run
    if figures.hosts:
        trace = [event for pid, h in enumerate(figures.hosts, start=1)
                 for event in _process(h.run, h.phases, h.epoch_rows, pid, f"{h.host}: {run.title}")]
    else:
        trace = _process(run, figures.phases, figures.epoch_rows, PID, f"devicewatch: {run.title}")
    return {"traceEvents": trace, "displayTimeUnit": "ms",
            "otherData": {"source": "devicewatch", "file": run.path, "workload": run.title,
                          "started": run.header.started, "duration_s": round(run.duration, 3)}}


def _process(run: Run, all_phases: list[analysis.Phase], epoch_rows: list[analysis.EpochRow], pid: int,
             name: str) -> list[dict[str, Any]]:
    """One machine's tracks (its run, phases and epoch rows), as trace events of process ``pid``."""
    trace: list[dict[str, Any]] = []
    def meta(name: str, tid: int, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}
    trace.append(meta("process_name", 0, {"name": name}))

    c = run.samples
    times = c.t.tolist()

    def counters(name: str, values: Any, t: list[float] = times) -> None:
        for when, value in zip(t, values.tolist()):
            if value == value and _finite(when):
                trace.append({"name": name, "ph": "C", "pid": pid, "tid": 0, "ts": _us(when),
                              "args": {"value": int(value) if value.is_integer() else value}})

    counters("CPU total %", c.cpu_total)
    for core in range(c.cpu.shape[1]):
        counters(f"CPU core {core} %", c.cpu[:, core].astype(float))
    counters("workload CPU % of one core", c.proc("cpu"))
    counters("workload memory MiB", (c.proc("rss") / 2**20).round(1))
    mem, power = c.gpu("mem_used"), c.gpu("power_w")
    for g in range(c.gpus if c.gpu_present.any() else 0):
        gpu_t, gpu_util = c.util(g)  # the driver's buffered samples where there are some
        counters(f"GPU {g} utilization %", gpu_util, gpu_t.tolist())
        counters(f"GPU {g} memory MiB", (mem[:, g] / 2**20).round(1))
        counters(f"GPU {g} power W", power[:, g])

    tid = 1
    for lane in analysis.lanes(all_phases):
        members = [p for p in all_phases if p.lane == lane]
        tracks = assign_tracks((p.start, p.end) for p in members)
        for k in range(max(tracks) + 1):
            trace.append(meta("thread_name", tid + k, {"name": f"lane {lane}" + (f" ({k + 1})" if k else "")}))
            trace.append(meta("thread_sort_index", tid + k, {"sort_index": tid + k}))
        for p, k in zip(members, tracks):
            args: dict[str, Any] = {"lane": p.lane, **p.attrs}
            if p.epoch is not None:
                args["epoch"] = p.epoch
            if p.open:
                args["open"] = "never ended"
            start = _us(p.start)
            trace.append({"name": p.name, "cat": p.kind, "ph": "X", "pid": pid, "tid": tid + k,
                          "ts": start, "dur": max(0, _us(p.end) - start), "args": args})
        tid += max(tracks) + 1

    if epoch_rows:
        tracks = assign_tracks((e.start, e.end) for e in epoch_rows)
        for k in range(max(tracks) + 1):
            trace.append(meta("thread_name", tid + k, {"name": "epochs" + (f" ({k + 1})" if k else "")}))
            trace.append(meta("thread_sort_index", tid + k, {"sort_index": tid + k}))
        for e, k in zip(epoch_rows, tracks):
            start = _us(e.start)
            trace.append({"name": f"epoch {e.epoch}", "cat": "epoch", "ph": "X", "pid": pid, "tid": tid + k,
                          "ts": start, "dur": max(0, _us(e.end) - start),
                          "args": {"train (s)": round(e.train, 3), "validate (s)": round(e.validate, 3),
                                   "other (s)": round(e.other, 3), **e.metrics.to_json()}})
        tid += max(tracks) + 1

    instants = tid
    trace.append(meta("thread_name", instants, {"name": "markers"}))
    trace.append(meta("thread_sort_index", instants, {"sort_index": instants}))
    reserved = {"type", "t", "kind", "label", "pid", "thread", "mono"}
    for event in run.events:
        if not _finite(event.get("t")):
            continue
        kind = event.get("kind")
        if kind == events.MARKER:
            trace.append({"name": str(event.get("label", "marker")), "cat": "marker", "ph": "i", "s": "t",
                          "pid": pid, "tid": instants, "ts": _us(event["t"]),
                          "args": {k: v for k, v in event.items() if k not in reserved}})
        elif kind == events.EPOCH:
            trace.append({"name": f"epoch {event.get('epoch')} metrics", "cat": "epoch", "ph": "i", "s": "t",
                          "pid": pid, "tid": instants, "ts": _us(event["t"]), "args": event.get("metrics") or {}})
        elif kind == events.RESULT:
            trace.append({"name": f"result {event.get('name')}", "cat": "result", "ph": "i", "s": "t",
                          "pid": pid, "tid": instants, "ts": _us(event["t"]), "args": event.get("values") or {}})
    for notice in run.notices:
        trace.append({"name": notice.message[:200], "cat": "notice", "ph": "i",
                      "s": "p", "pid": pid, "tid": instants, "ts": _us(notice.t), "args": {}})
    return trace


# -- CSV --------------------------------------------------------------------------------------

def csv_paths(out: str) -> tuple[str, str, str]:
    """``OUT`` (an optional ``.csv`` suffix dropped) → OUT_samples.csv, OUT_epochs.csv, OUT_phases.csv."""
    base = out[:-4] if out.lower().endswith(".csv") else out
    return f"{base}_samples.csv", f"{base}_epochs.csv", f"{base}_phases.csv"


def sample_columns(run: Run, all_phases: list[analysis.Phase]) -> dict[str, Any]:
    """The samples as named columns (NumPy arrays), one per CSV and Parquet column; the phases
    (``analysis.phases``) active at each."""
    import numpy as np

    c = run.samples
    columns: dict[str, Any] = {"t": c.t}
    if c.host_labels:  # a merged run: the node whose machine each row describes
        columns["host"] = np.array([*c.host_labels, ""], dtype=object)[c.host]
    columns["cpu_total"] = c.cpu_total
    for core in range(c.cpu.shape[1]):
        columns[f"core{core}"] = c.cpu[:, core].astype(float)
    columns["proc_cpu"] = c.proc("cpu")
    columns["proc_rss"] = c.proc("rss")
    gpus = c.gpus if c.gpu_present.any() else 0
    util, mem, power = c.gpu("util"), c.gpu("mem_used"), c.gpu("power_w")
    for g in range(gpus):
        columns[f"gpu{g}_util"] = util[:, g]
        columns[f"gpu{g}_mem_used"] = mem[:, g]
        columns[f"gpu{g}_power_w"] = power[:, g]
    labels = np.empty(len(c.t), dtype=np.object_)
    labels[:] = ""
    for p in all_phases:  # the phases active at each sample, in name order
        lo, hi = np.searchsorted(c.t, p.start, side="left"), np.searchsorted(c.t, p.end, side="right")
        labels[lo:hi] = [_add_name(x, p.name) for x in labels[lo:hi]] if hi - lo < 2 else \
            _add_names(labels[lo:hi], p.name)
    columns["phases"] = labels
    return columns


def _add_name(current: str, name: str) -> str:
    names = set(current.split("+")) - {""} | {name}
    return "+".join(sorted(names))


def _add_names(labels: Any, name: str) -> Any:
    """Add ``name`` to a run of labels, once per distinct label (a phase spans many samples)."""
    out = labels.copy()
    for label in set(labels.tolist()):
        out[labels == label] = _add_name(label, name)
    return out


def sample_rows(run: Run, all_phases: list[analysis.Phase]) -> tuple[list[str], list[list[Any]]]:
    """One row per sample; empty cells where a value was not measured (pandas reads NaN)."""
    columns = sample_columns(run, all_phases)
    header = list(columns)
    lists = []
    for name, values in columns.items():
        if name in ("phases", "host"):  # text columns
            lists.append(values.tolist())
        else:
            lists.append([None if v != v else (int(v) if v.is_integer() and name != "t" and abs(v) < 2**53 else v)
                          for v in values.tolist()])
    return header, [list(row) for row in zip(*lists)]


def epoch_rows(rows: list[analysis.EpochRow]) -> tuple[list[str], list[list[Any]]]:
    metrics = list(dict.fromkeys(name for e in rows for name in e.metrics.names()))
    header = ["epoch", "start", "end", "total", "train", "validate", "other", *metrics]
    return header, [[e.epoch, round(e.start, 6), round(e.end, 6), round(e.total, 6), round(e.train, 6),
                     round(e.validate, 6), round(e.other, 6), *[e.metrics.get(m) for m in metrics]]
                    for e in rows]


def phase_rows(all_phases: list[analysis.Phase]) -> tuple[list[str], list[list[Any]]]:
    header = ["name", "kind", "lane", "epoch", "start", "end", "duration", "open"]
    return header, [[p.name, p.kind, p.lane, p.epoch, round(p.start, 6), round(p.end, 6),
                     round(p.duration, 6), int(p.open)] for p in all_phases]


def _write_csv(path: str, header: list[str], rows: list[list[Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([csv_cell(h) for h in header])
        for row in rows:
            writer.writerow(["" if v is None else csv_cell(v) for v in row])


def write_csv(figures: analysis.RunFigures, out: str) -> list[str]:
    paths = csv_paths(out)
    tables = (sample_rows(figures.run, figures.phases), epoch_rows(figures.epoch_rows), phase_rows(figures.phases))
    for path, (header, rows) in zip(paths, tables):
        _write_csv(path, header, rows)
    return list(paths)


# -- Parquet ----------------------------------------------------------------------------------

def parquet_paths(out: str) -> tuple[str, str, str]:
    """``OUT`` (an optional ``.parquet`` suffix dropped) → OUT_samples, OUT_epochs, OUT_phases ``.parquet``."""
    base = out[: -len(".parquet")] if out.lower().endswith(".parquet") else out
    return f"{base}_samples.parquet", f"{base}_epochs.parquet", f"{base}_phases.parquet"


def write_parquet(figures: analysis.RunFigures, out: str) -> list[str]:
    """Samples, epochs and phases as Parquet tables (pyarrow, the ``parquet`` extra), for pandas,
    polars and DuckDB; sample columns are written from the arrays, no row is built."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from ..errors import UsageError

        raise UsageError("export: Parquet needs pyarrow (pip install 'devicewatch[parquet]')") from None
    paths = parquet_paths(out)
    columns = sample_columns(figures.run, figures.phases)
    arrays = {name: pa.array(values, type=pa.string() if name == "phases" else pa.float64(), from_pandas=True)
              for name, values in columns.items()}
    pq.write_table(pa.table(arrays), paths[0])
    for path, (header, rows) in zip(paths[1:], (epoch_rows(figures.epoch_rows), phase_rows(figures.phases))):
        table = pa.table({name: [row[i] for row in rows] for i, name in enumerate(header)})
        pq.write_table(table, path)
    return list(paths)


# -- SVG --------------------------------------------------------------------------------------

PHASE_COLOURS = PRINT.phase
LINE_COLOURS = PRINT.lines
CORE_LINE_LIMIT = 16   # more cores than this: draw the spread (min to max) instead of a line each


def _reduce(t: list[float], v: list[float], buckets: int) -> tuple[list[float], list[float]]:
    """At most two points (min and max, in time order) per bucket, so dips survive downsampling."""
    import numpy as np

    rt, rv = downsample.minmax(np.asarray(t), np.asarray(v), buckets)
    return rt.tolist(), rv.tolist()


def svg(figures: analysis.RunFigures, width: int = 1200) -> str:
    """Utilization charts (CPU, then one per GPU) on one time axis, phases shaded, epoch lines,
    and a strip per lane showing the phases: the dip picture, for a slide."""
    run, s, all_phases, epoch_list = figures.run, figures.series, figures.phases, figures.epoch_rows
    duration = max(run.duration, float(s.t[-1]) if len(s.t) else 0.0, 1e-3)
    left, right, top = 70, 20, 50
    plot_w = width - left - right
    chart_h, gap = 200, 40
    charts: list[tuple[str, _Series, _Band | None]] = []

    def clean(ts: Iterable[float], vs: Iterable[float]) -> tuple[list[float], list[float]]:
        pairs = [(a, b) for a, b in zip(ts, vs) if math.isfinite(a) and math.isfinite(b)]
        return [a for a, _ in pairs], [b for _, b in pairs]

    # A merged run's nodes are different machines: a CPU chart and GPU charts per node.
    machines = [(f"{h.host}: ", h.run, h.series) for h in figures.hosts] or [("", run, s)]
    for prefix, machine, m in machines:
        t_list = m.t.tolist()
        cpu_lines = []
        spread = None
        cores = m.cpu.shape[1]
        if cores <= CORE_LINE_LIMIT:
            for c in range(cores):
                ct, cv = clean(t_list, m.cpu[:, c].tolist())
                cpu_lines.append((f"core {c}", ct, cv, PRINT.spread, 0.8))
        elif len(m.t):
            import numpy as np

            rows = ~np.isnan(m.cpu).all(axis=1)
            spread = (m.t[rows].tolist(), np.nanmin(m.cpu[rows], axis=1).tolist(), np.nanmax(m.cpu[rows], axis=1).tolist())
        tt, tv = clean(t_list, m.cpu_total.tolist())
        cpu_lines.append(("CPU total", tt, tv, LINE_COLOURS[0], 2.0))
        charts.append((f"{prefix}CPU utilization %, {cores} cores", cpu_lines, spread))
        for g in range(m.gpus):
            gt, gv = clean(m.gpu_t[g].tolist(), m.gpu_util[g].tolist())
            label = analysis.gpu_label(machine, g)
            lines = [(f"GPU {g}", gt, gv, LINE_COLOURS[1], 2.0)]
            sm_t, sm_v = analysis.gpm_series(machine, "sm_active", g)
            if sm_t.size:  # how much of the chip worked, beside how often a kernel ran
                st, sv = clean(sm_t.tolist(), sm_v.tolist())
                lines.append((f"GPU {g} SM active", st, sv, LINE_COLOURS[2], 1.5))
            charts.append((f"{prefix}GPU {g} utilization % ({label})" + (" and SM active %" if sm_t.size else ""),
                           lines, None))

    lane_names = analysis.lanes(all_phases)
    lane_tracks: list[tuple[str, list[analysis.Phase], list[int]]] = []
    strip_rows = 0
    for lane in lane_names:
        members = [p for p in all_phases if p.lane == lane]
        tracks = assign_tracks((p.start, p.end) for p in members)
        lane_tracks.append((lane, members, tracks))
        strip_rows += max(tracks) + 1
    row_h = 18
    strip_top = top + len(charts) * (chart_h + gap)
    axis_y = strip_top + strip_rows * row_h + (10 if strip_rows else 0)
    legend_y = axis_y + 62
    height = legend_y + 30

    def x(t: float) -> float:
        return left + plot_w * max(0.0, min(t, duration)) / duration

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
             f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="28" font-size="18" font-weight="bold">{escape(run.title)}: utilization over time</text>']
    for index, (title, lines, band) in enumerate(charts):
        y0 = top + index * (chart_h + gap)

        def y(v: float, y0: int = y0) -> float:
            return y0 + chart_h * (1 - max(0.0, min(v, 100.0)) / 100)

        parts.append(f'<g class="chart"><text x="{left}" y="{y0 - 8}" font-weight="bold">{escape(title)}</text>')
        parts.append(f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{chart_h}" fill="none" stroke="#888"/>')
        for p in all_phases:
            if p.duration > 0:
                parts.append(f'<rect x="{x(p.start):.1f}" y="{y0}" width="{max(0.5, x(p.end) - x(p.start)):.1f}" '
                             f'height="{chart_h}" fill="{PHASE_COLOURS[p.kind]}" fill-opacity="0.12"/>')
        for level in (0, 25, 50, 75, 100):
            parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(level):.1f}" y2="{y(level):.1f}" '
                         f'stroke="#ddd" stroke-width="0.5"/>')
            parts.append(f'<text x="{left - 6}" y="{y(level) + 4:.1f}" text-anchor="end">{level}%</text>')
        for e in epoch_list:
            parts.append(f'<line x1="{x(e.start):.1f}" x2="{x(e.start):.1f}" y1="{y0}" y2="{y0 + chart_h}" '
                         f'stroke="#555" stroke-dasharray="4,3"/>')
            if index == 0:
                parts.append(f'<text x="{x(e.start) + 3:.1f}" y="{y0 + 12}" fill="#555">epoch {e.epoch}</text>')
        if band is not None:
            bt, lo, hi = band
            bt_r, lo_r = _reduce(bt, lo, plot_w // 2)
            bt_h, hi_r = _reduce(bt, hi, plot_w // 2)
            points = [f"{x(a):.1f},{y(b):.1f}" for a, b in zip(bt_h, hi_r)]
            points += [f"{x(a):.1f},{y(b):.1f}" for a, b in reversed(list(zip(bt_r, lo_r)))]
            parts.append(f'<polygon points="{" ".join(points)}" fill="{PRINT.spread}" fill-opacity="0.5" stroke="none">'
                         '<title>spread of the cores (min to max)</title></polygon>')
        for name, lt, lv, colour, stroke in lines:
            if not lt:
                continue
            rt, rv = _reduce(lt, lv, plot_w // 2)
            path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(rt, rv))
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{stroke}">'
                         f'<title>{escape(name)}</title></polyline>')
        parts.append('</g>')

    row = 0
    for lane, members, tracks in lane_tracks:
        rows_here = max(tracks) + 1
        parts.append(f'<text x="{left - 6}" y="{strip_top + row * row_h + 13}" text-anchor="end">{escape(lane)}</text>')
        for p, k in zip(members, tracks):
            py = strip_top + (row + k) * row_h
            w = max(0.5, x(p.end) - x(p.start))
            label = p.name + (f" {p.epoch}" if p.epoch is not None else "")
            parts.append(f'<rect x="{x(p.start):.1f}" y="{py + 2}" width="{w:.1f}" height="{row_h - 4}" '
                         f'fill="{PHASE_COLOURS[p.kind]}"><title>{escape(label)}: {p.duration:.3f}s</title></rect>')
            if w > 7 * len(label):
                parts.append(f'<text x="{x(p.start) + 3:.1f}" y="{py + 13}" fill="white" font-size="10">{escape(label)}</text>')
        row += rows_here

    for tick in _ticks(duration):
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{axis_y}" y2="{axis_y + 5}" stroke="#333"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{axis_y + 18}" text-anchor="middle">{tick:g}</text>')
    parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{axis_y}" y2="{axis_y}" stroke="#333"/>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{axis_y + 34}" text-anchor="middle">seconds since the run started '
                 '(dashed lines: epoch starts)</text>')
    lx = left
    has_sm = any(analysis.gpm_series(run, "sm_active", g)[0].size for g in range(s.gpus))
    legend = [("CPU total", LINE_COLOURS[0], 2.0),
              ("each core" if cores <= CORE_LINE_LIMIT else "cores min to max", PRINT.spread, 4.0),
              *[("GPU", LINE_COLOURS[1], 2.0)] * bool(s.gpus), *[("SM active", LINE_COLOURS[2], 1.5)] * has_sm]
    for name, colour, stroke in legend:
        parts.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{legend_y - 4}" y2="{legend_y - 4}" stroke="{colour}" '
                     f'stroke-width="{stroke}"/>')
        parts.append(f'<text x="{lx + 22}" y="{legend_y}">{escape(name)}</text>')
        lx += 40 + 7 * len(name)
    kinds = sorted({p.kind for p in all_phases}, key=list(PHASE_COLOURS).index)
    for kind in kinds:
        parts.append(f'<rect x="{lx}" y="{legend_y - 10}" width="12" height="12" fill="{PHASE_COLOURS[kind]}"/>')
        parts.append(f'<text x="{lx + 16}" y="{legend_y}">{escape(kind)}</text>')
        lx += 30 + 8 * len(kind)
    parts.append(f'<text x="{lx + 10}" y="{legend_y}" fill="#555">{escape(figures.verdict.text)}</text>')
    parts.append('</svg>')
    return "\n".join(parts) + "\n"


def _ticks(duration: float) -> list[float]:
    """About ten round tick positions (1, 2 or 5 times a power of ten) from 0 to ``duration``."""
    raw = duration / 10
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(duration / step + 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]
