"""Write a realistic recording of a big machine, the measuring stick for long-run benchmarks.

    python -m bench.make_recording --cores 64 --gpus 8 --hours 1 [--rate 10] [--events N] [--nodes N [--node K]] -o FILE

Epochs of train then validate phases (``--epoch-seconds``), a data stall every 30 s of
training in a ``loader`` lane; the GPUs dip during validation and the stalls while the cores
get busier; the driver's buffered utilization samples every 1/6 s with their own timestamps;
one process per GPU with its memory and utilization; a log line per epoch and per minute;
``--events`` extra marker events spread over the run. Written through ``RunWriter`` with the
field lists the probes declare, as the recorder writes it; values are generated in blocks
with NumPy so a day of 64 cores and 8 GPUs takes a few minutes. ``--nodes N`` writes a merged
run of N torchrun nodes as ``devicewatch merge`` writes one; with ``--node K``, node K's own
file of such a job instead, as its recorder writes it around that node's torchrun (its own
hostname and clock pairs, one rank per GPU with torchrun's identity in every event), the
input of ``devicewatch merge``; ``--killed`` leaves out its end record, as a recorder killed
outright does. The run ends as the recorder ends one: ``writer.compact`` writes its columnar
form beside it.
"""

from __future__ import annotations

import argparse
import heapq
import time
from typing import Any, Iterable, Iterator

import numpy as np

from devicewatch.runformat.writer import RunWriter, compact, probe_fields
from devicewatch.runformat.schema import trim_common_nulls

DATA_EVERY, DATA_SECONDS = 30.0, 1.0
NVML_PERIOD = 1 / 6  # the driver buffers a utilization sample about every 1/6 s
BLOCK = 6000


def _timeline(t: np.ndarray, epoch_seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Per time: validating? in a data stall?"""
    into = np.mod(t, epoch_seconds)
    validating = into >= 0.85 * epoch_seconds
    stall = ~validating & (np.mod(into, DATA_EVERY) >= DATA_EVERY - DATA_SECONDS)
    return validating, stall


def _events(duration: float, epoch_seconds: float, extra: int, rng: np.random.Generator) -> Iterator[dict[str, Any]]:
    """Phase, epoch, marker and log records in time order."""
    epochs = int(np.ceil(duration / epoch_seconds))
    yield {"type": "event", "t": 0.0, "kind": "run_info", "pid": 100,
           "info": {"framework": "synthetic", "device": "cuda", "params": 25_000_000, "data": "synthetic", "epochs": epochs}}
    heap: list[tuple[float, int, dict[str, Any]]] = []
    seq = 0

    def push(record: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (record["t"], seq, record))

    def phase(kind: str, name: str, epoch: int, t: float, lane: str = "main") -> dict[str, Any]:
        return {"type": "event", "t": round(t, 4), "kind": kind, "name": name, "epoch": epoch, "lane": lane, "pid": 100}

    marks = np.sort(rng.uniform(0, duration, extra)) if extra else np.zeros(0)
    m = 0
    for e in range(1, epochs + 1):
        start = (e - 1) * epoch_seconds
        end = min(e * epoch_seconds, duration)
        split = min(start + 0.85 * epoch_seconds, end)
        push(phase("phase_begin", "train", e, start))
        stall = start + DATA_EVERY - DATA_SECONDS
        while stall + DATA_SECONDS <= split:
            push(phase("phase_begin", "data", e, stall, "loader"))
            push(phase("phase_end", "data", e, stall + DATA_SECONDS, "loader"))
            stall += DATA_EVERY
        push(phase("phase_end", "train", e, split))
        if split < end:
            push(phase("phase_begin", "validate", e, split))
            push(phase("phase_end", "validate", e, end))
        loss = round(2.0 / e ** 0.5, 4)
        push({"type": "event", "t": round(end, 4), "kind": "epoch", "epoch": e, "pid": 100,
              "metrics": {"loss": loss, "accuracy": round(1 - loss / 3, 4)}})
        push({"type": "log", "t": round(end, 4), "stream": "stdout", "line": f"Epoch {e}/{epochs} - loss {loss}"})
        for minute in np.arange(start + 60.0, end, 60.0):
            push({"type": "log", "t": round(float(minute), 4), "stream": "stdout",
                  "line": f"epoch {e} step {int(minute - start) * 10} it/s 10.2"})
        while m < len(marks) and marks[m] < end:
            push({"type": "event", "t": round(float(marks[m]), 4), "kind": "marker", "label": f"step {m}", "pid": 100})
            m += 1
        while heap and heap[0][0] <= end - epoch_seconds / 2:
            yield heapq.heappop(heap)[2]
    while heap:
        yield heapq.heappop(heap)[2]


GPM = {  # Hopper's GPM figures as a fraction of utilization (PCIe in bytes/s at full use)
    "sm_active": 0.62, "sm_occupancy": 0.35, "tensor_active": 0.4, "dram_active": 0.5,
    "pcie_tx": 2.0e9 / 100, "pcie_rx": 6.0e9 / 100,
}


def _gpu_values(name: str, util: np.ndarray, rng: np.random.Generator, window: np.ndarray) -> list[Any] | np.ndarray:
    """One GPU reading by its probe name, for a block of samples × GPUs; unknown fields null.

    GPM figures close a window (two GPM samples over 100 ms apart) on every other sample at
    10 Hz, as on a real H100; the others carry none."""
    shape = util.shape
    if name in GPM:
        values = (util * GPM[name] + rng.normal(0, 1, shape)).clip(0).round().astype(int)
        return np.where(window[:, None], values.astype(object), None)
    if name == "util":
        return util
    if name == "mem_util":
        return (util * 0.45).round().astype(int)
    if name == "mem_used":
        return np.full(shape, 20 << 30) + rng.integers(0, 64 << 20, shape)
    if name == "power_w":
        return (90 + 3.1 * util + rng.normal(0, 4, shape)).round().astype(int)
    if name == "temp_c":
        return (45 + util // 5).astype(int)
    if name == "sm_clock_mhz":
        return np.where(util > 5, 1980, 345)
    return np.full(shape, None, dtype=object)


def _header(cores: int, gpus: int, rate: float, hostname: str = "synthetic") -> dict[str, Any]:
    return {"devicewatch": "bench", "started": "2026-01-01T00:00:00+00:00", "started_unix": 1767225600.0,
            "interval": 1 / rate,
            "host": {"hostname": hostname, "os": "Linux", "python": "3.11", "cpu_model": "synthetic",
                     "cpu_count": cores, "mem_total": 1 << 40,
                     "gpus": [{"index": g, "name": f"Synthetic H100 {g}", "uuid": f"GPU-{g:04d}", "mem_total": 80 << 30}
                              for g in range(gpus)],
                     "gpu_driver": "570.00" if gpus else None, "gpu_reason": None if gpus else "no NVIDIA GPU found"},
            "workload": {"name": "synthetic", "args": [], "command": ["synthetic"]}}


def _samples(lo: int, n: int, rate: float, cores: int, gpus: int, epoch_seconds: float, gpm: bool,
             fields: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    """Samples ``lo`` … ``lo + BLOCK - 1`` (at most ``n``) as the writer writes them, values generated together."""
    scale = {k: dict(zip(fields["fields"][k], fields["scale"][k])) for k in fields["fields"]}
    idx = np.arange(lo, min(lo + BLOCK, n + 1))
    t = np.round(idx / rate, 4)
    k = len(t)
    validating, stall = _timeline(t, epoch_seconds)
    level = np.where(validating, 60.0, np.where(stall, 92.0, 35.0))
    cpu = np.clip(level[:, None] + rng.normal(0, 12, (k, cores)), 0, 100).round().astype(np.int16).tolist()
    # The driver's buffered samples drained by each poll: those in (t - 1/rate, t].
    phase = (0.37 + 0.05 * np.arange(gpus)) * NVML_PERIOD  # each GPU's own sampling clock
    buf_t = np.floor((t[:, None] - phase) / NVML_PERIOD) * NVML_PERIOD + phase
    has = buf_t > t[:, None] - 1 / rate
    v_buf, s_buf = _timeline(buf_t, epoch_seconds)
    gpu_level = np.where(v_buf, 18.0, np.where(s_buf, 6.0, 93.0))
    buf_v = np.clip(gpu_level + rng.normal(0, 4, (k, gpus)), 0, 100).round().astype(int)
    offsets = np.round((buf_t - t[:, None]) * 1000).astype(int)
    polled_level = np.where(validating, 18.0, np.where(stall, 6.0, 93.0))[:, None]
    util = np.where(has, buf_v, np.clip(polled_level + rng.normal(0, 4, (k, gpus)), 0, 100).round().astype(int))
    gpm_window = idx % 2 == 1 if gpm else np.zeros(k, dtype=bool)
    gpu_obj = np.empty((k, gpus, len(fields["fields"]["gpu"])), dtype=object)
    for j, name in enumerate(fields["fields"]["gpu"]):
        values = _gpu_values(name, util, rng, gpm_window)
        s = scale["gpu"].get(name, 1)
        if isinstance(values, np.ndarray) and values.dtype != object:
            values = (values / s).round().astype(int) if s != 1 else values
        elif s != 1:  # GPM PCIe traffic: stored in MiB/s, null outside a window
            values = np.array([[None if v is None else round(v / s) for v in row] for row in values], dtype=object)
        gpu_obj[:, :, j] = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) \
            else values.astype(object)
    gpu_rows = [trim_common_nulls(sample) for sample in gpu_obj.tolist()]  # as the writer trims
    buffered = [[x for g, (o, v, h) in enumerate(zip(orow, vrow, hrow)) if h for x in (g, o, v)]
                for orow, vrow, hrow in zip(offsets.tolist(), buf_v.tolist(), has.tolist())]
    proc_mem = (20 << 30) // scale["gpu_proc"].get("mem", 1)
    procs = [[x for g, u in enumerate(row) for x in (g, 1000 + g, proc_mem, u, u // 2)] for row in util.tolist()]
    sys_rows = [[3000, (180 << 30) // scale["sys"].get("mem_used", 1), 0, 0]] * k
    proc_cpu = (level * cores * 0.9).round(1).tolist()
    rss = (64 << 30) // scale["proc"].get("rss", 1)
    recorder = np.round(0.4 + rng.exponential(0.2, k), 1).tolist()
    return [{"type": "sample", "t": float(t[i]), "cpu": cpu[i], "sys": sys_rows[i],
             "proc": [proc_cpu[i], rss, 180 + gpus * 4, 1 + gpus],
             "gpu": gpu_rows[i], "gpu_util": buffered[i], "gpu_procs": procs[i],
             "recorder_cpu": recorder[i]} for i in range(k)]


def _interleave(writer: RunWriter, n: int, rate: float, cores: int, gpus: int, epoch_seconds: float, gpm: bool,
                fields: dict[str, Any], rng: np.random.Generator, pending: Iterator[dict[str, Any]]) -> int:
    """Write ``n`` samples with the ``pending`` records (in time order) between them, as they
    happened; the number of samples written."""
    samples = (sample for lo in range(1, n + 1, BLOCK)
               for sample in _samples(lo, n, rate, cores, gpus, epoch_seconds, gpm, fields, rng))
    return _write_in_time_order(writer, samples, pending)


def _write_in_time_order(writer: RunWriter, samples: Iterable[dict[str, Any]],
                         pending: Iterator[dict[str, Any]]) -> int:
    """Write the samples with the ``pending`` records (both in time order) between them, as they
    happened; the number of samples written."""
    nxt = next(pending, None)
    written = 0
    for sample in samples:
        while nxt is not None and nxt["t"] <= sample["t"]:
            writer.write_line(nxt)
            nxt = next(pending, None)
        writer.write_line(sample)
        written += 1
    while nxt is not None:
        writer.write_line(nxt)
        nxt = next(pending, None)
    return written


def generate(path: str, cores: int, gpus: int, hours: float, rate: float = 10.0, events: int = 0,
             epoch_seconds: float = 300.0, seed: int = 0, gpm: bool = True, columns: bool = True) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    fields = probe_fields()
    header = _header(cores, gpus, rate)
    writer = RunWriter(path, header, fields)
    writer.write_line({"type": "gpu_status", "t": 0.0, "available": bool(gpus), "reason": header["host"]["gpu_reason"],
                       "devices": gpus})
    duration = hours * 3600.0
    n = int(round(duration * rate))
    written = _interleave(writer, n, rate, cores, gpus, epoch_seconds, gpm, fields, rng,
                          _events(duration, epoch_seconds, events, rng))
    writer.write_line({"type": "end", "t": duration, "status": "ok", "exit_code": 0, "signal": None,
                       "duration": duration, "reason": "the workload finished"})
    ended = time.perf_counter()
    writer.close()
    if columns:  # the end of a run, as the recorder ends one
        compact(path)
    return {"samples": written, "duration": duration, "end_seconds": time.perf_counter() - ended}


NODE_OFFSET = 0.0137  # s between the nodes' starts: their samples interleave on the merged axis
JOB = "10.0.0.1:29500"   # the ranks' MASTER_ADDR:MASTER_PORT
NODE_MONO = 5000.0       # node K's monotonic clock read 1000 K s more at its start (another boot)
NODE_SLEW = 2e-6         # node K's wall clock ran K times this fast against its monotonic clock
RANK_SKEW = 0.0011       # s that local rank R is behind rank 0 in every phase


def _rank_records(duration: float, epoch_seconds: float, node: int, nodes: int, ranks: int,
                  rng: np.random.Generator) -> Iterator[dict[str, Any]]:
    """The events and output lines of one node's ``ranks`` ranks, in time order, as its recorder
    gets them: every event with torchrun's identity of its rank, every line with ``--tee``'s
    ``[defaultR]:`` prefix (when there is more than one rank)."""
    def rank_stream(local: int) -> Iterator[dict[str, Any]]:
        who = {"rank": node * ranks + local, "local_rank": local, "world_size": nodes * ranks,
               "group_rank": node, "job": JOB}
        for record in _events(duration, epoch_seconds, 0, rng):
            t = round(min(record["t"] + local * RANK_SKEW, duration), 4)
            if record["type"] == "log":
                yield dict(record, t=t, line=f"[default{local}]:{record['line']}" if ranks > 1 else record["line"])
            else:
                yield dict(record, t=t, pid=100 + local, **who)

    return heapq.merge(*(rank_stream(local) for local in range(ranks)), key=lambda r: r["t"])


def generate_node(path: str, node: int, nodes: int, cores: int, gpus: int, hours: float, rate: float = 10.0,
                  epoch_seconds: float = 300.0, seed: int = 0, gpm: bool = True, ranks: int | None = None,
                  killed: bool = False) -> dict[str, Any]:
    """Node ``node``'s own run file of a torchrun job of ``nodes`` nodes, as its recorder writes
    it: its own hostname and (wall clock, monotonic) pairs at the start and end (its start
    ``node`` × ``NODE_OFFSET`` after node 0's, its wall clock slewed), ``ranks`` ranks (one per
    GPU unless given) whose events carry torchrun's identity. ``killed``: the recorder was
    killed, so no end record (and no columnar form)."""
    ranks = ranks or max(gpus, 1)
    rng = np.random.default_rng(seed + node)  # each node its own readings
    fields = probe_fields()
    duration = hours * 3600.0
    start_unix, start_mono, slew = 1767225600.0 + node * NODE_OFFSET, NODE_MONO + 1000.0 * node, 1 + node * NODE_SLEW
    header = _header(cores, gpus, rate, f"synthetic{node}")
    header.update(started_unix=round(start_unix, 3), clock={"unix": start_unix, "mono": start_mono},
                  workload={"name": None, "args": [],
                            "command": ["torchrun", "--nnodes", str(nodes), "--node-rank", str(node),
                                        "--nproc-per-node", str(ranks), "train.py"]})
    writer = RunWriter(path, header, fields)
    writer.write_line({"type": "gpu_status", "t": 0.0, "available": bool(gpus), "reason": header["host"]["gpu_reason"],
                       "devices": gpus})
    n = int(round(duration * rate))
    written = _interleave(writer, n, rate, cores, gpus, epoch_seconds, gpm, fields, rng,
                          _rank_records(duration, epoch_seconds, node, nodes, ranks, rng))
    if not killed:
        writer.write_line({"type": "end", "t": duration, "status": "ok", "exit_code": 0, "signal": None,
                           "duration": duration, "reason": "the workload finished",
                           "clock": {"unix": start_unix + duration * slew, "mono": start_mono + duration}})
    ended = time.perf_counter()
    writer.close()
    compact(path)  # nothing without an end record, as after a killed recorder
    return {"samples": written, "duration": duration, "end_seconds": time.perf_counter() - ended}


def generate_merged(path: str, nodes: int, cores: int, gpus: int, hours: float, rate: float = 10.0,
                    epoch_seconds: float = 300.0, seed: int = 0, gpm: bool = True) -> dict[str, Any]:
    """A run as ``devicewatch merge`` writes it for ``nodes`` torchrun nodes of one rank each:
    the hosts in the header, every sample with its node's ``host``, each rank's phases in lane
    ``rank N``, every node's events and lines with ``host`` and ``rank``."""
    fields = probe_fields()
    labels = [f"node {k}" for k in range(nodes)]
    header = _header(cores, gpus, rate, ", ".join(f"synthetic{k}" for k in range(nodes)))
    header["hosts"] = [{"label": label, "file": f"node{k}.jsonl", "group_rank": k, "ranks": [k],
                        "host": _header(cores, gpus, rate, f"synthetic{k}")["host"], "workload": header["workload"],
                        "interval": 1 / rate, "offset": round(k * NODE_OFFSET, 6), "rate": 1.0, "status": "ok",
                        "reason": "the workload finished"} for k, label in enumerate(labels)]
    header["job"] = {"id": "127.0.0.1:29500", "world_size": nodes, "ranks": list(range(nodes))}
    header["alignment"] = {"method": "wall clock", "hosts": nodes, "same_host_error_s": None,
                           "across_hosts": "the hosts' clock synchronisation (NTP, PTP); the files cannot measure it",
                           "text": f"{nodes} hosts: aligned by their wall clocks"}
    writer = RunWriter(path, header, fields)
    duration = hours * 3600.0
    n = int(round(duration * rate))
    rngs = [np.random.default_rng(seed + k) for k in range(nodes)]

    def node_events(k: int) -> Iterator[dict[str, Any]]:
        who = {"host": labels[k], "rank": k, "local_rank": 0, "world_size": nodes, "group_rank": k,
               "job": "127.0.0.1:29500"}
        for record in _events(duration, epoch_seconds, 0, rngs[k]):
            record = dict(record, t=round(record["t"] + k * NODE_OFFSET, 6), **who)
            if record.get("kind") in ("phase_begin", "phase_end"):
                record["lane"] = f"rank {k}" if record["lane"] == "main" else f"rank {k} {record['lane']}"
            yield record

    for k in range(nodes):
        writer.write_line({"type": "gpu_status", "t": round(k * NODE_OFFSET, 6), "available": bool(gpus),
                           "reason": None, "devices": gpus, "host": labels[k]})
    pending = heapq.merge(*(node_events(k) for k in range(nodes)), key=lambda r: r["t"])

    def merged_samples() -> Iterator[dict[str, Any]]:
        for lo in range(1, n + 1, BLOCK):
            blocks = []
            for k in range(nodes):
                shift = k * NODE_OFFSET
                block = _samples(lo, n, rate, cores, gpus, epoch_seconds, gpm, fields, rngs[k])
                blocks.append([dict(s, t=round(s["t"] + shift, 6), host=labels[k]) for s in block])
            yield from heapq.merge(*blocks, key=lambda r: r["t"])

    written = _write_in_time_order(writer, merged_samples(), pending)
    end = round(duration + (nodes - 1) * NODE_OFFSET, 6)
    writer.write_line({"type": "notice", "t": 0.0, "level": "info", "message": f"merged {nodes} nodes"})
    writer.write_line({"type": "end", "t": end, "status": "ok", "exit_code": 0, "signal": None, "duration": end,
                       "reason": "; ".join(f"{label}: the workload finished" for label in labels)})
    ended = time.perf_counter()
    writer.close()
    compact(path)
    return {"samples": written, "duration": end, "end_seconds": time.perf_counter() - ended}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--rate", type=float, default=10.0, help="samples per second")
    parser.add_argument("--events", type=int, default=0, help="extra marker events spread over the run")
    parser.add_argument("--epoch-seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-gpm", dest="gpm", action="store_false",
                        help="GPUs without GPM (before Hopper): no SM activity fields")
    parser.add_argument("--nodes", type=int, default=1,
                        help="more than 1: a merged run of that many torchrun nodes, as devicewatch merge writes it")
    parser.add_argument("--node", type=int,
                        help="with --nodes: that node's own run file instead, the input of devicewatch merge")
    parser.add_argument("--ranks", type=int, help="with --node: ranks on the node (default: one per GPU)")
    parser.add_argument("--killed", action="store_true", help="with --node: no end record, as a killed recorder leaves")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.node is not None:
        if not 0 <= args.node < args.nodes:
            parser.error(f"--node {args.node} is not one of --nodes {args.nodes} (0 to {args.nodes - 1})")
        info = generate_node(args.output, args.node, args.nodes, args.cores, args.gpus, args.hours, args.rate,
                             args.epoch_seconds, args.seed, args.gpm, args.ranks, args.killed)
    elif args.nodes > 1:
        info = generate_merged(args.output, args.nodes, args.cores, args.gpus, args.hours, args.rate,
                               args.epoch_seconds, args.seed, args.gpm)
    else:
        info = generate(args.output, args.cores, args.gpus, args.hours, args.rate, args.events, args.epoch_seconds,
                        args.seed, args.gpm)
    import os

    size = os.path.getsize(args.output)
    print(f"{args.output}: {info['samples']} samples, {size / 1e6:.1f} MB "
          f"({size / 1e6 / max(args.hours, 1e-9):.1f} MB per hour) in {time.perf_counter() - started:.1f}s; "
          f"end of run (writer closed, columnar form written) {info['end_seconds']:.2f}s")


if __name__ == "__main__":
    main()
