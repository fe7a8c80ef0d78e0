"""``devicewatch compare``: two recorded runs side by side.

The figures are pure functions over two ``Run`` objects (``comparison(run_a, run_b)``), so the
text table, the JSON and the dashboard's comparison view all show the same numbers. Runs that
differ (core counts, GPU or none, epoch counts, workloads) still compare; whatever cannot be
compared is said in ``Comparison.notes`` rather than left out silently.

    devicewatch compare A.jsonl B.jsonl [--text | --json]
    devicewatch compare --pair WORKLOAD --a "OPTIONS" --b "OPTIONS" [--out DIR] [--text | --json]
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from . import analysis
from .runfile import NO_END_RECORD, Run, load
from .safe_text import inert, inert_table

PER_CORE_TEXT_LIMIT = 16  # more cores than this: per-core columns only in --json


@dataclass
class Side:
    """Everything one run contributes to a comparison, computed once."""

    label: str                 # "A" or "B"
    run: Run
    duration: float
    cores: int
    gpus: int                  # GPUs with samples in the run
    gpu_names: list[str]
    status: str
    epochs: list[analysis.EpochRow]
    phases: list[analysis.Phase]
    utilization: dict[str, dict[str, Any]]
    devices: list[analysis.DeviceIdle]
    verdict: analysis.Verdict
    run_info: dict[str, Any]
    results: list[dict[str, Any]]

    @property
    def epoch_seconds(self) -> float:
        """Time from the first epoch's start to the last epoch's end."""
        return self.epochs[-1].end - self.epochs[0].start if self.epochs else 0.0

    @property
    def phase_seconds(self) -> float:
        """Time from the first phase's start to the last phase's end."""
        if not self.phases:
            return 0.0
        return max(p.end for p in self.phases) - min(p.start for p in self.phases)

    @property
    def idle_device(self) -> analysis.DeviceIdle | None:
        """The device whose idle time the comparison is about: the busiest GPU, else total CPU."""
        if not self.devices:
            return None
        return max(self.devices, key=lambda d: d.mean)

    @property
    def command(self) -> str:
        workload = self.run.header.get("workload", {})
        if workload.get("name"):
            return " ".join([workload["name"], *map(shlex.quote, workload.get("args", []))])
        return " ".join(map(shlex.quote, workload.get("command", []))) or self.run.title


def side(run: Run, label: str) -> Side:
    s = analysis.series(run)
    all_phases = analysis.phases(run)
    info: dict[str, Any] = {}
    for event in run.events:
        if event.get("kind") == "run_info" and isinstance(event.get("info"), dict):
            info.update(event["info"])
    names = run.gpu_names
    status = run.end.get("status", "unknown") if run.end else NO_END_RECORD
    if run.end and run.end.get("exit_code") not in (0, None):
        status += f" (exit code {run.end['exit_code']})"
    return Side(
        label=label, run=run, duration=run.duration, cores=int(s.cpu.shape[1]) or run.cores,
        gpus=s.gpus, gpu_names=[names[g] if g < len(names) else f"GPU {g}" for g in range(s.gpus)],
        status=status, epochs=analysis.epochs(run, all_phases), phases=all_phases,
        utilization=analysis.phase_utilization(run, s, all_phases),
        devices=analysis.device_idle(run, s, all_phases), verdict=analysis.verdict(run, s, all_phases),
        run_info=info,
        results=[{"name": e.get("name"), **(e.get("values") or {})}
                 for e in run.events if e.get("kind") == "result"])


@dataclass
class EpochPair:
    """One epoch number in either run; ``None`` on the side that has no such epoch."""

    epoch: int
    a: analysis.EpochRow | None
    b: analysis.EpochRow | None

    def delta(self, figure: str) -> float | None:
        """B minus A for total, train, validate or other, in seconds."""
        if self.a is None or self.b is None:
            return None
        return getattr(self.b, figure) - getattr(self.a, figure)

    def change(self, figure: str = "total") -> float | None:
        """(B - A) / A: -0.2 means B took 20% less time."""
        if self.a is None or self.b is None or getattr(self.a, figure) <= 0:
            return None
        return (getattr(self.b, figure) - getattr(self.a, figure)) / getattr(self.a, figure)


@dataclass
class PhasePair:
    """Mean utilization while one phase name is active, in both runs (``None`` where absent)."""

    name: str
    a: dict[str, Any] | None
    b: dict[str, Any] | None

    @staticmethod
    def _mean(entry: dict[str, Any] | None, *path: Any) -> float | None:
        value: Any = entry
        for key in path:
            if value is None:
                return None
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                return None
        return value.get("mean") if isinstance(value, dict) else value

    def seconds(self, which: str) -> float | None:
        return self._mean(getattr(self, which), "seconds")

    def cpu_total(self, which: str) -> float | None:
        return self._mean(getattr(self, which), "cpu_total")

    def core(self, which: str, index: int) -> float | None:
        return self._mean(getattr(self, which), "cores", index)

    def gpu(self, which: str, index: int) -> float | None:
        return self._mean(getattr(self, which), "gpus", index)


@dataclass
class Comparison:
    a: Side
    b: Side
    basis: str                  # what the speedup measures: "epochs", "phases" or "whole run"
    seconds_a: float
    seconds_b: float
    epochs: list[EpochPair]
    phases: list[PhasePair]
    per_core: bool              # same core count: per-core columns are comparable
    per_gpu: bool               # same GPU count (and at least one): per-GPU columns comparable
    idle_kind: str              # "GPU", "CPU", or "mixed" (one run has a GPU, the other not)
    notes: list[str] = field(default_factory=list)
    headline: str = ""

    @property
    def speedup(self) -> float | None:
        """How many times faster B is than A on ``basis`` (above 1: B is faster)."""
        return self.seconds_a / self.seconds_b if self.seconds_a > 0 and self.seconds_b > 0 else None

    @property
    def change(self) -> float | None:
        """(B - A) / A on ``basis``: -0.21 means B finished 21% sooner."""
        return (self.seconds_b - self.seconds_a) / self.seconds_a if self.seconds_a > 0 else None


def _basis(a: Side, b: Side) -> tuple[str, float, float]:
    """Compare the epochs when both runs have them, else the phases, else the whole run.

    Whole-run time includes starting the interpreter and importing the framework, which can
    hide the difference the experiment is about; the epochs are the part that was changed.
    """
    if a.epochs and b.epochs:
        return "epochs", a.epoch_seconds, b.epoch_seconds
    if a.phases and b.phases:
        return "phases", a.phase_seconds, b.phase_seconds
    return "whole run", a.duration, b.duration


def _notes(a: Side, b: Side, basis: str) -> list[str]:
    notes = []
    name_a, name_b = a.run.header.get("workload", {}).get("name"), b.run.header.get("workload", {}).get("name")
    if name_a != name_b:
        notes.append(f"different workloads: A runs {a.run.title}, B runs {b.run.title}")
    host_a, host_b = a.run.header.get("host", {}), b.run.header.get("host", {})
    if host_a.get("hostname") != host_b.get("hostname") or host_a.get("cpu_model") != host_b.get("cpu_model"):
        notes.append(f"recorded on different machines: A on {host_a.get('hostname', '?')} "
                     f"({host_a.get('cpu_model', '?')}), B on {host_b.get('hostname', '?')} "
                     f"({host_b.get('cpu_model', '?')})")
    if a.cores != b.cores:
        notes.append(f"A has {a.cores} cores, B has {b.cores}: per-core columns omitted")
    if a.gpus != b.gpus:
        if not a.gpus or not b.gpus:
            with_gpu, without = (a, b) if a.gpus else (b, a)
            notes.append(f"{without.label} has no GPU samples, {with_gpu.label} has {with_gpu.gpus}: "
                         f"GPU columns show {with_gpu.label} only, and idle time is {with_gpu.label}'s "
                         f"GPU against {without.label}'s total CPU (not the same device)")
        else:
            notes.append(f"A has {a.gpus} GPUs, B has {b.gpus}: per-GPU columns omitted; "
                         "idle time compares the busiest GPU of each")
    elif not a.gpus:
        notes.append("no GPU in either run: idle time and dips are for total CPU, not a GPU")
    if len(a.epochs) != len(b.epochs):
        notes.append(f"A has {len(a.epochs)} epochs, B has {len(b.epochs)}: "
                     "the epoch table pairs epochs by number, and total times cover different work")
    elif basis != "epochs":
        notes.append(f"no epochs in {'either run' if not a.epochs and not b.epochs else 'one run'}: "
                     f"the speedup compares {'the span of the phases' if basis == 'phases' else 'whole runs, startup included'}")
    for s in (a, b):
        if s.status != "ok":
            notes.append(f"{s.label} did not finish normally: {s.status}")
        if len(s.run.samples) < 2:
            notes.append(f"{s.label} has {len(s.run.samples)} samples: too few for utilization figures")
    interval_a, interval_b = a.run.header.get("interval"), b.run.header.get("interval")
    if interval_a != interval_b:
        notes.append(f"sampled at different intervals ({interval_a}s and {interval_b}s)")
    return notes


def _pct(fraction: float) -> str:
    return f"{abs(fraction) * 100:.0f}%"


def _duration(seconds: float, scale: float | None = None) -> str:
    """Seconds with a precision that suits ``scale`` (the larger of two figures shown together)."""
    scale = seconds if scale is None else scale
    return f"{seconds:.2f}s" if scale < 10 else f"{seconds:.1f}s" if scale < 600 else f"{seconds / 60:.1f} min"


def headline(c: Comparison) -> str:
    """One sentence in plain words: who finished sooner, and what happened to idle time."""
    if c.change is None or c.seconds_b <= 0:
        first = "the runs cannot be timed against each other (one has no duration)"
    elif abs(c.change) < 0.005:
        first = f"B took as long as A ({_duration(c.seconds_a)})"
    else:
        scale = max(c.seconds_a, c.seconds_b)
        both = f"{_duration(c.seconds_b, scale)} vs {_duration(c.seconds_a, scale)}"
        if c.change < 0:
            first = f"B finished {_pct(c.change)} sooner ({both}, {c.speedup:.2f}x as fast)"
        else:
            first = f"B took {_pct(c.change)} longer ({both})"
    if c.basis != "whole run":
        first += f" over the {c.basis}"
    da, db = c.a.idle_device, c.b.idle_device
    if da is None or db is None:
        return first
    if c.idle_kind == "GPU":
        ia, ib = da.idle_fraction, db.idle_fraction
        if round(ia * 100) == round(ib * 100):
            second = f"GPU idle stayed at {_pct(ia)} of the time"
        else:
            second = f"GPU idle {'fell' if ib < ia else 'rose'} from {_pct(ia)} to {_pct(ib)} of the time"
    elif c.idle_kind == "CPU":
        second = f"the CPU averaged {da.mean:.0f}% in A and {db.mean:.0f}% in B"
    else:
        gpu_side = c.a if c.a.gpus else c.b
        device = gpu_side.idle_device
        second = f"{gpu_side.label}'s GPU was idle {_pct(device.idle_fraction)} of the time" if device else ""
    return f"{first}; {second}" if second else first


def comparison(run_a: Run, run_b: Run) -> Comparison:
    """All the figures of ``devicewatch compare``, for the text table, the JSON and the dashboard."""
    a, b = side(run_a, "A"), side(run_b, "B")
    basis, seconds_a, seconds_b = _basis(a, b)
    by_a = {row.epoch: row for row in a.epochs}
    by_b = {row.epoch: row for row in b.epochs}
    epoch_pairs = [EpochPair(n, by_a.get(n), by_b.get(n)) for n in sorted(set(by_a) | set(by_b))]
    names = list(a.utilization) + [n for n in b.utilization if n not in a.utilization]
    if analysis.NO_PHASE in names:  # the remainder goes last
        names.remove(analysis.NO_PHASE)
        names.append(analysis.NO_PHASE)
    phase_pairs = [PhasePair(n, a.utilization.get(n), b.utilization.get(n)) for n in names]
    if a.gpus and b.gpus:
        idle_kind = "GPU"
    elif not a.gpus and not b.gpus:
        idle_kind = "CPU"
    else:
        idle_kind = "mixed"
    c = Comparison(a, b, basis, seconds_a, seconds_b, epoch_pairs, phase_pairs,
                   per_core=a.cores == b.cores, per_gpu=a.gpus == b.gpus and a.gpus > 0,
                   idle_kind=idle_kind, notes=_notes(a, b, basis))
    c.headline = headline(c)
    return c


# -- JSON -----------------------------------------------------------------------------------

def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _epoch_dict(row: analysis.EpochRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"start": _r(row.start), "total": _r(row.total), "train": _r(row.train),
            "validate": _r(row.validate), "other": _r(row.other), "metrics": row.metrics}


def _device_dict(d: analysis.DeviceIdle | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"device": d.device, "mean": d.mean, "idle_fraction": d.idle_fraction, "dips": len(d.dips),
            "dip_seconds": _r(d.dip_seconds), "dip_phases": sorted({x.phase for x in d.dips})}


def _side_dict(s: Side) -> dict[str, Any]:
    return {
        "file": s.run.path, "workload": s.run.title, "command": s.command, "status": s.status,
        "duration": _r(s.duration), "epoch_seconds": _r(s.epoch_seconds), "phase_seconds": _r(s.phase_seconds),
        "cores": s.cores, "gpus": s.gpu_names, "run_info": s.run_info,
        "idle": _device_dict(s.idle_device), "devices": [_device_dict(d) for d in s.devices],
        "verdict": {"label": s.verdict.label, "text": s.verdict.text, "figures": s.verdict.figures},
        "results": s.results,
    }


def to_dict(c: Comparison) -> dict[str, Any]:
    """What ``devicewatch compare --json`` prints. Times in seconds; deltas are B minus A."""
    return {
        "headline": c.headline,
        "basis": c.basis,
        "seconds": {"a": _r(c.seconds_a), "b": _r(c.seconds_b)},
        "speedup": _r(c.speedup), "change": _r(c.change, 4),
        "notes": c.notes,
        "a": _side_dict(c.a), "b": _side_dict(c.b),
        "epochs": [{"epoch": p.epoch, "a": _epoch_dict(p.a), "b": _epoch_dict(p.b),
                    "delta": {f: _r(p.delta(f)) for f in ("total", "train", "validate", "other")},
                    "change": _r(p.change(), 4)} for p in c.epochs],
        "phases": [{"phase": p.name, "a": p.a, "b": p.b} for p in c.phases],
        "per_core_comparable": c.per_core, "per_gpu_comparable": c.per_gpu, "idle_kind": c.idle_kind,
    }


# -- text -----------------------------------------------------------------------------------

def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}s"


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _both(a: float | None, b: float | None) -> str:
    return f"{_mean(a)} → {_mean(b)}"


def renderables(c: Comparison) -> list[Any]:
    """The comparison as rich renderables: header, epochs, utilization, idle time, verdicts."""
    from rich.table import Table

    out: list[Any] = []
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
    out.append(head)

    if c.epochs:
        table = Table(title="Epochs (Δ = B − A)", title_justify="left")
        for column in ("epoch", "A total", "B total", "Δ total", "Δ %", "A train", "B train",
                       "A validate", "B validate", "A other", "B other"):
            table.add_column(column, justify="right")
        for p in c.epochs:
            change = p.change()
            table.add_row(str(p.epoch), _secs(p.a and p.a.total), _secs(p.b and p.b.total),
                          _signed(p.delta("total")), "-" if change is None else f"{change * 100:+.0f}%",
                          _secs(p.a and p.a.train), _secs(p.b and p.b.train),
                          _secs(p.a and p.a.validate), _secs(p.b and p.b.validate),
                          _secs(p.a and p.a.other), _secs(p.b and p.b.other))
        out.append(table)
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
            out.append(table)

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
        out.append(table)
        if c.per_core and c.a.cores > PER_CORE_TEXT_LIMIT:
            out.append(f"{c.a.cores} cores: per-core columns are in --json only")

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
            table.add_row(s.label, d.device, _mean(d.mean), f"{d.idle_fraction:.0%}", str(len(d.dips)),
                          _secs(d.dip_seconds), ", ".join(sorted({x.phase for x in d.dips})) or "-")
    out.append(table)

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
        out.append(table)

    out.append(f"verdict A: {c.a.verdict.text}")
    out.append(f"verdict B: {c.b.verdict.text}")
    for note in c.notes:
        out.append(f"note: {note}")
    out.append(f"in short: {c.headline}")
    # Names, keys and statuses come from the run files: shown as text, never as commands.
    return [inert(item, newlines=True) if isinstance(item, str) else inert_table(item) if isinstance(item, Table) else item
            for item in out]


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_text(c: Comparison, width: int = 120, color: bool = False) -> str:
    """The comparison as plain text (no colour codes unless ``color``), for logs and tests."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, emoji=False, markup=False)
    for item in renderables(c):
        console.print(item, markup=False) if isinstance(item, str) else console.print(item)
    return buffer.getvalue()


# -- pairs: record two runs, then compare ---------------------------------------------------

def record_pair(workload: str, options_a: list[str], options_b: list[str], out_dir: str,
                interval: float | None = None, log: Any = None) -> tuple[str, str]:
    """Record A then B with the ordinary recorder, one after the other; return the two files.

    Runs are sequential on purpose: two workloads at once would share the cores and each
    would measure the other. The recorder's output goes to ``log`` (stderr), so stdout
    stays clean for ``--json``.
    """
    from .cli import Invocation, UsageError, _workload_command

    log = sys.stderr if log is None else log
    for opts in (options_a, options_b):  # refuse bad options before anything runs
        _workload_command(Invocation(command="record", workload=workload, rest=opts))
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out_dir}: {exc.strerror}") from None
    paths = []
    for label, opts in (("A", options_a), ("B", options_b)):
        path = os.path.join(out_dir, f"{label.lower()}.jsonl")
        command = [sys.executable, "-m", "devicewatch", "--record", path]
        if interval is not None:
            command += ["--interval", str(interval)]
        command += [workload, *opts]
        print(f"devicewatch: recording {label}: devicewatch --record {path} {workload} "
              f"{shlex.join(opts)}".rstrip(), file=log, flush=True)
        code = subprocess.call(command, stdout=log, stderr=log)
        if code != 0:
            raise UsageError(f"recording {label} failed (exit code {code}){_last_error(path)}; "
                             "nothing compared")
        paths.append(path)
    return paths[0], paths[1]


def _last_error(path: str) -> str:
    """The workload's last stderr line, which says why it failed (a workload prints one)."""
    try:
        run = load(path)
    except Exception:
        return ""
    for record in reversed(run.logs):
        if record.get("stream") == "stderr" and str(record.get("line", "")).strip():
            return f": {record['line'].strip()}"
    return ""


# -- command line ---------------------------------------------------------------------------

def _parser() -> Any:
    from .cli import _sub_parser

    parser = _sub_parser("compare", "Put two recorded runs side by side: totals and speedup, epochs, "
                         "utilization per phase, GPU idle time and dips, verdicts.")
    parser.add_argument("files", nargs="*", metavar="FILE", help="two run files, A then B")
    parser.add_argument("--text", action="store_true", help="print the comparison as a table")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--pair", metavar="WORKLOAD", help="record WORKLOAD twice (options --a, then --b), then compare")
    parser.add_argument("--a", dest="options_a", metavar="OPTIONS", default=None,
                        help='workload options of run A, one quoted string, e.g. --a="--device cpu"')
    parser.add_argument("--b", dest="options_b", metavar="OPTIONS", default=None,
                        help="workload options of run B")
    parser.add_argument("--out", metavar="DIR", help="where --pair writes a.jsonl and b.jsonl "
                        "(default runs/pair-DATE-TIME; files there are replaced)")
    parser.add_argument("--interval", type=float, metavar="SECONDS", help="--pair: sampling period")
    parser.add_argument("--width", type=int, default=None, help="text width (default: the terminal's)")
    return parser


def main(argv: list[str], presenter: bool = False) -> int:
    from .cli import UsageError

    args = _parser().parse_args(argv)
    if args.text and args.json:
        raise UsageError("compare: choose --text or --json, not both")
    if args.pair:
        if args.files:
            raise UsageError("compare: give two files or --pair WORKLOAD, not both")
        if args.options_a is None or args.options_b is None:
            raise UsageError('compare: --pair needs --a "OPTIONS" and --b "OPTIONS" (either may be "")')
        try:
            options_a, options_b = shlex.split(args.options_a), shlex.split(args.options_b)
        except ValueError as exc:
            raise UsageError(f"compare: cannot split the options: {exc}") from None
        if args.interval is not None and not 0.01 <= args.interval <= 60:
            raise UsageError(f"compare: --interval must be between 0.01 and 60 seconds, not {args.interval}")
        out_dir = args.out or os.path.join("runs", time.strftime("pair-%Y%m%d-%H%M%S"))
        path_a, path_b = record_pair(args.pair, options_a, options_b, out_dir, args.interval)
    else:
        if args.options_a is not None or args.options_b is not None or args.out or args.interval:
            raise UsageError("compare: --a, --b, --out and --interval go with --pair WORKLOAD")
        if len(args.files) != 2:
            raise UsageError(f"compare: give two run files, A and B (got {len(args.files)})")
        path_a, path_b = args.files

    run_a, run_b = load(path_a), load(path_b)
    if args.json:
        print(json.dumps(to_dict(comparison(run_a, run_b)), indent=2, default=str))
        return 0
    if not args.text:
        try:
            from .tui.compare import launch_compare
        except ImportError:
            print("devicewatch: the dashboard's comparison view is not available; printing the table",
                  file=sys.stderr)
        else:
            return launch_compare(path_a, path_b, presenter=presenter)
    _print(comparison(run_a, run_b), args.width)
    return 0


def _print(c: Comparison, width: int | None) -> None:
    from rich.console import Console

    if sys.stdout.isatty():
        console = Console(width=width, highlight=False, emoji=False, markup=False)
        for item in renderables(c):
            console.print(item, markup=False) if isinstance(item, str) else console.print(item)
    else:
        sys.stdout.write(render_text(c, width=width or 120))
