"""Stands in for the dashboard: starts the recorder (argv[2:]) with its output on pipes that
it reads, writes the recorder's pid to PIDFILE (argv[1]), then runs until it is killed. Once
it is gone, the recorder's stdout and stderr lead nowhere (writes fail with EPIPE)."""
import os
import subprocess
import sys
import threading
import time

recorder = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
for pipe in (recorder.stdout, recorder.stderr):
    threading.Thread(target=lambda p=pipe: [None for _ in iter(lambda: p.read(65536), b"")],
                     daemon=True).start()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(recorder.pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(1)
