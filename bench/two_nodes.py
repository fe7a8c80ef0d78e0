"""Two nodes of one machine for a real multi-node job: network namespaces joined by a veth pair.

    python -m bench.two_nodes --shoot screenshots/multi-node.svg [--size 200x50]

Root only. Each namespace is a node: one recorder (``--record DIR/%h.jsonl``) wraps that
node's ``torchrun --nnodes 2``, whose c10d rendezvous and gloo run over the link, training
``tests/integration/scripts/job_epochs.py`` (rank 1 slower in every train phase). ``--shoot``
follows the job's folder on the job screen while it trains and saves the screen as SVG once a
few epochs have ended, before the job does. ``tests/integration/test_multinode_live.py`` makes
its two nodes here too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "integration" / "scripts" / "job_epochs.py"


class Refused(Exception):
    """Two network namespaces cannot be made here (not root, no iproute2, refused): why."""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@contextmanager
def two_nodes() -> Iterator[list[tuple[str, str, str]]]:
    """Two network namespaces joined by a veth pair: [(namespace, address, interface)] each.
    Whatever still runs in them at the end is ended, then they are deleted."""
    if os.geteuid() != 0:
        raise Refused("two network namespaces need root")
    if shutil.which("ip") is None:
        raise Refused("two network namespaces need iproute2's ip")
    tag = f"{os.getpid() % 100000}"
    nets = [f"dwjob{tag}a", f"dwjob{tag}b"]
    links = [f"dwv{tag}a", f"dwv{tag}b"]
    subnet = os.getpid() % 200 + 20
    nodes = [(nets[i], f"10.77.{subnet}.{i + 1}", links[i]) for i in range(2)]
    made: list[str] = []
    try:
        for net in nets:
            try:
                _ip("netns", "add", net)
            except subprocess.CalledProcessError as exc:
                raise Refused(f"network namespaces refused here: {exc.stderr.strip()}") from None
            made.append(net)
        _ip("link", "add", links[0], "type", "veth", "peer", "name", links[1])
        for net, address, link in nodes:
            _ip("link", "set", link, "netns", net)
            _ip("-n", net, "addr", "add", f"{address}/24", "dev", link)
            _ip("-n", net, "link", "set", link, "up")
            _ip("-n", net, "link", "set", "lo", "up")
        yield nodes
    finally:
        for net in made:   # whatever still runs in a namespace was started here: end it, then the namespace
            pids = subprocess.run(["ip", "netns", "pids", net], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", net], capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(folder: Path, net: str, address: str, link: str, master: str, port: int, job_id: str,
               epochs: int = 200) -> subprocess.Popen[bytes]:
    """One node: its recorder, in its namespace, around its torchrun (stderr kept for a failure)."""
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env.update(PYTHONPATH=str(ROOT), DEVICEWATCH_JOB=job_id, DEVICEWATCH_TEST_EPOCHS=str(epochs),
               GLOO_SOCKET_IFNAME=link, OMP_NUM_THREADS="1")
    # --local-addr and is_host: both nodes share this machine's host name, which on a cluster
    # would resolve to each node's own address
    command = ["ip", "netns", "exec", net, sys.executable, "-m", "devicewatch",
               "--record", str(folder / "%h.jsonl"), "--quiet", "--grace", "1", "--",
               sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{master}:{port}", "--rdzv-id", job_id,
               "--rdzv-conf", f"is_host={int(address == master)}", "--local-addr", address, str(SCRIPT)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(recorders: list[subprocess.Popen[bytes]]) -> None:
    """Each recorder still running cancels its run (SIGINT), as Ctrl-C would."""
    for recorder in recorders:
        if recorder.poll() is None:
            recorder.send_signal(signal.SIGINT)
    for recorder in recorders:
        try:
            recorder.wait(timeout=20)
        except subprocess.TimeoutExpired:
            recorder.kill()
            recorder.wait()
        if recorder.stderr:
            recorder.stderr.close()


async def _shoot(folder: Path, out: Path, size: tuple[int, int], epochs_shown: int) -> None:
    from textual.widgets import Static

    from devicewatch.live.job import JobModel
    from devicewatch.tui.app import DashboardApp, DashboardSettings

    model = JobModel(folder=folder)
    app = DashboardApp(DashboardSettings(), job=model)
    async with app.run_test(size=size) as pilot:
        for _ in range(1200):
            await pilot.pause(0.1)
            if len(model.stragglers) >= epochs_shown and len(model.ranks()) == 2:
                break
        else:
            raise SystemExit(f"no {epochs_shown} epochs judged in 120 s: "
                             f"{app.screen.query_one('#job-nodes', Static).render()}")
        await pilot.pause(1.2)    # one more poll and frame
        app.save_screenshot(out.name, str(out.parent))


def shoot(out: Path, size: tuple[int, int], epochs_shown: int = 6, job_id: str = "4711") -> None:
    """The job screen as a user sees it: ``replay runs/4711`` from the folder above ``runs``."""
    out = out.resolve()
    scratch = Path(tempfile.mkdtemp(prefix="two-nodes-"))
    folder = scratch / "runs" / job_id
    folder.mkdir(parents=True)
    here = os.getcwd()
    try:
        with two_nodes() as nodes:
            master = nodes[0][1]
            port = free_port()
            recorders = [start_node(folder, *node, master=master, port=port, job_id=job_id) for node in nodes]
            try:
                os.chdir(scratch)
                asyncio.run(_shoot(Path("runs") / job_id, out, size, epochs_shown))
            finally:
                os.chdir(here)
                stop(recorders)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shoot", type=Path, required=True, metavar="SVG", help="where the job screen's SVG goes")
    parser.add_argument("--size", default="200x50", help="COLUMNSxROWS (default 200x50)")
    args = parser.parse_args()
    columns, rows = (int(x) for x in args.size.split("x"))
    try:
        shoot(args.shoot, (columns, rows))
    except Refused as exc:
        print(f"two_nodes: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
