"""py-spy's trace of one window (``--format chrometrace``) as slices of each thread's stack.

py-spy writes a frame's begin (``B``) when it first appears on top of a sample and its end
(``E``) when a later sample no longer holds it, both stamped with microseconds from the
start of its window; so a thread's stack holds from one time stamp to its next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Frame:
    name: str        # py-spy's: the function's qualified name (``_BaseDataLoaderIter.__next__``)
    file: str
    line: int

    @property
    def function(self) -> str:
        """The bare name: ``__next__`` of ``_BaseDataLoaderIter.__next__``."""
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Slice:
    """One thread's stack, outermost frame first, held from START to END (seconds from the
    window's start)."""

    thread: str
    tid: int
    start: float
    end: float
    stack: tuple[Frame, ...]


THREAD_PREFIX = "thread ("


def slices(trace: list[dict[str, Any]]) -> list[Slice]:
    """The slices of every thread in TRACE (py-spy's chrometrace events, in its order), each
    thread's in time order; a thread with no frame at a time (not sampled) has no slice then."""
    stacks: dict[int, list[Frame]] = {}
    names: dict[int, str] = {}
    since: dict[int, float] = {}
    out: list[Slice] = []
    for event in trace:
        if not isinstance(event, dict) or event.get("ph") not in ("B", "E"):
            continue
        tid, ts = event.get("tid"), event.get("ts")
        if not isinstance(tid, int) or not isinstance(ts, (int, float)):
            continue
        at = ts / 1e6
        stack = stacks.setdefault(tid, [])
        if tid in since and at > since[tid] and stack:
            out.append(Slice(names.get(tid, ""), tid, since[tid], at, tuple(stack)))
        since[tid] = at
        name = str(event.get("name", ""))
        if name.startswith(THREAD_PREFIX):
            names[tid] = name.split(": ", 1)[-1]
            continue
        if event["ph"] == "B":
            args = event.get("args") or {}
            stack.append(Frame(name, str(args.get("filename", "")), int(args.get("line") or 0)))
        elif stack:
            stack.pop()
    out.sort(key=lambda s: (s.tid, s.start))
    return out
