"""One trial of ``devicewatch try``: a warm-up, then N optimizer steps or S seconds measured.

Given ``DEVICEWATCH_TRIAL`` (``{"warmup": 20, "steps": 200}`` or ``{"warmup": 20, "seconds":
30}``), the process counts the training loop's optimizer steps (the same steps the epochs
count). After the warm-up it says the measured window has begun (an ``instrument`` event,
state ``trial``, ``stage: "measuring"``); when the window is full it closes the loop's open
unit (its figures go out as at an exit, and the hooks say nothing more), says ``stage:
"done"`` with the window's figures, and the recorder ends the process. The figures are the window's own: steps,
seconds, steps a second, the data wait in the window where a loader was measured, and the
seconds the training thread spent shutting down the workers of iterators it dropped
(``teardown_s``, where any: a loop that takes a new iterator every step).

A script that ends before its window is full says what it measured (``partial: true``), or
that it ended in its warm-up (``stage: "unmeasured"``, with the steps it made).

Where nothing is varied, the window is followed by a calibration: a few steps timed with each
value the advice may name that can be set inside the running process, then the script's own
again. The framework's operator threads (``threads``, given by the hooks): one where the script
has more, every core it may run on where it has fewer. How much a pool of fewer threads gains
beside other programs, or on a pinned core, depends on how its threads wait, which no figure of
the window tells. And a loop that takes a new iterator over its training DataLoader (``loader``,
given by the hooks) with workers at least every other step: ``num_workers=0`` and, where its
workers are not persistent, ``persistent_workers=true``, which its next iterator already
follows. ``calibrated`` in the ``done`` event has each value's steps, seconds and steps a second,
and ``calibration_s`` the seconds between the window's end and the event.
"""

from __future__ import annotations

import json
import os
from typing import Any
from collections.abc import Callable

from ... import events
from . import TRIAL_VAR

SETTLE_STEPS = 3        # steps after a change of threads before they are timed: the pool forms again
LOADER_SETTLE_STEPS = 1  # ... of a loader's knob: the next step's new iterator follows it
RESTARTING = 0.5        # new iterators with workers a window's step from which a loader's knobs are calibrated
CALIBRATION_SHARE = 0.5   # of the window's steps or seconds, for each calibrated value
MIN_CALIBRATION_STEPS = 5


def requested(env: dict[str, str] | os._Environ[str] = os.environ) -> dict[str, float | None] | None:
    """The trial this process is, or None (not a trial, or one that cannot be read)."""
    text = env.get(TRIAL_VAR)
    if not text:
        return None
    try:
        given = json.loads(text)
        warmup = int(given.get("warmup", 0))
        steps = int(given["steps"]) if given.get("steps") is not None else None
        seconds = float(given["seconds"]) if given.get("seconds") is not None else None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if warmup < 0 or (steps is None) == (seconds is None) or (steps is not None and steps < 1) \
            or (seconds is not None and seconds <= 0):
        return None
    return {"warmup": warmup, "steps": steps, "seconds": seconds}


class Trial:
    """Counts steps; measures the window after the warm-up. ``waited`` gives the loop's wait so
    far (``Loop.wait_parts``: its DataLoader wait, the rest, the share of the rest found input;
    None where none is measured): the window's data wait is its DataLoader wait and its rest at
    the share known when it ends, so a share learnt during the window counts the same before
    and after its start."""

    def __init__(self, spec: dict[str, Any], waited: Callable[[], tuple[float, float, float] | None],
                 say: Callable[..., None] = events.emit, before_done: Callable[[float], None] = lambda now: None):
        self.warmup = int(spec["warmup"])
        self.steps_wanted = spec.get("steps")
        self.seconds_wanted = spec.get("seconds")
        self.waited = waited
        self.say = say
        self.before_done = before_done   # the loop's last figures go out before the process is ended
        self.steps = 0
        self.start: float | None = None
        self.wait_at_start: tuple[float, float, float] | None = None
        self.over = False
        self.teardown = 0.0   # seconds the training thread shut down dropped iterators' workers (the hooks add)
        self.teardown_at_start = 0.0
        # the operator threads' getter and setter, where the hooks can set them and nothing is varied
        self.threads: tuple[Callable[[], int], Callable[[int], None]] | None = None
        self.loader: Callable[[], Any] | None = None   # the training DataLoader, where the hooks know it
        self.iterators = 0          # new iterators with workers made on the training thread (the hooks count)
        self.iterators_at_start = 0
        self.own_loader: tuple[Any, int, bool] | None = None   # (the loader, its workers, persistent) as written
        self.window: dict[str, Any] | None = None   # the window's figures, once it is full
        self.window_end = 0.0
        self.calibrating: list[tuple[str, Any]] = []   # (knob, value) still to time after the window
        self.calibrated: list[dict[str, Any]] = []
        self.own_threads = 0
        self.mark = (0, 0.0)                         # (steps, time) the value being calibrated is timed from

    def step(self, now: float) -> None:
        if self.over:
            return
        self.steps += 1
        if self.start is None:
            if self.steps >= self.warmup:
                self.start = now
                self.wait_at_start = self.waited()
                self.teardown_at_start = self.teardown
                self.iterators_at_start = self.iterators
                self.say(events.INSTRUMENT, state="trial", stage="measuring", warmup=self.steps)
            return
        if self.window is not None:
            self._calibrate(now)
            return
        measured = self.steps - self.warmup
        if (self.steps_wanted is not None and measured >= self.steps_wanted) or \
                (self.seconds_wanted is not None and now - self.start >= self.seconds_wanted):
            self.window, self.window_end = self._figures(now), now
            self.calibrating = self._to_calibrate()
            if self.calibrating:
                self._next_value(now)
            else:
                self._done(now, partial=False)

    def finish(self, now: float) -> None:
        """The process ends: what was measured, if the window was not full."""
        if self.over:
            return
        if self.window is not None:   # ended while calibrating: the window is whole, the values timed are said
            self._done(now, partial=False, ended=True)
            return
        if self.start is None or self.steps == self.warmup:
            self.over = True
            self.say(events.INSTRUMENT, state="trial", stage="unmeasured", steps=self.steps,
                     reason=f"the script ended after {self.steps} optimizer step(s), in the warm-up of {self.warmup}")
            return
        self.window = self._figures(now)
        self._done(now, partial=True, ended=True)

    def _to_calibrate(self) -> list[tuple[str, Any]]:
        """The values to time after the window: a restarting loader's knobs first (the knobs its
        advice names), then fewer threads where the script has more than one, the cores it may
        run on where it has fewer."""
        out: list[tuple[str, Any]] = []
        try:
            loader = self.loader() if self.loader is not None else None
            steps = self.steps - self.warmup
            if loader is not None and int(loader.num_workers) > 0 and \
                    self.iterators - self.iterators_at_start >= RESTARTING * steps:
                self.own_loader = (loader, int(loader.num_workers), bool(loader.persistent_workers))
                out.append(("num_workers", 0))
                if not loader.persistent_workers:
                    out.append(("persistent_workers", True))
            if self.threads is not None:
                self.own_threads = int(self.threads[0]())
                cores = len(os.sched_getaffinity(0))
                out += [("threads", 1)] if self.own_threads > 1 else []
                out += [("threads", cores)] if self.own_threads < cores else []
        except Exception:
            return []
        return out

    def _set(self, knob: str, value: Any) -> None:
        """KNOB to VALUE in the running process (the script's own again: ``_restore``)."""
        if knob == "threads":
            assert self.threads is not None
            self.threads[1](value)
            return
        assert self.own_loader is not None
        loader = self.own_loader[0]
        if knob == "num_workers":
            loader.num_workers = value
        else:   # a DataLoader refuses persistent_workers once made; its next iterator reads it all the same
            object.__setattr__(loader, knob, value)

    def _restore(self, knob: str) -> None:
        if knob == "threads":
            if self.threads is not None and self.own_threads:
                self.threads[1](self.own_threads)
            return
        if self.own_loader is not None:
            loader, workers, persistent = self.own_loader
            loader.num_workers = workers
            object.__setattr__(loader, "persistent_workers", persistent)
            if not persistent and getattr(loader, "_iterator", None) is not None:
                loader._iterator = None   # the persistent workers of the calibration are let go

    def _next_value(self, now: float) -> None:
        knob, value = self.calibrating[0]
        self._set(knob, value)
        self.mark = (self.steps + (SETTLE_STEPS if knob == "threads" else LOADER_SETTLE_STEPS), now)

    def _calibrate(self, now: float) -> None:
        """One step of the value being calibrated: timed once it has settled, for a share of the window."""
        first, since = self.mark
        if self.steps < first:
            return
        if self.steps == first:
            self.mark = (first, now)
            return
        steps, seconds = self.steps - first, now - since
        wanted = max(MIN_CALIBRATION_STEPS, int(CALIBRATION_SHARE * (self.steps_wanted or 0)))
        enough = steps >= wanted if self.steps_wanted is not None else \
            steps >= MIN_CALIBRATION_STEPS and seconds >= CALIBRATION_SHARE * float(self.seconds_wanted or 0)
        if not enough:
            return
        knob, value = self.calibrating.pop(0)
        self._restore(knob)
        self.calibrated.append({"knob": knob, "value": value, "steps": steps, "seconds": round(seconds, 6),
                                "steps_per_s": round(steps / max(seconds, 1e-9), 4)})
        if self.calibrating:
            self._next_value(now)
        else:
            self._done(now, partial=False)

    def _figures(self, now: float) -> dict[str, Any]:
        """The window's own figures, at its end."""
        assert self.start is not None
        steps, seconds = self.steps - self.warmup, max(now - self.start, 1e-9)
        figures: dict[str, Any] = {"steps": steps, "seconds": round(seconds, 6),
                                   "steps_per_s": round(steps / seconds, 4)}
        waited = self.waited()
        if waited is not None and self.wait_at_start is not None:
            (loader, rest, share), (loader0, rest0, _) = waited, self.wait_at_start
            figures["data_wait_s"] = round(max(0.0, loader - loader0 + (rest - rest0) * share), 6)
            figures["data_wait_share"] = round(min(1.0, figures["data_wait_s"] / seconds), 4)
        if self.teardown > self.teardown_at_start:
            figures["teardown_s"] = round(self.teardown - self.teardown_at_start, 6)
        return figures

    def _done(self, now: float, partial: bool, ended: bool = False) -> None:
        self.over = True
        assert self.window is not None
        if self.calibrating:   # ended while timing one: the script's own again, for whatever it does until it ends
            try:
                self._restore(self.calibrating[0][0])
            except Exception:
                pass
        figures = dict(self.window)
        if self.calibrated:
            figures["calibrated"] = self.calibrated
        if not partial and now > self.window_end:   # the window ended this long before the event
            figures["calibration_s"] = round(now - self.window_end, 6)
        if not ended:
            self.before_done(now)
        self.say(events.INSTRUMENT, state="trial", stage="done", partial=partial, **figures)
