"""A tiny training stand-in: numbered epochs forever (or --epochs N), each a phase of busy work.

Writes its own pid to PIDFILE first so a test can signal it; each epoch is announced with an
event and a stdout line so a test can wait for "epoch 2 has begun".
"""
import os
import sys
import time

from devicewatch import events

pidfile = sys.argv[1]
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 10**9
with open(pidfile + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(pidfile + ".tmp", pidfile)
events.run_info(framework="none", data="synthetic", epochs=epochs)
for epoch in range(1, epochs + 1):
    with events.phase("train", epoch=epoch):
        print(f"epoch {epoch} begins", flush=True)
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            sum(range(1000))
    events.epoch_metrics(epoch, loss=1.0 / epoch)
