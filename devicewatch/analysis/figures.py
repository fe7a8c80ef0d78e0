"""A run's figures, made once: ``run_figures(run)`` is the one place that builds the chain
(series → phases → epoch rows → data wait → verdict, devices → stragglers → advice), each step
handed what the steps before it made. ``report`` (text and ``--json``), ``compare``,
``export`` and ``try`` render the ``RunFigures`` it returns as given; the live model builds
the same steps incrementally and hands them to ``verdict`` and ``advice.shown`` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..runformat.runfile import Run
from . import advice as advice_
from .advice import Advice, Baseline
from .epoch_rows import DataWait, EpochRow, Unmeasured, data_wait, data_wait_unmeasured, epochs, unit
from .idle import DeviceIdle, device_idle
from .pairing import Phase, phases
from .stragglers import EpochStragglers, stragglers
from .utilization import PhaseUtilization, Series, phase_utilization, series, stats
from .verdicts import Verdict, verdict
from .wording import Failure, failure


@dataclass(frozen=True)
class HostFigures:
    """One node of a merged run, judged on its own machine's samples and its own ranks' phases
    (the nodes' samples interleave in time, so dips and a verdict over all of them together
    would describe no machine)."""

    host: str
    hostname: str | None
    samples: int
    cpu_mean: float | None
    devices: list[DeviceIdle]
    verdict: Verdict
    # What they were judged on: the node's own run, series, phases and epoch rows (for views).
    run: Run = field(repr=False, compare=False)
    series: Series = field(repr=False, compare=False)
    phases: list[Phase] = field(repr=False, compare=False)
    epoch_rows: list[EpochRow] = field(repr=False, compare=False)


@dataclass(frozen=True)
class RunFigures:
    """Everything devicewatch works out of one run, once. For a merged run the devices and the
    verdict are each node's (``hosts``), joined; the rest is over every node together.
    ``advice`` is what a view shows beside the verdict (none for a run whose training loop the
    instrumentation did not see); ``advised`` and ``held_back`` are what ``try`` weighs."""

    run: Run = field(repr=False, compare=False)
    series: Series = field(repr=False, compare=False)
    phases: list[Phase]
    epoch_rows: list[EpochRow]
    unit: str
    data_wait: DataWait | None
    unmeasured: Unmeasured | None
    utilization: dict[str, PhaseUtilization]
    devices: list[DeviceIdle]
    verdict: Verdict
    hosts: list[HostFigures]
    stragglers: list[EpochStragglers]
    baseline: Baseline
    advised: list[Advice]
    held_back: list[Advice]
    failure: Failure | None

    @property
    def advice(self) -> list[Advice]:
        return self.advised if self.baseline.instrumented else []


def run_figures(run: Run) -> RunFigures:
    """RUN's figures, each step built once and handed on (module docstring)."""
    s = series(run)
    all_phases = phases(run)
    rows = epochs(run, all_phases)
    wait = data_wait(rows)
    hosts = [_host(label, run.of_host(label)) for label in run.host_labels]
    if hosts:
        devices, judged = joined(hosts)
        # The advice is for the run as a whole, judged over every node's samples together.
        whole = verdict(run, s, all_phases, rows, wait) if advice_.setup_of(run) is not None else judged
    else:
        devices, judged = device_idle(run, s, all_phases), verdict(run, s, all_phases, rows, wait)
        whole = judged
    b = advice_.baseline(run, s, all_phases, rows, wait, whole)
    advised, held = advice_.considered(run, b, whole)
    return RunFigures(
        run=run, series=s, phases=all_phases, epoch_rows=rows, unit=unit(rows), data_wait=wait,
        unmeasured=data_wait_unmeasured(run, rows, all_phases),
        utilization=phase_utilization(run, s, all_phases), devices=devices, verdict=judged, hosts=hosts,
        stragglers=stragglers(all_phases), baseline=b, advised=advised, held_back=held, failure=failure(run))


def _host(label: str, node: Run) -> HostFigures:
    """One node of a merged run, on its own samples and its own ranks' phases."""
    s = series(node)
    node_phases = phases(node)
    rows = epochs(node, node_phases)
    return HostFigures(label, node.header.host.hostname, len(node.samples), stats(s.cpu_total)["mean"],
                       device_idle(node, s, node_phases), verdict(node, s, node_phases, rows, data_wait(rows)),
                       node, s, node_phases, rows)


def joined(hosts: list[HostFigures]) -> tuple[list[DeviceIdle], Verdict]:
    """A merged run's devices, named ``node 0: GPU 0 …``, and one verdict joining its nodes'
    (label ``mixed`` where they differ)."""
    devices = [replace(d, device=f"{h.host}: {d.device}") for h in hosts for d in h.devices]
    labels = {h.verdict.label for h in hosts}
    return devices, Verdict(labels.pop() if len(labels) == 1 else "mixed",
                            "; ".join(f"{h.host}: {h.verdict.text}" for h in hosts),
                            {h.host: h.verdict.figures for h in hosts})  # type: ignore[misc]
