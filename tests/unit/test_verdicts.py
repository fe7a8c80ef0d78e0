"""The verdict over synthetic runs, one row of CASES each: 2, 16 and 64 cores, with and without
a (fake) GPU, with the expected label and the exact sentence. docs/verdicts.md is this table's
readable twin; the last tests check that it lists every case, every label and every threshold.

Every run is generated here from a few rules (which phases run when, what each core, the GPU
and the workload's process tree read at each instant), never copied from a recording. Samples
fall at 0.05 s, 0.15 s, …, so none sits on a phase boundary (boundaries are tenths of a second),
and each expected figure is worked out in the comment beside its case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile
from devicewatch.runformat.writer import RunWriter
from tests.conftest import ROOT, write_run

STEP = 0.1
PhaseSpec = tuple[str, "int | None", str, float, float]   # name, epoch, lane, start, end


@dataclass
class Shape:
    """A synthetic run: the machine, the phases, and what each sample reads at time t."""

    cores: int
    seconds: float
    load: Callable[[float], list[float]]                      # each core's % at t
    phases: list[PhaseSpec] = field(default_factory=list)
    gpu: Callable[[float], float] | None = None               # GPU utilization % at t
    sm_active: float | None = None                            # GPM SM activity (None: no GPM)
    workload: Callable[[float], float] | None = None          # the process tree's CPU, % of one core
    metrics: dict[int, dict[str, Any]] = field(default_factory=dict)
    waiting: Callable[[float], float] | None = None           # its threads' wait for a core, % of one core
    limits: dict[str, Any] | None = None                      # the header's cpu_limits (the cores it may use)
    stopped: list[tuple[float, float | None]] = field(default_factory=list)   # stopped from, to (None: still)
    ended: bool = True                                        # False: a run still recording (no end record)

    def records(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k in range(round(self.seconds / STEP)):
            t = round(0.05 + STEP * k, 3)
            cpu = self.load(t)
            assert len(cpu) == self.cores
            sample: dict[str, Any] = {"type": "sample", "t": t, "cpu": cpu, "cpu_total": sum(cpu) / len(cpu)}
            if self.workload is not None:
                sample["proc"] = {"cpu": self.workload(t), "rss": 1 << 20, "threads": 4, "count": 1}
                if self.waiting is not None:
                    sample["proc"]["cpu_wait"] = self.waiting(t)
            if self.gpu is not None:
                gpu: dict[str, Any] = {"index": 0, "util": self.gpu(t), "mem_used": 1 << 30, "power_w": 100.0}
                if self.sm_active is not None:
                    gpu["sm_active"] = self.sm_active
                sample["gpus"] = [gpu]
            out.append(sample)
        for name, epoch, lane, start, end in self.phases:
            fields = {"type": "event", "pid": 1, "name": name, "epoch": epoch, "lane": lane}
            out += [{**fields, "t": start, "kind": "phase_begin"}, {**fields, "t": end, "kind": "phase_end"}]
        for epoch, metrics in self.metrics.items():
            last = max(end for _, e, _, _, end in self.phases if e == epoch)
            out.append({"type": "event", "pid": 1, "t": last, "kind": "epoch", "epoch": epoch, "metrics": metrics})
        for start, end in self.stopped:   # the recorder's notices of the workload's state
            out.append({"type": "notice", "t": start, "level": "info", "message": "the workload is stopped",
                        "state": "stopped"})
            if end is not None:
                out.append({"type": "notice", "t": end, "level": "info", "message": "the workload runs again",
                            "state": "running"})
        return sorted(out, key=lambda r: r["t"])

    def run(self, path: Path) -> runfile.Run:
        host = {"cpu_model": "synthetic", "cpu_count": self.cores,
                "gpus": [{"name": "Fake GPU"}] if self.gpu is not None else []}
        if self.limits is not None:
            host["cpu_limits"] = self.limits
        if self.waiting is None:
            return runfile.load(write_run(path, self.records(), header={"host": host},
                                          end=None if self.ended else False))  # type: ignore[arg-type]
        # The threads' wait for a core is a field of schema 2's process group: written as the
        # recorder writes, by the one writer.
        writer = RunWriter(path, {"host": host, "interval": STEP})
        for record in self.records():
            writer.write(record)
        last = self.records()[-1]["t"]
        writer.write({"type": "end", "t": last, "status": "ok", "exit_code": 0, "signal": None, "duration": last,
                      "reason": "the workload finished"})
        writer.close()
        return runfile.load(path)


# -- what the cores read --------------------------------------------------------------------------

def judged(run: runfile.Run, held: str | None = None) -> analysis.Verdict:
    """RUN's verdict from its own figures, where a live view showed the label HELD before."""
    all_phases = analysis.phases(run)
    rows = analysis.epochs(run, all_phases)
    return analysis.verdict(run, analysis.series(run), all_phases, rows, analysis.data_wait(rows), held=held)


def one_core(cores: int, busy: float = 100.0, rest: float = 0.0) -> Callable[[float], list[float]]:
    """One core at BUSY, the others at REST; which core it is moves every sample, as the
    scheduler moves a thread, so only the busiest core of each sample tells."""
    def load(t: float) -> list[float]:
        which = round((t - 0.05) / STEP) % cores
        return [busy if c == which else rest for c in range(cores)]
    return load


def some_cores(cores: int, busy_cores: int, busy: float = 100.0, rest: float = 0.0) -> Callable[[float], list[float]]:
    return lambda t: [busy] * busy_cores + [rest] * (cores - busy_cores)


def every_core(cores: int, value: float) -> Callable[[float], list[float]]:
    return lambda t: [value] * cores


def constant(value: float) -> Callable[[float], float]:
    return lambda t: value


def active(spans: list[PhaseSpec], t: float, *names: str) -> bool:
    return any(start <= t < end for name, _, _, start, end in spans if name in names)


# -- the phases ---------------------------------------------------------------------------------

def serial_epochs(epochs: int, train: float, validate: float, validate_lane: str = "main") -> list[PhaseSpec]:
    """Train then validate, epoch after epoch (``make demo``'s run A)."""
    out: list[PhaseSpec] = []
    for e in range(epochs):
        start = e * (train + validate)
        out += [("train", e + 1, "main" if validate_lane == "main" else "train", start, start + train),
                ("validate", e + 1, validate_lane, start + train, start + train + validate)]
    return out


def overlapped_epochs(epochs: int, train: float, validate: float) -> list[PhaseSpec]:
    """Training back to back in the train lane; each epoch's validation in two lanes beside the
    next epoch's training (``make demo``'s run B, pipeline --variant overlapped)."""
    out: list[PhaseSpec] = []
    for e in range(epochs):
        out.append(("train", e + 1, "train", e * train, (e + 1) * train))
        for lane in ("validate-0", "validate-1"):
            out.append(("validate", e + 1, lane, (e + 1) * train, (e + 1) * train + validate))
    return out


def loader_epochs(epochs: int) -> list[PhaseSpec]:
    """3 s of training with two visible DataLoader waits nested in it (0.9 s each), then 1 s of
    validation, per epoch: what the zero-code instrumentation records."""
    out: list[PhaseSpec] = []
    for e in range(epochs):
        start = 4.0 * e
        out += [("train", e + 1, "main", start, start + 3.0),
                ("data", e + 1, "main", start, start + 0.9), ("data", e + 1, "main", start + 1.5, start + 2.4),
                ("validate", e + 1, "main", start + 3.0, start + 4.0)]
    return out


def data_then_train(epochs: int, data: float, train: float) -> list[PhaseSpec]:
    """The workload prepares its data, then trains on it, in one lane (demo, pipeline)."""
    out: list[PhaseSpec] = []
    for e in range(epochs):
        start = e * (data + train)
        out += [("data", e + 1, "main", start, start + data), ("train", e + 1, "main", start + data, start + data + train)]
    return out


SERIAL = serial_epochs(4, 2.0, 0.5)                  # 10 s: train 2 s, validate 0.5 s, x4
OVERLAPPED = overlapped_epochs(4, 2.5, 0.8)          # train lane 0-10 s; validation 2.5-3.3, 5-5.8, 7.5-8.3, 10-10.8 s
LOADER_WAIT = {e: {"loss": 1.0, "data_wait_s": 1.86, "steps": 300, "steps_per_s": 100.0} for e in (1, 2, 3)}


def overlapped_load(t: float) -> list[float]:
    """Both cores full while validation runs; otherwise the training thread on one core and
    the other at 20%."""
    if active(OVERLAPPED, t, "validate"):
        return [100.0, 100.0]
    return one_core(2, 100.0, 20.0)(t)


@dataclass
class Case:
    id: str
    shape: Shape
    label: str
    text: str


CASES = [
    # -- 2 cores, no GPU -------------------------------------------------------------------------
    # One core at 100%, the other at 6%: 53% of 2 cores = 1.06 cores; everything in one lane.
    Case("2 cores: make demo's serial run", Shape(2, 10.0, one_core(2, 100.0, 6.0), SERIAL),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; "
         "1.1 of 2 cores busy): the work is serial"),
    # The same with the lanes pipeline uses (train, then validate in its own lane), and the
    # process tree's CPU recorded: 100% of one core, so 1.0 core (the machine's 1.06 is within
    # half a core of it and not mentioned).
    Case("2 cores: serial, two lanes taking turns", Shape(2, 10.0, one_core(2, 100.0, 6.0),
                                                        serial_epochs(4, 2.0, 0.5, "validate"),
                                                        workload=constant(100.0)),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; "
         "1.0 of 2 cores busy): the work is serial (its lanes train and validate take turns)"),
    # 108 samples (0 to 10.8 s); 32 of them in a validation window (8 in each of the four
    # 0.8 s windows) read 100 + 100, the other 76 read 100 + 20: (32 x 100 + 76 x 60) / 108
    # = 71.9% = 1.44 cores. Two or more lanes at once: 3 x 0.8 s beside training + 0.8 s of
    # the two validation lanes together = 3.2 of 10.8 s = 30%; the train lane 10 of 10.8 s = 93%.
    Case("2 cores: make demo's overlapped run", Shape(2, 10.8, overlapped_load, OVERLAPPED),
         "lane-bound", "lane-bound: the train lane is busy 93% of the time and sets the pace; validate "
         "runs beside it in 2 more lanes (two or more lanes at once 30% of the time); 1.4 of 2 cores "
         "busy on average"),
    # (97 + 95) / 2 = 96% = 1.92 cores.
    Case("2 cores: every core busy", Shape(2, 5.0, lambda t: [97.0, 95.0], [("train", 1, "main", 0.0, 5.0)]),
         "CPU-bound", "CPU-bound: 1.9 of 2 cores busy (96%) on average: every core is working"),
    # The overlapped run while another program fills the second core: the machine 99% = 1.98
    # cores, the workload's own tree one core: 1.0 / 1.98 = 51% of the busy cores, under
    # OWN_SHARE (75%), so the full cores are not its limit; judged on its own work, its train
    # lane sets the pace (93% of the time, 30% in two or more lanes, as in the quiet run).
    Case("2 cores: overlapped run beside another program", Shape(2, 10.8, lambda t: [100.0, 98.0], OVERLAPPED,
                                                                workload=constant(100.0)),
         "lane-bound", "lane-bound: the train lane is busy 93% of the time and sets the pace; validate runs "
         "beside it in 2 more lanes (two or more lanes at once 30% of the time); 1.0 of 2 cores busy with the "
         "workload, 2.0 on the whole machine on average"),
    # (5 + 3) / 2 = 4% = 0.08 cores; no phases, so the whole run is judged.
    Case("2 cores: idle", Shape(2, 3.0, lambda t: [5.0, 3.0]),
         "waiting", "waiting: 0.1 of 2 cores busy and no core is saturated (the busiest averages 5%): "
         "the workload mostly waits (I/O, sleep, or a device)"),
    # Other programs hold one core at 100% and the other at 60% = 1.6 cores; the workload's own
    # tree sleeps at 1% of one core (0.01 cores), so the saturated core is not its.
    Case("2 cores: a sleeping script on a busy machine", Shape(2, 3.0, lambda t: [100.0, 60.0], workload=constant(1.0)),
         "waiting", "waiting: the workload keeps 0.0 of 2 cores busy while other programs took 1.6 of 2 cores (the "
         "busiest core averages 100%, not the workload's): it mostly waits (I/O, sleep, or a device)"),
    # A script using 0.19 cores while other programs fill the rest: both cores at 98% = 1.96
    # cores, 0.19 of them its own (10% of the busy cores, under OWN_SHARE) and its threads never
    # waited for a core (0.01 cores' worth): not CPU-bound, not contended; it waits, and other
    # programs took 1.96 - 0.19 = 1.77 cores.
    Case("2 cores: a 0.2-core workload on a full machine", Shape(2, 5.0, every_core(2, 98.0),
                                                                 [("train", 1, "main", 0.0, 5.0)],
                                                                 workload=constant(19.0), waiting=constant(1.0)),
         "waiting", "waiting: the workload keeps 0.2 of 2 cores busy while other programs took 1.8 of 2 cores (the "
         "busiest core averages 98%, not the workload's): it mostly waits (I/O, sleep, or a device)"),
    # data_wait_s 1.86 s of each 3 s training loop, three epochs: 5.58 of 9 s = 62% (more than
    # the 2 x 0.9 s of visible waits: short ones are not drawn). (60 + 40) / 2 = 50% = 1 core.
    Case("2 cores: slow DataLoader", Shape(2, 12.0, lambda t: [60.0, 40.0], loader_epochs(3), metrics=LOADER_WAIT),
         "input-bound", "input-bound: the training loop waited on its DataLoader 62% of the time "
         "(5.6 of 9.0 s); 1.0 of 2 cores busy"),

    # -- 16 cores, no GPU ------------------------------------------------------------------------
    # 9 cores at 100%, 7 idle: 56% of 16 = 9 cores.
    Case("16 cores: nine busy", Shape(16, 5.0, some_cores(16, 9), [("train", 1, "main", 0.0, 5.0)]),
         "partly parallel", "partly parallel: 9.0 of 16 cores busy on average and the busiest core averages "
         "100%: 7.0 cores are left idle (fewer threads or processes than cores, or a serial part "
         "holding the rest back)"),
    # The same picture, but the workload's own tree uses one core: the other 8 are someone else's.
    Case("16 cores: serial workload on a busy machine", Shape(16, 5.0, some_cores(16, 9), [("train", 1, "main", 0.0, 5.0)],
                                                             workload=constant(100.0)),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; 1.0 of 16 "
         "cores busy with the workload, 9.0 on the whole machine): the work is serial"),
    # 90% of 16 = 14.4 cores.
    Case("16 cores: every core busy", Shape(16, 5.0, every_core(16, 90.0), [("train", 1, "main", 0.0, 5.0)]),
         "CPU-bound", "CPU-bound: 14.4 of 16 cores busy (90%) on average: every core is working"),
    # Data 2 s then train 2 s, twice: 4 of 8 s in data phases of the training lane; 100/16 =
    # 6.25% = 1 core.
    Case("16 cores: data phases half the loop", Shape(16, 8.0, one_core(16), data_then_train(2, 2.0, 2.0)),
         "input-bound", "input-bound: the training loop spent 50% of its time in data phases (4.0 of 8.0 s), "
         "waiting for or preparing its input; 1.0 of 16 cores busy"),
    # Data 0.2 s then train 1.8 s: 10% in data, under the 30% that makes a run input-bound.
    Case("16 cores: short data phases", Shape(16, 6.0, one_core(16), data_then_train(3, 0.2, 1.8)),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; "
         "1.0 of 16 cores busy): the work is serial"),

    # -- 64 cores, no GPU ------------------------------------------------------------------------
    # One core at 100%, 63 at 0.5% of noise: the machine (100 + 31.5) / 64 = 2.05% = 1.3 cores,
    # but the workload's tree is one core (within half a core: not mentioned).
    Case("64 cores: serial", Shape(64, 5.0, one_core(64, 100.0, 0.5), [("train", 1, "main", 0.0, 5.0)],
                                   workload=constant(100.0)),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; 1.0 of 64 "
         "cores busy): the work is serial"),
    # Without the process tree's figures the machine's count: (100 + 63 x 0.2) / 64 = 1.76% =
    # 1.13 cores, still one core's work.
    Case("64 cores: serial, machine figures only", Shape(64, 5.0, one_core(64, 100.0, 0.2),
                                                         [("train", 1, "main", 0.0, 5.0)]),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; 1.1 of 64 "
         "cores busy): the work is serial"),
    # 2% of 64 = 1.28 cores.
    Case("64 cores: idle", Shape(64, 3.0, every_core(64, 2.0), [("train", 1, "main", 0.0, 3.0)]),
         "waiting", "waiting: 1.3 of 64 cores busy and no core is saturated (the busiest averages 2%): the "
         "workload mostly waits (I/O, sleep, or a device)"),
    # 88% of 64 = 56.32 cores.
    Case("64 cores: every core busy", Shape(64, 3.0, every_core(64, 88.0), [("train", 1, "main", 0.0, 3.0)]),
         "CPU-bound", "CPU-bound: 56.3 of 64 cores busy (88%) on average: every core is working"),

    # -- with a GPU ----------------------------------------------------------------------------
    # GPU 95% in training (40 samples an epoch), 10% in validation (10): (120 x 95 + 30 x 10)
    # / 150 = 78%, under 80. Each dip runs from the last high sample to the next (3.95-5.05 s,
    # …, and the last to the end of the run); the middle of each lies in validation.
    Case("2 cores + GPU: validation dips", Shape(2, 15.0, lambda t: [30.0, 10.0], serial_epochs(3, 4.0, 1.0),
                                                 gpu=lambda t: 10.0 if t % 5.0 >= 4.0 else 95.0, sm_active=70.0),
         "validation-bound", "validation-bound: the GPU dips 3 times, 100% of the dip time during validation; "
         "overlap validation with training"),
    # The slow-DataLoader loop with a GPU at 40%: the input is named first.
    Case("2 cores + GPU: slow DataLoader", Shape(2, 12.0, lambda t: [60.0, 40.0], loader_epochs(3), gpu=constant(40.0),
                                                 sm_active=60.0, metrics=LOADER_WAIT),
         "input-bound", "input-bound: the training loop waited on its DataLoader 62% of the time (5.6 of 9.0 s); "
         "the GPU averages 40%"),
    Case("16 cores + GPU: busy GPU, busy SMs", Shape(16, 5.0, some_cores(16, 1), [("train", 1, "main", 0.0, 5.0)],
                                                     gpu=constant(95.0), sm_active=70.0),
         "GPU-bound", "GPU-bound: the GPU is busy 95% on average with SMs 70% active; the input pipeline keeps it fed"),
    Case("16 cores + GPU: busy GPU, no GPM", Shape(16, 5.0, some_cores(16, 1), [("train", 1, "main", 0.0, 5.0)],
                                                   gpu=constant(92.0)),
         "GPU-bound", "GPU-bound: the GPU is busy 92% on average; the input pipeline keeps it fed (SM activity "
         "not measured: busy need not mean the chip is full)"),
    # Every core at 90% (14.4 of 16) beside a GPU at 50%.
    Case("16 cores + GPU: the CPU cannot feed it", Shape(16, 5.0, every_core(16, 90.0), [("train", 1, "main", 0.0, 5.0)],
                                                         gpu=constant(50.0), sm_active=60.0),
         "input-bound", "input-bound: the GPU averages 50% while 14.4 of 16 cores are busy (90%): the CPU cannot "
         "feed it"),
    # The same, with the workload's own tree at 4 cores: other programs took 14.4 - 4 = 10.4.
    Case("16 cores + GPU: the CPU cannot feed it, beside other programs",
         Shape(16, 5.0, every_core(16, 90.0), [("train", 1, "main", 0.0, 5.0)], gpu=constant(50.0), sm_active=60.0,
               workload=constant(400.0)),
         "input-bound", "input-bound: the GPU averages 50% while 14.4 of 16 cores are busy (90%), and other programs "
         "took 10.4 of 16 cores: the CPU cannot feed it"),
    # Every core at 20% (3.2 of 16), the GPU at 40% and never under 10%.
    Case("16 cores + GPU: GPU underused", Shape(16, 5.0, every_core(16, 20.0), [("train", 1, "main", 0.0, 5.0)],
                                                gpu=constant(40.0), sm_active=60.0),
         "GPU underused", "GPU underused: 40% on average, idle 0% of the time, and the CPU is not the limit "
         "(3.2 of 16 cores busy, the busiest core 20%)"),
    Case("64 cores + GPU: tiny kernels", Shape(64, 5.0, one_core(64, 30.0), [("train", 1, "main", 0.0, 5.0)],
                                               gpu=constant(97.0), sm_active=31.0),
         "launch-bound", "GPU busy 97% of the time but SMs 31% active: kernels too small or too few — launch-bound"),
    # One core at 95% feeding a GPU at 45%; 63 cores at 0.3%: (95 + 18.9) / 64 = 1.78% = 1.14 cores.
    Case("64 cores + GPU: one core feeds it", Shape(64, 5.0, one_core(64, 95.0, 0.3), [("train", 1, "main", 0.0, 5.0)],
                                                    gpu=constant(45.0), sm_active=60.0),
         "input-bound", "input-bound: the GPU averages 45% while the busiest core averages 95% (1.1 of 64 cores "
         "busy): one core feeds the GPU and cannot keep up"),
    # The loop waits on its DataLoader 62% of the time, yet the GPU is full: the GPU is the limit
    # (kernels queued deep enough to cover the waits), so the wait is not what to fix first.
    Case("64 cores + GPU: waits on data, GPU still full", Shape(64, 12.0, one_core(64, 60.0), loader_epochs(3),
                                                                gpu=constant(95.0), sm_active=80.0,
                                                                metrics=LOADER_WAIT),
         "GPU-bound", "GPU-bound: the GPU is busy 95% on average with SMs 80% active; the input pipeline keeps it fed"),

    # -- a machine it does not own ----------------------------------------------------------------
    # Both cores full; the workload's 4 threads got 0.7 cores and waited 1.3 cores' worth: they
    # wanted 2.0 and waited 65% of that; other programs took 2.0 - 0.7 = 1.3 cores.
    Case("2 cores: threads fight other programs for the cores", Shape(2, 5.0, every_core(2, 100.0),
                                                                      [("train", 1, "main", 0.0, 5.0)],
                                                                      workload=constant(70.0),
                                                                      waiting=constant(130.0)),
         "contended", "contended: the workload's 4 threads wanted 2.0 cores and got 0.7; they waited for a core 65% "
         "of that time (1.3 cores' worth): other programs took 1.3 of 2 cores"),
    # The same loop alone: it keeps both cores busy and its threads waited 2% of a core (1% of
    # the 2.02 cores they wanted): no contention, every core is its own work.
    Case("2 cores: the same loop alone", Shape(2, 5.0, every_core(2, 100.0), [("train", 1, "main", 0.0, 5.0)],
                                               workload=constant(200.0), waiting=constant(2.0)),
         "CPU-bound", "CPU-bound: 2.0 of 2 cores busy (100%) on average: every core is working"),
    # 4 cores allowed of 64 (an affinity of cores 0-3), all four full with the workload's work;
    # the machine reads 4/64 = 6%, but every core it may use is working.
    Case("64 cores, 4 allowed: every allowed core busy", Shape(64, 5.0, some_cores(64, 4),
                                                               [("train", 1, "main", 0.0, 5.0)],
                                                               workload=constant(400.0), waiting=constant(3.0),
                                                               limits={"host_cores": 64, "affinity": "0-3"}),
         "CPU-bound", "CPU-bound: the workload keeps 4.0 of 4 cores allowed of 64 busy on average: every core it "
         "may use is working"),
    # 0.5 cores of CPU quota of 2: the workload's 2 threads got 0.5 and waited 1.5 cores' worth
    # (75% of the 2.0 they wanted), nobody else on the machine: it wants more than it may use.
    Case("2 cores, half a core of quota: more threads than the quota", Shape(2, 5.0, every_core(2, 25.0),
                                                                            [("train", 1, "main", 0.0, 5.0)],
                                                                            workload=constant(50.0),
                                                                            waiting=constant(150.0),
                                                                            limits={"host_cores": 2,
                                                                                    "quota_cores": 0.5}),
         "contended", "contended: the workload's 4 threads wanted 2.0 cores and got 0.5; they waited for a core 75% "
         "of that time (1.5 cores' worth): it wants more cores than the 0.5 cores allowed of 2 it may use"),

    # -- stopped ----------------------------------------------------------------------------------
    # Stopped (SIGSTOP) from 1.0 s and still, while other programs fill both cores: the verdict
    # says so, not "CPU-bound" nor "waiting".
    Case("2 cores: a stopped workload", Shape(2, 5.0, every_core(2, 100.0), [("train", 1, "main", 0.0, 5.0)],
                                              workload=lambda t: 200.0 if t < 1.0 else 0.0,
                                              stopped=[(1.0, None)], ended=False),
         "stopped", "stopped: the workload has been stopped since 1.0 s (Ctrl-Z or SIGSTOP) and uses no core; "
         "it is judged again once it runs"),
    # Stopped from 2.0 to 4.0 s of a 5 s run: the 20 samples stopped (0.2 cores on average if
    # counted) are left out, and the 30 left read its two cores full of its own work.
    Case("2 cores: stopped for a while", Shape(2, 5.0, every_core(2, 100.0), [("train", 1, "main", 0.0, 5.0)],
                                               workload=lambda t: 0.0 if 2.0 <= t < 4.0 else 200.0,
                                               stopped=[(2.0, 4.0)]),
         "CPU-bound", "CPU-bound: 2.0 of 2 cores busy (100%) on average: every core is working"),

    # -- the first second of an epoch -------------------------------------------------------------
    # Still recording: the first epoch began at 2.0 s, and its loader's start, 0.6 s of data
    # phase, is 60% of its 1.0 s of training loop so far, under the MIN_LOOP_SECONDS (2 s) and
    # without its epoch event: that wait does not decide. Its 10 samples read one core busy.
    Case("2 cores: the first second of an epoch", Shape(2, 3.0, one_core(2), [("train", 1, "main", 2.0, 3.0),
                                                                            ("data", 1, "main", 2.0, 2.6)],
                                                        workload=constant(100.0), ended=False),
         "single-core-bound", "single-core-bound: one core does the work (the busiest averages 100%; 1.0 of 2 "
         "cores busy): the work is serial"),
    # The same epoch finished and said (its epoch event): 0.6 of 1.0 s waited is the data wait.
    Case("2 cores: the same epoch, finished", Shape(2, 3.0, one_core(2), [("train", 1, "main", 2.0, 3.0),
                                                                        ("data", 1, "main", 2.0, 2.6)],
                                                    workload=constant(100.0), metrics={1: {"loss": 1.0}}),
         "input-bound", "input-bound: the training loop spent 60% of its time in data phases (0.6 of 1.0 s), "
         "waiting for or preparing its input; 1.0 of 2 cores busy"),
    # Still recording, its first phase 0.2 s old: 2 samples in it, under MIN_SAMPLES.
    Case("2 cores: the first instant of an epoch", Shape(2, 3.0, one_core(2), [("train", 1, "main", 2.8, 3.0)],
                                                         workload=constant(100.0), ended=False),
         "too early", "too early to tell: the workload's phases so far hold 2 samples, and a verdict needs 4"),

    # -- too short, too early ---------------------------------------------------------------------
    # One sample at 0.05 s, and the run ended.
    Case("2 cores: one sample", Shape(2, 0.1, lambda t: [100.0, 0.0]),
         "too short", "too short to judge: the run ended after 0.1 s and 1 sample, and a verdict needs "
         "2 s and 4 samples"),
    # Still recording: 10 samples 0.05-0.95 s, under the 2 s a verdict needs (the header reads
    # the same: the run's last record at 0.95 s, and 10 samples).
    Case("2 cores: the first second", Shape(2, 1.0, every_core(2, 100.0), ended=False),
         "too early", "too early to tell: 0.9 s and 10 samples so far, and a verdict needs 2 s"),
]


def test_too_few_samples_over_a_long_time_names_only_what_is_missing(tmp_path: Path) -> None:
    """Two samples 5 s apart: the run is long enough, its samples are not; the sentence asks only
    for the samples (it read "10.0 s and 2 samples …, and a verdict needs 2 s and 4 samples")."""
    path = write_run(tmp_path / "sparse.jsonl",
                     [{"type": "sample", "t": t, "cpu": [100.0, 0.0], "cpu_total": 50.0} for t in (5.0, 10.0)],
                     header={"interval": 5.0})
    v = analysis.run_figures(runfile.load(path)).verdict
    assert (v.label, v.text) == ("too short", "too short to judge: the run ended after 10.0 s and 2 samples, "
                                              "and a verdict needs 4 samples")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_verdict(case: Case, tmp_path: Path) -> None:
    v = analysis.run_figures(case.shape.run(tmp_path / "run.jsonl")).verdict
    assert (v.label, v.text) == (case.label, case.text)


def test_the_demo_runs_differ_in_the_figures_that_decide(tmp_path: Path) -> None:
    """What tells make demo's two runs apart is counted in cores and lanes."""
    serial = analysis.run_figures(CASES[0].shape.run(tmp_path / "a.jsonl")).verdict
    overlapped = analysis.run_figures(CASES[2].shape.run(tmp_path / "b.jsonl")).verdict
    assert serial.figures["lane_overlap"] == 0.0 and serial.figures["cores_busy"] == 1.06
    # 3.2 / 10.8 = 0.2963 of the time in two or more lanes; 71.85% of 2 = 1.437 cores.
    assert overlapped.figures["lane_overlap"] == 0.296 and overlapped.figures["cores_busy"] == 1.44


# -- docs/verdicts.md, this table's twin ----------------------------------------------------------

DOC = ROOT / "docs" / "verdicts.md"
THRESHOLDS = ("IDLE_THRESHOLD", "DIP_THRESHOLD", "MIN_DIP_SECONDS", "SM_ACTIVE_LOW", "GPU_BUSY",
              "VALIDATION_DIP_SHARE", "FEED_ALL_CORES", "FEED_ONE_CORE", "DATA_WAIT_BOUND", "CPU_BOUND",
              "CORE_SATURATED", "SERIAL_CORES", "OWN_CORE", "LANES_OVERLAP", "PACING_LANE", "CONTENDED_WAIT",
              "CONTENDED_SHARE", "MIN_SECONDS", "MIN_SAMPLES", "MARGIN_PERCENT", "MARGIN_SHARE", "MARGIN_CORES",
              "OWN_SHARE", "MIN_LOOP_SECONDS", "HOLD_SECONDS")


def _doc_rows(title: str) -> list[list[str]]:
    """The cells of the markdown table under the heading TITLE."""
    text = DOC.read_text()
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("|") and not line.startswith("|--")][1:]


def test_the_doc_lists_every_case_with_its_label():
    rows = {row[0]: row for row in _doc_rows("Examples")}
    assert list(rows) == [c.id for c in CASES]
    for case in CASES:
        assert rows[case.id][-1] == f"`{case.label}`", case.id


def test_the_doc_lists_every_label_and_threshold():
    labels = {re.sub(r"`", "", row[1]) for row in _doc_rows("Labels")}
    assert {c.label for c in CASES} <= labels
    text = DOC.read_text()
    for name in THRESHOLDS:
        value = getattr(analysis, name)
        assert f"`{name} = {value:g}`" in text, name


def test_a_live_label_holds_within_its_thresholds_margins_and_no_further(tmp_path: Path) -> None:
    # Both cores at 84%: a point under CPU_BOUND (85), and no core saturated: waiting, alone.
    near = Shape(2, 5.0, every_core(2, 84.0)).run(tmp_path / "near.jsonl")
    assert analysis.run_figures(near).verdict.label == "waiting"
    # Shown CPU-bound before, the live view keeps it: 84 is within MARGIN_PERCENT (3) of 85.
    held = judged(near, held="CPU-bound")
    assert held.label == "CPU-bound" and held.held
    assert held.text == "CPU-bound: 1.7 of 2 cores busy (84%) on average: every core is working"
    # At 81% it is 4 points under: past the margin, the label gives way.
    far = Shape(2, 5.0, every_core(2, 81.0)).run(tmp_path / "far.jsonl")
    assert judged(far, held="CPU-bound").label == "waiting"
    # A label the figures could not give within any margin is not held either.
    assert judged(near, held="GPU-bound").label == "waiting"


def test_a_live_view_holds_a_label_its_figures_no_longer_give_for_hold_seconds_at_most(tmp_path: Path) -> None:
    from devicewatch.live.model import RunModel

    class Clocked(RunModel):
        """The run's time as the test sets it: the live view's clock of how long a label was held."""
        now = 0.0

        @property
        def latest(self) -> float:
            return self.now

    # Both cores at 84%, still recording: its figures give "waiting", within the margins of "CPU-bound".
    near = Shape(2, 5.0, every_core(2, 84.0), ended=False).run(tmp_path / "near.jsonl")
    model = Clocked(near)
    model.verdict = judged(near, held="CPU-bound")   # what the view showed before

    def judged_at(now: float) -> str:
        model.now, model.version = now, model.version + 1    # new data, at run time NOW
        assert model.refresh_verdict(force=True)
        assert model.verdict is not None
        return model.verdict.label

    assert judged_at(10.0) == "CPU-bound"                            # held from 10 s of the run
    assert judged_at(10.0 + analysis.HOLD_SECONDS - 0.5) == "CPU-bound"
    assert judged_at(10.0 + analysis.HOLD_SECONDS) == "waiting"      # held as long as it may be
    assert model.verdict is not None and not model.verdict.held
    assert "margins" not in model.verdict.text


def test_until_its_first_verdict_a_live_view_judges_at_every_new_sample(tmp_path: Path) -> None:
    from devicewatch.live.model import RunModel

    now = [100.0]   # the view's clock: it does not move, so only "too early" may be judged again
    early = RunModel(Shape(2, 1.0, every_core(2, 100.0), ended=False).run(tmp_path / "early.jsonl"),
                     clock=lambda: now[0])
    assert early.refresh_verdict(force=True) and early.verdict is not None and early.verdict.label == "too early"
    early.version += 1   # a new sample
    assert early.refresh_verdict()
    # Once it has a verdict, the next waits its VERDICT_EVERY seconds.
    judged = RunModel(Shape(2, 5.0, every_core(2, 100.0), ended=False).run(tmp_path / "judged.jsonl"),
                      clock=lambda: now[0])
    assert judged.refresh_verdict(force=True) and judged.verdict is not None and judged.verdict.label == "CPU-bound"
    judged.version += 1
    assert not judged.refresh_verdict()


@pytest.mark.parametrize(("said", "workload"), [
    (2.5, 2.0),             # said 0.5 s late: the five quiet samples before it (2.05-2.45 s) are the stop's
    (3.5, round(60 / 35, 2)),   # said 1.5 s late: back to 2.5 s only (STOP_SAID_LATE); 2.05-2.45 s stay, read 0
])
def test_a_stop_said_late_counts_from_when_the_tree_went_quiet(tmp_path: Path, said: float, workload: float) -> None:
    # Two cores full of its work, stopped from 2.0 to 4.0 s of a 5 s run; the recorder said so
    # at SAID. Counted: 20 samples before 2.0 and 10 after 4.0 at 2 cores, and the quiet ones not
    # taken for the stop at 0: 30 x 2 / 30 = 2.0, or 30 x 2 / 35 = 1.71.
    shape = Shape(2, 5.0, every_core(2, 100.0), [("train", 1, "main", 0.0, 5.0)],
                  workload=lambda t: 0.0 if 2.0 <= t < 4.0 else 200.0, stopped=[(said, 4.0)])
    assert analysis.run_figures(shape.run(tmp_path / "run.jsonl")).verdict.figures["workload_cores"] == workload


def test_the_busiest_core_from_bytes_reads_as_from_floats_missing_readings_and_all():
    """Each sample's busiest core, averaged: 30 of (10, -, 30); none of (-, -, -), left out;
    0 of (0, -, -), a reading, not a missing one; 100 of (100, 99, -). Over all four: (30 + 0 +
    100) / 3; without the last: 15. The per-core bytes (255: missing) and the floats agree."""
    from devicewatch.analysis.verdicts import _busiest_core_mean
    from devicewatch.runformat.percent import MISSING_PERCENT

    nan = float("nan")
    cpu = np.array([[10, nan, 30], [nan, nan, nan], [0, nan, nan], [100, 99, nan]])
    percent = np.where(np.isnan(cpu), MISSING_PERCENT, np.nan_to_num(cpu)).astype(np.uint8)
    none = np.zeros(0)
    for bytes_ in (None, percent):
        s = analysis.Series(np.arange(4.0), cpu, none, none, none, none, none, none, [], [], none, none, bytes_)
        assert _busiest_core_mean(s, np.ones(4, bool)) == pytest.approx(130 / 3)
        assert _busiest_core_mean(s, np.array([True, True, True, False])) == pytest.approx(15.0)
    assert percent.tolist()[1] == [MISSING_PERCENT] * 3   # the bytes were read, not shifted in place
