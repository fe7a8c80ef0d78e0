"""Writes straight to the event FIFO: a flood of valid events, or kinds of garbage.

    flood.py events N      N valid minimal markers, written in large chunks, with run info
                           first and a phase begun and ended around every 100,000 markers
    flood.py garbage       NUL and random-looking bytes, invalid UTF-8, JSON that is not an
                           event, and one 10 MB line without a newline until its end
It then keeps running for SECONDS (argv[3], default 1) so the recorder samples a live process.
"""
import json
import os
import sys
import time

mode = sys.argv[1]
fd = os.open(os.environ["DEVICEWATCH_EVENTS"], os.O_WRONLY)
mono = time.monotonic()


def send(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


start = time.monotonic()
if mode == "events":
    count = int(sys.argv[2])

    def event(kind: str, **fields) -> bytes:
        return (json.dumps({"kind": kind, "mono": time.monotonic(), **fields}, separators=(",", ":")) + "\n").encode()

    line = event("marker", label="x")
    batch, per_phase = 10_000, 100_000
    send(event("run_info", info={"epochs": -(-count // per_phase)}))
    for begun in range(0, count, per_phase):
        n = min(per_phase, count - begun)
        epoch = begun // per_phase + 1
        send(event("phase_begin", name="flood", epoch=epoch, lane="main"))
        for _ in range(n // batch):
            send(line * batch)
        send(line * (n % batch))
        send(event("phase_end", name="flood", epoch=epoch, lane="main"))
elif mode == "garbage":
    send(b"\x00\x01\x02\xff\xfe binary noise \x00\n")
    send(b'{"kind":"marker","mono":1,"label":"\xff\xfe not utf-8"}\n')
    send(b"[1, 2, 3]\n")
    send(b'{"no kind": true}\n')
    send(b"x" * (10 * 1024 * 1024) + b"\n")   # one 10 MB line
    send((json.dumps({"kind": "marker", "mono": time.monotonic(), "label": "after the garbage"}) + "\n").encode())
print(f"sent in {time.monotonic() - start:.2f}s", flush=True)
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
