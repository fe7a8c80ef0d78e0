"""Ends a run's processes when its recorder dies without ending them itself.

A recorder killed with SIGKILL (or by the OOM killer) runs no handler, so nothing in it can
stop the workload. The recorder therefore starts this small process first, in its own session
(so a Ctrl-C or a hang-up meant for the recorder's terminal does not reach it), with the read
end of a pipe as its stdin. Only the recorder holds the write end, so end-of-file on stdin
means the recorder has gone, however it went. The recorder writes ``PGID N`` once the
workload runs, and ``DONE`` when it has finished the run itself; after ``DONE`` the watchdog
leaves quietly, after end-of-file without it, it ends every
process that carries the run's marker (the event FIFO's path in ``DEVICEWATCH_EVENTS``,
inherited by every descendant, ``setsid`` or not) or sits in the workload's process group:
SIGTERM, then SIGKILL one grace period later. Then it removes the FIFO's folder, which the
dead recorder could not.

Standard library only, and nothing of devicewatch, so it starts in a few tens of milliseconds.
Usage (by the recorder): ``python -m devicewatch.watchdog MARKER GRACE FIFO_DIR``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

ENV_VAR = "DEVICEWATCH_EVENTS"   # devicewatch.events.ENV_VAR, not imported to stay a leaf
DONE = b"DONE"


def marked(marker: str, pgid: int) -> list[int]:
    """Processes of this user that carry the run's marker or sit in the workload's group."""
    needle = f"{ENV_VAR}={marker}\0".encode()
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        try:
            if pgid > 1 and os.getpgid(pid) == pgid:
                found.append(pid)
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone, or another user's: not ours to end
            continue
        if needle in environ or environ.endswith(needle[:-1]):
            found.append(pid)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def end_run(marker: str, pgid: int, grace: float) -> int:
    """SIGTERM everything marked, SIGKILL what is left after ``grace``; returns how many were found."""
    seen: set[int] = set()
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        deadline = time.monotonic() + wait
        while True:
            pids = [pid for pid in marked(marker, pgid) if _alive(pid)]
            seen.update(pids)
            if not pids:
                return len(seen)
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
    return len(seen)


def main(argv: list[str]) -> int:
    marker, grace, fifo_dir = argv[0], float(argv[1]), argv[2]
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    said = b""
    while True:
        try:
            chunk = os.read(0, 64)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        said += chunk
    if DONE not in said:
        pgid = 0
        for line in said.split(b"\n"):
            if line.startswith(b"PGID ") and line[5:].isdigit():
                pgid = int(line[5:])
        end_run(marker, pgid, grace)
        shutil.rmtree(fifo_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
