"""Starts descendants that outlive it, then exits 0 at once.

Three kinds, pids written to PIDFILE (one per line, complete when the file appears):
a plain child in the workload's process group, a grandchild left by a double fork
(re-parented to init), and one that called setsid (its own session and process group).
Every descendant ignores SIGTERM when STUBBORN is given, so only SIGKILL ends it. With STAY
the workload itself goes on running too (its own pid first in PIDFILE), so that a test can
kill the recorder while the whole family lives.
"""
import os
import signal
import sys
import time

pidfile = sys.argv[1]
stubborn = "stubborn" in sys.argv[2:]
stay = "stay" in sys.argv[2:]
read_end, write_end = os.pipe()


def linger(setsid: bool) -> None:
    if setsid:
        os.setsid()
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.write(write_end, f"{os.getpid()}\n".encode())
    os.close(write_end)
    os.close(read_end)
    for fd in (0, 1, 2):  # detach from the recorder's pipes like a daemon would
        os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    while True:
        time.sleep(0.05)


if os.fork() == 0:            # plain child, same process group
    linger(setsid=False)
if os.fork() == 0:            # double fork: the grandchild is orphaned at once
    if os.fork() == 0:
        linger(setsid=False)
    os._exit(0)
if os.fork() == 0:            # a child that leaves the process group and session
    linger(setsid=True)
os.close(write_end)
pids = [os.getpid()] if stay else []
with os.fdopen(read_end) as lines:
    for line in lines:
        pids.append(int(line))
with open(pidfile + ".tmp", "w") as f:
    f.write("\n".join(map(str, pids)))
os.replace(pidfile + ".tmp", pidfile)
print(f"left {len(pids)} descendants running", flush=True)
if stay:
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)
