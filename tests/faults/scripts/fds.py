"""Prints one JSON line: every open descriptor of this process and what it points to."""
import json
import os

fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        pass
print(json.dumps({"pid": os.getpid(), "fds": fds, "events": os.environ.get("DEVICEWATCH_EVENTS")}), flush=True)
