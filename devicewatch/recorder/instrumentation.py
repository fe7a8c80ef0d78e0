"""What the zero-code instrumentation did in a run, gathered from its news for the end record.

The header says whether the instrumentation was offered to the command (and if not, why:
switched off, Python run with -I, -E or -S). Only the run can tell whether it became active:
each instrumented process that trains says so (``instrument`` events, state ``loaded``, then
``armed`` per framework), a failing hook says ``error`` and disarms itself, and a process whose
event budget dropped something says ``bounded`` at its exit. The end record's ``instrument``
object sums this up, so that a run with no phases says why it has none.
"""

from __future__ import annotations

from typing import Any

from ..events import INSTRUMENT

NOT_ACTIVE = ("no process of the workload trained under it: not Python, no torch, Lightning, Keras or "
              "Hugging Face training loop, or Python started without site or PYTHONPATH")


class InstrumentationNews:
    """The instrument events of a run, as they arrive."""

    def __init__(self, offered: dict[str, Any]):
        self.offered = offered
        self._processes: set[Any] = set()
        self._frameworks: list[str] = []
        self._errors: list[str] = []
        self._left_out = 0

    def take(self, record: dict[str, Any]) -> None:
        if record.get("kind") != INSTRUMENT:
            return
        state = record.get("state")
        if state == "loaded":
            self._processes.add(record.get("pid"))
        elif state == "armed" and isinstance(record.get("framework"), str):
            if record["framework"] not in self._frameworks:
                self._frameworks.append(record["framework"])
        elif state == "error":
            self._errors.append(f"{record.get('framework')}: {record.get('detail')}")
        elif state == "bounded" and isinstance(record.get("left_out"), int):
            self._left_out += record["left_out"]

    def summary(self) -> dict[str, Any]:
        """The end record's ``instrument``: whether it was active, where, with what."""
        if not self.offered.get("offered"):
            return {"active": False, "reason": self.offered.get("reason")}
        if not self._processes:
            return {"active": False, "reason": NOT_ACTIVE}
        out: dict[str, Any] = {"active": True, "processes": len(self._processes), "frameworks": self._frameworks}
        if self._errors:
            out["errors"] = self._errors
        if self._left_out:
            out["left_out"] = self._left_out
        return out
