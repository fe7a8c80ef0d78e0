"""Where the dashboard's records come from: a recorder it started (live) or a finished file (replay).

Both end in the same place: a ``runfile.Follower`` polled from the UI's timer, so live and
replay share every line of drawing code. The live source owns the recorder process: it starts
it, asks it to stop (SIGINT: the recorder cancels the workload's whole tree and finishes the
file), passes markers to it, and notices when it died without finishing the file.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import control
from ..recorder import record_argv
from ..registry import Target
from ..runformat.header import Header
from ..runformat.runfile import Follower, Run, RunFileError, load_columns, read_header


def run_file_name(runs_dir: str, label: str, now: float | None = None) -> Path:
    """``runs/2026-11-21T17-30-05-demo.jsonl``, with a counter if that second is taken.

    The name is reserved by creating the file, empty, exclusively: two dashboards starting a
    run in the same second never get the same name (the recorder takes an empty file as it is).
    """
    stamp = datetime.fromtimestamp(time.time() if now is None else now).strftime("%Y-%m-%dT%H-%M-%S")
    safe = re.sub(r"[^A-Za-z0-9_.]+", "-", label).strip("-.") or "run"
    folder = Path(runs_dir)
    n = 1
    while True:
        path = folder / (f"{stamp}-{safe}.jsonl" if n == 1 else f"{stamp}-{safe}-{n}.jsonl")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o664))
            return path
        except FileExistsError:
            n += 1


def recent_runs(runs_dir: str, limit: int = 30) -> list[Path]:
    """The newest run files in the runs folder, newest first."""
    folder = Path(runs_dir)
    if not folder.is_dir():
        return []
    files = [p for p in folder.glob("*.jsonl") if p.is_file()]
    files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return files[:limit]


def _workload_key(header: Header) -> tuple[Any, ...]:
    """What makes two runs "the same workload": its name, or the command for ``-- COMMAND`` runs."""
    if header.workload.name:
        return ("name", header.workload.name)
    return ("command", header.workload.command)


def previous_run(path: str | Path, folder: str | Path | None = None) -> Path | None:
    """The newest run file in ``folder`` (default: the run's own) started before ``path``'s run,
    with the same workload name in its header; None if there is none."""
    path = Path(path)
    header = read_header(path)
    if header is None:
        return None
    key = _workload_key(header)
    started = header.started_unix
    best: tuple[float, Path] | None = None
    for candidate in Path(folder or path.parent).glob("*.jsonl"):
        if not candidate.is_file() or candidate.resolve() == path.resolve():
            continue
        other = read_header(candidate)
        if other is None or _workload_key(other) != key:
            continue
        when = other.started_unix
        if when is None or started is None or when >= started:
            continue
        if best is None or when > best[0]:
            best = (when, candidate)
    return best[1] if best else None


# Samples a live run keeps in its run object: only a staging area between polls, since the
# dashboard's model keeps its own bounded history (``RunModel``) and judges the run from it.
LIVE_KEEP = 100


class Source:
    """A run file being read; ``poll`` returns new records but samples (the run object is kept up
    to date: its sample lines go straight to its columns, undecoded by the JSON parser)."""

    live = False
    stop_requested = False   # a stop was asked of the recorder (live runs only)

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.follower: Follower | _Finished | None = None
        self.error: str | None = None

    @property
    def run(self) -> Run | None:
        return self.follower.run if self.follower else None

    def poll(self) -> list[dict[str, Any]]:
        if self.follower is None:
            return []
        return self.follower.poll(final=self.finished_writing(), samples=False)

    def finished_writing(self) -> bool:
        return self.run is not None and self.run.finished

    @property
    def running(self) -> bool:
        return False

    def close(self) -> None:
        if self.follower:
            self.follower.close()


class _Finished:
    """A finished run read whole from its columnar form: it has nothing more to give."""

    def __init__(self, run: Run):
        self.run: Run | None = run

    def poll(self, final: bool = False, collect: bool = True, samples: bool = True) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        pass


class ReplaySource(Source):
    """A recorded file; one that is still being written is simply followed as it grows."""

    def __init__(self, path: str | os.PathLike[str]):
        super().__init__(path)
        # A finished run with its columnar form (written when its recorder ended) is mapped,
        # not decoded: a day of a big machine opens as fast as ``report`` reads it.
        finished = load_columns(path)
        if finished is not None and finished.finished:
            self.follower = _Finished(finished)
            return
        self.follower = Follower(path)
        # What is in the file now is read as ``load`` reads it (sample lines straight into
        # columns, no record objects): the model takes the run whole. Later polls, of a file
        # still growing, return their records.
        self.follower.poll(final=False, collect=False)
        if self.follower.run is None:  # empty, or only a header line without its newline
            self.follower.poll(final=True, collect=False)


def open_replay(path: str) -> ReplaySource:
    """Check a file before the app starts: a missing or foreign file is a one-line RunFileError."""
    if not os.path.exists(path):
        raise RunFileError(f"no such file: {path}")
    return ReplaySource(path)


TERMINAL_SIZE = (24, 80)   # a terminal's usual size, for the moment before the panel is laid out


class LiveSource(Source):
    """A recorder subprocess writing into the runs folder, followed as it writes.

    The recorder reads commands from the dashboard on its standard input; when the dashboard
    goes without detaching (``detach``, the user's "Quit, keep recording"), the recorder ends
    the run: nothing goes on recording where nobody can see or stop it.
    """

    live = True
    START_TIMEOUT = 30.0  # seconds to wait for the recorder to create its file

    def __init__(self, runs_dir: str, target: Target, interval: float = 0.1, gpu: bool = True):
        os.makedirs(runs_dir, exist_ok=True)
        super().__init__(run_file_name(runs_dir, target.label))
        self.target = target
        self.interval, self.gpu = interval, gpu
        self.process: subprocess.Popen[bytes] | None = None
        self.stop_requested = False
        self._stderr = tempfile.TemporaryFile()
        self._started = 0.0
        # (rows, columns) of the workload's terminal until the output panel says its own size.
        self.terminal_size = TERMINAL_SIZE

    def recorder_argv(self, watcher_pid: int) -> list[str]:
        return record_argv(str(self.path), self.target, self.interval, self.gpu, quiet=True, control=True,
                           watcher_pid=watcher_pid, terminal=self.terminal_size)

    def start(self) -> None:
        # Its own session: closing the terminal hangs up the dashboard, not the recording.
        self.process = subprocess.Popen(
            self.recorder_argv(os.getpid()), stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=self._stderr, start_new_session=True, close_fds=True)
        self._started = time.monotonic()

    @property
    def running(self) -> bool:
        """The recorder is alive and has not yet finished the file (after that it only exits)."""
        if self.process is None or self.process.poll() is not None:
            return False
        return not (self.run is not None and self.run.finished)

    def poll(self) -> list[dict[str, Any]]:
        if self.follower is None:
            if not self.path.exists():
                self._check_died()
                return []
            self.follower = Follower(self.path, keep=LIVE_KEEP)
        exited = self.process is not None and self.process.poll() is not None
        records = self.follower.poll(final=exited, samples=False)
        if exited and self.error is None and (self.run is None or not self.run.finished):
            self._check_died()
        return records

    def _check_died(self) -> None:
        if self.process is None or self.error is not None:
            return
        code = self.process.poll()
        if code is None:
            if time.monotonic() - self._started > self.START_TIMEOUT and self.follower is None:
                self.error = f"the recorder has not created {self.path} after {self.START_TIMEOUT:.0f}s"
            return
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        detail = self.stderr_tail()
        self.error = f"the recorder stopped without finishing the run ({how})" + (f": {detail}" if detail else "")

    def stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            lines = [line.strip() for line in self._stderr.read().decode("utf-8", "replace").splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else ""

    def stop(self, reason: str | None = None) -> None:
        """Cancel the workload: the recorder signals its whole tree and finishes the file.
        Without a reason, as the user's own stop (SIGINT, "cancelled by the user")."""
        if self.running and self.process is not None:
            self.stop_requested = True
            if reason is not None and self._command(control.stop_line(reason)):
                return
            try:
                self.process.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass

    def pass_signal(self, sig: signal.Signals) -> None:
        """A signal sent to the dashboard, for the workload as itself: the recorder passes it on
        as it would one sent to it headless (its channel's ``signal`` command; the recorder
        itself where the channel is closed). After an ending one (SIGTERM, SIGHUP, SIGQUIT) the
        dashboard may go: the workload has its grace, and the recorder ends it after that."""
        if not self.running or self.process is None:
            return
        if sig.name in control.ENDING_SIGNALS:
            self.stop_requested = True
        if self._command(control.signal_line(sig.name)):
            return
        try:
            self.process.send_signal(sig)
        except ProcessLookupError:
            pass

    def pass_signal_now(self, sig: signal.Signals) -> None:
        """``pass_signal`` from a signal handler, which may have cut a command short: the
        command written straight to the channel after a newline (the cut one, ended there, is
        ignored as unreadable), not through its buffered writer."""
        if self.process is None:
            return
        channel = self.process.stdin
        try:
            if channel is not None:
                os.write(channel.fileno(), b"\n" + control.signal_line(sig.name))
                return
        except (OSError, ValueError):   # the channel closed
            pass
        try:   # to the recorder itself, which passes it on as one sent to it
            self.process.send_signal(sig)
        except ProcessLookupError:
            pass

    def detach(self) -> None:
        """Leave the run recording when the dashboard goes (the user chose so)."""
        if self.running:
            self._command(control.detach_line())

    def send_input(self, text: str) -> bool:
        """Keys typed into the workload's terminal; False if it cannot take them."""
        return self.running and self._command(control.input_lines(text))

    def resize(self, rows: int, columns: int) -> None:
        """The workload's terminal (the output panel) has a new size."""
        if (rows, columns) != self.terminal_size:
            self.terminal_size = (rows, columns)
            if self.running:
                self._command(control.resize_line(rows, columns))

    def send_marker(self, label: str) -> bool:
        """Ask the recorder to write a marker; False if it cannot take one."""
        return self.running and self._command(control.marker_line(label))

    def _command(self, line: bytes) -> bool:
        if not (self.process and self.process.stdin):
            return False
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    def close(self) -> None:
        super().close()
        if self.process is not None and self.process.stdin:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        self._stderr.close()


class AttachSource(LiveSource):
    """``devicewatch attach``'s recorder on a process devicewatch did not start, followed as any
    live run: its stop and the dashboard's going end the recording (a detach), never the process."""

    def __init__(self, runs_dir: str, pid: int, command: list[str], interval: float = 0.1, gpu: bool = True,
                 rate: int | None = None, sample: bool = False):
        name = command[0].rsplit("/", 1)[-1] if command else "process"
        super().__init__(runs_dir, Target(f"attach-{pid}-{name}", [], command), interval, gpu)
        self.pid, self.rate, self.sample = pid, rate, sample

    def recorder_argv(self, watcher_pid: int) -> list[str]:
        argv = [sys.executable, "-m", "devicewatch", "--control", "--watcher-pid", str(watcher_pid),
                "--interval", f"{self.interval:g}", "--gpu", "on" if self.gpu else "off",
                "attach", str(self.pid), "--record", str(self.path)]
        return argv + (["--rate", str(self.rate)] if self.rate else []) + (["--sample"] if self.sample else [])
