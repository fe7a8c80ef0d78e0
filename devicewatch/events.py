"""What a workload tells devicewatch: run info, phases, epoch metrics, markers, results.

Standard library only, thread-safe, and a no-op when the process does not run under
devicewatch, so a workload also runs by itself. The recorder names a FIFO in the
environment variable ``DEVICEWATCH_EVENTS``; every event is one JSON line written to it,
stamped with ``time.monotonic()`` (the system-wide monotonic clock on Linux, the same clock
the recorder samples on). A FIFO rather than an inherited descriptor so that processes the
workload starts itself (``torchrun`` ranks, pool workers) can report too.

Under ``torchrun`` every event also carries the rank's identity (``rank``, ``local_rank``,
``world_size``, ``group_rank``, ``job``) read once from torchrun's environment, and a phase in
the main lane is put in its rank's (``rank N``) where there are several ranks: one recording of
a one-machine run shows a lane per rank, and ``devicewatch merge`` joins several machines'.

    from devicewatch import events
    events.run_info(framework="torch", device="cpu", params=975_692, data="synthetic")
    for epoch in range(1, epochs + 1):
        with events.phase("train", epoch=epoch):
            ...
        with events.phase("validate", epoch=epoch, lane="validate"):
            ...
        events.epoch_metrics(epoch, loss=0.9, accuracy=0.61)
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from typing import Any
from collections.abc import Iterator

ENV_VAR = "DEVICEWATCH_EVENTS"
DEFAULT_LANE = "main"
# Writes of at most PIPE_BUF bytes to a FIFO are atomic, so lines from several processes
# never interleave; longer events are cut down to a marker saying so.
MAX_LINE_BYTES = 4096

# The event vocabulary: every module that writes or reads events spells a kind through these.
RUN_INFO = "run_info"        # info: framework, device, params, data, epochs, …
PHASE_BEGIN = "phase_begin"  # name, epoch, lane
PHASE_END = "phase_end"
EPOCH = "epoch"              # epoch, metrics
MARKER = "marker"            # label
RESULT = "result"            # name, values
OVERSIZE = "oversize"        # an event over MAX_LINE_BYTES, replaced: of, bytes
INSTRUMENT = "instrument"    # state (loaded, armed, error), framework, detail: the zero-code instrumentation
KINDS = (RUN_INFO, PHASE_BEGIN, PHASE_END, EPOCH, MARKER, RESULT, OVERSIZE, INSTRUMENT)

# torchrun's environment variables and the event fields they become.
RANK_VARS = (("RANK", "rank"), ("LOCAL_RANK", "local_rank"), ("WORLD_SIZE", "world_size"),
             ("GROUP_RANK", "group_rank"))

_lock = threading.Lock()
_stream: Any = None
_disabled = False
_pid = 0
_identity: dict[str, Any] | None = None
# A launched workload waits for a full FIFO (its recorder reads it in time); a process joined
# mid-run by ``devicewatch attach`` never does: an event the FIFO has no room for is dropped.
_blocking = True


def enabled() -> bool:
    """True when this process runs under a devicewatch recorder."""
    return bool(os.environ.get(ENV_VAR)) and not _disabled


def identity() -> dict[str, Any]:
    """This process's torchrun identity, empty outside torchrun; read from the environment once.

    ``job`` (master address and port, and the rendezvous id when one was given) tells the
    files of one job from those of another when several nodes' runs are merged.
    """
    global _identity
    if _identity is None:
        found: dict[str, Any] = {}
        if "RANK" in os.environ:
            for var, key in RANK_VARS:
                try:
                    found[key] = int(os.environ[var])
                except (KeyError, ValueError):
                    pass
            master = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
            if all(master):
                job = f"{master[0]}:{master[1]}"
                run_id = os.environ.get("TORCHELASTIC_RUN_ID")
                found["job"] = job + (f"/{run_id}" if run_id and run_id != "none" else "")
        _identity = found
    return _identity


def rank_lane(rank: int, lane: Any = DEFAULT_LANE) -> str:
    """The lane of RANK's phases in LANE: ``rank N`` for its main lane, ``rank N LANE`` else."""
    if lane in (None, DEFAULT_LANE, f"rank{rank}", f"rank {rank}"):
        return f"rank {rank}"
    if str(lane).startswith(f"rank {rank} "):
        return str(lane)  # already its rank's (sent so by the rank itself)
    return f"rank {rank} {lane}"


def _open_stream() -> Any:
    global _stream, _disabled, _pid
    if _stream is not None and _pid == os.getpid():
        return _stream
    path = os.environ.get(ENV_VAR)
    if not path or _disabled:
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(fd, _blocking)  # non-blocking to fail fast when no reader exists
        _stream = os.fdopen(fd, "wb", buffering=0)
        _pid = os.getpid()
    except OSError:
        _disabled = True
        return None
    return _stream


def _clean(value: Any) -> Any:
    """JSON has no NaN or infinity; send them as null rather than invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    item = getattr(value, "item", None)  # numpy and torch scalars
    if callable(item):
        try:
            return _clean(item())
        except (TypeError, ValueError):
            pass
    return str(value)


def emit(kind: str, **fields: Any) -> None:
    """Send one event. Silently does nothing outside devicewatch or once the recorder is gone.

    A ``mono`` field stamps the event with that ``time.monotonic()`` instead of now: a phase
    that is told only after it ended (a wait measured when it was over) begins when it began.
    """
    global _disabled, _stream
    if _disabled or not os.environ.get(ENV_VAR):
        return
    who = identity()
    record = {"kind": kind, "mono": time.monotonic(), "pid": os.getpid(),
              "thread": threading.current_thread().name, **who}
    record.update(_clean(fields))
    if "lane" in record and who.get("world_size", 1) > 1 and "rank" in who:
        record["lane"] = rank_lane(who["rank"], record["lane"])  # one machine's ranks in one run: lanes each
    data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    if len(data) > MAX_LINE_BYTES:
        data = (json.dumps({"kind": OVERSIZE, "mono": record["mono"], "pid": record["pid"],
                            "of": kind, "bytes": len(data), **identity()}) + "\n").encode()
    with _lock:
        stream = _open_stream()
        if stream is None:
            return
        try:
            # Unbuffered and non-blocking (``never_wait``), a write to a full FIFO returns None
            # rather than raising: the event is dropped.
            stream.write(data)
        except OSError:  # the recorder is gone: carry on without it
            _disabled = True
            _stream = None


def never_wait() -> None:
    """From now on an event the FIFO has no room for is dropped, not waited for: for a process
    devicewatch joined mid-run, which must never be held up by it."""
    global _blocking, _stream
    with _lock:
        _blocking = False
        if _stream is not None:
            os.set_blocking(_stream.fileno(), False)


def close() -> None:
    """Stop speaking: the stream closed, and nothing more sent until the variable names a FIFO anew."""
    global _stream
    with _lock:
        if _stream is not None:
            try:
                _stream.close()
            except OSError:
                pass
        _stream = None


def run_info(**info: Any) -> None:
    """Describe the run: framework, device, params, data ("real" or "synthetic"), anything else."""
    emit(RUN_INFO, info=info)


def phase_begin(name: str, epoch: int | None = None, lane: str = DEFAULT_LANE, **attrs: Any) -> None:
    emit(PHASE_BEGIN, name=name, epoch=epoch, lane=lane, **attrs)


def phase_end(name: str, epoch: int | None = None, lane: str = DEFAULT_LANE, **attrs: Any) -> None:
    emit(PHASE_END, name=name, epoch=epoch, lane=lane, **attrs)


@contextlib.contextmanager
def phase(name: str, epoch: int | None = None, lane: str = DEFAULT_LANE, **attrs: Any) -> Iterator[None]:
    """A phase (train, validate, data, copy, or a method's name). Overlapping phases belong
    in different lanes; a phase is identified by (lane, name, epoch). ``attrs`` are extra
    key-values carried on both ends, e.g. ``net="squeezenet"``."""
    phase_begin(name, epoch, lane, **attrs)
    try:
        yield
    finally:
        phase_end(name, epoch, lane, **attrs)


def epoch_metrics(epoch: int, **metrics: Any) -> None:
    """Per-epoch figures, e.g. loss, accuracy, val_loss, val_accuracy, step_time_ms."""
    emit(EPOCH, epoch=epoch, metrics=metrics)


def marker(label: str, **fields: Any) -> None:
    """A free-form instant on the timeline."""
    emit(MARKER, label=label, **fields)


def result(name: str, **values: Any) -> None:
    """One measured outcome, e.g. result("im2row/squeezenet", ms=45.1, gflops=12.3)."""
    emit(RESULT, name=name, values=values)


class PhaseTracker:
    """The phases begun and not yet ended, keyed by (pid, lane, name, epoch).

    The one place that pairs a phase's end with its begin: analysis uses it over a whole run,
    the recorder and the live model as events arrive. Here, beside the vocabulary, so that the
    recorder needs nothing beyond the standard library to use it.
    """

    def __init__(self) -> None:
        self._open: dict[tuple[Any, ...], list[dict[str, Any]]] = {}

    @staticmethod
    def _key(event: dict[str, Any]) -> tuple[Any, ...]:
        return (event.get("pid"), str(event.get("lane", DEFAULT_LANE)), str(event.get("name")),
                event.get("epoch"))

    def take(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Follow one event; for a phase_end, return the phase_begin it closes (else None)."""
        kind = event.get("kind")
        if kind == PHASE_BEGIN:
            self._open.setdefault(self._key(event), []).append(event)
        elif kind == PHASE_END:
            stack = self._open.get(self._key(event))
            if stack:
                begin = stack.pop()
                if not stack:
                    del self._open[self._key(event)]
                return begin
        return None

    def open_phases(self) -> list[dict[str, Any]]:
        """The begin events of the phases still open, oldest first."""
        return sorted((b for stack in self._open.values() for b in stack), key=lambda b: float(b.get("t", 0.0)))

    @property
    def current(self) -> str | None:
        """The name of the most recently begun phase still open (what the workload is doing now)."""
        still_open = self.open_phases()
        return str(still_open[-1].get("name")) if still_open else None
