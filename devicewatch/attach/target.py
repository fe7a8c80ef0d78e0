"""The process to attach to, as ``/proc`` tells it: its command line, folder and owner, and
the Python processes to pick from when no PID is given."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

from ..errors import UsageError


@dataclass(frozen=True)
class AttachTarget:
    pid: int
    command: list[str]          # /proc/PID/cmdline
    cwd: str | None             # None: not ours to read
    uid: int | None
    name: str

    def to_json(self, when: str) -> dict[str, Any]:
        return {"pid": self.pid, "when": when, "command": self.command, "cwd": self.cwd, "uid": self.uid}


def of_pid(pid: int) -> AttachTarget:
    """The running process PID, or a UsageError saying why it cannot be attached to."""
    if pid == os.getpid():
        raise UsageError("devicewatch cannot attach to itself")
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            if process.status() == psutil.STATUS_ZOMBIE:
                raise UsageError(f"process {pid} has ended (a zombie); nothing to attach to")
            command = process.cmdline()
            name = process.name()
            uid = process.uids().real
    except psutil.NoSuchProcess:
        raise UsageError(f"no process {pid} (see `ps` for the running ones, or run `devicewatch attach` "
                         "without a PID to pick one)") from None
    except psutil.AccessDenied:
        command, name, uid = [], str(pid), None
    try:
        cwd: str | None = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = None
    return AttachTarget(pid, command, cwd, uid, name)


def is_python(command: list[str], name: str) -> bool:
    head = os.path.basename(command[0]) if command else name
    return head.startswith("python") or name.startswith("python")


def python_processes(wait: float = 0.5, limit: int = 20) -> list[tuple[AttachTarget, float]]:
    """The Python processes one may attach to, busiest first, with their CPU share in percent of
    one core over WAIT seconds (devicewatch itself and its children left out)."""
    mine = {os.getpid(), *(c.pid for c in psutil.Process().children(recursive=True))}
    found: list[psutil.Process] = []
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
        info = process.info
        if info["pid"] in mine or not is_python(info.get("cmdline") or [], info.get("name") or ""):
            continue
        try:
            process.cpu_percent(None)
        except psutil.Error:
            continue
        found.append(process)
    time.sleep(wait)
    listed: list[tuple[AttachTarget, float]] = []
    for process in found:
        try:
            share = process.cpu_percent(None)
            listed.append((of_pid(process.pid), share))
        except (psutil.Error, UsageError):
            continue
    listed.sort(key=lambda item: -item[1])
    return listed[:limit]
