"""The recorder on a process it did not start: the same schedule, probes and run file as a
launched run's, with the attached process in the launched workload's place.

What differs is only what an observer may do: it never signals, stops or outlives the process
on its behalf (a detach, ``q``, Ctrl-C or an ending signal to devicewatch ends the recording
and leaves the process as it was), and it reads no output (the process's streams are not ours).

Its phases come from the zero-code instrumentation's hooks where the process's Python can take
them (3.14 or newer: ``remote``), put in as devicewatch joins and taken out at the detach; else,
or if the process refuses them, from the stack sampler (``sampler``, ``phases``).
"""

from __future__ import annotations

import os
import shutil
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
from .. import events
from ..recorder.workload import RUNNING
from ..runformat import records
from ..probes.cpu import CpuProbe
from ..probes.cpu_limits import CpuLimits, CpuLimitsProbe
from ..probes.process import ProcessTreeProbe, SelfProbe
from ..recorder.event_channel import EventChannel
from ..recorder.gpu_sampler import GpuSampler, gpu_poll_period
from . import remote
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
JOINED = {"offered": True, "attached": "sys.remote_exec"}
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
                 out: TextIO | None = None, err: TextIO | None = None, hooks: bool = True):
        super().__init__(options, out=out, err=err)
        self.target = target
        self.rate = rate
        self.sampler: StackSampler | None = None
        self.builder: PhaseBuilder | None = None
        self.refusal: str | None = None
        self.epochs_from = EPOCHS_COUNTED   # how the passes are numbered
        # The hooks, where the process's Python can take them: its interpreter, or why not.
        self.interpreter, self.python = remote.interpreter(target.pid) if hooks else \
            (None, "phases sampled on request (--sample)")
        self.instrumentation = InstrumentationNews(dict(JOINED if self.interpreter else NOT_OFFERED))
        self.join_by: float | None = None       # the hooks were handed over: word due by then
        self.joined: dict[str, Any] | None = None   # the process's word that they went in
        self.sampling = False
        self.hooks_out = False                  # the process said it took them out (a detach)
        self.join_failed = False                # ... or that they could not go in
        self.scripts: str | None = None         # the folder of the scripts handed to the process

    def _header(self) -> dict[str, Any]:
        header = super()._header()
        when = datetime.fromtimestamp(self.start_unix, UTC).isoformat(timespec="seconds")
        header["workload"] = {"name": None, "args": [], "command": self.target.command}
        hooks = {"via": "sys.remote_exec", "python": self.python} if self.interpreter else {"not": self.python}
        header["attached"] = {**self.target.to_json(when), "hooks": hooks,
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
        if self.interpreter is None or not self._hand_hooks(channel):
            self._start_sampling()
        try:
            exit_code = self._sample_until_exit(tree, me, watcher, channel)
        finally:
            sampler.stop()
            if self._gpu_sampler is not None:
                self._gpu_sampler.stop()
        if sampler.refusal:
            self._refused(sampler.refusal)
        if self.sampling:
            self.builder.finish()
        if self.joined and not workload.ended:
            self._take_hooks_out(channel)
        self.terminal.terminal_given_back()
        channel.finish()
        if self.joined and not workload.ended and not self.hooks_out:
            self._say("the process has not yet taken the hooks out: it will at its next safe point, "
                      "speaking to no one until then")
        self._tidy_scripts(workload)
        self._finish_attached(workload)
        return exit_code

    def _start_sampling(self) -> None:
        assert self.sampler is not None
        self.sampling = True
        py_spy = find_py_spy()
        if self.sampler.check() is None and py_spy:
            self._number_epochs(read_epoch(py_spy, self.target.pid))
        self.sampler.start()
        if self.sampler.refusal:
            self._refused(self.sampler.refusal)

    # -- the hooks, by sys.remote_exec ---------------------------------------------------------

    def _hand_hooks(self, channel: EventChannel) -> bool:
        """Hand the process the script that puts the hooks in; False (said) where it refused."""
        assert self.interpreter is not None and channel.folder is not None
        try:
            self.scripts = remote.folder(self.target.uid)
            path = remote.script(self.scripts, {"do": "join", "fifo": channel.path}, "join")
            remote.give(self.target.uid, channel.folder, channel.path, path)
            why = remote.send(self.interpreter, self.target.pid, path)
        except OSError as exc:
            why = f"{exc.strerror or exc}"
        if why is not None:
            self._say(f"the hooks could not go in ({why}): phases sampled from outside")
            if self.scripts is not None:   # nothing was handed over: nothing is due to run
                shutil.rmtree(self.scripts, ignore_errors=True)
                self.scripts = None
            return False
        self.join_by = time.monotonic() + remote.JOIN_WAIT
        return True

    def _take_hooks_out(self, channel: EventChannel) -> None:
        """The detach: the process takes the hooks out at its next safe point, and closes its end
        of the FIFO (``channel.finish`` reads until it has)."""
        assert self.interpreter is not None and self.scripts is not None
        try:
            path = remote.script(self.scripts, {"do": "leave", "fifo": channel.path}, "leave")
            remote.give(self.target.uid, path)
            why = remote.send(self.interpreter, self.target.pid, path)
        except OSError as exc:
            why = f"{exc.strerror or exc}"
        if why is not None:
            self._say(f"the hooks could not be taken out ({why}): they stay in the process, speaking to no one")

    def _tidy_scripts(self, workload: AttachedWorkload) -> None:
        """The scripts' folder goes, unless a script in it is still due to run in the process: a
        join it never answered becomes one that only removes the folder; a leave it never
        answered stays, to take the hooks out when it runs (and remove the folder)."""
        if self.scripts is None:
            return
        answered = self.joined is not None or self.join_failed
        if workload.ended or (answered and (self.joined is None or self.hooks_out)):
            shutil.rmtree(self.scripts, ignore_errors=True)
        elif not answered:
            try:
                remote.script(self.scripts, {"do": "nothing"}, "join")
            except OSError:
                pass

    def _say(self, message: str) -> None:
        self.terminal.say(f"devicewatch: {message}")
        self._write(records.notice(self._t(), message))

    def _on_event(self, record: dict[str, Any]) -> None:
        """The hooks' word of themselves: in (``joined``), refused (an ``error`` of devicewatch's
        before that: sampled instead), the script's epoch (``numbered``), out (``left``)."""
        state = record.get("state") if record.get("kind") == events.INSTRUMENT else None
        if state == "joined" and self.joined is None:
            if self.join_by is not None:
                self.joined, self.join_by = record, None
            elif self.sampling and self.interpreter is not None and self._channel is not None:
                self._say("the hooks went in after the phases were being sampled: taken out again")
                self._take_hooks_out(self._channel)
        elif state == "error" and record.get("framework") == "devicewatch" and self.join_by is not None:
            self.join_by, self.join_failed = None, True   # the script ran, and said why the hooks did not go in
            self._start_sampling()
        elif state == "left":
            self.hooks_out = True
        elif state == "numbered" and self.joined is not None:
            if isinstance(record.get("variable"), str) and isinstance(record.get("epoch"), int):
                self.epochs_from = (f"the script's loop variable {record['variable']} "
                                    f"({record['epoch']} in the first pass the hooks saw)")
        super()._on_event(record)

    def _follow_state(self, tree: ProcessTreeProbe) -> None:
        super()._follow_state(tree)
        if self.join_by is not None and time.monotonic() > self.join_by:
            self.join_by = None
            self._say(f"the process ran no Python on its main thread for {remote.JOIN_WAIT:.0f} s, so the "
                      "hooks did not go in: phases sampled from outside")
            self._start_sampling()

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
        summary = self.instrumentation.summary()
        if self.joined is not None:
            summary["hooked"] = {"via": "sys.remote_exec", "python": self.python, "epochs_from": self.epochs_from,
                                 "frameworks": self.joined.get("frameworks"), "taken_out": self.hooks_out}
        else:
            summary["sampled"] = {"samples": self.sampler.samples, "invalid": self.sampler.invalid,
                                  "sampler_cpu_s": round(self.sampler.cpu_s, 3),
                                  "unsampled_s": round(self.sampler.unsampled_s, 3), "epochs_from": self.epochs_from}
        self._write(records.end(round(end_mono - self.start_mono, 4), "ok", None, None, reason,
                                clock=records.ClockPair(end_unix, end_mono), instrument=summary))


def attach(options: RecordOptions, target: AttachTarget, rate: int = RATE,
           on_start: Any = None, hooks: bool = True) -> AttachedRecorder:
    """Record TARGET until it ends or is left: Ctrl-C, SIGTERM, SIGHUP or SIGQUIT to devicewatch
    end the recording (a detach), never the process. Returns the recorder (its ``refusal``).
    HOOKS: put the hooks in where the process's Python can take them (else: sample)."""
    recorder = AttachedRecorder(options, target, rate, hooks=hooks)

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
