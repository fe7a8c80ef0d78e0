"""Whose phases a run shows: the workload's own beat the epochs printed on its output.

The recorder parses epoch lines from what a script prints (``source: "stdout"`` phases) only
as a last resort. As soon as the workload says it reports its phases itself (its run info,
which a callback sends before its first phase, or a phase it begins, through
``devicewatch.events``, a callback or the zero-code instrumentation), its phases are the run's:
the recorder stops writing printed epochs, and analysis and the live model leave out any it
wrote before. Other events (results, markers, the instrumentation's news that it is loaded,
which any Python process sends) do not count. This module is the one place that says so;
standard library only, so the recorder uses it without numpy.
"""

from __future__ import annotations

from typing import Any

from . import events

PRINTED = "stdout"   # the ``source`` of the phases the recorder parsed from the workload's output


def is_printed(event: dict[str, Any]) -> bool:
    """A phase event the recorder wrote from a printed epoch line."""
    return event.get("source") == PRINTED


def speaks_for_its_phases(event: dict[str, Any]) -> bool:
    """An event by which the workload shows it says its phases itself: its run info, or a
    phase it began (not one the recorder wrote from its output)."""
    kind = event.get("kind")
    return kind == events.RUN_INFO or (kind == events.PHASE_BEGIN and not is_printed(event))
