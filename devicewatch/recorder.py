"""The recorder: launch a workload, sample the machine, collect events and output, write the run file.

It runs in its own process (headless ``--record``, or started by the dashboard), so a slow or
crashed viewer never delays a sample or loses a record. Four threads feed one ``RunWriter``:
the sampler (the main thread, on a drift-free schedule), one reader each for the workload's
stdout and stderr, and the reader of the event FIFO. Both costly paths are bounded: GPUs are
polled less often the more there are (``gpu_poll_period``), and markers and results past
``EVENT_RATE`` a second are counted and dropped with a notice.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, TextIO

import orjson
import psutil

from . import __version__
from . import events
from .events import ENV_VAR
from .integrations import zero_code
from .lifeline import Watchdog, become_subreaper, die_with_parent
from .probes.cpu import CpuProbe, cpu_model
from .probes.gpu import GpuProbe
from .probes.process import ProcessTreeProbe, SelfProbe
from .registry import Target
from .runfile import RunWriter
from .errors import RecorderError, UsageError

KERAS_EPOCH_LINE = re.compile(rb"^\s*Epoch (\d+)/(\d+)\s*$")
MAX_LOG_LINE = 64 * 1024         # longer output lines are cut (and say so)
MAX_EVENT_LINE = 1024 * 1024     # an event line longer than this is dropped unread
NOTED_GARBAGE = 5                # garbage event lines noted one by one; the rest counted
# The event bound: markers, results and kinds devicewatch does not know are written at most
# EVENT_RATE a second after a burst of EVENT_BURST (a token bucket); beyond it they are counted
# and dropped, and a notice says how many of which kind over what time. A workload sends tens
# a second; a flood cost the recorder half a core. Phases, epochs, run info and oversize
# notes are never dropped.
EVENT_RATE = 500
EVENT_BURST = 5000
NEVER_DROPPED = (events.RUN_INFO, events.PHASE_BEGIN, events.PHASE_END, events.EPOCH, events.OVERSIZE)
EVENT_NAP = 0.01                 # seconds between FIFO reads while over the bound: each read
                                 # then takes what piled up, not one line per wake-up
FIFO_SIZE = 1 << 20              # bytes the event FIFO holds (asked of Linux; its default is 64 KiB)
DROP_NOTICE_EVERY = 5.0          # seconds: while dropping, a notice at least this often
# The output bound: lines of the workload's stdout and stderr are written to the run file at most
# LOG_RATE a second per stream after a burst of LOG_BURST; beyond it they are counted (lines and
# bytes) and a notice says so. Echoed output and Keras's "Epoch N/M" lines are never dropped.
# A workload printing gigabytes cost the recorder a whole core, writing a record per line.
LOG_RATE = 5000
LOG_BURST = 200_000
OUTPUT_CHUNK = 1 << 16
DROP_QUIET = 1.0                 # seconds without a drop that end a run of drops (and its notice)
# How a line of a bounded kind starts, as devicewatch.events writes it (and with a space after
# the colon, as json.dumps writes by default): lines over the bound are recognised by this
# and counted without being parsed.
BOUNDED_PREFIXES = tuple((kind, prefix, b"\n" + prefix) for kind in (events.MARKER, events.RESULT)
                         for prefix in (b'{"kind":"%s",' % kind.encode(), b'{"kind": "%s",' % kind.encode()))
STATUS_EVERY = 0.5               # seconds between updates of the terminal status line
INTERVAL_RANGE = (0.01, 60.0)    # seconds: the sampling periods --interval accepts
GPU_READS_PER_SECOND = 8         # device reads a second over all GPUs: eight GPUs are polled once a second
GPU_POLL_RANGE = (0.2, 1.0)      # seconds between GPU polls, at least and at most (every tick if slower)

@dataclass
class RecordOptions:
    output: str
    command: list[str]
    workload: str | None = None
    workload_args: list[str] = field(default_factory=list)
    interval: float = 0.1
    gpu: bool = True
    echo: bool = True
    status_line: bool | None = None   # None: only when stderr is a terminal
    watcher_pid: int | None = None    # a dashboard following this run: its CPU is sampled too
    grace: float = 3.0                # seconds between SIGINT, SIGTERM and SIGKILL on cancel
    control: bool = False             # read marker commands on stdin (devicewatch.control)
    instrument: bool = True           # offer the zero-code instrumentation to Python workloads


def check_interval(value: str | float) -> float:
    """``--interval`` as seconds, or a UsageError saying what is accepted."""
    try:
        interval = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"--interval needs a number of seconds, not {value!r}") from None
    low, high = INTERVAL_RANGE
    if not math.isfinite(interval) or not low <= interval <= high:
        raise UsageError(f"--interval must be between {low:g} and {high:g} seconds, not {value}")
    return interval


def record_argv(output: str, target: Target, interval: float | None = None, gpu: bool | None = None,
                quiet: bool = False, control: bool = False, watcher_pid: int | None = None) -> list[str]:
    """The command line of a headless recorder: the one way devicewatch starts another recorder
    (the dashboard's live runs, ``compare --pair``)."""
    argv = [sys.executable, "-m", "devicewatch", "--record", str(output)]
    if interval is not None:
        argv += ["--interval", f"{interval:g}"]
    if gpu is not None:
        argv += ["--gpu", "on" if gpu else "off"]
    argv += ["--quiet"] * quiet + ["--control"] * control
    if watcher_pid is not None:
        argv += ["--watcher-pid", str(watcher_pid)]
    if target.workload:
        return argv + [target.workload, *target.args]
    return argv + ["--", *target.command]


class GpuSampler:
    """Polls the GPU probe on its own thread, one poll per request.

    The main loop requests a poll at the first tick at least ``gpu_poll_period`` after the
    previous request, and waits for it at most until a deadline. A poll that finishes later is
    taken at the next tick, with the time it was asked for; while one is running no other is
    asked for. So every poll lands in exactly one sample: none is lost, none repeated, and no
    NVML call can delay the CPU samples. Polling every tick cost more than the recorder's whole
    budget with 8 GPUs (docs/benchmarks.md); what the driver buffers (utilization samples,
    per-process use) is drained whole at each poll, so a slower poll loses none of it.
    """

    def __init__(self, probe: GpuProbe, start_unix: float):
        self._probe = probe
        self._start_unix = start_unix
        self._cond = threading.Condition()
        self._asked: tuple[float, list[int]] | None = None
        self._result: tuple[float, list[dict[str, Any]] | None, list[dict[str, Any]]] | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
        self._thread.start()

    def request(self, t: float, pids: list[int]) -> None:
        with self._cond:
            if self._asked is None and self._result is None:
                self._asked = (t, pids)
                self._cond.notify_all()

    def collect(self, deadline: float) -> tuple[float, list[dict[str, Any]] | None, list[dict[str, Any]]] | None:
        """(asked at, one record per GPU or None if NVML failed, probe news), or None if not ready."""
        with self._cond:
            if self._asked is None and self._result is None:
                return None  # nothing asked for: no wait
            self._cond.wait_for(lambda: self._result is not None, max(0.0, deadline - time.monotonic()))
            result, self._result = self._result, None
            return result

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or self._asked is not None)
                if self._stopping:
                    return
                t, pids = self._asked  # type: ignore[misc]
            gpus = self._probe.sample(pids, self._start_unix)
            news = self._probe.take_news()
            with self._cond:
                self._asked = None
                self._result = (t, gpus, news)
                self._cond.notify_all()


def gpu_poll_period(devices: int) -> float:
    """Seconds between GPU polls: a poll's cost grows with the GPUs it reads, so more GPUs are
    polled less often (one or two every 0.2 s, four every 0.5 s, eight or more every second)."""
    low, high = GPU_POLL_RANGE
    return min(high, max(low, devices / GPU_READS_PER_SECOND))


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
    }


class Recorder:
    def __init__(self, options: RecordOptions, gpu_probe: GpuProbe | None = None,
                 out: TextIO | None = None, err: TextIO | None = None):
        self.options = options
        self.gpu = gpu_probe or GpuProbe(enabled=options.gpu)
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.writer: RunWriter | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.start_mono = 0.0
        self.start_unix = 0.0
        self._cancel_requested = threading.Event()
        self._echo_lock = threading.Lock()
        self._events_seen = 0
        self._garbage = 0
        self._stdout_epoch: int | None = None
        self._write_failed: OSError | None = None
        self._status: dict[str, Any] = {"epoch": None, "epochs": None}
        self._phases = events.PhaseTracker()
        self._status_shown = False
        self._known_pids: set[int] = set()
        self._fifo = ""
        self._echo_broken = False
        self._last_sample: dict[str, Any] = {}
        self._last_gpus: list[dict[str, Any]] = []
        self._gpu_sampler: GpuSampler | None = None
        self._tokens = float(EVENT_BURST)
        self._refilled = time.monotonic()
        self._dropped: dict[str, int] = {}
        self._drop_span: list[float] = []   # run times of the first and the latest drop not yet noted
        self._gpu_due = 0.0              # run time of the next GPU poll
        self._gpu_every = GPU_POLL_RANGE[0]

    # -- public ---------------------------------------------------------------------------

    def cancel(self) -> None:
        """Ask for the workload to be stopped (safe from a signal handler)."""
        self._cancel_requested.set()

    def run(self) -> int:
        """Record until the workload ends; returns the workload's exit status."""
        self.gpu.start()
        header = self._header()
        try:
            self._claim = claim(self.options.output)
            self.writer = RunWriter(self.options.output, header)
        except RecorderError:
            self.gpu.stop()
            raise
        except OSError as exc:
            self.gpu.stop()
            raise RecorderError(f"cannot write {self.options.output}: {exc.strerror}") from None
        fifo_dir = tempfile.mkdtemp(prefix="devicewatch-")  # 0700: only this user reaches the FIFO
        fifo = self._fifo = os.path.join(fifo_dir, "events")
        os.mkfifo(fifo, 0o600)
        read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:  # room for a flood to pile up while the reader naps (EVENT_NAP)
            import fcntl

            fcntl.fcntl(read_fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), FIFO_SIZE)
        except OSError:
            pass  # not Linux, or over /proc/sys/fs/pipe-max-size: the default size
        keep_fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # no EOF while we wait
        become_subreaper()
        self.watchdog = Watchdog(fifo, self.options.grace, fifo_dir)
        try:
            return self._record(fifo, read_fd, keep_fd)
        finally:
            self.watchdog.release()
            for fd in (read_fd, keep_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(fifo_dir, ignore_errors=True)
            self.gpu.stop()
            self.writer.close()
            os.close(self._claim)

    # -- the run --------------------------------------------------------------------------

    def _header(self) -> dict[str, Any]:
        now = time.time()
        self.start_unix = now
        self.start_mono = time.monotonic()
        return {
            "devicewatch": __version__,
            "started": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
            "started_unix": round(now, 3),
            # The wall-clock/monotonic pair at t = 0, unrounded: `devicewatch merge` aligns
            # several nodes' runs by it (and by the end record's pair).
            "clock": {"unix": now, "mono": self.start_mono},
            "interval": self.options.interval,
            "host": host_info(self.gpu),
            "workload": {"name": self.options.workload, "args": self.options.workload_args,
                         "command": self.options.command},
            "instrument": zero_code.offered(self.options.command, os.environ, self.options.instrument),
        }

    def _t(self) -> float:
        return round(time.monotonic() - self.start_mono, 4)

    def _write(self, record: dict[str, Any]) -> None:
        if self._write_failed is not None:
            return
        try:
            assert self.writer is not None
            self.writer.write(record)
        except OSError as exc:  # disk full, file size limit: stop the run, keep what is written
            self._write_failed = exc
            self._cancel_requested.set()

    def _record(self, fifo: str, read_fd: int, keep_fd: int) -> int:
        options = self.options
        status = {"type": "gpu_status", "t": 0.0, "available": self.gpu.available,
                  "reason": self.gpu.reason, "devices": len(self.gpu.devices)}
        if self.gpu.available:
            status["gpm"] = list(self.gpu.gpm_reasons)
        self._write(status)
        env, _offered = zero_code.environment(options.command, dict(os.environ, **{ENV_VAR: fifo, "PYTHONUNBUFFERED": "1"}),
                                              options.instrument)
        try:
            self.process = subprocess.Popen(
                options.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=env, start_new_session=True, close_fds=True,
                preexec_fn=die_with_parent())
        except OSError as exc:
            message = f"cannot start {options.command[0]}: {exc.strerror or exc}"
            self._write({"type": "notice", "t": self._t(), "level": "error", "message": message})
            self._write({"type": "end", "t": self._t(), "status": "error", "exit_code": 127,
                         "signal": None, "duration": self._t(), "reason": message})
            raise RecorderError(message) from None

        self.watchdog.watch_group(self.process.pid)
        self._cpu = CpuProbe()
        tree = ProcessTreeProbe(self.process.pid, adopter=os.getpid(),
                                exclude={p for p in (self.watchdog.pid,) if p})
        me = SelfProbe(os.getpid())
        watcher = SelfProbe(options.watcher_pid) if options.watcher_pid else None
        readers = [
            threading.Thread(target=self._read_output, args=(self.process.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._read_output, args=(self.process.stderr, "stderr"), daemon=True),
        ]
        event_reader = threading.Thread(target=self._read_events, args=(read_fd,), daemon=True)
        for thread in (*readers, event_reader):
            thread.start()
        if options.control:
            from . import control

            control.follow(sys.stdin.fileno(), self._write, self._t)

        if self.gpu.available:
            self._gpu_every = gpu_poll_period(len(self.gpu.devices))
            self._gpu_sampler = GpuSampler(self.gpu, self.start_unix)
        try:
            exit_code = self._sample_until_exit(tree, me, watcher)
        finally:
            if self._gpu_sampler is not None:
                self._gpu_sampler.stop()
        cancelled = self._cancel_requested.is_set()  # a Ctrl-C during the clean-up changes no outcome
        self._end_stragglers(tree)
        for thread in readers:
            thread.join(timeout=5)
        os.close(keep_fd)  # now the FIFO reports EOF once every writer has gone
        event_reader.join(timeout=5)
        self._close_stdout_epoch()
        if self._garbage > NOTED_GARBAGE:
            self._write({"type": "notice", "t": self._t(), "level": "warning",
                         "message": f"{self._garbage} unreadable lines on the event channel in all"})
        self._finish(exit_code, cancelled)
        return exit_code

    def _sample_until_exit(self, tree: ProcessTreeProbe, me: SelfProbe, watcher: SelfProbe | None) -> int:
        assert self.process is not None
        interval = self.options.interval
        tick = 0
        cancel_stage = 0
        cancel_at = 0.0
        last_status = 0.0
        while True:
            tick += 1
            due = self.start_mono + tick * interval
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            elif now - due > interval:  # fell behind (suspended, overloaded): skip, don't burst
                tick = math.floor((now - self.start_mono) / interval)
            self._write(self._sample(tree, me, watcher))
            code = self.process.poll()
            if code is not None:
                return code if code >= 0 else 128 - code
            now = time.monotonic()
            if self._cancel_requested.is_set():
                if cancel_stage == 0 or now - cancel_at >= self.options.grace and cancel_stage < 3:
                    cancel_stage += 1
                    cancel_at = now
                    sig = {1: signal.SIGINT, 2: signal.SIGTERM, 3: signal.SIGKILL}[cancel_stage]
                    self._signal_tree(tree, sig)
            if now - last_status >= STATUS_EVERY:
                last_status = now
                self._show_status()

    def _sample(self, tree: ProcessTreeProbe, me: SelfProbe, watcher: SelfProbe | None) -> dict[str, Any]:
        record: dict[str, Any] = {"type": "sample", "t": self._t()}
        record.update(self._cpu.sample())
        record["proc"] = tree.sample()
        for message in tree.take_notices():
            self._write({"type": "notice", "t": record["t"], "level": "warning", "message": message})
        pids = tree.pids()
        self._known_pids.update(pids)
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
        if any(item["kind"] == "util_period" for item in news):
            self._write({"type": "gpu_status", "t": record["t"], "available": True, "reason": None,
                         "devices": len(self.gpu.devices), "util_period": list(self.gpu.util_period)})
        for item in news:
            if item["kind"] == "gpm_stopped":
                self._write({"type": "notice", "t": record["t"], "level": "warning",
                             "message": f"GPU {item['index']}: {item['reason']}"})
        if gpus is None:  # NVML failed just now: say why once, keep sampling the rest
            self._gpu_sampler = None
            sampler.stop()
            self._write({"type": "gpu_status", "t": record["t"], "available": False,
                         "reason": self.gpu.reason, "devices": len(self.gpu.devices)})
            return
        record["gpus"] = self._last_gpus = gpus
        if asked_at != record["t"]:
            record["gpus_t"] = asked_at  # a slow poll, asked for at an earlier tick

    def _signal_tree(self, tree: ProcessTreeProbe, sig: signal.Signals) -> None:
        """Signal the workload's process group and any descendant that left it (setsid)."""
        assert self.process is not None
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in set(tree.pids()) | self._known_pids:
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def _end_stragglers(self, tree: ProcessTreeProbe) -> None:
        """Descendants still alive after the workload exited are ended: none is left orphaned."""
        assert self.process is not None
        alive = self._alive_descendants()
        if not alive:
            return
        self._write({"type": "notice", "t": self._t(), "level": "warning",
                     "message": f"ending {len(alive)} process(es) the workload left running"})
        for sig in (signal.SIGTERM, signal.SIGKILL):
            self._signal_tree(tree, sig)
            for proc in alive:  # found only by their environment: neither in the tree nor the group
                try:
                    proc.send_signal(sig)
                except psutil.Error:
                    pass
            _gone, alive = psutil.wait_procs(alive, timeout=self.options.grace)
            if not alive:
                break

    def _alive_descendants(self) -> list[psutil.Process]:
        assert self.process is not None
        pids = set(self._known_pids)
        try:  # members of the group, and anyone carrying our FIFO's name, never seen in a sample
            for proc in psutil.process_iter(["pid"]):
                try:
                    if os.getpgid(proc.pid) == self.process.pid:
                        pids.add(proc.pid)
                    elif proc.environ().get(ENV_VAR) == self._fifo:  # left the group (setsid)
                        pids.add(proc.pid)
                except (ProcessLookupError, PermissionError, psutil.Error):
                    pass
        except psutil.Error:
            pass
        alive = []
        for pid in pids - {self.process.pid, os.getpid()}:
            try:
                proc = psutil.Process(pid)
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.Error:
                pass
        return alive

    def _finish(self, exit_code: int, cancelled: bool) -> None:
        assert self.process is not None
        code = self.process.returncode
        signal_name = signal.Signals(-code).name if code is not None and code < 0 else None
        if self._write_failed is not None:
            status, reason = "error", f"writing the run file failed: {self._write_failed.strerror}"
        elif cancelled:
            status, reason = "cancelled", "cancelled by the user"
        elif exit_code == 0:
            status, reason = "ok", "the workload finished"
        else:
            status = "failed"
            reason = f"killed by {signal_name}" if signal_name else f"exit code {exit_code}"
        self._clear_status()
        end_unix, end_mono = time.time(), time.monotonic()
        t = round(end_mono - self.start_mono, 4)
        self._write({"type": "end", "t": t, "status": status, "exit_code": exit_code,
                     "signal": signal_name, "duration": t, "reason": reason,
                     "clock": {"unix": end_unix, "mono": end_mono}})
        if self._write_failed is not None:
            raise RecorderError(f"writing {self.options.output} failed: {self._write_failed.strerror}; "
                                "the workload was stopped and the file holds everything up to then")

    # -- workload output ------------------------------------------------------------------

    def _read_output(self, pipe: Any, stream: str) -> None:
        """Record (and echo) the workload's output, a line per record, within the output bound."""
        bound = _OutputBound(self, stream)
        pending = b""
        long_line: tuple[bytes, int] | None = None  # (its start, its length so far): a line past MAX_LOG_LINE
        while True:
            try:
                chunk = pipe.read1(OUTPUT_CHUNK)
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                break
            data = pending + chunk
            pending = b""
            if long_line is not None:  # the rest of a line already too long: it ends at the next newline
                newline = data.find(b"\n")
                if newline < 0:
                    long_line = (long_line[0], long_line[1] + len(data))
                    continue
                self._take_line(long_line[0], stream, bound, long_line[1] + newline)
                long_line, data = None, data[newline + 1:]
            end = data.rfind(b"\n")
            if end < 0:
                pending = data
            else:
                self._take_lines(data[:end], stream, bound)
                pending = data[end + 1:]
            if len(pending) > MAX_LOG_LINE:  # no newline for too long: keep its start, count the rest
                long_line, pending = (pending[:MAX_LOG_LINE], len(pending)), b""
        if long_line is not None:
            self._take_line(long_line[0], stream, bound, long_line[1] + len(pending))
        elif pending:
            self._take_line(pending, stream, bound)
        bound.note(final=True)
        pipe.close()

    def _take_lines(self, lines: bytes, stream: str, bound: "_OutputBound") -> None:
        """Complete lines: each recorded while the bound allows; past it, counted in bulk unless
        they are echoed or one of them may be a Keras epoch line."""
        start = 0
        while start <= len(lines):
            if not bound.allows() and not (self.options.echo and not self._echo_broken):
                rest = lines[start:]
                if b"Epoch " not in rest:
                    bound.drop(rest.count(b"\n") + 1, len(rest))
                    return
            end = lines.find(b"\n", start)
            end = len(lines) if end < 0 else end
            self._take_line(lines[start:end], stream, bound)
            start = end + 1

    def _take_line(self, line: bytes, stream: str, bound: "_OutputBound", length: int | None = None) -> None:
        echo_to = self.out if stream == "stdout" else self.err
        shown = line[:MAX_LOG_LINE]
        length = len(line) if length is None else length
        # A progress bar rewrites one line with carriage returns: keep what it ended as.
        last = shown.rsplit(b"\r", 1)[-1] if b"\r" in shown else shown
        text = last.decode("utf-8", errors="replace")
        match = KERAS_EPOCH_LINE.match(last)
        if match or bound.take():
            record: dict[str, Any] = {"type": "log", "t": self._t(), "stream": stream, "line": text}
            if length > MAX_LOG_LINE:
                record["cut_from"] = length
            self._write(record)
        else:
            bound.drop(1, length)
        if match:
            self._stdout_epoch_line(int(match.group(1)), int(match.group(2)))
        if self.options.echo and not self._echo_broken:
            try:
                with self._echo_lock:
                    self._clear_status()
                    echo_to.write(text + "\n")
                    echo_to.flush()
            except (OSError, ValueError) as exc:  # our terminal or viewer went away: record on
                self._echo_broken = True
                self._write({"type": "notice", "t": self._t(), "level": "warning",
                             "message": f"stopped echoing the workload's output: {exc}"})

    def _stdout_epoch_line(self, epoch: int, epochs: int) -> None:
        """``Epoch 3/20`` from an unmodified Keras script: epoch phases, unless it sends events."""
        self._status.update(epoch=epoch, epochs=epochs)
        if self._events_seen:
            return
        self._close_stdout_epoch()
        self._stdout_epoch = epoch
        self._write_stdout_phase(events.PHASE_BEGIN, epoch, epochs=epochs)

    def _close_stdout_epoch(self) -> None:
        if self._stdout_epoch is not None:
            self._write_stdout_phase(events.PHASE_END, self._stdout_epoch)
            self._stdout_epoch = None

    def _write_stdout_phase(self, kind: str, epoch: int, **extra: Any) -> None:
        record = {"type": "event", "t": self._t(), "kind": kind, "name": "epoch", "epoch": epoch,
                  **extra, "lane": events.DEFAULT_LANE, "source": "stdout"}
        self._write(record)
        self._phases.take(record)

    # -- events ---------------------------------------------------------------------------

    def _read_events(self, fd: int) -> None:
        pending = b""
        dropping = False
        while True:
            # Wake for data only; while drops are waiting to be noted, also once a second.
            ready, _, _ = select.select([fd], [], [], DROP_QUIET if self._dropped else None)
            if not ready:
                self._note_drops()
                continue
            try:
                chunk = os.read(fd, FIFO_SIZE)
            except BlockingIOError:
                continue
            if not chunk:
                break  # every writer, our own keep-alive end included, has closed
            data = pending + chunk if pending else chunk
            cut = data.rfind(b"\n") + 1
            lines, pending = data[:cut], data[cut:]
            if lines and dropping:
                lines = lines[lines.index(b"\n") + 1:]  # the rest of an oversized line
                dropping = False
            if lines:
                self._take_events(lines)
            if len(pending) > MAX_EVENT_LINE:
                if not dropping:  # one note per oversized line, however many megabytes it runs on
                    self._note_garbage(f"an event line over {MAX_EVENT_LINE} bytes was dropped")
                pending, dropping = b"", True
            if self._dropped:
                self._note_drops()
            if self._tokens < 1:  # over the bound: let the flood pile up, then count it in bulk
                time.sleep(EVENT_NAP)
        if pending and not dropping:
            self._take_events(pending + b"\n")
        self._note_drops(final=True)

    def _take_events(self, lines: bytes) -> None:
        """Complete lines from the FIFO: one by one while the bound allows; past it, a run of
        lines that are all markers or results is counted by kind without being split or parsed."""
        now = time.monotonic()
        self._tokens = min(EVENT_BURST, self._tokens + (now - self._refilled) * EVENT_RATE)
        self._refilled = now
        start = 0
        while self._tokens >= 1 and start < len(lines):
            end = lines.index(b"\n", start)
            if end > start:
                self._take_event(lines[start:end])
            start = end + 1
        rest = lines[start:] if start else lines
        if not rest:
            return
        lines_left = rest.count(b"\n")
        counts = []
        for kind, prefix, after_newline in BOUNDED_PREFIXES:  # a flood is mostly one kind: stop early
            n = rest.count(after_newline) + rest.startswith(prefix)
            counts.append((kind, n))
            lines_left -= n
            if not lines_left:
                for kind, n in counts:
                    if n:
                        self._drop(kind, n)
                return
        for line in rest.split(b"\n"):
            if line:
                self._take_event(line)

    def _take_event(self, line: bytes) -> None:
        if not line.strip():
            return
        if self._tokens < 1:
            for kind, prefix, _ in BOUNDED_PREFIXES:
                if line.startswith(prefix):
                    self._drop(kind)
                    return
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:  # the standard library reads what orjson refuses (NaN, huge ints)
            try:
                event = json.loads(line.decode("utf-8"), parse_constant=lambda _name: None)
            except (UnicodeDecodeError, ValueError, RecursionError):
                event = None
        if not isinstance(event, dict) or not isinstance(event.get("kind"), str) \
                or not isinstance(event.get("mono"), (int, float)):
            self._note_garbage(f"unreadable line on the event channel: {line[:80]!r}")
            return
        kind = event["kind"]
        if kind not in NEVER_DROPPED:
            if self._tokens < 1:
                self._drop(kind)
                return
            self._tokens -= 1
        self._events_seen += 1
        mono = event.pop("mono")
        record = {"type": "event", "t": round(mono - self.start_mono, 6), **event}
        record["type"] = "event"
        self._write(record)
        self._phases.take(record)
        if kind == events.PHASE_BEGIN:
            if isinstance(event.get("epoch"), int):
                self._status["epoch"] = event["epoch"]
        elif kind == events.RUN_INFO and isinstance(event.get("info"), dict) and "epochs" in event["info"]:
            self._status["epochs"] = event["info"]["epochs"]

    def _drop(self, kind: str, count: int = 1) -> None:
        """Count COUNT events over the bound (kinds other than marker and result as "other")."""
        key = kind if kind in (events.MARKER, events.RESULT) else "other"
        self._dropped[key] = self._dropped.get(key, 0) + count
        self._events_seen += count
        t = self._t()
        if not self._drop_span:
            self._drop_span = [t, t]
        self._drop_span[1] = t

    def _note_drops(self, final: bool = False) -> None:
        """A notice of the events dropped since the last one: when the drops stop for a second,
        every DROP_NOTICE_EVERY seconds while they go on, and at the end of the run."""
        if not self._dropped:
            return
        first, last = self._drop_span
        now = self._t()
        if not (final or now - last >= DROP_QUIET or now - first >= DROP_NOTICE_EVERY):
            return
        dropped, self._dropped, self._drop_span = self._dropped, {}, []
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(dropped.items()))
        self._write({"type": "notice", "t": now, "level": "warning",
                     "message": f"{sum(dropped.values())} events over the bound of {EVENT_RATE}/s "
                                f"(bursts of {EVENT_BURST}) dropped between {first:.1f} s and {last:.1f} s: {kinds}",
                     "dropped": dropped, "dropped_from": first, "dropped_to": last})

    def _note_garbage(self, message: str) -> None:
        self._garbage += 1
        if self._garbage <= NOTED_GARBAGE:
            self._write({"type": "notice", "t": self._t(), "level": "warning", "message": message})

    # -- the terminal status line ---------------------------------------------------------

    def _wants_status(self) -> bool:
        if self.options.status_line is not None:
            return self.options.status_line
        return self.err.isatty()

    def _show_status(self) -> None:
        if not self._wants_status():
            return
        sample = self._last_sample
        parts = [f"{self._t():7.1f}s"]
        epoch, epochs = self._status["epoch"], self._status["epochs"]
        if epoch is not None:
            parts.append(f"epoch {epoch}" + (f"/{epochs}" if epochs else ""))
        phase = self._phases.current
        if phase:
            parts.append(phase)
        parts.append(f"CPU {sample.get('cpu_total', 0):5.1f}%")
        gpus = self._last_gpus
        if gpus:
            parts.append("GPU " + " ".join(f"{g.get('util') or 0:3.0f}%" for g in gpus))
        with self._echo_lock:
            try:
                self.err.write("\r\x1b[K[devicewatch] " + " · ".join(parts))
                self.err.flush()
                self._status_shown = True
            except (OSError, ValueError):  # the terminal is gone (closed window, EIO): record on
                self.options.status_line = False

    def _clear_status(self) -> None:
        if self._status_shown:
            self._status_shown = False
            try:
                self.err.write("\r\x1b[K")
                self.err.flush()
            except (OSError, ValueError):
                self.options.status_line = False


def claim(path: str) -> int:
    """Lock PATH for this recorder before anything truncates it: a second recorder asked for
    the same file refuses with one line, and the first one's records stay as they are.

    An advisory ``flock`` on the file itself, held until the recorder's process ends (a killed
    recorder releases it with its descriptors), so a finished file can still be re-recorded.
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
    return fd


def record(options: RecordOptions, on_start: Callable[[Recorder], None] | None = None) -> int:
    """Run a recorder with Ctrl-C and SIGTERM turned into a clean cancel of the workload."""
    recorder = Recorder(options)

    def handle(signum: int, _frame: Any) -> None:
        recorder.cancel()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if on_start:
            on_start(recorder)
        return recorder.run()
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class _OutputBound:
    """The output bound of one stream: a token bucket of LOG_RATE lines a second (bursts of
    LOG_BURST), and the lines and bytes left out, said in a notice when the drops pause for a
    second, every DROP_NOTICE_EVERY seconds while they go on, and at the end."""

    def __init__(self, recorder: Recorder, stream: str):
        self.recorder, self.stream = recorder, stream
        self.tokens = float(LOG_BURST)
        self.refilled = time.monotonic()
        self.lines = self.bytes = 0
        self.span: list[float] = []

    def allows(self) -> bool:
        now = time.monotonic()
        self.tokens = min(LOG_BURST, self.tokens + (now - self.refilled) * LOG_RATE)
        self.refilled = now
        if self.lines and self.recorder._t() - self.span[1] >= DROP_QUIET:  # the drops paused: say so
            self.note()
        return self.tokens >= 1

    def take(self) -> bool:
        if self.tokens < 1 and not self.allows():
            return False
        self.tokens -= 1
        return True

    def drop(self, lines: int, size: int) -> None:
        self.lines += lines
        self.bytes += size
        t = self.recorder._t()
        self.span = [self.span[0] if self.span else t, t]
        if t - self.span[0] >= DROP_NOTICE_EVERY:
            self.note()

    def note(self, final: bool = False) -> None:
        if not self.lines:
            return
        first, last = self.span
        self.recorder._write({
            "type": "notice", "t": self.recorder._t(), "level": "warning",
            "message": f"{self.lines} lines ({self.bytes} bytes) of {self.stream} over the bound of {LOG_RATE} "
                       f"lines/s (bursts of {LOG_BURST}) left out of the run file between {first:.1f} s and {last:.1f} s",
            "dropped_lines": self.lines, "dropped_bytes": self.bytes, "stream": self.stream,
            "dropped_from": first, "dropped_to": last})
        self.lines = self.bytes = 0
        self.span = []
