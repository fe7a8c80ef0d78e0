"""The recorder on a process it did not start: the same schedule, probes and run file as a
launched run's, with the attached process in the launched workload's place.

What differs is only what an observer may do: it never signals, stops or outlives the process
on its behalf (a detach, ``q``, Ctrl-C or an ending signal to devicewatch ends the recording
and leaves the process as it was), it reads no output (the process's streams are not ours), and
its phases come from the stack sampler (``sampler``, ``phases``), not from hooks in the process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any, TextIO

import psutil

from ..recorder.instrumentation import InstrumentationNews
from ..recorder.options import RecordOptions
from ..recorder.recorder import Recorder
from ..recorder.workload import RUNNING
from ..runformat import records
from ..probes.cpu import CpuProbe
from ..probes.cpu_limits import CpuLimits, CpuLimitsProbe
from ..probes.process import ProcessTreeProbe, SelfProbe
from ..recorder.event_channel import EventChannel
from ..recorder.gpu_sampler import GpuSampler, gpu_poll_period
from .loop_variable import find_py_spy, read_epoch
from .phases import PhaseBuilder
from .sampler import RATE, StackSampler
from .stacks import Slice
from .target import AttachTarget

DETACHED = "detached: the process runs on, untouched"
ENDED = "the attached process ended"
LOOP_THREAD = "MainThread"
# How far a run's sampled shares were from the script's own timing, in percentage points:
# bench/bench_attach.py against the [truth] lines of its loop, 0.2 to 1.9 over a run sampled by
# austin, quiet and beside a busy program (one epoch alone: up to 4.8; docs/attach.md).
ERROR_POINTS = 3
EPOCHS_COUNTED = "counted from the attach (1: the first pass seen whole)"
NOT_OFFERED = {"offered": False, "reason": "attached to a running process: phases sampled from outside"}
ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class AttachedWorkload:
    """The attached process where the recorder keeps its launched workload: looked at, never
    signalled (``pass_on`` and the cancel steps do nothing to it; a cancel is a detach)."""

    signal_name: str | None = None
    outside_signal: signal.Signals | None = None

    def __init__(self, pid: int):
        self.pid = pid
        self.detached = False
        self.ended = False
        try:
            self._process: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            self._process = None

    def poll(self) -> int | None:
        """0 once detached or once the process is gone (its exit status is its parent's to read)."""
        if self.detached:
            return 0
        try:
            alive = self._process is not None and self._process.is_running() and \
                self._process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            alive = False
        if not alive:
            self.ended = True
            return 0
        return None

    def cancel_step(self, _now: float, _tree_pids: Any) -> None:
        self.detached = True

    def state(self, _pids: Any, _states: Any = None) -> str:
        return RUNNING

    def seen(self, _pids: Any) -> None:
        pass

    def pass_on(self, _sig: signal.Signals, _now: float, _tree_pids: Any, _grace: float) -> bool:
        return False

    def outside_step(self, _now: float, _tree_pids: Any) -> None:
        return None


class AttachedRecorder(Recorder):
    def __init__(self, options: RecordOptions, target: AttachTarget, rate: int = RATE,
                 out: TextIO | None = None, err: TextIO | None = None):
        super().__init__(options, out=out, err=err)
        self.target = target
        self.rate = rate
        self.instrumentation = InstrumentationNews(dict(NOT_OFFERED))
        self.sampler: StackSampler | None = None
        self.builder: PhaseBuilder | None = None
        self.refusal: str | None = None
        self.epochs_from = EPOCHS_COUNTED   # how the passes are numbered

    def _header(self) -> dict[str, Any]:
        header = super()._header()
        when = datetime.fromtimestamp(self.start_unix, UTC).isoformat(timespec="seconds")
        header["workload"] = {"name": None, "args": [], "command": self.target.command}
        header["attached"] = {**self.target.to_json(when),
                              "sampler": {"tool": "austin", "nonblocking": True, "rate": self.rate,
                                          "error_points": ERROR_POINTS}}
        return header

    def _workers(self) -> int:
        try:
            return len(psutil.Process(self.target.pid).children())
        except psutil.Error:
            return 0

    def _slices(self, found: list[Slice]) -> None:
        assert self.builder is not None
        for piece in found:
            if piece.thread == LOOP_THREAD:
                self.builder.feed(piece)

    def _refused(self, message: str) -> None:
        if self.refusal is None:
            self.refusal = message
            self.terminal.say(f"devicewatch: {message}")
            self._write(records.notice(self._t(), message))

    def _stopped(self, why: str) -> None:
        """The sampler stopped early (on its thread): refused, said as a refusal; else said once."""
        if self.sampler is not None and self.sampler.refusal:
            self._refused(why)
        else:
            self.terminal.say(f"devicewatch: {why}")
            self._write(records.notice(self._t(), why))

    def _record(self, channel: EventChannel) -> int:
        options, pid = self.options, self.target.pid
        status: dict[str, Any] = {}
        if self.gpu.available:
            status["gpm"] = list(self.gpu.gpm_reasons)
        self._write(records.gpu_status(0.0, self.gpu.available, self.gpu.reason, len(self.gpu.devices), **status))
        self.workload = workload = AttachedWorkload(pid)  # type: ignore[assignment]  # a Workload's part, not its launch
        self._limits: CpuLimitsProbe | None = CpuLimitsProbe(pid)
        self._limits_seen: CpuLimits | None = None
        self._check_limits()
        self._cpu = CpuProbe()
        tree = ProcessTreeProbe(pid, exclude={p for p in (self.watchdog.pid,) if p})
        me = SelfProbe(os.getpid())
        watcher = SelfProbe(options.watcher_pid) if options.watcher_pid else None
        if options.control:
            from .. import control

            # A signal the dashboard was sent is no signal for a process it did not start: a detach.
            control.follow(sys.stdin.fileno(), self._write, self._t, self.cancel,
                           pass_on=lambda _name: self.cancel(DETACHED))
        if self.gpu.available:
            self._gpu_every = gpu_poll_period(len(self.gpu.devices))
            self._gpu_sampler = GpuSampler(self.gpu, self.start_unix)
        self.builder = PhaseBuilder(self._write, pid, LOOP_THREAD, workers=self._workers, period=1 / self.rate)
        self.sampler = sampler = StackSampler(pid, self.start_mono, self._slices, self.rate, on_stop=self._stopped)
        py_spy = find_py_spy()
        if sampler.check() is None and py_spy:
            self._number_epochs(read_epoch(py_spy, pid))
        sampler.start()
        if sampler.refusal:
            self._refused(sampler.refusal)
        try:
            exit_code = self._sample_until_exit(tree, me, watcher, channel)
        finally:
            sampler.stop()
            if self._gpu_sampler is not None:
                self._gpu_sampler.stop()
        if sampler.refusal:
            self._refused(sampler.refusal)
        self.builder.finish()
        self.terminal.terminal_given_back()
        channel.finish()
        self._finish_attached(workload)
        return exit_code

    def _number_epochs(self, found: tuple[str, int] | None) -> None:
        """Passes numbered on from the script's loop variable where it was read, else from the attach."""
        builder = self.builder
        assert builder is not None
        if found is None:
            self.epochs_from = EPOCHS_COUNTED
            return
        name, under_way = found
        builder.number = lambda: under_way + builder.passes
        self.epochs_from = f"the script's loop variable {name} ({under_way} when devicewatch joined)"

    def _finish_attached(self, workload: AttachedWorkload) -> None:
        reason = DETACHED if workload.detached or not workload.ended else ENDED
        self.terminal.clear_status()
        end_unix, end_mono = time.time(), time.monotonic()
        assert self.sampler is not None
        summary = {**self.instrumentation.summary(), "sampled": {"samples": self.sampler.samples,
                                                                  "invalid": self.sampler.invalid,
                                                                  "sampler_cpu_s": round(self.sampler.cpu_s, 3),
                                                                  "unsampled_s": round(self.sampler.unsampled_s, 3),
                                                                  "epochs_from": self.epochs_from}}
        self._write(records.end(round(end_mono - self.start_mono, 4), "ok", None, None, reason,
                                clock=records.ClockPair(end_unix, end_mono), instrument=summary))


def attach(options: RecordOptions, target: AttachTarget, rate: int = RATE,
           on_start: Any = None) -> AttachedRecorder:
    """Record TARGET until it ends or is left: Ctrl-C, SIGTERM, SIGHUP or SIGQUIT to devicewatch
    end the recording (a detach), never the process. Returns the recorder (its ``refusal``)."""
    recorder = AttachedRecorder(options, target, rate)

    def detach(_signum: int, _frame: Any) -> None:
        recorder.cancel(DETACHED)

    on_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, detach) for sig in ENDING
                if on_main and signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        if on_start:
            on_start(recorder)
        recorder.run()
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    return recorder
