"""Two real nodes on this machine followed live: the job screen on their folder while they train.

Two network namespaces joined by a veth pair are the two nodes (root only; skipped, with the
reason, where namespaces are refused). In each, one recorder wraps that node's torchrun
(``--record DIR/%h.jsonl``: one host, so the second name gets ``-2``); torchrun's c10d
rendezvous runs over the link and the ranks speak gloo over it. The dashboard, driven by Pilot,
follows the folder while the job trains: both nodes, every rank's lane and a finished epoch's
straggler (rank 1, slower in every train phase by the script's SLOW_BY) before the job ends;
then one node's recorder is killed and that node shows silent.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("torch")

from textual.widgets import Static  # noqa: E402

from devicewatch import job  # noqa: E402
from devicewatch.live.job import JobModel  # noqa: E402
from devicewatch.runformat.runfile import read_header  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402

from conftest import ROOT, until  # noqa: E402
from job_nodes import NodeWriter  # noqa: E402

SCRIPT = Path(__file__).parent / "scripts" / "job_epochs.py"
SILENT = 4.0        # seconds without growth that make a node silent here
SUBNET = "10.77.{}.{}"
pytestmark = pytest.mark.slow


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@contextmanager
def two_nodes() -> Iterator[list[tuple[str, str, str]]]:
    """Two network namespaces joined by a veth pair: [(namespace, address, interface)] each."""
    if os.geteuid() != 0:
        pytest.skip("two network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("two network namespaces need iproute2's ip")
    tag = f"{os.getpid() % 100000}"
    nets = [f"dwjob{tag}a", f"dwjob{tag}b"]
    links = [f"dwv{tag}a", f"dwv{tag}b"]
    subnet = os.getpid() % 200 + 20
    nodes = [(nets[i], SUBNET.format(subnet, i + 1), links[i]) for i in range(2)]
    made: list[str] = []
    try:
        for net in nets:
            try:
                _ip("netns", "add", net)
            except subprocess.CalledProcessError as exc:
                pytest.skip(f"network namespaces refused here: {exc.stderr.strip()}")
            made.append(net)
        _ip("link", "add", links[0], "type", "veth", "peer", "name", links[1])
        for net, address, link in nodes:
            _ip("link", "set", link, "netns", net)
            _ip("-n", net, "addr", "add", f"{address}/24", "dev", link)
            _ip("-n", net, "link", "set", link, "up")
            _ip("-n", net, "link", "set", "lo", "up")
        yield nodes
    finally:
        for net in made:   # whatever still runs in a namespace is this test's: end it, then the namespace
            pids = subprocess.run(["ip", "netns", "pids", net], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", net], capture_output=True)


def start_node(folder: Path, net: str, address: str, link: str, master: str, port: int, job_id: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env.update(PYTHONPATH=str(ROOT), DEVICEWATCH_JOB=job_id, DEVICEWATCH_TEST_EPOCHS="200",
               GLOO_SOCKET_IFNAME=link, OMP_NUM_THREADS="1")
    command = ["ip", "netns", "exec", net, sys.executable, "-m", "devicewatch",
               "--record", str(folder / "%h.jsonl"), "--quiet", "--grace", "1", "--",
               sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{master}:{port}", "--rdzv-id", job_id,
               "--rdzv-conf", f"is_host={int(address == master)}", "--local-addr", address, str(SCRIPT)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def shown(app: DashboardApp, part: str) -> str:
    return str(app.screen.query_one(f"#job-{part}", Static).render())


@pytest.mark.asyncio
async def test_the_job_screen_follows_two_real_nodes_while_they_train_and_sees_one_go_silent(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    # an earlier job's file in the same folder: never mixed in
    NodeWriter(folder, 0, 1000.0, 5.0, job="earlier", name="old.jsonl").end(1.0)
    job_id = f"live{os.getpid()}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with two_nodes() as nodes:
        master = nodes[0][1]
        recorders = [start_node(folder, *node, master=master, port=port, job_id=job_id) for node in nodes]
        try:
            model = JobModel(folder=folder, silent_after=SILENT)
            app = DashboardApp(DashboardSettings(), job=model)
            async with app.run_test(size=(200, 50)) as pilot:
                def trained_an_epoch() -> bool:
                    return "rank 1 slowest in" in shown(app, "epochs")

                await until(pilot, trained_an_epoch, seconds=90)
                running = [r.poll() is None for r in recorders]
                assert running == [True, True], [r.stderr.read().decode()[-2000:] for r in recorders if r.poll() is not None]
                nodes_text, lanes = shown(app, "nodes"), shown(app, "lanes")
                assert "node 0" in nodes_text and "node 1" in nodes_text, nodes_text
                assert "rank 0 node" in lanes and "rank 1 node" in lanes, lanes
                assert "mostly losing its time in train" in shown(app, "epochs") and "rank 1 (node 1) last" in shown(app, "epochs")
                assert model.job == job_id and model.left_out == ("old.jsonl: of job earlier",)
                # one host, two recorders given one name: two files, each with the job's id
                host = job.host_name()
                assert sorted(p.name for p in model.nodes) == [f"{host}-2.jsonl", f"{host}.jsonl"]
                assert {read_header(p).job.id for p in model.nodes} == {job_id}
                # the second node's recorder is killed: its file stops growing
                victim = recorders[1]
                victim.kill()
                victim.wait(timeout=10)

                def silent_line() -> str:
                    return next((line for line in shown(app, "nodes").splitlines() if "silent since" in line), "")

                await until(pilot, lambda: bool(silent_line()), seconds=SILENT + 20)
                silent_nodes = [n for n in model.nodes.values() if n.silent(time.time())]
                assert len(silent_nodes) == 1 and silent_nodes[0].label in silent_line()   # the other still writes
        finally:
            for recorder in recorders:
                if recorder.poll() is None:
                    recorder.send_signal(signal.SIGINT)
            for recorder in recorders:
                try:
                    recorder.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    recorder.kill()
                    recorder.wait()
                recorder.stderr.close()
