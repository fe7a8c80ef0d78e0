"""The loop's wait between two steps: how it is drawn, when it is watched, and what it was spent on.

- ``Gap``: the wait open since a training step ended (its optimizer step, or its backward pass
  where no optimizer steps) until the next step's compute, and whether the loop waits enough
  outside a DataLoader to be watched: WATCH_SHARE of the time and WATCH_GAP a step, over
  WATCH_EVERY steps, spread over its steps or in WATCH_WINDOWS such spans in a row (one
  preemption between two steps on a busy machine is neither).
- ``DataPhases``: which waits are drawn as ``data`` phases (the rest are only summed).
- ``spent_on``: what a waiting loop is doing, from its stack, as the watcher reads it.

Nothing here reads a clock: the loop hands each part the times the hooks read.
"""

from __future__ import annotations

import re

from .loop_interface import DATALOADER, INPUT, LOADER, OWN, CallsWatch, Voice, WaitWatch

DATA_VISIBLE = 0.05     # seconds: a shorter wait is summed but not drawn (half the default sample interval)
DATA_JOINABLE = 0.001   # seconds: a wait shorter than this is only summed (a fast loop's every batch)
DATA_JOIN_GAP = 0.005   # seconds: waits closer than this are drawn as one ...
DATA_JOIN_SHARE = 0.9   # ... while waiting fills this share of the joined span
DATA_PHASE_RATE = 10.0  # data phases a second at most (a token bucket) ...
DATA_PHASE_BURST = 10.0  # ... after a burst of this many; the waits left undrawn still count in data_wait_s
UNCLOSED = 2            # steps in a row with no batch from a DataLoader before the model's calls are watched
WATCH_EVERY = 8         # steps between two looks at whether the loop waits enough to be watched ...
WATCH_SHARE = 0.05      # ... which it does when its wait outside a DataLoader fills this share of the time
WATCH_GAP = 0.001       # ... and is this long a step on average (seconds): a sample every WATCH_INTERVAL tells
                        # nothing of a shorter wait, and a fast loop's glue between steps is no wait
WATCH_WINDOWS = 2       # ... spread over the span's steps, or in this many spans in a row: one preemption between
                        # two steps (10 ms on a busy machine) fills a span's WATCH_GAP and would start the watcher for good


class Gap:
    """The loop's wait between steps, open since ``since`` (None: it computes, validates or
    waits at a barrier), and the look at whether it is worth watching. The loop's hot path
    updates ``rest``, ``peak`` and ``steps`` itself (one attribute each, no call a step) and
    calls ``look`` every WATCH_EVERY steps."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.loader = 0.0                  # the DataLoader wait of the unit when the gap opened
        self.input = False                 # a sample of this gap found the loop taking its input
        self.watched = False               # the watcher samples the wait from now on
        self.steps = 0                     # steps with a wait since ``start`` ...
        self.rest = 0.0                    # ... their wait outside a DataLoader
        self.peak = 0.0                    # ... the longest wait of one step among them
        self.start: float | None = None    # ... since when (None: no step yet)
        self.windows = 0                   # spans of WATCH_EVERY steps in a row that waited enough
        self.watch: WaitWatch | None = None        # the hooks' watcher
        self.need_calls: CallsWatch | None = None  # the hooks' watch of the model's calls, until it is asked for
        self.unclosed = 0                  # steps in a row whose wait no batch or model call ended
        self.samples: dict[tuple[str, str], int] = {}   # (kind, what) -> samples of the wait, over the run

    def open(self, at: float, loader: float) -> None:
        self.since, self.loader = at, loader

    def look(self, rest: float, now: float) -> None:
        """Whether the loop waits enough outside a DataLoader (REST, this step, added to what
        the hot path summed) to be watched; a look closes the span of steps."""
        if self.start is None:
            self.start = now - max(0.0, rest)
        self.rest += max(0.0, rest)
        self.peak = max(self.peak, rest)
        self.steps += rest != 0.0
        if self.steps >= WATCH_EVERY:
            enough = max(WATCH_SHARE * (now - self.start), WATCH_GAP * self.steps)
            waits = self.rest >= enough
            spread = self.rest - self.peak >= enough   # enough without its longest gap
            self.windows = self.windows + 1 if waits else 0
            if (spread or self.windows >= WATCH_WINDOWS) and self.watch is not None:
                self.watched = True
                self.watch()
            self.steps, self.start, self.rest, self.peak = 0, now, 0.0, 0.0

    def calls(self) -> None:
        """The model's calls end the wait from now on (a loop that reads no DataLoader, or
        leaves its iterator after one batch): the hooks are asked once."""
        if self.need_calls is not None:
            self.need_calls()
            self.need_calls = None

    def stepped(self, now: float, loader: float) -> None:
        """A training step ended at NOW (LOADER: the unit's DataLoader wait then): the next wait
        opens. A wait that no batch ended, UNCLOSED times in a row, asks for the model's calls."""
        if self.since is not None and self.need_calls is not None:
            self.unclosed += 1
            if self.unclosed > UNCLOSED:
                self.calls()
        elif self.unclosed:
            self.unclosed = 0
        self.since, self.loader = now, loader

    def sampled(self, kind: str, what: str) -> None:
        key = (kind, what)
        self.input = self.input or kind == INPUT
        self.samples[key] = self.samples.get(key, 0) + 1

    def input_share(self) -> float:
        """The share of the samples outside a DataLoader so far that found the loop taking its input."""
        inputs = sum(n for (kind, _), n in self.samples.items() if kind == INPUT)
        outside = inputs + sum(n for (kind, _), n in self.samples.items() if kind == OWN)
        return inputs / outside if outside else 0.0


class HeldWait:
    """A wait not yet drawn: it may still join the next. (Slots by hand: ``dataclass(slots=True)``
    needs Python 3.10, and the instrumentation loads on 3.9.)"""

    __slots__ = ("end", "epoch", "lane", "start", "waited")

    def __init__(self, start: float, end: float, waited: float, epoch: int | None, lane: str) -> None:
        self.start, self.end, self.waited, self.epoch, self.lane = start, end, waited, epoch, lane


class DataPhases:
    """Which waits are drawn as ``data`` phases: drawn when at least DATA_VISIBLE long, at most
    DATA_PHASE_RATE a second. Waits less than DATA_JOIN_GAP apart are drawn as one while they
    fill at least DATA_JOIN_SHARE of it, so a loop that only waits shows one long wait, and a
    fast loop's many tiny waits never add up to a phase that hides its compute. A wait is drawn
    once the next one has begun (it may still join it) or at ``flush``."""

    def __init__(self, voice: Voice):
        self.voice = voice
        self.tokens = DATA_PHASE_BURST
        self.refilled: float | None = None
        self.held: HeldWait | None = None
        self.undrawn = 0

    def wait(self, start: float, end: float, epoch: int | None, lane: str) -> None:
        held = self.held
        if held is not None:
            if start - held.end < DATA_JOIN_GAP and held.waited + end - start >= DATA_JOIN_SHARE * (end - held.start) \
                    and held.epoch == epoch and held.lane == lane:
                held.end = end
                held.waited += end - start
                return
            if held.end - held.start >= DATA_VISIBLE:
                self._draw(held)
        self.held = HeldWait(start, end, end - start, epoch, lane)

    def flush(self) -> None:
        held, self.held = self.held, None
        if held is not None and held.end - held.start >= DATA_VISIBLE:
            self._draw(held)

    def _draw(self, held: HeldWait) -> None:
        if self.refilled is not None:
            self.tokens = min(DATA_PHASE_BURST, self.tokens + (held.end - self.refilled) * DATA_PHASE_RATE)
        self.refilled = held.end
        if self.tokens >= 1 and self.voice.data_phase(held.start, held.end, held.epoch, held.lane):
            self.tokens -= 1
        else:
            self.undrawn += 1


# -- what the waiting loop is doing ------------------------------------------------------------

# A frame of the loop's stack, innermost first: (file, function, line, is a generator, is a library's)
Frame = tuple[str, str, int, bool, bool]
QUEUE_GETS = (("/queue.py", "get"), ("/multiprocessing/queues.py", "get"), ("/multiprocessing/connection.py", "recv"))


OWN_WORDS = re.compile(r"log|print|metric|report|save|checkpoint|eval|valid|plot|track|summar|wandb|tensorboard", re.I)


def spent_on(frames: list[Frame], loop_at: int | None = None) -> tuple[str, str]:
    """What a loop waiting between steps is doing, from its stack (innermost first; LOOP_AT:
    where in it the frame that calls the model is, where known): (LOADER, "DataLoader") in a
    DataLoader's ``__next__`` (timed exactly apart), (INPUT, what) where it takes its input (a
    DataLoader's start-up, a queue, ``torch.load``, tf.data, a generator or an iterator of its
    own, a function of the script that the loop calls, ``get_batch()``, unless named for its
    logging, metrics or checkpoints), else (OWN, what): the script's own work (logging, a
    progress bar, a ``.item()`` or a print on the loop's own lines)."""
    paths = [(path.replace("\\", "/"), function) for path, function, *_ in frames]
    where = next((f"{_base(path)}:{line}" for path, _, line, _, library in frames if not library), "")
    at = f" at {where}" if where else ""
    if any("/torch/utils/data/" in path for path, _ in paths):  # inside a DataLoader, whatever it calls
        if any(p.endswith("/torch/utils/data/dataloader.py") and f == "__next__" for p, f in paths):
            return LOADER, DATALOADER
        return INPUT, "DataLoader's start-up (a new iterator)"
    for (path, function), (_, _, _, generator, library) in zip(paths, frames):
        if any(path.endswith(end) and function == name for end, name in QUEUE_GETS):
            return INPUT, f"queue{at}"
        if path.endswith("/torch/serialization.py"):
            return INPUT, f"torch.load{at}"
        if "/tensorflow/python/data/" in path:
            return INPUT, "tf.data input"
        if "/logging/" in path and library:
            return OWN, "logging"
        if "/tqdm/" in path or "/rich/" in path:
            return OWN, "progress bar"
        if generator:
            return INPUT, f"generator {function}() in {_base(path)}"
        if function == "__next__" and not library:
            return INPUT, f"iterator in {_base(path)}"
    if loop_at is not None:  # the script's function nearest the loop, called by it
        called = [f for f in frames[:loop_at] if not f[4]]
        if called:
            path, function, line = called[-1][:3]
            kind = OWN if OWN_WORDS.search(function) else INPUT
            return kind, f"{function}() at {_base(path)}:{line}"
    return OWN, where or "the script"


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]
