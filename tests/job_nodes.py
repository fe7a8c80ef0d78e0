"""Literal node files of a multi-node job, written a record at a time as a recorder writes them."""

import json
from pathlib import Path

JOB = "127.0.0.1:29500"


class NodeWriter:
    """One node's run file, written as its recorder would: header first, then records as they come."""

    def __init__(self, folder: Path, rank: int, unix: float, mono: float, job: str = "4711",
                 cores: int = 4, name: str | None = None):
        self.rank = rank
        self.unix, self.mono = unix, mono
        self.path = folder / (name or f"node{rank}.jsonl")
        header = {"type": "header", "format": "devicewatch-run", "schema": 1, "devicewatch": "test",
                  "started": "2026-01-01T00:00:00+00:00", "started_unix": round(unix, 3), "interval": 0.1,
                  "clock": {"unix": unix, "mono": mono},
                  "host": {"hostname": "box", "cpu_model": "test", "cpu_count": cores, "gpus": []},
                  "workload": {"name": None, "args": [], "command": ["torchrun"]},
                  "job": {"id": job, "from": "SLURM_JOB_ID"}}
        self.write(header)

    def write(self, record):
        with open(self.path, "a") as handle:
            handle.write(json.dumps(record) + "\n")

    def sample(self, t, cpu):
        self.write({"type": "sample", "t": t, "cpu": cpu, "cpu_total": sum(cpu) / len(cpu)})

    def phase(self, kind, t, epoch, name="train"):
        self.write({"type": "event", "t": t, "kind": kind, "name": name, "epoch": epoch, "lane": "main",
                    "pid": 100 + self.rank, "rank": self.rank, "local_rank": 0, "world_size": 2,
                    "group_rank": self.rank, "job": JOB})

    def end(self, t, drift=0.0):
        self.write({"type": "end", "t": t, "status": "ok", "exit_code": 0, "signal": None, "duration": t,
                    "reason": "the workload finished",
                    "clock": {"unix": self.unix + t * (1 + drift), "mono": self.mono + t}})


def epoch(node, number, start, train, validate=0.5):
    node.phase("phase_begin", start, number)
    node.phase("phase_end", start + train, number)
    node.phase("phase_begin", start + train, number, "validate")
    node.phase("phase_end", start + train + validate, number, "validate")
