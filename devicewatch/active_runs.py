"""Runs still recording on this machine, from any dashboard or terminal: so none runs unseen.

Every recorder announces itself while it records: a small JSON file in this user's runtime
folder (``$XDG_RUNTIME_DIR/devicewatch``, else ``/tmp/devicewatch-UID``; 0700, checked to be
ours), removed when the run ends. A recorder killed without its clean-up leaves its file
behind; a reader believes an announcement only while its process lives with the same start
time (so a reused PID is not mistaken for it), and removes the stale ones it meets.
``devicewatch runs`` and the dashboard's home screen list them, and can stop one (SIGINT: the
recorder cancels its workload and finishes the file, as Ctrl-C does).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from collections.abc import Callable

FOLDER_VAR = "DEVICEWATCH_RUNTIME_DIR"   # where announcements go, if not the default


@dataclass(frozen=True)
class ActiveRun:
    pid: int                 # the recorder's
    path: str                # the run file, absolute
    started_unix: float
    title: str               # the workload's name or command line
    watcher_pid: int | None  # the dashboard that started it, if one did
    process_start: float     # the recorder process's start time, told apart from a reused PID

    @property
    def age(self) -> float:
        return max(0.0, time.time() - self.started_unix)

    @property
    def watched(self) -> bool:
        """Its dashboard is still there (a run left to record after "Quit, keep recording" is not)."""
        return self.watcher_pid is not None and _start_time(self.watcher_pid) is not None


def folder() -> Path:
    """This user's folder of announcements, created private; OSError if it is not ours."""
    chosen = os.environ.get(FOLDER_VAR) or os.environ.get("XDG_RUNTIME_DIR")
    path = Path(chosen) / "devicewatch" if chosen else Path(tempfile.gettempdir()) / f"devicewatch-{os.getuid()}"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{path} is not a private folder of this user's")
    return path


def _start_time(pid: int) -> float | None:
    """When process PID started (clock ticks since boot, from /proc), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] == b"Z":
        return None
    return float(fields[19])  # starttime: field 22 of stat, the 20th after the command name


def announce(path: str, title: str, watcher_pid: int | None, started_unix: float) -> Callable[[], None]:
    """Announce this process as recording PATH; returns what withdraws the announcement.
    Announcing is best effort: a recorder records whether or not it can be listed."""
    pid = os.getpid()
    entry = ActiveRun(pid, os.path.abspath(path), started_unix, title, watcher_pid, _start_time(pid) or 0.0)
    try:
        target = folder() / f"{pid}.json"
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(entry)))
        temporary.replace(target)  # whole or not at all: a reader never meets half a file
    except OSError:
        return lambda: None

    def withdraw() -> None:
        try:
            target.unlink()
        except OSError:
            pass

    return withdraw


def active_runs() -> list[ActiveRun]:
    """The runs recording now, oldest first; stale announcements are removed on the way."""
    try:
        entries = list(folder().glob("*.json"))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            run = ActiveRun(**json.loads(entry.read_text()))
        except (OSError, ValueError, TypeError):
            continue  # being written, or not ours to judge
        if _start_time(run.pid) != run.process_start:
            try:
                entry.unlink()
            except OSError:
                pass
            continue
        found.append(run)
    return sorted(found, key=lambda r: r.started_unix)


def find(which: str) -> ActiveRun | None:
    """The active run with this recorder PID or run file (a path as given, or its name)."""
    for run in active_runs():
        if which == str(run.pid) or os.path.abspath(which) == run.path or which == os.path.basename(run.path):
            return run
    return None


def stop(run: ActiveRun) -> bool:
    """Ask the recorder to cancel its workload and finish its file; False if it is gone."""
    if _start_time(run.pid) != run.process_start:
        return False
    try:
        os.kill(run.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def age_text(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``2h 14m``, ``3d 4h``."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d {seconds % 86400 // 3600}h"
