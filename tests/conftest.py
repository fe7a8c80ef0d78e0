"""Shared test helpers: run the real command line in a subprocess, write literal run files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def devicewatch(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``python -m devicewatch ARGS`` from the repository root, capturing its output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("DEVICEWATCH_EVENTS", None)
    return subprocess.run([sys.executable, "-m", "devicewatch", *args], cwd=kwargs.pop("cwd", ROOT),
                          env=env, capture_output=True, text=True, timeout=timeout, **kwargs)


def write_run(path: Path, records: list[dict[str, Any]], header: dict[str, Any] | None = None,
              end: dict[str, Any] | None = None) -> Path:
    """A run file from literal records (header and end filled in unless given)."""
    head = {"type": "header", "format": "devicewatch-run", "schema": 1, "devicewatch": "test",
            "started": "2026-01-01T00:00:00+00:00", "started_unix": 0.0, "interval": 0.1,
            "host": {"cpu_model": "test", "cpu_count": 2, "gpus": []},
            "workload": {"name": "literal", "args": [], "command": ["literal"]}}
    head.update(header or {})
    lines = [head, *records]
    if end is not False:
        last = max([r.get("t", 0.0) for r in records] or [0.0])
        lines.append(end or {"type": "end", "t": last, "status": "ok", "exit_code": 0,
                             "signal": None, "duration": last, "reason": "the workload finished"})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def command(name: str, argv: list[str], *global_options: str) -> int:
    """Run one subcommand in this process as the command line would, letting its errors raise."""
    from devicewatch import cli

    module, args = cli.parse([*global_options, name, *argv])
    return module.run(args)


@pytest.fixture
def python() -> str:
    return sys.executable


def merged_two_gpu_nodes(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two torchrun nodes' runs and their merge: node 0 on a machine with two GPUs, node 1 with
    one, each with its own samples, buffered driver samples and GPU processes, one rank each.
    Returns (merged, node 0's file, node 1's file)."""
    from devicewatch import merge

    def gpu_sample(t: float, util: float, buffered: list[list[float]], pid: int, gpus: int) -> dict[str, Any]:
        return {"type": "sample", "t": t, "cpu": [util / 2, util], "cpu_total": util * 0.75,
                "gpus": [{"index": g, "util": util + g, "mem_used": 1000.0, "util_samples": buffered,
                          "procs": [{"pid": pid, "util": util, "mem": 500.0}]} for g in range(gpus)]}

    def node(rank: int, mono: float, hostname: str, gpus: list[dict[str, Any]], samples: list[dict[str, Any]]) -> Path:
        who = {"rank": rank, "local_rank": 0, "world_size": 2, "group_rank": rank, "job": "127.0.0.1:29500"}
        phases = [{"type": "event", "t": t, "kind": kind, "name": "train", "epoch": 1, "lane": "main",
                   "pid": 100 + rank, **who} for t, kind in ((0.6, "phase_begin"), (2.0, "phase_end"))]
        end = {"type": "end", "t": 2.5, "status": "ok", "exit_code": 0, "signal": None, "duration": 2.5,
               "reason": "the workload finished", "clock": {"unix": 1002.5, "mono": mono + 2.5}}
        return write_run(tmp_path / f"node{rank}.jsonl",
                         [{"type": "sample", "t": 0.5, "cpu": [10.0, 30.0], "cpu_total": 20.0}, *samples, *phases,
                          {"type": "log", "t": 2.2, "stream": "stdout", "line": f"rank {rank} done"}],
                         header={"started_unix": 1000.0, "clock": {"unix": 1000.0, "mono": mono},
                                 "host": {"hostname": hostname, "cpu_model": "test", "cpu_count": 2, "gpus": gpus}},
                         end=end)

    a = node(0, 50.0, "abox", [{"name": "A100", "mem_total": 40000.0}] * 2,
             [gpu_sample(1.5, 10.0, [[1.2, 11.0], [1.4, 12.0]], pid=7, gpus=2)])
    b = node(1, 950.0, "bbox", [{"name": "H100", "mem_total": 80000.0}],
             [gpu_sample(1.0, 40.0, [[0.8, 30.0], [0.95, 50.0]], pid=100, gpus=1),
              gpu_sample(2.0, 90.0, [[1.5, 85.0], [1.9, 95.0]], pid=101, gpus=1)])
    out = tmp_path / "merged.jsonl"
    merge.write(merge.merge([str(a), str(b)]), str(out))
    return out, a, b


def merged_by_record(paths: list[str], out: str) -> str:
    """The merged run as ``devicewatch merge`` wrote it one reader's record at a time, the
    reference the merge from columns must equal byte for byte. Only the nodes' reading and
    alignment (``merge.merge``'s nodes, origin and header) are the merge's own; every record is
    made here from the nodes' runs: each node in turn gives its samples (``Samples.record``, the
    buffered samples' times moved too), events (a lane per rank), lines (the rank from
    torchrun's ``[defaultR]:`` prefix, or the node's one rank), notices and GPU status, each
    moved onto the merged axis and labelled with its host; all stably sorted by time, the
    merge's own notices sorted in after them, the end record last; the writer encodes and
    writes them one by one, and the columnar form is made from the journal."""
    import re

    from devicewatch import events, merge
    from devicewatch.runformat.records import notice
    from devicewatch.runformat.writer import RunWriter, compact

    merged = merge.merge(paths)
    records: list[dict[str, Any]] = []
    for node in merged.nodes:
        shift, run = node.start_unix - merged.origin, node.run

        def at(t: float, shift: float = shift, rate: float = node.rate) -> float:
            return round(shift + t * rate, 6)

        for sample in run.samples:
            record = dict(sample, t=at(sample["t"]), host=node.label)
            if isinstance(sample.get("gpus"), list):
                record["gpus"] = [dict(entry, util_samples=[[at(a), v] for a, v in entry["util_samples"]])
                                  if "util_samples" in entry else entry for entry in sample["gpus"]]
            records.append(record)
        for event in run.events:
            record = dict(event, t=at(event["t"]), host=node.label)
            if event.get("kind") in (events.PHASE_BEGIN, events.PHASE_END):
                lane, rank = event.get("lane", "main"), event.get("rank")
                if type(rank) is not int:
                    record["lane"] = f"{node.label} {lane}"
                elif lane in (None, "main", f"rank{rank}", f"rank {rank}"):
                    record["lane"] = f"rank {rank}"
                else:
                    record["lane"] = f"rank {rank} {lane}"
            records.append(record)
        for log in run.logs:
            record = dict(log.to_json(), t=at(log.t), host=node.label)
            tee = re.match(r"^\[[A-Za-z_]*?(\d+)\]:", log.line)
            rank = node.ranks[0] if len(node.ranks) == 1 else node.local_ranks.get(int(tee.group(1))) if tee else None
            if rank is not None:
                record["rank"] = rank
            records.append(record)
        records += [dict(notice.to_json(), t=at(notice.t), host=node.label, message=f"{node.label}: {notice.message}")
                    for notice in run.notices]
        records += [dict(status.to_json(), t=at(status.t), host=node.label) for status in run.gpu_status]
    records.sort(key=lambda r: r["t"])
    records.append({"type": "notice", "t": 0.0, "level": "info",
                    "message": f"merged {len(merged.nodes)} nodes; alignment: {merged.alignment['text']}"})
    for node in merged.nodes:
        if node.status != "ok":
            records.append(notice(round(node.end_unix - merged.origin, 6),
                                  f"{node.label} ended {node.status}: {node.reason}", host=node.label).to_json())
    records.sort(key=lambda r: r["t"])
    # The end: the worst of the nodes' statuses, the longest node's end on the merged axis.
    worst = max(merged.nodes, key=lambda n: merge.STATUS_ORDER.index(n.status))
    duration = round(max(n.end_unix for n in merged.nodes) - merged.origin, 6)
    end = worst.run.end
    records.append({"type": "end", "t": duration, "status": worst.status,
                    "exit_code": end.exit_code if end else 1, "signal": end.signal if end else None,
                    "duration": duration, "reason": "; ".join(f"{n.label}: {n.reason}" for n in merged.nodes)})
    writer = RunWriter(out, merged.header)
    for record in records:
        writer.write(record)
    writer.close()
    compact(out)
    return out


async def until(pilot: Any, condition: Any, seconds: float = 10.0) -> None:
    """Pause a Textual test until ``condition()`` holds: on a loaded machine the first frames
    come later than any fixed pause."""
    for _ in range(int(seconds / 0.1)):
        await pilot.pause(0.1)
        try:
            if condition():
                return
        except Exception:  # a widget not mounted yet
            pass


def first_frame(app: Any) -> bool:
    """Every core heat strip of the screen has been drawn once (a run or a comparison), and a
    comparison's figures, worked out after its charts, are shown."""
    from devicewatch.tui.charts import HeatStrip
    from devicewatch.tui.compare import CompareScreen

    strips = list(app.screen.query(HeatStrip))
    if isinstance(app.screen, CompareScreen):
        # The figures' tables are mounted when the comparison arrives and laid out a refresh later.
        tables = [t for t in app.screen.query(".cmp-table") if t.display]
        if app.screen.comparison is None or not tables or any(t.size.height == 0 for t in tables):
            return False
    return bool(strips) and all(strip.rebuilds >= 1 for strip in strips)


async def settle(pilot: Any) -> None:
    """Before a snapshot: the first frame drawn, then a moment for the rest of the screen."""
    await until(pilot, lambda: first_frame(pilot.app))
    await pilot.pause(0.3)


@pytest.fixture(autouse=True, scope="session")
def runs_recording_now_are_the_suites_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The recorders the suite starts announce themselves in a folder of its own, so the home
    screen and ``devicewatch runs`` in a test never list (or stop) a user's real runs."""
    os.environ["DEVICEWATCH_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("runtime"))
