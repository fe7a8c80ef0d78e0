"""The verdict: one label and one line naming what limits the run (GPU-, launch-, input-,
validation-, CPU-bound, serial, waiting…), with the figures it rests on; a merged run's node by
node (``figures.run_figures`` judges each and joins them). The thresholds are listed beside their labels in docs/verdicts.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import events, nanmath
from ..runformat.runfile import Run
from ..runformat.percent import MISSING_PERCENT
from .contention import CONTENDED_SHARE, CONTENDED_WAIT, Contention, contention
from .core_sentences import OTHERS_NOTABLE, Cores, counted
from .epoch_rows import DataWait, EpochRow
from .idle import IDLE_THRESHOLD, device_idle
from .pairing import Phase, lane_overlap, union_length
from .utilization import Series, active_mask, sm_active_mean

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


OWN_SHARE = 0.75            # share of the busy cores the workload's own tree keeps busy, at least, for full cores to be its work


LANES_OVERLAP = 0.1         # share of the phase time with two or more lanes at once: parallel lanes


PACING_LANE = 0.9           # share of the phase time one lane is busy: it sets the pace


MIN_SECONDS = 2.0           # seconds of the run (to its last record) before any verdict: "too early to tell"
MIN_SAMPLES = 4             # ... and at least this many samples (a second a sample: 4 over 3 s)
MIN_LOOP_SECONDS = 2.0      # seconds of training loop, or a whole epoch, before its data wait can decide a verdict


# How far a figure may cross a threshold before a label given earlier gives way to another
# (hysteresis): a figure hovering at a threshold does not flip the verdict sample by sample.
MARGIN_PERCENT = 3.0        # points of a % threshold
MARGIN_SHARE = 0.03         # of a share threshold
MARGIN_CORES = 0.1          # of a threshold in cores
STOP_SAID_LATE = 1.0        # s the recorder may say a stop after it: once seen on two looks in a row, two a second
STOPPED_CPU = 5.0           # % of one core under which the workload's tree reads as stopped before that notice
HOLD_SECONDS = 10.0         # the longest a live view holds a label its figures no longer give (``live.model``)


@dataclass(frozen=True)
class Thresholds:
    """The thresholds one verdict is decided by: the module's constants, or those constants
    eased by their margins (``eased``) to see whether a label given before still holds."""

    gpu_busy: float = GPU_BUSY
    sm_active_low: float = SM_ACTIVE_LOW
    validation_dip_share: float = VALIDATION_DIP_SHARE
    feed_all_cores: float = FEED_ALL_CORES
    feed_one_core: float = FEED_ONE_CORE
    data_wait_bound: float = DATA_WAIT_BOUND
    cpu_bound: float = CPU_BOUND
    core_saturated: float = CORE_SATURATED
    serial_cores: float = SERIAL_CORES
    own_core: float = OWN_CORE
    own_share: float = OWN_SHARE
    lanes_overlap: float = LANES_OVERLAP
    pacing_lane: float = PACING_LANE
    contended_wait: float = CONTENDED_WAIT
    contended_share: float = CONTENDED_SHARE

    def eased(self, sign: int) -> Thresholds:
        """Every threshold moved by its margin: down (SIGN -1) or up (+1)."""
        cores = ("serial_cores", "own_core", "contended_wait")
        shares = ("validation_dip_share", "data_wait_bound", "lanes_overlap", "pacing_lane", "contended_share",
                  "own_share")
        moved = {}
        for name in self.__dataclass_fields__:
            margin = MARGIN_CORES if name in cores else MARGIN_SHARE if name in shares else MARGIN_PERCENT
            moved[name] = getattr(self, name) + sign * margin
        return Thresholds(**moved)


THRESHOLDS = Thresholds()


@dataclass
class Verdict:
    """The bottleneck named (``label``), said (``text``) and the figures it was judged on."""

    label: str
    text: str
    figures: dict[str, float]
    held: bool = False    # a live view's label kept within its thresholds' margins (``verdict``'s ``held``)


@dataclass(frozen=True)
class CpuUse:
    """What the CPU did while the workload's phases ran, counted in cores: 1.4 of 2 cores
    busy is not serial work, and neither is 9 of 16, whatever their mean percentage."""

    cores: int
    total: float              # mean % of all cores
    busiest: float            # mean % of the busiest core of each sample
    workload: float | None    # mean cores the workload's process tree kept busy (None: not recorded)
    allowed: float | None = None   # cores the workload may use where fewer than the machine's
    others: float | None = None    # cores other programs kept busy (None: not recorded)

    @property
    def limit(self) -> float:
        """The cores the workload may use: those allowed, else every core."""
        return self.allowed if self.allowed is not None else float(self.cores)

    @property
    def counts(self) -> Cores:
        """The machine's cores and those it may use, as every sentence counts them."""
        return Cores(self.cores, self.allowed)

    def of_cores(self) -> str:
        """``2 cores`` or ``4 cores allowed of 64``."""
        return self.counts.of()

    def own_work(self, share: float) -> bool:
        """The busy cores are mostly the workload's: its own tree keeps at least SHARE of them
        busy (true where its tree was not recorded: nothing says otherwise)."""
        return self.workload is None or self.workload >= share * self.machine - 1e-9

    @property
    def idle(self) -> float:
        """Cores it may use that neither it nor other programs kept busy."""
        return max(0.0, self.counts.obtainable(self.others) - self.used)

    def busy_from(self, percent: float) -> bool:
        """The cores it may use are at least PERCENT busy: the machine's, or the workload's own
        share of those allowed (other programs run on the cores it may not use)."""
        if self.allowed is None:
            return self.total >= percent
        return self.used >= self.allowed * percent / 100.0

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
        text = f"{self.counts.used(self.used)} busy"
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

    def parallel(self, th: Thresholds = THRESHOLDS) -> bool:
        return len(self.busy) > 1 and self.overlap >= th.lanes_overlap

    def pacing(self, th: Thresholds = THRESHOLDS) -> str | None:
        """The one lane busy nearly all the time while others run beside it: it sets the pace."""
        full = [lane for lane, share in self.busy.items() if share >= th.pacing_lane]
        return full[0] if len(full) == 1 and self.parallel(th) else None


def _busiest_core_mean(s: Series, in_run: np.ndarray) -> float:
    """The mean over the samples in IN_RUN of each one's busiest core (NaN: none read). From
    the per-core bytes where the run has them: a day of 64 cores is 55 MB of them, 442 MB of
    floats."""
    if not in_run.any():
        return 0.0
    percent = s.cpu_percent
    if percent is None or len(percent) != len(s.t):
        return float(np.nanmean(nanmath.nanmax(s.cpu[in_run], axis=1))) if s.cpu.size else 0.0
    if not percent.size:
        return 0.0
    # A copy, shifted in place so that a missing reading (the largest byte) wraps to 0, below every
    # reading: one pass for the busiest core, and a sample of none read has 0 as its busiest.
    shift = 256 - MISSING_PERCENT
    rows = percent[in_run]
    np.add(rows, shift, out=rows)
    busiest = rows.max(axis=1).astype(float) - shift
    busiest[busiest < 0] = np.nan
    return float(np.nanmean(busiest))


def cpu_use(s: Series, in_run: np.ndarray, cores: int, allowed: float | None = None,
            others: float | None = None) -> CpuUse:
    """The CPU figures of the samples in IN_RUN (``allowed``: the cores the workload may use,
    where fewer than the machine's; ``others``: the cores other programs kept busy)."""
    total = float(np.nanmean(s.cpu_total[in_run])) if in_run.any() else 0.0
    busiest = _busiest_core_mean(s, in_run)
    workload = None
    if len(s.proc_cpu) == len(s.t):
        proc = s.proc_cpu[in_run]
        proc = proc[~np.isnan(proc)]
        if proc.size:
            workload = float(proc.mean()) / 100.0
    return CpuUse(cores, 0.0 if total != total else total, 0.0 if busiest != busiest else busiest, workload,
                  allowed if allowed is not None and allowed < cores - 1e-6 else None, others)


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


def verdict(run: Run, s: Series, all_phases: list[Phase], epoch_rows: list[EpochRow],
            wait: DataWait | None, held: str | None = None) -> Verdict:
    """The run in one line: what limited it (docs/verdicts.md lists the labels, their order and
    thresholds). Judged on the samples inside the workload's phases while it was not stopped, in
    cores busy, by what its lanes did side by side, and by how long its training loop waited on
    data: RUN's series S, its phases, its EPOCH_ROWS (``epochs``) and their WAIT (``data_wait``),
    as the one who built them (``figures.run_figures``, or the live model, incrementally) hands
    them over.

    ``held``: the label a live view showed before: it stands while the figures are within their
    margins of giving it, so a figure hovering at a threshold does not flip the verdict while
    the run goes on (the verdict says so in ``held``; the live view lets such a label stand for
    ``HOLD_SECONDS`` at most). A finished run is judged without it."""
    ended = run.end is not None
    # The run's time and samples as the dashboard's header counts them (its last record's time).
    elapsed = max(float(s.t[-1]) if len(s.t) else 0.0, run.duration)
    if len(s.t) < MIN_SAMPLES or elapsed < MIN_SECONDS:
        # What is missing, only: "10.0 s and 2 samples, and a verdict needs 2 s" reads as nonsense.
        lacking = [f"{MIN_SECONDS:.0f} s"] * (elapsed < MIN_SECONDS) + [counted(MIN_SAMPLES, "sample")] * (len(s.t) < MIN_SAMPLES)
        needs = "and a verdict needs " + " and ".join(lacking)
        if ended:
            return Verdict("too short", f"too short to judge: the run ended after {elapsed:.1f} s and "
                           f"{counted(len(s.t), 'sample')}, {needs}", {})
        return Verdict("too early", f"too early to tell: {elapsed:.1f} s and {counted(len(s.t), 'sample')} so far, "
                       f"{needs}", {})
    stops = stopped_spans(run)
    if stops and not ended and stops[-1][1] is None:
        since = stops[-1][0]
        return Verdict("stopped", f"stopped: the workload has been stopped since {since:.1f} s (Ctrl-Z or SIGSTOP) "
                       "and uses no core; it is judged again once it runs", {"stopped_since": round(since, 2)})
    in_run = active_mask(s.t, [(p.start, p.end) for p in all_phases]) if all_phases else np.ones(len(s.t), bool)
    if not ended and 0 < int(in_run.sum()) < MIN_SAMPLES:
        # Its work has only begun: the start-up's figures would judge it.
        return Verdict("too early", f"too early to tell: the workload's phases so far hold "
                       f"{counted(int(in_run.sum()), 'sample')}, and a verdict needs {MIN_SAMPLES}", {})
    if not in_run.any():  # phases too short to hold a sample: judge the whole run instead
        in_run = np.ones(len(s.t), bool)
    if stops:
        running = ~_stopped(run, s, stops)
        if not (in_run & running).any():
            stopped = sum((run.duration if end is None else end) - start for start, end in stops)
            return Verdict("stopped", f"stopped: the workload was stopped (Ctrl-Z or SIGSTOP) {stopped:.1f} s of its "
                           f"{run.duration:.1f} s, whenever it had work to judge", {})
        in_run &= running
    cores = int(s.cpu.shape[1]) if s.cpu.ndim == 2 and s.cpu.shape[1] else max(run.cores, 1)
    shared = contention(run, s, in_run)
    cpu = cpu_use(s, in_run, cores, shared.allowed, shared.others)
    lanes_ = lane_use(all_phases)
    rows = epoch_rows
    figures: dict[str, float] = {"cpu_mean": round(cpu.total, 1), "busiest_core_mean": round(cpu.busiest, 1),
                                 "cores": cores, "cores_busy": round(cpu.machine, 2)}
    if cpu.allowed is not None:
        figures["allowed_cores"] = round(cpu.allowed, 2)
    if cpu.workload is not None:
        figures["workload_cores"] = round(cpu.workload, 2)
    if shared.others is not None:
        figures["others_cores"] = round(shared.others, 2)
    if shared.waiting is not None:
        figures["waiting_cores"] = round(shared.waiting, 2)
    if shared.threads is not None:
        figures["threads"] = round(shared.threads, 1)
    figures["lane_overlap"] = round(lanes_.overlap, 3)
    if wait is not None:
        figures["data_wait_share"] = round(wait.share, 3)
    if wait is not None and not ended and not judged_wait(rows, wait):
        wait = None   # a fraction of the first epoch (its loader starting) says nothing of the loop
    gpu_used = [g for g in range(s.gpus) if s.gpu_util[g].size and np.nanmax(s.gpu_util[g]) > IDLE_THRESHOLD]

    def decide(th: Thresholds) -> Verdict:
        if gpu_used:
            return _gpu_verdict(run, s, all_phases, in_run, cpu, wait, dict(figures), th)
        if wait is not None and wait.share >= th.data_wait_bound:
            return Verdict("input-bound", f"{_wait_text(wait, input_name(run))}; {cpu.busy_text()}", dict(figures))
        if shared.contended_at(th.contended_wait, th.contended_share):
            return _contended(shared, cpu, dict(figures))
        return _cpu_verdict(cpu, lanes_, dict(figures), th)

    found = decide(THRESHOLDS)
    if held is None or held == found.label:
        return found
    for sign in (-1, 1):
        eased = decide(THRESHOLDS.eased(sign))
        if eased.label == held:
            return replace(eased, held=True)
    return found


def judged_wait(rows: list[EpochRow], wait: DataWait) -> bool:
    """Whether a running workload's data wait may decide the verdict: it was measured over a
    whole epoch (its ``epoch`` event came) or over at least MIN_LOOP_SECONDS of training loop,
    not over the first instants of one, where the loader's start is all there is. A finished
    run's is its whole wait, however short."""
    return wait.train_loop >= MIN_LOOP_SECONDS or any(r.unit is not None and r.data_wait is not None for r in rows)


def stopped_spans(run: Run) -> list[tuple[float, float | None]]:
    """The stretches the recorder said the workload was stopped (its ``state`` notices: Ctrl-Z,
    SIGSTOP), each until it said it ran or waited again; None: until now."""
    spans: list[tuple[float, float | None]] = []
    since: float | None = None
    for notice in run.notices:
        if notice.state is None:
            continue
        if notice.state == "stopped" and since is None:
            since = notice.t
        elif notice.state != "stopped" and since is not None:
            spans.append((since, notice.t))
            since = None
    if since is not None:
        spans.append((since, None))
    return spans


def _stopped(run: Run, s: Series, stops: list[tuple[float, float | None]]) -> np.ndarray:
    """Which samples fall in a stretch the workload was stopped: each from its notice, or from
    as far before it (up to STOP_SAID_LATE) as the tree's CPU read nothing, as the recorder
    says a stop only once it saw it twice."""
    spans = []
    measured = len(s.proc_cpu) == len(s.t)
    for start, end in stops:
        if measured:
            before = np.flatnonzero((s.t < start) & (s.t >= start - STOP_SAID_LATE))
            for i in before[::-1]:
                if not s.proc_cpu[i] < STOPPED_CPU:
                    break
                start = float(s.t[i])
        spans.append((start, run.duration if end is None else end))
    return active_mask(s.t, spans)


def _contended(shared: Contention, cpu: CpuUse, figures: dict[str, float]) -> Verdict:
    """The workload's threads waited for cores they could not get: other programs had them,
    or it runs more threads than it may use. In figures: threads, cores got and wanted, the
    time waiting, what other programs took."""
    assert shared.workload is not None and shared.waiting is not None and shared.wanted is not None
    threads = counted(round(shared.threads), "thread") if shared.threads is not None else "threads"
    cause = []
    if shared.others is not None and shared.others >= OTHERS_NOTABLE:
        cause.append(cpu.counts.others(shared.others))
    if shared.wanted > shared.allowed + 0.25:
        cause.append(f"it wants more cores than the {cpu.of_cores()} it may use")
    why = "; ".join(cause) if cause else f"on {cpu.of_cores()}"
    return Verdict("contended", f"contended: the workload's {threads} wanted {shared.wanted:.1f} cores and got "
                   f"{shared.workload:.1f}; they waited for a core {shared.wait_share or 0:.0%} of that time "
                   f"({shared.waiting:.1f} cores' worth): {why}", figures)


def input_name(run: Run) -> str:
    """What the training loop waited on for its batches, as the zero-code instrumentation saw
    it: what most of its data wait was spent on (its units' ``waited_on``: a queue at a line
    of the script, a generator, a DataLoader's start-up…), else how its data was fed (its
    ``setup`` event): "DataLoader", "tf.data input", "input" where it read neither, and
    "DataLoader" for a run without one (a workload's own ``data_wait_s``, an older recording)."""
    spent: dict[str, float] = {}
    for unit in run.epoch_events:
        what = unit.metrics.figures.waited_on if unit.metrics.figures is not None else None
        seconds = unit.metrics.data_wait_s
        if isinstance(what, str) and isinstance(seconds, (int, float)):
            spent[what] = spent.get(what, 0.0) + float(seconds)
    if spent:
        return max(spent, key=spent.__getitem__)
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
                 wait: DataWait | None, figures: dict[str, float], th: Thresholds = THRESHOLDS) -> Verdict:
    idle = device_idle(run, s, all_phases)
    gpu = max(idle[:s.gpus], key=lambda d: d.mean)
    figures.update(gpu_mean=gpu.mean, gpu_idle_fraction=gpu.idle_fraction,
                   gpu_dip_seconds=round(gpu.dip_seconds, 2))
    if gpu.mean >= th.gpu_busy:
        busiest = max(range(s.gpus), key=lambda g: idle[g].mean)
        sm = sm_active_mean(run, busiest, in_run)
        if sm is None:
            return Verdict("GPU-bound", f"GPU-bound: the GPU is busy {gpu.mean:.0f}% on average; "
                           "the input pipeline keeps it fed (SM activity not measured: busy "
                           "need not mean the chip is full)", figures)
        figures["sm_active_mean"] = round(sm, 1)
        if sm < th.sm_active_low:
            return Verdict("launch-bound", f"GPU busy {gpu.mean:.0f}% of the time but SMs {sm:.0f}% "
                           "active: kernels too small or too few — launch-bound", figures)
        return Verdict("GPU-bound", f"GPU-bound: the GPU is busy {gpu.mean:.0f}% on average with "
                       f"SMs {sm:.0f}% active; the input pipeline keeps it fed", figures)
    if wait is not None and wait.share >= th.data_wait_bound:
        return Verdict("input-bound", f"{_wait_text(wait, input_name(run))}; the GPU averages {gpu.mean:.0f}%", figures)
    by_phase: dict[str, float] = {}
    for d in gpu.dips:
        by_phase[d.phase] = by_phase.get(d.phase, 0.0) + d.duration
    worst = max(by_phase, key=by_phase.get) if by_phase else None  # type: ignore[arg-type]
    share = by_phase[worst] / gpu.dip_seconds if worst and gpu.dip_seconds else 0.0
    if worst and "validate" in worst and share >= th.validation_dip_share:
        return Verdict("validation-bound", f"validation-bound: the GPU dips {len(gpu.dips)} times, "
                       f"{share:.0%} of the dip time during validation; overlap validation "
                       "with training", figures)
    if cpu.busy_from(th.feed_all_cores):
        busy = f"{cpu.busy_text()} on average" if cpu.allowed is not None else \
            f"{cpu.counts.busy(cpu.machine)} are busy ({cpu.total:.0f}%)"
        return Verdict("input-bound", f"input-bound: the GPU averages {gpu.mean:.0f}% while {busy}{_beside(cpu)}: "
                       "the CPU cannot feed it", figures)
    if cpu.busiest >= th.feed_one_core and (cpu.workload is None or cpu.workload >= th.own_core):
        return Verdict("input-bound", f"input-bound: the GPU averages {gpu.mean:.0f}% while the busiest "
                       f"core averages {cpu.busiest:.0f}% ({cpu.busy_text()}): one core feeds the GPU "
                       "and cannot keep up", figures)
    return Verdict("GPU underused", f"GPU underused: {gpu.mean:.0f}% on average, idle "
                   f"{gpu.idle_fraction:.0%} of the time, and the CPU is not the limit "
                   f"({cpu.busy_text()}, the busiest core {cpu.busiest:.0f}%)", figures)


def _cpu_verdict(cpu: CpuUse, lanes_: LaneUse, figures: dict[str, float], th: Thresholds = THRESHOLDS) -> Verdict:
    saturated = cpu.busy_from(th.cpu_bound)
    if saturated and cpu.allowed is not None:
        return Verdict("CPU-bound", f"CPU-bound: the workload keeps {cpu.counts.used(cpu.used)} "
                       "busy on average: every core it may use is working", figures)
    if saturated and cpu.own_work(th.own_share):   # full cores that are mostly other programs' are not its limit
        by = ""
        if cpu.workload is not None and cpu.machine - cpu.workload >= 0.5:
            by = f", {cpu.workload:.1f} of them by the workload"
        return Verdict("CPU-bound", f"CPU-bound: {cpu.counts.busy(cpu.machine)} busy "
                       f"({cpu.total:.0f}%) on average{by}: every core is working", figures)
    if cpu.workload is not None and cpu.workload < th.own_core and cpu.busiest >= th.core_saturated:
        # A saturated core the workload's own processes cannot account for is another program's.
        took = cpu.others if cpu.others is not None else max(0.0, cpu.machine - cpu.workload)
        return Verdict("waiting", f"waiting: the workload keeps {cpu.counts.used(cpu.workload)} busy while "
                       f"{cpu.counts.others(took)} (the busiest core averages {cpu.busiest:.0f}%, not the "
                       "workload's): it mostly waits (I/O, sleep, or a device)", figures)
    pacing = lanes_.pacing(th)
    if pacing is not None and cpu.busiest >= th.core_saturated:
        others = [lane for lane in lanes_.busy if lane != pacing]
        beside = list(dict.fromkeys(n for lane in others for n in lanes_.names[lane]))
        return Verdict("lane-bound", f"lane-bound: the {pacing} lane is busy {lanes_.busy[pacing]:.0%} of "
                       f"the time and sets the pace; {', '.join(beside)} runs beside it in {len(others)} "
                       f"more lane{'s' if len(others) > 1 else ''} (two or more lanes at once "
                       f"{lanes_.overlap:.0%} of the time); {cpu.busy_text()} on average", figures)
    if cpu.busiest >= th.core_saturated and cpu.used <= th.serial_cores and not lanes_.parallel(th):
        turns = ""
        if len(lanes_.busy) > 1:
            *first, last = lanes_.busy
            turns = f" (its lanes {', '.join(first)} and {last} take turns)"
        return Verdict("single-core-bound", f"single-core-bound: one core does the work (the busiest averages "
                       f"{cpu.busiest:.0f}%; {cpu.busy_text()}): the work is serial{turns}", figures)
    if cpu.busiest >= th.core_saturated:
        return Verdict("partly parallel", f"partly parallel: {cpu.busy_text()} on average and the busiest "
                       f"core averages {cpu.busiest:.0f}%: {cpu.idle:.1f} cores are left idle{_beside(cpu)} "
                       "(fewer threads or processes than cores, or a serial part holding the rest back)",
                       figures)
    return Verdict("waiting", f"waiting: {cpu.busy_text()} and no core is saturated (the busiest "
                   f"averages {cpu.busiest:.0f}%): the workload mostly waits (I/O, sleep, or a device)",
                   figures)


def _beside(cpu: CpuUse) -> str:
    """``, and other programs took 1.2 of 2 cores`` where they took enough to tell."""
    return f", and {cpu.counts.others(cpu.others)}" if cpu.others is not None and cpu.others >= OTHERS_NOTABLE else ""
