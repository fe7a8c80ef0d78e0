"""Everything ``devicewatch report --json`` prints, computed once (``summarize``)."""

from __future__ import annotations

from typing import Any

from ..runfile import Run
from .epoch_rows import (
    EPOCH_UNIT,
    EpochRow,
    Unmeasured,
    data_wait,
    data_wait_unmeasured,
    epochs,
    stragglers,
    unit,
)
from .idle import DeviceIdle
from .pairing import Phase, lane_overlap, lanes, phases
from .utilization import driver_sample_periods, phase_utilization, series, stats
from .verdicts import run_judgement
from .wording import instrumentation_text, results, run_info, status_text


def unmeasured_dict(found: Unmeasured | None) -> dict[str, Any] | None:
    """``data_wait_unmeasured`` as plain data (``report --json``, ``compare --json``)."""
    if found is None:
        return None
    return {"unit": found.unit, "rows": found.numbers, "reason": found.reason, "text": found.text}


def _device_rows(found: list[DeviceIdle]) -> list[dict[str, Any]]:
    return [{"device": d.device, "mean": d.mean, "idle_fraction": d.idle_fraction,
             "dips": len(d.dips), "dip_seconds": round(d.dip_seconds, 3),
             "dip_phases": sorted({x.phase for x in d.dips})} for d in found]


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def epoch_dict(e: EpochRow, unit_: str = EPOCH_UNIT) -> dict[str, Any]:
    """One epoch as plain data (``report --json``, ``compare --json``): its unit (UNIT_, the
    run's, where its epoch event has not said), seconds, the data wait and its shares (of the
    epoch, and of the training loop: the table's), the metrics as recorded."""
    return {"epoch": e.epoch, "unit": e.unit or unit_, "start": round(e.start, 3), "total": round(e.total, 3),
            "train": round(e.train, 3), "validate": round(e.validate, 3), "other": round(e.other, 3),
            "phase_seconds": {k: round(v, 3) for k, v in e.phases.items()}, "untracked": round(e.untracked, 3),
            "data_wait": _r(e.data_wait), "data_wait_share": _r(e.data_wait_share, 4),
            "data_wait_source": e.data_wait_source, "train_loop": round(e.train_loop, 3),
            "loop_wait_share": _r(e.loop_wait_share, 4), "metrics": e.metrics}


def data_wait_dict(rows: list[EpochRow]) -> dict[str, Any] | None:
    """The run's data wait over all its epochs (``data_wait``), as plain data."""
    wait = data_wait(rows)
    if wait is None:
        return None
    return {"seconds": round(wait.seconds, 3), "train_loop": round(wait.train_loop, 3),
            "share": round(wait.share, 4), "source": wait.source}


def summarize(run: Run) -> dict[str, Any]:
    """Everything ``devicewatch report --json`` prints, as plain data. For a merged run the
    devices and the verdict are each node's (``per_host``); phase utilization is over every
    node's samples together."""
    s = series(run)
    all_phases = phases(run)
    rows = epochs(run, all_phases)
    run_unit = unit(rows)
    devices, v, hosts = run_judgement(run, s, all_phases)
    per_host = [{"host": h.host, "hostname": h.hostname, "samples": h.samples, "cpu_mean": h.cpu_mean,
                 "devices": _device_rows(h.devices),
                 "verdict": {"label": h.verdict.label, "text": h.verdict.text, "figures": h.verdict.figures}}
                for h in hosts]
    return {
        "file": run.path,
        "workload": run.title,
        "command": run.header.get("workload", {}).get("command"),
        "started": run.header.get("started"),
        "duration": round(run.duration, 3),
        "status": run.end.get("status") if run.end else "unknown",
        "status_text": status_text(run),
        "exit_code": run.end.get("exit_code") if run.end else None,
        "ended_abruptly": run.ended_abruptly,
        "instrumentation": instrumentation_text(run),
        "host": run.header.get("host", {}),
        "run_info": run_info(run),
        "gpu": {"available": bool(run.gpu_status and run.gpu_status[0].get("available")),
                "reason": run.gpu_status[0].get("reason") if run.gpu_status else None},
        "samples": len(run.samples),
        "unit": run_unit,
        "epochs": [epoch_dict(e, run_unit) for e in rows],
        "data_wait": data_wait_dict(rows),
        "data_wait_unmeasured": unmeasured_dict(data_wait_unmeasured(run, rows, all_phases)),
        "phases": phase_utilization(run, s, all_phases),
        "devices": _device_rows(devices),
        "lanes": lanes(all_phases),
        "overlap": {k: round(v_, 3) for k, v_ in lane_overlap(all_phases).items()},
        "results": results(run),
        "verdict": {"label": v.label, "text": v.text, "figures": v.figures},
        "gpu_driver_periods": driver_sample_periods(run),
        "hosts": run.host_labels,
        "per_host": per_host,
        "alignment": (run.header.get("alignment") or {}).get("text") if isinstance(run.header.get("alignment"), dict) else None,
        "stragglers": straggler_rows(run, all_phases),
        "notices": [n.get("message") for n in run.notices],
        "recorder_cpu_mean": stats(s.recorder_cpu)["mean"],
    }


def straggler_rows(run: Run, all_phases: list[Phase] | None = None) -> list[dict[str, Any]]:
    """``stragglers`` as plain data (what ``report --json`` prints); ranks as strings, as JSON keys are."""
    return [{"epoch": row.epoch, "last_rank": row.last_rank, "max_wait": round(row.max_wait, 6),
             "waited": {str(r): w for r, w in row.waited.items()}} for row in stragglers(run, all_phases)]
