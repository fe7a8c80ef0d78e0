"""The verdict: one label and one line naming what limits the run (GPU-, launch-, input-,
validation-, CPU-bound, serial, waiting…), with the figures it rests on; a merged run's node by
node (``run_judgement``). The thresholds are listed beside their labels in docs/verdicts.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import events
from ..runformat.runfile import Run
from ..runformat.percent import MISSING_PERCENT
from .epoch_rows import DataWait, EpochRow, data_wait, epochs
from .idle import IDLE_THRESHOLD, DeviceIdle, device_idle
from .pairing import Phase, lane_overlap, phases, union_length
from .utilization import Series, active_mask, series, sm_active_mean, stats

SM_ACTIVE_LOW = 50.0   # % SM activity under which a busy GPU is launch-bound, not GPU-bound


# The verdict's thresholds (docs/verdicts.md lists them beside the labels they decide).
GPU_BUSY = 80.0             # % mean utilization from which a GPU is the limit (GPU- or launch-bound)


VALIDATION_DIP_SHARE = 0.4  # share of the GPU's dip time in validation that makes a run validation-bound


FEED_ALL_CORES = 80.0       # % of all cores busy beside an unfilled GPU: the CPU cannot feed it


FEED_ONE_CORE = 90.0        # % of the busiest core beside an unfilled GPU: one core cannot feed it


DATA_WAIT_BOUND = 0.3       # share of the training loop spent waiting on data: input-bound


CPU_BOUND = 85.0            # % of all cores busy: CPU-bound


CORE_SATURATED = 85.0       # % of the busiest core: some work is limited by one core


SERIAL_CORES = 1.25         # cores busy up to this, with one saturated: the work is serial


OWN_CORE = 0.5              # cores the workload's own tree keeps busy, at least, for a saturated core to be its


LANES_OVERLAP = 0.1         # share of the phase time with two or more lanes at once: parallel lanes


PACING_LANE = 0.9           # share of the phase time one lane is busy: it sets the pace


@dataclass
class Verdict:
    label: str
    text: str
    figures: dict[str, float]


@dataclass(frozen=True)
class CpuUse:
    """What the CPU did while the workload's phases ran, counted in cores: 1.4 of 2 cores
    busy is not serial work, and neither is 9 of 16, whatever their mean percentage."""

    cores: int
    total: float              # mean % of all cores
    busiest: float            # mean % of the busiest core of each sample
    workload: float | None    # mean cores the workload's process tree kept busy (None: not recorded)

    @property
    def machine(self) -> float:
        """Cores busy on the whole machine, the workload's and everyone else's."""
        return self.total / 100.0 * self.cores

    @property
    def used(self) -> float:
        """Cores the workload kept busy: its own where recorded (other processes are not its
        work), else the machine's."""
        return self.workload if self.workload is not None else self.machine

    def busy_text(self) -> str:
        text = f"{self.used:.1f} of {self.cores} cores busy"
        if self.workload is not None and abs(self.machine - self.workload) >= 0.5:
            text += f" with the workload, {self.machine:.1f} on the whole machine"
        return text


@dataclass(frozen=True)
class LaneUse:
    """What the lanes did: how much of the phase time ran in two or more lanes at once, and
    how much of it each lane was busy."""

    overlap: float                 # share of the phase time with two or more lanes active
    busy: dict[str, float]         # lane -> share of the phase time it had a phase running
    names: dict[str, list[str]]    # lane -> its phase names, in order of appearance

    @property
    def parallel(self) -> bool:
        return len(self.busy) > 1 and self.overlap >= LANES_OVERLAP

    @property
    def pacing(self) -> str | None:
        """The one lane busy nearly all the time while others run beside it: it sets the pace."""
        full = [lane for lane, share in self.busy.items() if share >= PACING_LANE]
        return full[0] if len(full) == 1 and self.parallel else None


def _busiest_core_mean(s: Series, in_run: np.ndarray) -> float:
    """The mean over the samples in IN_RUN of each one's busiest core (NaN: none read). From
    the per-core bytes where the run has them: a day of 64 cores is 55 MB of them, 442 MB of
    floats."""
    if not in_run.any():
        return 0.0
    percent = s.cpu_percent
    if percent is None or len(percent) != len(s.t):
        return float(np.nanmean(np.nanmax(s.cpu[in_run], axis=1))) if s.cpu.size else 0.0
    if not percent.size:
        return 0.0
    rows = percent[in_run]
    read = rows != MISSING_PERCENT
    busiest = np.where(read, rows, 0).max(axis=1).astype(float)
    busiest[~read.any(axis=1)] = np.nan
    return float(np.nanmean(busiest))


def cpu_use(s: Series, in_run: np.ndarray, cores: int) -> CpuUse:
    """The CPU figures of the samples in IN_RUN."""
    total = float(np.nanmean(s.cpu_total[in_run])) if in_run.any() else 0.0
    busiest = _busiest_core_mean(s, in_run)
    workload = None
    if len(s.proc_cpu) == len(s.t):
        proc = s.proc_cpu[in_run]
        proc = proc[~np.isnan(proc)]
        if proc.size:
            workload = float(proc.mean()) / 100.0
    return CpuUse(cores, 0.0 if total != total else total, 0.0 if busiest != busiest else busiest, workload)


def lane_use(all_phases: list[Phase]) -> LaneUse:
    overlap = lane_overlap(all_phases)
    span = overlap["busy_seconds"]
    spans: dict[str, list[tuple[float, float]]] = {}
    names: dict[str, list[str]] = {}
    for p in all_phases:
        spans.setdefault(p.lane, []).append((p.start, p.end))
        if p.name not in names.setdefault(p.lane, []):
            names[p.lane].append(p.name)
    busy = {lane: (union_length(x) / span if span > 0 else 0.0) for lane, x in spans.items()}
    return LaneUse(overlap["overlap_fraction"], busy, names)


def verdict(run: Run, s: Series | None = None, all_phases: list[Phase] | None = None,
            epoch_rows: list[EpochRow] | None = None) -> Verdict:
    """The run in one line: what limited it (docs/verdicts.md lists the labels, their order and
    thresholds). Judged on the samples inside the workload's phases, in cores busy, by what its
    lanes did side by side, and by how long its training loop waited on data. ``epoch_rows``:
    ``epochs(run, all_phases)`` where the caller keeps them already (the live model)."""
    s = series(run) if s is None else s
    all_phases = phases(run) if all_phases is None else all_phases
    if len(s.t) < 2:
        return Verdict("too short", "too few samples to judge (the run lasted under a sample or two)", {})
    in_run = active_mask(s.t, [(p.start, p.end) for p in all_phases]) if all_phases else np.ones(len(s.t), bool)
    if not in_run.any():  # phases too short to hold a sample: judge the whole run instead
        in_run = np.ones(len(s.t), bool)
    cores = int(s.cpu.shape[1]) if s.cpu.ndim == 2 and s.cpu.shape[1] else max(run.cores, 1)
    cpu = cpu_use(s, in_run, cores)
    lanes_ = lane_use(all_phases)
    wait = data_wait(epochs(run, all_phases) if epoch_rows is None else epoch_rows)
    figures: dict[str, float] = {"cpu_mean": round(cpu.total, 1), "busiest_core_mean": round(cpu.busiest, 1),
                                 "cores": cores, "cores_busy": round(cpu.machine, 2)}
    if cpu.workload is not None:
        figures["workload_cores"] = round(cpu.workload, 2)
    figures["lane_overlap"] = round(lanes_.overlap, 3)
    if wait is not None:
        figures["data_wait_share"] = round(wait.share, 3)
    gpu_used = [g for g in range(s.gpus) if s.gpu_util[g].size and np.nanmax(s.gpu_util[g]) > IDLE_THRESHOLD]
    if gpu_used:
        return _gpu_verdict(run, s, all_phases, in_run, cpu, wait, figures)
    if wait is not None and wait.share >= DATA_WAIT_BOUND:
        return Verdict("input-bound", f"{_wait_text(wait, input_name(run))}; {cpu.busy_text()}", figures)
    return _cpu_verdict(cpu, lanes_, figures)


def input_name(run: Run) -> str:
    """What the training loop read its batches from, as the zero-code instrumentation saw it
    (its ``setup`` event): "DataLoader", "tf.data input", "input" where it read neither, and
    "DataLoader" for a run without one (a workload's own ``data_wait_s``, an older recording)."""
    for event in run.events.of(events.INSTRUMENT):
        if event.get("state") == "setup":
            if event.get("loader"):
                return "DataLoader"
            return "tf.data input" if event.get("tf_data") else "input"
    return "DataLoader"


def _wait_text(wait: DataWait, source: str = "DataLoader") -> str:
    if wait.source == "metric":
        return (f"input-bound: the training loop waited on its {source} {wait.share:.0%} of the time "
                f"({wait.seconds:.1f} of {wait.train_loop:.1f} s)")
    return (f"input-bound: the training loop spent {wait.share:.0%} of its time in data phases "
            f"({wait.seconds:.1f} of {wait.train_loop:.1f} s), waiting for or preparing its input")


def _gpu_verdict(run: Run, s: Series, all_phases: list[Phase], in_run: np.ndarray, cpu: CpuUse,
                 wait: DataWait | None, figures: dict[str, float]) -> Verdict:
    idle = device_idle(run, s, all_phases)
    gpu = max(idle[:s.gpus], key=lambda d: d.mean)
    figures.update(gpu_mean=gpu.mean, gpu_idle_fraction=gpu.idle_fraction,
                   gpu_dip_seconds=round(gpu.dip_seconds, 2))
    if gpu.mean >= GPU_BUSY:
        busiest = max(range(s.gpus), key=lambda g: idle[g].mean)
        sm = sm_active_mean(run, busiest, in_run)
        if sm is None:
            return Verdict("GPU-bound", f"GPU-bound: the GPU is busy {gpu.mean:.0f}% on average; "
                           "the input pipeline keeps it fed (SM activity not measured: busy "
                           "need not mean the chip is full)", figures)
        figures["sm_active_mean"] = round(sm, 1)
        if sm < SM_ACTIVE_LOW:
            return Verdict("launch-bound", f"GPU busy {gpu.mean:.0f}% of the time but SMs {sm:.0f}% "
                           "active: kernels too small or too few — launch-bound", figures)
        return Verdict("GPU-bound", f"GPU-bound: the GPU is busy {gpu.mean:.0f}% on average with "
                       f"SMs {sm:.0f}% active; the input pipeline keeps it fed", figures)
    if wait is not None and wait.share >= DATA_WAIT_BOUND:
        return Verdict("input-bound", f"{_wait_text(wait, input_name(run))}; the GPU averages {gpu.mean:.0f}%", figures)
    by_phase: dict[str, float] = {}
    for d in gpu.dips:
        by_phase[d.phase] = by_phase.get(d.phase, 0.0) + d.duration
    worst = max(by_phase, key=by_phase.get) if by_phase else None  # type: ignore[arg-type]
    share = by_phase[worst] / gpu.dip_seconds if worst and gpu.dip_seconds else 0.0
    if worst and "validate" in worst and share >= VALIDATION_DIP_SHARE:
        return Verdict("validation-bound", f"validation-bound: the GPU dips {len(gpu.dips)} times, "
                       f"{share:.0%} of the dip time during validation; overlap validation "
                       "with training", figures)
    if cpu.total >= FEED_ALL_CORES:
        return Verdict("input-bound", f"input-bound: the GPU averages {gpu.mean:.0f}% while "
                       f"{cpu.machine:.1f} of {cpu.cores} cores are busy ({cpu.total:.0f}%): the CPU "
                       "cannot feed it", figures)
    if cpu.busiest >= FEED_ONE_CORE and (cpu.workload is None or cpu.workload >= OWN_CORE):
        return Verdict("input-bound", f"input-bound: the GPU averages {gpu.mean:.0f}% while the busiest "
                       f"core averages {cpu.busiest:.0f}% ({cpu.busy_text()}): one core feeds the GPU "
                       "and cannot keep up", figures)
    return Verdict("GPU underused", f"GPU underused: {gpu.mean:.0f}% on average, idle "
                   f"{gpu.idle_fraction:.0%} of the time, and the CPU is not the limit "
                   f"({cpu.busy_text()}, the busiest core {cpu.busiest:.0f}%)", figures)


def _cpu_verdict(cpu: CpuUse, lanes_: LaneUse, figures: dict[str, float]) -> Verdict:
    if cpu.total >= CPU_BOUND:
        by = ""
        if cpu.workload is not None and cpu.machine - cpu.workload >= 0.5:
            by = f", {cpu.workload:.1f} of them by the workload"
        return Verdict("CPU-bound", f"CPU-bound: {cpu.machine:.1f} of {cpu.cores} cores busy "
                       f"({cpu.total:.0f}%) on average{by}: every core is working", figures)
    if cpu.workload is not None and cpu.workload < OWN_CORE and cpu.busiest >= CORE_SATURATED:
        # A saturated core the workload's own processes cannot account for is another program's.
        return Verdict("waiting", f"waiting: the workload keeps {cpu.workload:.1f} of {cpu.cores} cores busy while "
                       f"other programs keep {cpu.machine - cpu.workload:.1f} busy (the busiest core averages "
                       f"{cpu.busiest:.0f}%, not the workload's): the workload mostly waits (I/O, sleep, or a device)",
                       figures)
    pacing = lanes_.pacing
    if pacing is not None and cpu.busiest >= CORE_SATURATED:
        others = [lane for lane in lanes_.busy if lane != pacing]
        beside = list(dict.fromkeys(n for lane in others for n in lanes_.names[lane]))
        return Verdict("lane-bound", f"lane-bound: the {pacing} lane is busy {lanes_.busy[pacing]:.0%} of "
                       f"the time and sets the pace; {', '.join(beside)} runs beside it in {len(others)} "
                       f"more lane{'s' if len(others) > 1 else ''} (two or more lanes at once "
                       f"{lanes_.overlap:.0%} of the time); {cpu.busy_text()} on average", figures)
    if cpu.busiest >= CORE_SATURATED and cpu.used <= SERIAL_CORES and not lanes_.parallel:
        turns = ""
        if len(lanes_.busy) > 1:
            *first, last = lanes_.busy
            turns = f" (its lanes {', '.join(first)} and {last} take turns)"
        return Verdict("single-core-bound", f"single-core-bound: one core does the work (the busiest averages "
                       f"{cpu.busiest:.0f}%; {cpu.busy_text()}): the work is serial{turns}", figures)
    if cpu.busiest >= CORE_SATURATED:
        return Verdict("partly parallel", f"partly parallel: {cpu.busy_text()} on average and the busiest "
                       f"core averages {cpu.busiest:.0f}%: {cpu.cores - cpu.used:.1f} cores are left idle "
                       "(fewer threads or processes than cores, or a serial part holding the rest back)",
                       figures)
    return Verdict("waiting", f"waiting: {cpu.busy_text()} and no core is saturated (the busiest "
                   f"averages {cpu.busiest:.0f}%): the workload mostly waits (I/O, sleep, or a device)",
                   figures)


@dataclass
class HostFigures:
    """One node of a merged run, judged on its own machine's samples and its own ranks' phases."""

    host: str
    hostname: str | None
    samples: int
    cpu_mean: float | None
    devices: list[DeviceIdle]
    verdict: Verdict


def host_figures(run: Run) -> list[HostFigures]:
    """A merged run's nodes one by one (the nodes' samples interleave in time, so dips and a
    verdict over all of them together would describe no machine). Empty for one node's run."""
    out = []
    for label in run.host_labels:
        node = run.of_host(label)
        s, node_phases = series(node), phases(node)
        out.append(HostFigures(label, node.header.host.hostname, len(node.samples),
                               stats(s.cpu_total)["mean"], device_idle(node, s, node_phases),
                               verdict(node, s, node_phases)))
    return out


def run_judgement(run: Run, s: Series | None = None, all_phases: list[Phase] | None = None
                  ) -> tuple[list[DeviceIdle], Verdict, list[HostFigures]]:
    """The devices and the verdict of a run. For a merged run, each node's: its devices named
    ``node 0: GPU 0 …``, and one verdict joining the nodes' (label ``mixed`` where they differ)."""
    hosts = host_figures(run)
    if not hosts:
        s = series(run) if s is None else s
        all_phases = phases(run) if all_phases is None else all_phases
        return device_idle(run, s, all_phases), verdict(run, s, all_phases), []
    devices = [replace(d, device=f"{h.host}: {d.device}") for h in hosts for d in h.devices]
    labels = {h.verdict.label for h in hosts}
    joined = Verdict(labels.pop() if len(labels) == 1 else "mixed",
                     "; ".join(f"{h.host}: {h.verdict.text}" for h in hosts),
                     {h.host: h.verdict.figures for h in hosts})  # type: ignore[misc]
    return devices, joined, hosts
