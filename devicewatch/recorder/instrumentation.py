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
from ..integrations.zero_code import frameworks

NOT_ACTIVE = (f"no process of the workload imported {frameworks.titles()} "
              "under it: not Python, or Python started without site or PYTHONPATH")
FROM_OUTPUT = "; the epochs were read from the workload's output instead"


def not_active(imported: list[str], processes: int, epochs_from_output: bool) -> str:
    """Why the instrumentation was not active, naming what was found: the frameworks processes
    imported without training under the hooks, and the output's epoch lines where they stood in.
    The frameworks and what their hooks take for training are their rows' (``frameworks``)."""
    if imported:
        reason = (f"{', '.join(imported)} imported in {processes} process{'es' * (processes != 1)}, "
                  f"but its hooks saw no training step ({frameworks.training_steps()})")
    else:
        reason = NOT_ACTIVE
    return reason + (FROM_OUTPUT if epochs_from_output else "")


class InstrumentationNews:
    """The instrument events of a run, as they arrive."""

    def __init__(self, offered: dict[str, Any]):
        self.offered = offered
        self._processes: set[Any] = set()
        self._frameworks: list[str] = []
        self._errors: list[str] = []
        self._left_out = 0
        self._imported: list[str] = []
        self._importers: set[Any] = set()
        self._epochs_from_output = False

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
        elif state == "imported" and isinstance(record.get("frameworks"), list):
            self._importers.add(record.get("pid"))
            for framework in record["frameworks"]:
                if isinstance(framework, str) and framework not in self._imported:
                    self._imported.append(framework)

    def printed_epoch(self) -> None:
        """The workload's output printed an epoch line (``Epoch 2/10``)."""
        self._epochs_from_output = True

    def summary(self) -> dict[str, Any]:
        """The end record's ``instrument``: whether it was active, where, with what."""
        if not self.offered.get("offered"):
            return {"active": False, "reason": self.offered.get("reason")}
        if not self._processes:
            return {"active": False,
                    "reason": not_active(self._imported, len(self._importers), self._epochs_from_output)}
        out: dict[str, Any] = {"active": True, "processes": len(self._processes), "frameworks": self._frameworks}
        if self._errors:
            out["errors"] = self._errors
        if self._left_out:
            out["left_out"] = self._left_out
        return out
