"""Whose phases a run shows: the workload's own beat the epochs printed on its output.

The recorder parses epoch lines from what a script prints (``source: "stdout"`` phases) only
as a last resort. As soon as the workload begins a phase of its own (through
``devicewatch.events``, a callback, or the zero-code instrumentation), its phases are the
run's: the recorder stops writing printed epochs, and analysis and the live model leave out
any it wrote before. This module is the one place that says so; standard library only, so the
recorder uses it without numpy.
"""

from __future__ import annotations

from typing import Any

from . import events

PRINTED = "stdout"   # the ``source`` of the phases the recorder parsed from the workload's output


def is_printed(event: dict[str, Any]) -> bool:
    """A phase event the recorder wrote from a printed epoch line."""
    return event.get("source") == PRINTED


def is_own_phase(event: dict[str, Any]) -> bool:
    """An event by which the workload shows it says its phases itself: a phase it began."""
    return event.get("kind") == events.PHASE_BEGIN and not is_printed(event)
