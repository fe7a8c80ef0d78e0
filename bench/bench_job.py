"""A job of 16 nodes × 8 GPUs × 64 cores followed live, and finished ones opened.

    flock /tmp/devicewatch-bench.lock python -m bench.bench_job [--seconds 60] [--hours 1]
                                                              [--day] [--keep DIR] [--against DIR]

1. **Following** (budget ≤ 10 % of one core): a writer process writes the 16 nodes' run files
   at the real rate, 10 samples a second each (64 cores, 8 GPUs with the driver's buffered
   samples and GPU processes, ``bench.make_recording``'s readings), with each node's 8 ranks'
   phases and epochs (20 s epochs, so epochs end while it is measured); ``devicewatch replay
   DIR`` runs in a 200×50 pseudo-terminal whose output is drained. After a warm-up of 10 s, the
   dashboard process's CPU time over ``--seconds`` is the figure; the writer's own rate is
   checked (a writer that fell behind would flatter the figure).
2. **Opening a finished job** (budget: 16 nodes of an hour ≤ 3 s; of a day ≤ 20 s): 16 node
   files of ``--hours`` made by ``bench.make_recording.generate_node`` (each with its columnar
   form, as its recorder leaves it), then, in a fresh process, the job view's model opened on
   the folder (``live.job.JobModel``: every node's header, events, latest reading and
   stragglers: what the job screen draws its first frame from) and the three panels' text drawn
   at 200 columns. ``--day``: a node's day made once, the 16 nodes its 16 hard links (the same
   work per node; their pages shared in the page cache, which a cold cluster file system would
   not give).
3. **Opening a job live for an hour** (budget ≤ 5 s): the same 16 node files as their recorders
   left them an hour in, still writing: each journal without its end record, and no columnar
   form (a recorder writes that when its run ends), every file's time of change a minute ahead
   (files that go on growing while a busy machine reads them), so that no node reads as
   silent. The same fresh process as 2, its imports counted in the figure (the wait from the
   command to the first frame); the epochs judged must name the stragglers the finished job
   names (all but the last epoch, which no rank has left).

``--against DIR``: another checkout's ``devicewatch`` (the code before a change) timed beside
this one on the same files, the two alternated run by run, so that a busy machine's load
falls on both alike.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bench_dashboard import PtyDashboard
from bench.make_recording import _header, _rank_records, _samples, generate_node
from devicewatch.runformat.writer import RunWriter, probe_fields

ROOT = Path(__file__).resolve().parent.parent
NODES, GPUS, CORES, RANKS = 16, 8, 64, 8
RATE = 10.0
EPOCH = 20.0
WARMUP = 10.0
BUDGET_CORE = 0.10
BUDGET_HOUR, BUDGET_DAY = 3.0, 20.0
BUDGET_LIVE = 5.0


# -- 1. following a live job ----------------------------------------------------------------

def write_job(folder: Path, seconds: float) -> None:
    """The 16 nodes' files written at the real rate for SECONDS; prints the samples written and
    the latest a tick was late by."""
    fields = probe_fields()
    n = int(seconds * RATE) + 1
    start_unix, start_mono = time.time(), time.monotonic()
    writers, samples, pending = [], [], []
    for node in range(NODES):
        rng = np.random.default_rng(node)
        header = _header(CORES, GPUS, RATE, f"gpu{node:03d}")
        header.update(started_unix=round(start_unix, 3), clock={"unix": start_unix, "mono": start_mono},
                      job={"id": "bench", "from": "DEVICEWATCH_JOB"},
                      workload={"name": None, "args": [], "command": ["torchrun", "train.py"]})
        writers.append(RunWriter(str(folder / f"gpu{node:03d}.jsonl"), header, fields))
        samples.append(iter(_samples(1, n, RATE, CORES, GPUS, EPOCH, True, fields, rng)))
        pending.append(_rank_records(seconds, EPOCH, node, NODES, RANKS, rng))
    nexts = [next(p, None) for p in pending]
    written, late = 0, 0.0
    for k in range(1, n):
        due = start_mono + k / RATE
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        late = max(late, time.monotonic() - due)
        t = k / RATE
        for i, writer in enumerate(writers):
            while nexts[i] is not None and nexts[i]["t"] <= t:
                writer.write_line(nexts[i])
                nexts[i] = next(pending[i], None)
            sample = next(samples[i], None)
            if sample is not None:
                writer.write_line(sample)
                written += 1
    for writer in writers:
        writer.close()
    print(f"{written} {late:.3f}")


def follow(seconds: float, keep: Path | None) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-job-", dir=keep))
    writer = subprocess.Popen([sys.executable, "-m", "bench.bench_job", "--write", str(folder),
                               "--seconds", str(seconds + WARMUP + 5)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)   # the nodes' headers written
    dash = PtyDashboard(["replay", str(folder)], cwd=str(ROOT))
    try:
        time.sleep(WARMUP)
        before, wall = dash.cpu_seconds(), time.monotonic()
        time.sleep(seconds)
        used, wall = dash.cpu_seconds() - before, time.monotonic() - wall
        alive = dash.process.poll() is None
    finally:
        dash.close()
        out, _ = writer.communicate(timeout=seconds + 60)
    written, late = out.split()
    expected = NODES * int((seconds + WARMUP + 5) * RATE)
    share = used / wall
    print(f"following {NODES} nodes × {GPUS} GPUs × {CORES} cores at {RATE:g} Hz, replay DIR at 200×50: "
          f"{share:.1%} of one core over {wall:.0f} s ({used:.2f} CPU s; budget ≤ {BUDGET_CORE:.0%}: "
          f"{'met' if share <= BUDGET_CORE else 'MISSED'}); dashboard {'alive' if alive else 'EXITED'}; "
          f"writer wrote {written} of {expected} samples, latest tick {float(late) * 1000:.0f} ms late")
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)


# -- 2. opening a finished job --------------------------------------------------------------

OPEN = """
import os, sys, time
folder, nodes, finished = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "finished"
ahead = time.time() + 60   # a live job's files go on growing while they are read: none silent
for name in os.listdir(folder):
    os.utime(os.path.join(folder, name), (ahead, ahead))
started = time.perf_counter()
from devicewatch.live.job import JobModel
from devicewatch.tui.job_screen import JobScreen
imported = time.perf_counter()
model = JobModel(folder=sys.argv[1])
screen = JobScreen(model)
nodes = model.ordered()
texts = [screen.title_text(nodes), screen.nodes_text(nodes, 198, time.time()), screen.epochs_text(198),
         screen.lanes_text(198)]
done = time.perf_counter()
assert len(nodes) == int(sys.argv[2]) and all(n.finished == finished for n in nodes), [n.path for n in nodes]
named = ",".join(f"{e}:{s.last_rank}" for e, s in sorted(model.stragglers.items()))
print(f"{done - imported:.3f} {imported - started:.3f} {len(model.ranks())} {len(model.stragglers)} {named or '-'}")
"""


def open_once(folder: Path, finished: bool, code: Path = ROOT) -> list[str]:
    """One fresh process opening FOLDER's job with CODE's devicewatch (``-c`` puts its working
    folder first on the path): its figures as printed."""
    return subprocess.run([sys.executable, "-c", OPEN, str(folder), str(NODES), "finished" if finished else "live"],
                          cwd=code, env=dict(os.environ, PYTHONPATH=str(code)), capture_output=True, text=True,
                          check=True).stdout.split()


def open_figure(folder: Path, label: str, budget: float, repeats: int = 3, finished: bool = True,
                against: Path | None = None) -> list[str]:
    """Best of REPEATS openings (alternated with AGAINST's code where given); the last one's
    figures returned. A finished job's budget is the model and text's; a live job's counts its
    imports too (the wait from the command to its first frame)."""
    times: list[float] = []
    before: list[float] = []
    for _ in range(repeats):
        out = open_once(folder, finished)
        times.append(float(out[0]) + (0.0 if finished else float(out[1])))
        if against is not None:
            old = open_once(folder, finished, against)
            before.append(float(old[0]) + (0.0 if finished else float(old[1])))
    best = min(times)
    what = "job model and its first frame's text" + ("" if finished else ", imports included")
    more = f"imports {float(out[1]):.2f} s more" if finished else f"of which imports {float(out[1]):.2f} s"
    print(f"opening a {label} ({what}): best {best:.2f} s of "
          f"{repeats} ({', '.join(f'{t:.2f}' for t in times)}; {more}); "
          f"{out[2]} ranks, {out[3]} epochs judged; budget ≤ {budget:g} s: {'met' if best <= budget else 'MISSED'}")
    if before:
        print(f"  the code in {against}, alternated with it: best {min(before):.2f} s "
              f"({', '.join(f'{t:.2f}' for t in before)})")
    return out


def live_copy(finished: Path, live: Path) -> None:
    """FINISHED's node files as their recorders left them before the end: no end record, no columnar form."""
    for path in sorted(finished.glob("*.jsonl")):
        with open(path, "rb") as source:
            data = source.read()
        last = data.rindex(b"\n", 0, len(data) - 1) + 1
        assert b'"type":"end"' in data[last:], path
        (live / path.name).write_bytes(data[:last])


def finished_hour(hours: float, keep: Path | None, against: Path | None = None) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-job-hour-", dir=keep))
    live = Path(tempfile.mkdtemp(prefix="bench-job-live-", dir=keep))
    started = time.perf_counter()
    for node in range(NODES):
        generate_node(str(folder / f"gpu{node:03d}.jsonl"), node, NODES, CORES, GPUS, hours, ranks=RANKS)
    live_copy(folder, live)
    print(f"(made {NODES} node files of {hours:g} h in {time.perf_counter() - started:.0f} s)", flush=True)
    done = open_figure(folder, f"finished {NODES}-node {hours:g} h", BUDGET_HOUR if hours <= 1 else BUDGET_DAY,
                       against=against)
    going = open_figure(live, f"{NODES}-node job live for {hours:g} h", BUDGET_LIVE, finished=False, against=against)
    judged = dict(pair.split(":") for pair in done[4].split(",")) if done[4] != "-" else {}
    live_judged = dict(pair.split(":") for pair in going[4].split(",")) if going[4] != "-" else {}
    same = all(judged.get(epoch) == rank for epoch, rank in live_judged.items())
    verdict = "the finished job's" if same else "NOT the finished job's"
    print(f"  the stragglers of the live job's {len(live_judged)} epochs judged: {verdict} (which judged "
          f"{len(judged)}: its last epoch too, closed by its end)")
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(live, ignore_errors=True)


def finished_day(keep: Path | None) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-job-day-", dir=keep))
    started = time.perf_counter()
    first = folder / "gpu000.jsonl"
    generate_node(str(first), 0, NODES, CORES, GPUS, 24.0, ranks=RANKS)
    for node in range(1, NODES):
        for suffix in ("", ".columns"):
            os.link(f"{first}{suffix}", folder / f"gpu{node:03d}.jsonl{suffix}")
    print(f"(made a node's day in {time.perf_counter() - started:.0f} s; the 16 nodes its hard links)", flush=True)
    open_figure(folder, f"finished {NODES}-node day (16 links to one node's day)", BUDGET_DAY)
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the following is measured")
    parser.add_argument("--hours", type=float, default=1.0, help="each finished node's length")
    parser.add_argument("--day", action="store_true", help="also a 16-node day (a node's day, 16 links)")
    parser.add_argument("--skip-follow", action="store_true")
    parser.add_argument("--skip-open", action="store_true")
    parser.add_argument("--keep", type=Path, help="make the files in DIR and keep them")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another checkout (the code before) whose job model is timed alternately beside this one's")
    parser.add_argument("--write", type=Path, help=argparse.SUPPRESS)   # the writer process
    args = parser.parse_args()
    if args.write:
        write_job(args.write, args.seconds)
        return
    if not args.skip_follow:
        follow(args.seconds, args.keep)
    if not args.skip_open:
        finished_hour(args.hours, args.keep, args.against)
    if args.day:
        finished_day(args.keep)


if __name__ == "__main__":
    main()
