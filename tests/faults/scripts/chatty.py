"""Prints 1 KB lines without end, for filling a run file."""
import time

line = "y" * 1000
while True:
    print(line, flush=True)
    time.sleep(0.001)
