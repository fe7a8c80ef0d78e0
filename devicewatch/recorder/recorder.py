"""The recorder: a coordinator of small parts that launch, sample, listen and write.

It runs in its own process (headless ``--record``, or started by the dashboard), so a slow or
crashed viewer never delays a sample or loses a record. ``Recorder`` owns the schedule and the
run file; the work is handed to parts, each testable without a subprocess:

* ``Workload`` (workload.py): the process tree: launch, cancel escalation, stragglers;
* ``EventChannel`` (event_channel.py): the FIFO the workload's events arrive on, bounded;
* ``OutputPump`` (output.py), one per stream, with ``StdoutEpochs`` (stdout_epochs.py): the
  workload's output, bounded, and epochs from what it prints;
* ``GpuSampler`` (gpu_sampler.py): NVML polls on their own thread;
* ``Terminal`` (terminal.py): echo and the status line;
* ``WorkloadStreams`` (streams.py): the workload's standard streams, with ``PseudoTerminal`` and
  ``RawMode`` (pseudo_terminal.py) for its terminal, where there is one, and ``InputRelay``
  (input_relay.py) for its standard input;
* ``RateBound`` (bound.py): the one rate bound of events and output.

Threads feed one ``RunWriter``: the sampler (the main thread, on a drift-free schedule, which
also reads the event channel after each sample) and the output pumps (one per pipe; one for a
pseudo-terminal); the input relay writes to the workload only.

The workload is given what the recorder was given, as far as it can be passed on (its terminal,
its standard input): ``WorkloadStreams`` says how.
"""

from __future__ import annotations

import math
import os
import platform
import signal
import socket
import sys
import threading
import time
from datetime import datetime, UTC
from typing import Any, TextIO
from collections.abc import Callable

import psutil

from .. import __version__, events, phase_source
from ..runformat import records
from ..active_runs import announce
from ..errors import RecorderError, UsageError
from ..integrations import zero_code
from ..lifeline import Watchdog, become_subreaper
from ..probes.cpu import CpuProbe, cpu_model
from ..probes.cpu_limits import CpuLimits, CpuLimitsProbe, of_process
from ..probes.gpu import GpuProbe
from ..probes.process import ProcessTreeProbe, SelfProbe
from ..runformat.writer import RunWriter, compact
from .event_channel import EventChannel
from .gpu_sampler import GPU_POLL_RANGE, GpuSampler, gpu_poll_period
from .instrumentation import InstrumentationNews
from .options import RecordOptions
from .output import OutputPump
from .stdout_epochs import StdoutEpochs
from .streams import WorkloadStreams
from .terminal import Terminal, status_text
from .workload import ENDING_SIGNALS, PASSED_SIGNALS, RUNNING, STOPPED, WAITING_FOR_INPUT, Workload

STATUS_EVERY = 0.5               # seconds between updates of the terminal status line
EVENTS_EVERY = 0.1               # seconds between reads of the workload's events at the most
LIMITS_EVERY = 1.0               # seconds between looks at the cores the workload may use
CANCELLED = "cancelled by the user"
TRIAL_OVER = "the trial's window was measured: ended on purpose"
TERMINAL_CLOSED = "terminal closed"
# The workload's grace after SIGTERM, SIGHUP or SIGQUIT from outside, when --grace is not given.
OUTSIDE_GRACE = RecordOptions.outside_grace


def host_info(gpu: GpuProbe) -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_count": psutil.cpu_count(logical=True) or 1,
        "mem_total": psutil.virtual_memory().total,
        "gpus": gpu.devices,
        "gpu_driver": gpu.driver,
        "gpu_reason": gpu.reason,
        "cpu_limits": limits.to_json() if (limits := of_process(os.getpid())) is not None else None,
    }


class Recorder:
    def __init__(self, options: RecordOptions, gpu_probe: GpuProbe | None = None,
                 out: TextIO | None = None, err: TextIO | None = None):
        self.options = options
        self.gpu = gpu_probe or GpuProbe(enabled=options.gpu)
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.writer: RunWriter | None = None
        self.workload: Workload | None = None
        self.start_mono = 0.0
        self.start_unix = 0.0
        self._cancel_requested = threading.Event()
        self._cancel_reason = CANCELLED
        self._trial_over = False           # a trial's window measured: the workload is ended on purpose
        self._write_failed: OSError | None = None
        self._write_failed_at = 0.0
        self._write_lock = threading.Lock()   # one thread says that writing failed
        self._outside: list[signal.Signals] = []   # signals from outside, to pass on at the next tick
        self._phases = events.PhaseTracker()
        self._speaks = False               # the workload says its phases itself (``phase_source``)
        self._epoch: int | None = None     # for the status line: from events, else from output
        self._epochs: int | None = None
        self._last_sample: dict[str, Any] = {}
        self._last_gpus: list[dict[str, Any]] = []
        self._gpu_sampler: GpuSampler | None = None
        self._gpu_due = 0.0                # run time of the next GPU poll
        self._gpu_every = GPU_POLL_RANGE[0]
        self.instrumentation = InstrumentationNews(zero_code.offered(options.command, os.environ, options.instrument))
        self.terminal = Terminal(self.out, self.err, options.echo, options.status_line, self._write, self._t)
        self._channel: EventChannel | None = None
        self.stdout_epochs = StdoutEpochs(self._write, self._t, self._reports_phases, self._printed_epoch)
        self.streams = WorkloadStreams(options, self.out, self.err, self.terminal,
                                       on_second_interrupt=lambda: self.cancel(CANCELLED),
                                       on_stopped=self._stopped_by_user)
        self._state = RUNNING              # the workload's, as last said in the run file
        self._state_seen = RUNNING         # ... and as last looked up (said once seen twice)

    # -- public ---------------------------------------------------------------------------

    def cancel(self, reason: str = CANCELLED) -> None:
        """Ask for the workload to be stopped, saying why in the end record (the first reason
        given stands). Safe from a signal handler."""
        if not self._cancel_requested.is_set():
            self._cancel_reason = reason
        self._cancel_requested.set()

    def from_outside(self, sig: signal.Signals) -> None:
        """A signal from outside (SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2: to the recorder, or
        to the dashboard that started it, through ``control``), passed to the workload as itself
        within a tick. Safe from a signal handler."""
        self._outside.append(sig)

    @property
    def outside_grace(self) -> float:
        """The workload's grace after an ending signal from outside: ``--grace`` when given,
        else ``OUTSIDE_GRACE`` (``RecordOptions.outside_grace``)."""
        return self.options.outside_grace

    def terminal_resized(self, size: tuple[int, int] | None = None) -> None:
        """Our terminal (or the dashboard's panel) changed size: the workload's follows."""
        self.streams.resized(size)

    def send_input(self, data: bytes) -> None:
        """Keys for the workload (the dashboard's, through the control channel)."""
        self.streams.send(data)

    def _stopped_by_user(self) -> None:
        """Ctrl-Z stopped the workload and is about to stop the recorder: said now, as the
        recorder does not sample while stopped."""
        self._state = self._state_seen = STOPPED
        self._write(records.notice(self._t(), "the workload is stopped (Ctrl-Z); devicewatch too, until fg",
                                   level="info", state=STOPPED))

    def run(self) -> int:
        """Record until the workload ends; returns the workload's exit status."""
        self.gpu.start()
        header = self._header()
        try:
            self._claim = claim(self.options.output, self.options.overwrite)
            self.writer = RunWriter(self.options.output, header)
        except RecorderError:
            self.gpu.stop()
            raise
        except OSError as exc:
            self.gpu.stop()
            raise RecorderError(f"cannot write {self.options.output}: {exc.strerror}") from None
        channel = self._channel = EventChannel(self._write, self._t, self.start_mono, self._on_event)
        withdraw = announce(self.options.output, self.options.workload or " ".join(self.options.command),
                            self.options.watcher_pid, self.start_unix)
        try:
            fifo = channel.open()
            become_subreaper()
            self.watchdog = Watchdog(fifo, self.options.grace, channel.folder)
            try:
                return self._record(channel)
            finally:
                self.watchdog.release()
        finally:
            self.streams.release()
            channel.close()
            self.gpu.stop()
            try:
                self.writer.close()
            except OSError as exc:   # EIO on close: what was written stands, and the run was said to end
                if self._write_failed is None:
                    self.terminal.say(f"devicewatch: closing {self.options.output} failed: {_why(exc)}")
            compact(self.options.output)  # the run has ended: its columnar form beside the journal
            withdraw()
            os.close(self._claim)

    # -- the run --------------------------------------------------------------------------

    def _header(self) -> dict[str, Any]:
        now = time.time()
        self.start_unix = now
        self.start_mono = time.monotonic()
        return {
            "devicewatch": __version__,
            "started": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
            "started_unix": round(now, 3),
            # The wall-clock/monotonic pair at t = 0, unrounded: `devicewatch merge` aligns
            # several nodes' runs by it (and by the end record's pair).
            "clock": {"unix": now, "mono": self.start_mono},
            "interval": self.options.interval,
            "host": host_info(self.gpu),
            "workload": {"name": self.options.workload, "args": self.options.workload_args,
                         "command": self.options.command},
            "instrument": self.instrumentation.offered,
            **({"job": self.options.job.to_json()} if self.options.job else {}),
        }

    def _t(self) -> float:
        return round(time.monotonic() - self.start_mono, 4)

    def _write(self, record: records.Writable) -> None:
        """Write RECORD. A write that fails (disk full, the file size limit, EIO) ends the
        recording, never the workload: nothing more is written (the file holds every record up
        to then), the workload runs on to its own end, echoed as before, and stderr says so."""
        if self._write_failed is not None:
            return
        try:
            assert self.writer is not None
            self.writer.write(record)
        except OSError as exc:
            with self._write_lock:
                if self._write_failed is not None:
                    return
                self._write_failed, self._write_failed_at = exc, self._t()
            self.terminal.say(f"devicewatch: writing {self.options.output} failed: {_why(exc)}; it holds the run "
                              f"up to {self._write_failed_at:.1f} s; recording stopped, the workload runs on")

    def _on_event(self, record: dict[str, Any]) -> None:
        """What the coordinator follows of the workload's events: its phases and its epoch.

        A workload that says its phases itself (its run info, or a phase of its own) says them
        better than its output can: printed epochs are then left alone (``phase_source``, the
        rule analysis and the live model follow too)."""
        self._phases.take(record)
        kind = record["kind"]
        if kind == events.INSTRUMENT:
            self.instrumentation.take(record)
            # A full window ends the trial; a partial one is said as its script exits, which then
            # ends as it would (a failure's exit code kept, not hidden by an end on purpose).
            if self.options.trial and record.get("state") == "trial" and record.get("stage") == "done" \
                    and not record.get("partial") and not self._trial_over and self.workload is not None:
                self._trial_over = True
                self.workload.end_without_interrupt()
                self.cancel(TRIAL_OVER)
        self._speaks = self._speaks or phase_source.speaks_for_its_phases(record)
        if kind == events.PHASE_BEGIN:
            if isinstance(record.get("epoch"), int):
                self._epoch = record["epoch"]
        elif kind == events.RUN_INFO and isinstance(record.get("info"), dict) and "epochs" in record["info"]:
            self._epochs = record["info"]["epochs"]

    def _reports_phases(self) -> bool:
        """Whether the workload says its phases itself, once the events it sent before printing
        an epoch are read (they wait in the FIFO until the next sample otherwise)."""
        if self._channel is not None and not self._speaks:
            self._channel.read_ready()
        return self._speaks

    def _printed_epoch(self, epoch: int, epochs: int | None) -> None:
        self.instrumentation.printed_epoch()
        if not self._speaks:
            self._epoch = epoch
        if epochs and self._epochs is None:
            self._epochs = epochs

    def _workload_environment(self, fifo: str) -> dict[str, str]:
        """The recorder's environment, with the event FIFO named and, when offered, the
        zero-code instrumentation first on PYTHONPATH."""
        env, _offered = zero_code.environment(self.options.command,
                                              dict(os.environ, **self.options.environment,
                                                   **{events.ENV_VAR: fifo, "PYTHONUNBUFFERED": "1"}),
                                              self.options.instrument)
        return env

    def _record(self, channel: EventChannel) -> int:
        options = self.options
        status: dict[str, Any] = {}
        if self.gpu.available:
            status["gpm"] = list(self.gpu.gpm_reasons)
        self._write(records.gpu_status(0.0, self.gpu.available, self.gpu.reason, len(self.gpu.devices), **status))
        self.workload = workload = Workload(options.command, self._workload_environment(channel.path),
                                            channel.path, options.grace)
        try:
            process, outputs = self.streams.start(workload)
        except OSError as exc:
            message = f"cannot start {options.command[0]}: {exc.strerror or exc}"
            self._write(records.notice(self._t(), message, level="error"))
            self._write(records.end(self._t(), "error", 127, None, message))
            self.streams.release()
            raise RecorderError(message) from None

        self.watchdog.watch_group(process.pid)
        self._limits: CpuLimitsProbe | None = CpuLimitsProbe(process.pid)
        self._limits_seen: CpuLimits | None = None
        self._check_limits()
        self._cpu = CpuProbe()
        tree = ProcessTreeProbe(process.pid, adopter=os.getpid(),
                                exclude={p for p in (self.watchdog.pid,) if p})
        me = SelfProbe(os.getpid())
        watcher = SelfProbe(options.watcher_pid) if options.watcher_pid else None
        pumps = [(OutputPump(stream, self._write, self._t, self.terminal, self.stdout_epochs,
                             terminal_newlines=is_terminal), pipe)
                 for stream, pipe, is_terminal in outputs]
        readers = [threading.Thread(target=pump.pump, args=(pipe,), name=pump.stream, daemon=True)
                   for pump, pipe in pumps]
        for thread in readers:
            thread.start()
        if options.control:
            from .. import control

            control.follow(sys.stdin.fileno(), self._write, self._t, self.cancel,
                           send_input=self.send_input, resize=self.terminal_resized,
                           pass_on=lambda name: self.from_outside(signal.Signals[name]))

        if self.gpu.available:
            self._gpu_every = gpu_poll_period(len(self.gpu.devices))
            self._gpu_sampler = GpuSampler(self.gpu, self.start_unix)
        try:
            exit_code = self._sample_until_exit(tree, me, watcher, channel)
        finally:
            if self._gpu_sampler is not None:
                self._gpu_sampler.stop()
        cancelled = self._cancel_requested.is_set()  # a Ctrl-C during the clean-up changes no outcome
        alive = workload.stragglers()
        if alive:
            self._write(records.notice(self._t(), f"ending {len(alive)} process(es) the workload left running"))
            workload.end(alive, tree.pids())
        for thread in readers:
            thread.join(timeout=5)
        self.streams.release()
        self.terminal.terminal_given_back()
        channel.finish()
        self.stdout_epochs.close()
        self._finish(exit_code, cancelled)
        return exit_code

    def _follow_state(self, tree: ProcessTreeProbe) -> None:
        """Say in the run file when the workload waits for input or is stopped, and when it runs
        again; a state is said once it was seen on two looks in a row (a read that blocks for an
        instant is no waiting)."""
        assert self.workload is not None
        state = self.workload.state(tree.pids(), tree.states())
        seen, self._state_seen = self._state_seen, state
        if state != seen or state == self._state:
            return
        self._state = state
        message = {WAITING_FOR_INPUT: "the workload is waiting for input", STOPPED: "the workload is stopped",
                   RUNNING: "the workload runs again"}[state]
        self._write(records.notice(self._t(), message, level="info", state=state))

    def _sample_until_exit(self, tree: ProcessTreeProbe, me: SelfProbe, watcher: SelfProbe | None,
                           channel: EventChannel) -> int:
        assert self.workload is not None
        interval = self.options.interval
        tick = 0
        last_status = 0.0
        last_limits = time.monotonic()   # the launch's reading was just taken
        while True:
            tick += 1
            due = self.start_mono + tick * interval
            now = time.monotonic()
            while due - now > EVENTS_EVERY:   # a long interval: the workload's events are read meanwhile
                time.sleep(EVENTS_EVERY)
                channel.read_ready()
                self._pass_outside_signals(tree)
                now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            elif now - due > interval:  # fell behind (suspended, overloaded): skip, don't burst
                tick = math.floor((now - self.start_mono) / interval)
            self._write(self._sample(tree, me, watcher))
            channel.read_ready()   # after each sample: the events are written in time with the samples
            code = self.workload.poll()
            if code is not None:
                return code
            now = time.monotonic()
            self._pass_outside_signals(tree)
            if self._cancel_requested.is_set():
                self.workload.cancel_step(now, tree.pids())
            if now - last_status >= STATUS_EVERY:
                last_status = now
                self._follow_state(tree)
                self._show_status()
            if now - last_limits >= LIMITS_EVERY:
                last_limits = now
                self._check_limits()

    def _pass_outside_signals(self, tree: ProcessTreeProbe) -> None:
        """Signals from outside passed on as themselves, each said in a notice; and, once the
        workload's grace after SIGTERM, SIGHUP or SIGQUIT is over, the next step of its end."""
        assert self.workload is not None
        now = time.monotonic()
        while self._outside:
            sig = self._outside.pop(0)
            continued = self.workload.pass_on(sig, now, tree.pids(), self.outside_grace)
            message = f"{sig.name} from outside, passed to the workload"
            if continued:
                message += " (it was stopped: SIGCONT sent after it)"
            if sig in ENDING_SIGNALS:
                message += f"; it has {self.outside_grace:g} s to end"
            self._write(records.notice(self._t(), message, level="info", outside_signal=sig.name))
        step = self.workload.outside_step(now, tree.pids())
        if step is not None:
            outside = self.workload.outside_signal
            assert outside is not None
            self._write(records.notice(self._t(), f"the workload still runs {self.outside_grace:g} s after "
                                                  f"{outside.name} from outside: {step.name} sent",
                                       outside_signal=outside.name))

    def _check_limits(self) -> None:
        """A ``cpu_limits`` record of the cores the workload's root process may use, at its launch
        and whenever they change (``taskset -p``, its cgroup's quota or cpuset written, moved to
        another cgroup); looked at no more once it is gone."""
        if self._limits is None:
            return
        limits = self._limits.read()
        if limits is None:
            self._limits = None
        elif limits != self._limits_seen:
            self._limits_seen = limits
            self._write(records.cpu_limits(self._t(), self._limits.pid, limits))

    def _sample(self, tree: ProcessTreeProbe, me: SelfProbe, watcher: SelfProbe | None) -> dict[str, Any]:
        assert self.workload is not None
        record: dict[str, Any] = {"type": "sample", "t": self._t()}
        record.update(self._cpu.sample())
        record["proc"] = tree.sample()
        for message in tree.take_notices():
            self._write(records.notice(record["t"], message))
        pids = tree.pids()
        self.workload.seen(pids)
        sampler = self._gpu_sampler
        if sampler is not None and record["t"] >= self._gpu_due - self.options.interval / 2:
            sampler.request(record["t"], pids)
            self._gpu_due += self._gpu_every
            if self._gpu_due <= record["t"]:  # fell behind (a stall): skip, don't burst
                self._gpu_due = record["t"] + self._gpu_every
        record["recorder_cpu"] = me.sample()
        if watcher is not None:
            record["watcher_cpu"] = watcher.sample()
        if sampler is not None:
            self._take_gpus(sampler, record)
        self._last_sample = record
        return record

    def _take_gpus(self, sampler: GpuSampler, record: dict[str, Any]) -> None:
        """The GPU poll into RECORD, waiting for it at most half an interval."""
        result = sampler.collect(time.monotonic() + self.options.interval / 2)
        if result is None:
            return
        asked_at, gpus, news = result
        devices = len(self.gpu.devices)
        if any(item["kind"] == "util_period" for item in news):
            self._write(records.gpu_status(record["t"], True, None, devices, util_period=list(self.gpu.util_period)))
        for item in news:
            if item["kind"] == "gpm_stopped":
                self._write(records.notice(record["t"], f"GPU {item['index']}: {item['reason']}"))
        if gpus is None:  # NVML failed just now: say why once, keep sampling the rest
            self._gpu_sampler = None
            sampler.stop()
            self._write(records.gpu_status(record["t"], False, self.gpu.reason, devices))
            return
        record["gpus"] = self._last_gpus = gpus
        if asked_at != record["t"]:
            record["gpus_t"] = asked_at  # a slow poll, asked for at an earlier tick

    def _show_status(self) -> None:
        if not self.terminal.wants_status():
            return
        self.terminal.show_status(status_text(
            self._t(), self._epoch, self._epochs, self._phases.current,
            self._last_sample.get("cpu_total", 0), [g.get("util") or 0 for g in self._last_gpus]))

    def _finish(self, exit_code: int, cancelled: bool) -> None:
        assert self.workload is not None
        signal_name = self.workload.signal_name
        outside = self.workload.outside_signal
        if self._trial_over and self._cancel_reason == TRIAL_OVER:
            status, reason = "trial", TRIAL_OVER
        elif cancelled:
            status, reason = "cancelled", self._cancel_reason
        elif self.streams.interrupts:   # a Ctrl-C typed into its terminal, which the workload then ended on
            status, reason = "cancelled", CANCELLED
        elif outside is not None and exit_code == 0 and not self.options.trial:   # its handler saved its work
            status, reason = "ok", f"the workload finished after {outside.name} from outside"
        elif outside is not None:   # stopped from outside (a time limit, a pod deleted, a closed terminal);
            # a trial so stopped is no measurement, however it ended: ``devicewatch try`` stops there
            status = "cancelled"
            how = f"killed by {signal_name}" if signal_name else f"exit code {exit_code}"
            reason = TERMINAL_CLOSED if outside == signal.SIGHUP else \
                f"{outside.name} from outside, passed to the workload: {how}"
        elif exit_code == 0:
            status, reason = "ok", "the workload finished"
        else:
            status = "failed"
            reason = f"killed by {signal_name}" if signal_name else f"exit code {exit_code}"
        self.terminal.clear_status()
        end_unix, end_mono = time.time(), time.monotonic()
        t = round(end_mono - self.start_mono, 4)
        self._write(records.end(t, status, exit_code, signal_name, reason,
                                clock=records.ClockPair(end_unix, end_mono), instrument=self.instrumentation.summary(),
                                outside_signal=outside.name if outside is not None else None))
        if self._write_failed is not None:
            how = f"killed by {signal_name}" if signal_name else f"exit code {exit_code}"
            self.terminal.say(f"devicewatch: the recording stopped at {self._write_failed_at:.1f} s "
                              f"({_why(self._write_failed)}): {self.options.output} holds the run up to then; "
                              f"the workload ran on to its end ({how})")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def claim(path: str, overwrite: bool = False) -> int:
    """Lock PATH for this recorder before anything truncates it: a second recorder asked for
    the same file refuses with one line, and the first one's records stay as they are; a file
    that already holds something is replaced only when the user said so (``--overwrite``).

    An advisory ``flock`` on the file itself, held until the recorder's process ends (a killed
    recorder releases it with its descriptors). An empty file is taken as it is: the dashboard
    reserves its run names that way, and there is nothing in it to lose.
    """
    import fcntl

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o664)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RecorderError(f"{path} is being written by another recorder; nothing was changed") from None
    except OSError:  # a filesystem without locks: record anyway, as before
        pass
    if not overwrite and os.fstat(fd).st_size > 0:
        os.close(fd)
        raise UsageError(f"{path} already exists and holds a recording; nothing was changed "
                         "(choose another file, or pass --overwrite to replace it)")
    return fd


def record(options: RecordOptions, on_start: Callable[[Recorder], None] | None = None,
           out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run a recorder with Ctrl-C turned into a clean cancel of the workload (SIGINT, SIGTERM,
    SIGKILL a grace period apart), and the signals from outside passed to the workload as
    themselves: SIGTERM (a batch system's time limit, a pod deleted), SIGHUP (its terminal
    closed: the workload ends with it, as any program started from a shell does), SIGQUIT,
    SIGUSR1 and SIGUSR2. After SIGTERM, SIGHUP or SIGQUIT the workload has its grace to end (a
    stopped one is continued to take the signal), and is ended after it.
    A signal ignored when the recorder starts (``nohup``) stays ignored, by the workload too:
    the user chose so. Off the main thread (a dashboard's trials beside its UI) the signals
    stay the main thread's, as Python requires: the caller cancels through ``on_start``'s
    recorder."""
    recorder = Recorder(options, out=out, err=err)

    def cancel(_signum: int, _frame: Any) -> None:
        recorder.cancel(CANCELLED)

    def pass_on(signum: int, _frame: Any) -> None:
        recorder.from_outside(signal.Signals(signum))

    on_main = threading.current_thread() is threading.main_thread()
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, cancel)} if on_main else {}
    previous.update({sig: signal.signal(sig, pass_on) for sig in PASSED_SIGNALS
                     if on_main and signal.getsignal(sig) is not signal.SIG_IGN})
    if on_main:   # our terminal resized: the workload's pseudo-terminal follows
        previous[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, lambda _s, _f: recorder.terminal_resized())
    try:
        if on_start:
            on_start(recorder)
        return recorder.run()
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
