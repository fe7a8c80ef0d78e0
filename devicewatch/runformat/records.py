"""Builders of the run file's records (other than the header and samples), one per type.

Each returns the dict ``writer.RunWriter.write`` takes, with the fields docs/run-format.md
documents, so a record's shape is spelled in one place rather than as a literal wherever one
is written (the recorder's parts, the control channel, ``devicewatch merge``).
"""

from __future__ import annotations

from typing import Any

from ..probes.cpu_limits import CpuLimits

RESERVED = ("type", "t", "kind")


def notice(t: float, message: str, level: str = "warning", **extra: Any) -> dict[str, Any]:
    """Something the run file should say about the run itself (a bound reached, a GPU lost)."""
    return {"type": "notice", "t": t, "level": level, "message": message, **extra}


def log(t: float, stream: str, line: str, raw: str | None = None, cut_from: int | None = None,
        partial: bool = False) -> dict[str, Any]:
    """One line of the workload's output; ``raw``: its bytes in base64 when they are not UTF-8;
    ``cut_from``: its length when it was cut; ``partial``: a line not yet ended, as it stands
    (the stream's next log record replaces it)."""
    record: dict[str, Any] = {"type": "log", "t": t, "stream": stream, "line": line}
    if raw is not None:
        record["raw"] = raw
    if cut_from is not None:
        record["cut_from"] = cut_from
    if partial:
        record["partial"] = True
    return record


def event(t: float, kind: str, /, **fields: Any) -> dict[str, Any]:
    """An event as the run file stores it: the workload's fields under the recorder's time
    (a field of the workload's named ``type``, ``t`` or ``kind`` cannot replace the record's own)."""
    return {"type": "event", "t": t, "kind": kind, **{k: v for k, v in fields.items() if k not in RESERVED}}


def gpu_status(t: float, available: bool, reason: str | None, devices: int, **extra: Any) -> dict[str, Any]:
    """Whether the GPUs can be sampled (and why not), at the start and whenever that changes."""
    return {"type": "gpu_status", "t": t, "available": available, "reason": reason, "devices": devices, **extra}


def cpu_limits(t: float, pid: int, limits: CpuLimits) -> dict[str, Any]:
    """The cores process PID (the workload's root) may use: at its launch and whenever that changes."""
    return {"type": "cpu_limits", "t": t, "pid": pid, **limits.to_json()}


def end(t: float, status: str, exit_code: int, signal: str | None, reason: str,
        **extra: Any) -> dict[str, Any]:
    """How the run ended: the last record of every finished run file."""
    return {"type": "end", "t": t, "status": status, "exit_code": exit_code, "signal": signal,
            "duration": t, "reason": reason, **extra}
