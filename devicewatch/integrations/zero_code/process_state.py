"""The zero-code instrumentation's state in one workload process: which frameworks are armed,
what it has said, and the one way it speaks (``Voice``: every event it sends carries
``source: "auto"`` and stays within EVENT_RATE a second).

The hooks change attributes of the frameworks only through ``Process.replace``, which notes
how to put each one back: an attached process (``devicewatch attach`` on Python 3.14 or newer,
by ``sys.remote_exec``) has them all taken out again at the detach (``Process.disarm``).

A process says it is instrumented (``instrument`` events: loaded, then armed per framework)
only when it first has something to say, so that processes which import torch without
training (the torchrun agent, DataLoader workers, a helper run by the script) send nothing. A
hook that fails is reported once (state "error") and disarms itself; the script goes on
untouched.

A leaf of the instrumentation: the hooks (``torch_hooks``, ``tf_hooks``, ``framework_hooks``)
and the framework callbacks import it, and it imports none of them, so that ``instrument``,
which arms the hooks, sits above them all. The callbacks tell it their phases
(``declared_phase``) and ask it for the data wait and steps of their epoch
(``epoch_figures``); outside the instrumentation both are no-ops.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import Any
from collections.abc import Callable

from ... import events
from ...loop_figures import UnitFigures
from . import knobs, trial
from .epoch_variable import epoch_in_frames
from .frameworks import BY_NAME, FIT, LOOP
from .loop import EPOCH, LANE, Loop

# The event budget of one process: at most EVENT_RATE a second after a burst of EVENT_BURST.
# The end of a phase that was begun is never left out: it may borrow a token, which the next
# begin waits to repay, so no second holds more than 50 whatever the step rate. Data phases
# leave RESERVED tokens for the train/validate phases and epoch figures. What is left out is
# counted, and said once at the end (an instrument event, state "bounded").
EVENT_RATE = 30.0
EVENT_BURST = 16.0
RESERVED = 4.0
SOURCE = "auto"
DETAIL_CHARS = 300

class Voice:
    """Sends the loop's phases and figures as events, within the budget. A phase whose begin
    was over the budget is not ended either, so every phase sent is whole."""

    def __init__(self, emit: Callable[..., None], clock: Callable[[], float] = time.monotonic,
                 before_first: Callable[[], None] = lambda: None):
        self._emit = emit
        self._clock = clock
        self._before_first = before_first
        self._said = False
        self.tokens = EVENT_BURST
        self._refilled = clock()
        self._left_out: set[tuple[str, Any, str]] = set()
        self.dropped = 0
        # The loop's epoch numbers as sent: its own, but in a process joined mid-run (``number_from``).
        self.number: Callable[[int | None], int | None] = lambda epoch: epoch

    def number_from(self, first: int | None, whole: bool) -> None:
        """The hooks went into a process mid-run, and the loop's first epoch is the pass seen
        first: WHOLE, or partial (begun before the join: None, so no epoch and no epoch event).
        Numbered on from FIRST, the script's own epoch of that pass where its loop variable was
        read; else from the join (1: the first pass seen whole)."""
        base = first if first is not None else (1 if whole else 0)
        self.number = lambda epoch: None if epoch is None or (epoch < 2 and not whole) else base + epoch - 1

    def _take(self, n: float, keep: float = 0.0) -> bool:
        now = self._clock()
        self.tokens = min(EVENT_BURST, self.tokens + (now - self._refilled) * EVENT_RATE)
        self._refilled = now
        if self.tokens - n < keep:
            self.dropped += int(n)
            return False
        self.tokens -= n
        return True

    def say_left_out(self) -> None:
        """At the end: how many events the budget left out, if any."""
        if self.dropped and self._said:
            self._emit(events.INSTRUMENT, state="bounded", left_out=self.dropped)

    def _send(self, kind: str, **fields: Any) -> None:
        if not self._said:
            self._said = True
            self._before_first()
        self._emit(kind, source=SOURCE, **fields)

    def phase(self, kind: str, name: str, epoch: int | None, lane: str, at: float) -> None:
        epoch = self.number(epoch)
        key = (name, epoch, lane)
        if kind == "begin":
            if not self._take(1):
                self._left_out.add(key)
                return
            self._send(events.PHASE_BEGIN, name=name, epoch=epoch, lane=lane, mono=at)
        elif key in self._left_out:
            self._left_out.discard(key)
            self.dropped += 1
        else:
            self._take(1, keep=-1)  # an end is always sent: it only borrows
            self._send(events.PHASE_END, name=name, epoch=epoch, lane=lane, mono=at)

    def data_phase(self, start: float, end: float, epoch: int | None, lane: str) -> bool:
        if not self._take(2, keep=RESERVED):
            return False
        epoch = self.number(epoch)
        self._send(events.PHASE_BEGIN, name="data", epoch=epoch, lane=lane, mono=start)
        self._send(events.PHASE_END, name="data", epoch=epoch, lane=lane, mono=end)
        return True

    def setup(self, train_source: Any) -> None:
        """Training is confirmed: how its data is fed (the training DataLoader's arguments,
        none where the loop reads no DataLoader) and with how many operator threads."""
        if self._take(1):
            process = PROCESS
            loader = process.knobs.loader_setup.get(train_source) if train_source is not None else None
            threads = process.threads() if process.threads is not None else None
            tf_data = process.knobs.tf_data_setup()
            extra = {"tf_data": tf_data} if tf_data else {}
            self._send(events.INSTRUMENT, state="setup", loader=loader, threads=threads, **extra)

    def epoch(self, epoch: int, figures: UnitFigures, unit: str = EPOCH) -> None:
        """A unit's figures as its epoch event's metrics: only ``UnitFigures`` is sent, and it
        refuses a figure it does not declare where it is made, so none reaches the run file unnamed.
        A partial pass (numbered None) has no epoch event: its figures are not an epoch's."""
        number = self.number(epoch)
        if number is None:
            return
        epoch = number
        if self._take(1):
            if unit == EPOCH:
                self._send(events.EPOCH, epoch=epoch, metrics=figures.to_json())
            else:
                self._send(events.EPOCH, epoch=epoch, unit=unit, metrics=figures.to_json())


class Process:
    """This process's instrumentation (one per process: ``PROCESS``)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.armed: list[str] = []
        self.announced = False
        self.live = True               # False in a forked child and once everything is disarmed
        self.errors: set[str] = set()
        self.voice = Voice(events.emit, before_first=self.announce)
        self.loop = Loop(self.voice)
        self.owner: str | None = None
        self.knobs = knobs.Knobs(knobs.requested())
        self.threads: Callable[[], int] | None = None   # the framework's operator threads, once armed
        # whether Keras's latest step on TensorFlow was measured (None: no such step yet), once armed
        self.fit_measured: Callable[[], bool | None] | None = None
        spec = trial.requested()
        self.trial = trial.Trial(spec, self.loop.wait_parts, before_done=self.trial_over) if spec else None
        self.loop.trial = self.trial
        self.put_back: list[Callable[[], None]] = []   # undoes each change the hooks made, in order made
        self.joining = False   # joined mid-run, its first training batch not yet seen (``first_batch``)

    def replace(self, owner: Any, name: str, new: Any) -> None:
        """Set OWNER.NAME (a class's or a module's) to NEW, noting how to put back what it was:
        the same object, or nothing where NAME was inherited. Put back only while NEW is still
        there, so that what the script set over it stays."""
        own = vars(owner)
        had, before = name in own, own.get(name)
        setattr(owner, name, new)

        def put_back() -> None:
            if vars(owner).get(name) is not new:
                return
            if had:
                setattr(owner, name, before)
            else:
                delattr(owner, name)
        self.put_back.append(put_back)

    def joined(self) -> None:
        """The hooks went into a process mid-run: until its first training batch says otherwise,
        the pass under way is partial and the passes are counted from the join."""
        self.joining = True
        self.loop.joined_steps = 0
        self.voice.number_from(None, whole=False)

    def first_batch(self, first_of_pass: bool, frame: Any) -> None:
        """A process joined mid-run reads its first training batch: the first of its pass (the
        pass is whole) or not (begun before the join); the script's loop variable, read from the
        loop's FRAME and outwards now, is that pass's epoch. Said once (``numbered``)."""
        self.joining = False
        found = epoch_in_frames(frame)
        self.voice.number_from(found[1] if found else None, first_of_pass)
        events.emit(events.INSTRUMENT, state="numbered", whole=first_of_pass,
                    **({"variable": found[0], "epoch": found[1]} if found else {}))

    def on_disarm(self, undo: Callable[[], None]) -> None:
        """UNDO (a hook's handle's ``remove``, an ``atexit.unregister``) runs at ``disarm``."""
        self.put_back.append(undo)

    def disarm(self) -> None:
        """Take every hook out again, last in first out, and say nothing more: the open phase
        ends now, the pass under way sends no epoch (it is not whole). For a process that was
        joined mid-run and is being left: it runs on as it was before the hooks went in."""
        with self.lock:
            if self.live:
                try:
                    self.loop.leave(time.monotonic())
                    self.voice.say_left_out()
                except Exception as exc:
                    self.error("devicewatch", "detach", exc)
            self.live = False
            atexit.unregister(self.say_if_silent)
            atexit.unregister(self.at_exit)
            while self.put_back:
                try:
                    self.put_back.pop()()
                except Exception as exc:   # one that cannot be put back leaves the others to be
                    self.live = True
                    self.error("devicewatch", "detach", exc)
                    self.live = False

    def announce(self) -> None:
        """Say once, before anything else, that this process is instrumented and with what."""
        if self.announced:
            return
        self.announced = True
        events.emit(events.INSTRUMENT, state="loaded", python=".".join(map(str, sys.version_info[:3])))
        for framework in self.armed:
            events.emit(events.INSTRUMENT, state="armed", framework=framework)

    def armed_now(self, framework: str) -> None:
        if not self.armed:
            atexit.register(self.say_if_silent)
            atexit.register(self.at_exit)
        if framework not in self.armed:
            self.armed.append(framework)
            if self.announced:
                events.emit(events.INSTRUMENT, state="armed", framework=framework)

    def trial_over(self, now: float) -> None:
        """The trial's window is measured and the process is about to be ended: its open unit's
        figures go out now, and nothing more is said (the hooks pass straight through)."""
        self.loop.finish(now)
        self.voice.say_left_out()
        self.knobs.at_exit()
        self.live = False

    def at_exit(self) -> None:
        """The trial's last word and the variant's knobs that found nothing to apply to."""
        if not self.live:
            return
        try:
            if self.trial is not None:
                self.trial.finish(time.monotonic())
            self.knobs.at_exit()
        except Exception as exc:
            self.error("devicewatch", "trial", exc)

    def say_if_silent(self) -> None:
        """At exit, a process that imported a framework but never trained under its hooks says
        which (state ``imported``), so that a run without phases can name what was found
        instead of claiming that no training ran."""
        if self.live and not self.announced and self.armed:
            try:
                events.emit(events.INSTRUMENT, state="imported", frameworks=list(self.armed))
            except Exception:  # nothing the instrumentation does may reach the script
                pass

    def error(self, framework: str, hook: str, exc: BaseException) -> None:
        """A hook failed: said once per hook (the hook disarms itself)."""
        key = f"{framework}/{hook}"
        if key in self.errors or not self.live:
            return
        self.errors.add(key)
        try:
            self.announce()
            detail = f"{hook}: {type(exc).__name__}: {exc}"
            events.emit(events.INSTRUMENT, state="error", framework=framework, detail=detail[:DETAIL_CHARS])
        except Exception:  # nothing the instrumentation does may reach the script
            pass

    def forked(self) -> None:
        """A fork of an instrumented process (a DataLoader worker, a fork-based pool) reports
        nothing: its parent's loop state is not its own."""
        self.live = False


PROCESS = Process()


def _fork_child() -> None:
    PROCESS.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fork_child)


# -- what the framework callbacks tell and ask ---------------------------------------------

def own_phases(owner: str) -> None:
    """A framework's callback owns the phases from now on: the torch-level loop says none."""
    try:
        with PROCESS.lock:
            PROCESS.owner = owner
            PROCESS.loop.declare_owner(owner, time.monotonic())
    except Exception as exc:
        PROCESS.error(owner, "own phases", exc)


def declared_phase(name: str, epoch: int | None, lane: str = LANE, begin: bool = True) -> None:
    if PROCESS.owner is None or not PROCESS.live:
        return
    try:
        with PROCESS.lock:
            PROCESS.loop.declared_phase(name, epoch, lane, begin, time.monotonic())
    except Exception as exc:
        PROCESS.error(PROCESS.owner, "phase", exc)


def epoch_figures(epoch: int | None) -> dict[str, Any]:
    """``data_wait_s``, ``steps`` and ``steps_per_s`` of EPOCH, measured by the torch or the
    TensorFlow hooks under a callback's phases; empty where they measured none (``_measured``)."""
    if PROCESS.owner is None or not PROCESS.live or not _measured():
        return {}
    try:
        with PROCESS.lock:
            return PROCESS.loop.epoch_figures(epoch, time.monotonic())
    except Exception as exc:
        PROCESS.error(PROCESS.owner, "epoch figures", exc)
        return {}


def _measured() -> bool:
    """Whether the hooks measure the callback's epochs (``Framework.measures``): a fit where a
    FIT framework's hooks took its batches (Keras training on TensorFlow, not with
    ``steps_per_execution`` over 1 or a distribution strategy: ``tf_hooks.measures_fit``, which
    they leave as ``fit_measured``), any other loop where a LOOP framework (torch) is armed. An
    epoch that was not measured has no figures rather than a data wait of 0."""
    armed = [BY_NAME[name] for name in PROCESS.armed if name in BY_NAME]
    if PROCESS.fit_measured is not None and any(row.measures == FIT for row in armed):
        measured = PROCESS.fit_measured()
        if measured is not None:
            return measured
    return any(row.measures == LOOP for row in armed)


def event_fields() -> dict[str, Any]:
    """What a callback added by the instrumentation puts on its events."""
    return {"source": SOURCE}
