"""Two real nodes on this machine followed live: the job screen on their folder while they train.

Two network namespaces joined by a veth pair are the two nodes (``bench.two_nodes``; root only,
skipped with the reason where namespaces are refused). In each, one recorder wraps that node's torchrun
(``--record DIR/%h.jsonl``: one host, so the second name gets ``-2``); torchrun's c10d
rendezvous runs over the link and the ranks speak gloo over it. The dashboard, driven by Pilot,
follows the folder while the job trains: both nodes, every rank's lane and a finished epoch's
straggler (rank 1, slower in every train phase by the script's SLOW_BY) before the job ends;
then one node's recorder is killed and that node shows silent.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

pytest.importorskip("textual")
pytest.importorskip("torch")

from textual.widgets import Static  # noqa: E402

from bench import two_nodes as namespaces  # noqa: E402
from devicewatch import job  # noqa: E402
from devicewatch.live.job import JobModel  # noqa: E402
from devicewatch.runformat.runfile import read_header  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402

from conftest import until  # noqa: E402
from job_nodes import NodeWriter  # noqa: E402

SILENT = 4.0        # seconds without growth that make a node silent here
pytestmark = pytest.mark.slow


@contextmanager
def two_nodes() -> Iterator[list[tuple[str, str, str]]]:
    try:
        with namespaces.two_nodes() as nodes:
            yield nodes
    except namespaces.Refused as exc:
        pytest.skip(str(exc))


def shown(app: DashboardApp, part: str) -> str:
    return str(app.screen.query_one(f"#job-{part}", Static).render())


@pytest.mark.asyncio
async def test_the_job_screen_follows_two_real_nodes_while_they_train_and_sees_one_go_silent(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    # an earlier job's file in the same folder: never mixed in
    NodeWriter(folder, 0, 1000.0, 5.0, job="earlier", name="old.jsonl").end(1.0)
    job_id = f"live{os.getpid()}"
    port = namespaces.free_port()
    with two_nodes() as nodes:
        master = nodes[0][1]
        recorders = [namespaces.start_node(folder, *node, master=master, port=port, job_id=job_id) for node in nodes]
        try:
            model = JobModel(folder=folder, silent_after=SILENT)
            app = DashboardApp(DashboardSettings(), job=model)
            async with app.run_test(size=(200, 50)) as pilot:
                def trained_an_epoch() -> bool:
                    return "rank 1 the straggler in" in shown(app, "epochs")

                await until(pilot, trained_an_epoch, seconds=90)
                running = [r.poll() is None for r in recorders]
                assert running == [True, True], [r.stderr.read().decode()[-2000:] for r in recorders if r.poll() is not None]
                nodes_text, lanes = shown(app, "nodes"), shown(app, "lanes")
                assert "node 0" in nodes_text and "node 1" in nodes_text, nodes_text
                assert "rank 0 node" in lanes and "rank 1 node" in lanes, lanes
                epochs = shown(app, "epochs")
                assert "mostly losing its time in train" in epochs and "rank 1 (node 1) last" in epochs, epochs
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
            namespaces.stop(recorders)
