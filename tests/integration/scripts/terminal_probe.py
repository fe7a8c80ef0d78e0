"""What a program sees of its terminal, written as JSON to the file named first.

Run bare and under devicewatch, the two reports are compared. Steps, in the order given:
``see`` (isatty of 0/1/2, the terminal's size, whether /dev/tty opens), ``winch`` (wait up to
5 s for SIGWINCH, then the new size), ``stdin`` (read standard input to its end, or a line when
it is a terminal), ``partial`` (print ``loading...``, wait 0.6 s, end the line), ``bar`` (a
bar redrawn with ``\\r`` ten times, 50 ms apart), ``bytes`` (every byte value but newline and carriage return, then
a newline), ``colour`` (a red word, then plain text), ``sigint`` (say ``ready``, then wait up to 5 s for SIGINT: exit 130 on it),
``exit=N`` (exit with N). Nothing but the steps' output goes to stdout.
"""

import json
import os
import signal
import sys
import time

report: dict = {}
path, steps = sys.argv[1], sys.argv[2:]


def size() -> list[int] | None:
    try:
        columns, lines = os.get_terminal_size(1)
        return [lines, columns]
    except OSError:
        return None


def _await_signal(signum: int, prompt: str) -> bool:
    """Say PROMPT, then wait up to 5 s for SIGNUM; whether it came."""
    seen: list[int] = []
    signal.signal(signum, lambda *_: seen.append(1))
    print(prompt, flush=True)
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(seen)


def save() -> None:
    with open(path, "w") as handle:
        json.dump(report, handle)


for step in steps:
    if step == "see":
        report["isatty"] = [os.isatty(fd) for fd in (0, 1, 2)]
        report["size"] = size()
        try:
            os.close(os.open("/dev/tty", os.O_RDWR))
            report["dev_tty"] = True
        except OSError:
            report["dev_tty"] = False
    elif step == "winch":
        report["winch"] = _await_signal(signal.SIGWINCH, "resize me")
        report["size_after"] = size()
    elif step == "stdin":
        data = sys.stdin.buffer.readline() if os.isatty(0) else sys.stdin.buffer.read()
        report["stdin"] = data.decode("latin-1")
    elif step == "partial":
        print("loading...", end="", flush=True)
        time.sleep(0.6)
        print("done", flush=True)
    elif step == "bar":
        for i in range(1, 11):
            print(f"\rstep {i:2d}/10", end="", flush=True)
            time.sleep(0.05)
        print(flush=True)
    elif step == "bytes":
        sys.stdout.buffer.write(bytes(b for b in range(256) if b not in (10, 13)) + b"\n")
        sys.stdout.flush()
    elif step == "colour":
        print("\x1b[31mred\x1b[0m plain", flush=True)
    elif step == "sigint":
        got_int = _await_signal(signal.SIGINT, "ready")
        report["sigint"] = got_int
        save()
        sys.exit(130 if got_int else 0)
    elif step.startswith("exit="):
        save()
        sys.exit(int(step[5:]))
save()
