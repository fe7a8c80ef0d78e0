"""Prints 1 KB lines: LINES of them (default: without end), then exits with CODE (default 0)."""
import sys
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else -1
code = int(sys.argv[2]) if len(sys.argv) > 2 else 0
line = "y" * 1000
printed = 0
while printed != count:
    print(f"{printed:08d} {line}", flush=True)
    printed += 1
    if printed % 50 == 0:
        time.sleep(0.01)
sys.exit(code)
