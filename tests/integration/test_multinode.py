"""Two torchrun nodes on this machine, each under its own recorder, merged into one run.

Static rendezvous on 127.0.0.1 with the gloo backend: node 0 and node 1, one rank each, run
``scripts/ranked_epochs.py`` (rank 1 is slower by SLOW_BY in every train phase). Run with
``-s`` to see the alignment error the merge measured between the two recorders' clock pairs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devicewatch import analysis, merge
from devicewatch.runformat import runfile
from devicewatch.commands import merge as merge_command

from conftest import ROOT, devicewatch, merged_by_record

SCRIPT = Path(__file__).parent / "scripts" / "ranked_epochs.py"
EPOCHS = 3
SLOW_BY = 0.3          # as in the script
SETTLE = 15.0          # seconds a recorder gets to end by itself once both ranks have trained
# (here about 3 s: destroy_process_group, the interpreter's exit, the agent's exit barrier)

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(tmp_path: Path, rank: int, port: int, linger: float = 0.0) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env.update(PYTHONPATH=str(ROOT), DEVICEWATCH_TEST_LINGER=str(linger), OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "devicewatch", "--record", str(tmp_path / f"node{rank}.jsonl"),
               "--quiet", "--grace", "1", "--",
               sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(rank),
               "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", str(port), str(SCRIPT)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def trained(path: Path) -> bool:
    return path.exists() and '"label":"trained"' in path.read_text(errors="replace")


def record_two_nodes(tmp_path: Path, linger: float = 0.0, settle: float = SETTLE) -> list[str]:
    """Both nodes until their ranks have trained; a recorder still running ``settle`` s later is
    cancelled with SIGINT, as a user's Ctrl-C or a job's time limit would."""
    port = free_port()
    nodes = [start_node(tmp_path, rank, port, linger if rank == 0 else 0.0) for rank in (0, 1)]
    files = [tmp_path / f"node{rank}.jsonl" for rank in (0, 1)]
    try:
        deadline = time.monotonic() + 90
        while not all(trained(f) for f in files):
            assert time.monotonic() < deadline, "the ranks did not finish training in 90 s"
            assert all(n.poll() is None for n in nodes) or all(trained(f) for f in files), \
                [n.stderr.read().decode()[-2000:] for n in nodes if n.poll() is not None]
            time.sleep(0.2)
        settle = time.monotonic() + settle
        for node in nodes:
            try:
                node.wait(timeout=max(0.1, settle - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.send_signal(signal.SIGINT)
        for node in nodes:
            node.wait(timeout=30)
    finally:
        for node in nodes:
            if node.poll() is None:
                node.kill()
                node.wait()
            node.stderr.close()
    return [str(f) for f in files]


def check_merged(tmp_path: Path, files: list[str]) -> runfile.Run:
    out = tmp_path / "merged.jsonl"
    merged = merge.merge(files)
    merge.write(merged, str(out))
    print(f"\nclock alignment between the two local nodes: {merged.alignment['text']}")
    # The real recorders' files merge from their columns exactly as one record at a time.
    reference = merged_by_record(files, str(tmp_path / "by-record.jsonl"))
    assert out.read_bytes() == Path(reference).read_bytes()
    assert Path(f"{out}.columns").read_bytes() == Path(f"{reference}.columns").read_bytes()
    run = runfile.load(out)
    assert run.host_labels == ["node 0", "node 1"]
    assert {s["host"] for s in run.samples} == {"node 0", "node 1"}
    all_phases = analysis.phases(run)
    assert {(p.lane, p.name, p.epoch) for p in all_phases} == {
        (f"rank {r}", "train", e) for r in (0, 1) for e in range(1, EPOCHS + 1)}
    assert not any(p.open for p in all_phases)
    # the two recorders share this machine's monotonic clock: the error is measured, sub-millisecond
    assert run.header.raw["alignment"]["hosts"] == 1
    assert 0 <= run.header.raw["alignment"]["same_host_error_s"] < 1e-3
    assert [e.epoch for e in analysis.epochs(run, all_phases)] == [1, 2, 3]
    rows = analysis.stragglers(all_phases)
    assert [r.epoch for r in rows] == [1, 2, 3]
    for row in rows:  # rank 1 sleeps SLOW_BY in each train phase; rank 0 waits at the barrier
        assert row.last_rank == 1 and set(row.finished) == {0, 1}
        assert SLOW_BY / 2 < row.waited[0] < SLOW_BY + 1.0, row
    logs = {(log.host, log.rank) for log in run.logs if log.line.startswith("epoch ")}
    assert logs == {("node 0", 0), ("node 1", 1)}
    return run


def views_accept(tmp_path: Path, merged: str, single: str) -> None:
    """report, compare and export read the merged run as they read any run."""
    report = devicewatch("report", merged, "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert sorted(summary["lanes"]) == ["rank 0", "rank 1"]
    compared = devicewatch("compare", merged, single, "--text")
    assert compared.returncode == 0, compared.stderr
    trace = tmp_path / "merged.perfetto.json"
    exported = devicewatch("export", merged, "--format", "perfetto", "-o", str(trace))
    assert exported.returncode == 0, exported.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert sorted(name.split(":")[0] for name in processes.values()) == ["node 0", "node 1"]  # one process per host
    tracks = {(processes[e["pid"]].split(":")[0], e["args"]["name"]) for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {("node 0", "lane rank 0"), ("node 1", "lane rank 1")} <= tracks  # each rank on its host
    text = devicewatch("report", merged, "--no-chart")
    assert text.returncode == 0 and "rank 1 finished its work last" in text.stdout, text.stdout
    assert [row["last_rank"] for row in summary["stragglers"]] == [1] * EPOCHS


def test_two_torchrun_nodes_merge_into_one_run_with_a_lane_per_rank(tmp_path):
    files = record_two_nodes(tmp_path)
    statuses = [runfile.load(path).end.status for path in files]
    print(f"\nnode statuses: {statuses}")
    assert set(statuses) <= {"ok", "cancelled"}  # cancelled: an agent sat on in its exit barrier
    check_merged(tmp_path, files)
    views_accept(tmp_path, str(tmp_path / "merged.jsonl"), files[1])


def test_a_node_cut_short_in_its_exit_wait_still_merges_and_reports(tmp_path, capsys):
    files = record_two_nodes(tmp_path, linger=120.0, settle=1.0)   # rank 0 outlives training, like a hung agent
    node0 = runfile.load(files[0])
    assert node0.end.status == "cancelled"
    run = check_merged(tmp_path, files)
    assert run.end.status == "cancelled"
    assert any(n.message.startswith("node 0 ended cancelled") for n in run.notices)
    parser = __import__("argparse").ArgumentParser()
    merge_command.add_arguments(parser)
    out = tmp_path / "again.jsonl"
    assert merge_command.run(parser.parse_args([*files, "-o", str(out)])) == 0
    report = devicewatch("report", str(out), "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["status"] == "cancelled" and not summary["ended_abruptly"]
    assert [e["epoch"] for e in summary["epochs"]] == [1, 2, 3]
    assert all(e["metrics"].get("loss") is not None for e in summary["epochs"])
    printed = capsys.readouterr().out
    assert "node 0: rank 0; cancelled" in printed
    assert [line.split(":")[0] for line in printed.splitlines() if line.startswith("epoch")] == \
        ["epoch 1", "epoch 2", "epoch 3"]
    assert all("rank 1 finished its work last" in line for line in printed.splitlines() if line.startswith("epoch"))
