"""Every sentence that counts cores adds up, for each kind of limit (none, a CPU quota, a cpuset,
an affinity) on a small and a big machine: the verdict's, the advice's, report's, compare's
load line, demo's, try's and the limit over a run. Each is rendered over literal figures, its
numbers are parsed back, and what they say is checked: what other programs took is counted of
the machine's cores (never of the allowed ones), what the workload used of those it may use,
what it can get and what the others took together fit on the machine, and a noun agrees with
its figure ("1 thread", "4 threads").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from devicewatch import analysis, compare
from devicewatch.analysis import advice, verdicts
from devicewatch.analysis.contention import Contention
from devicewatch.commands import demo
from devicewatch.probes.cpu_limits import CpuLimits
from devicewatch.render import report
from devicewatch.runformat.header import CpuLimitsOverRun, LimitsReading
from devicewatch.trials import TrialResult, Variant, load_moved_text


@dataclass(frozen=True)
class Limit:
    kind: str
    machine: int
    allowed: float | None            # None: every core
    limits: CpuLimits

    @property
    def limit(self) -> float:
        return self.allowed if self.allowed is not None else float(self.machine)


LIMITS = [
    Limit("none", 2, None, CpuLimits(2)),
    Limit("quota", 2, 0.5, CpuLimits(2, quota_cores=0.5)),
    Limit("cpuset", 2, 1.0, CpuLimits(2, cpuset=(0,))),
    Limit("affinity", 2, 1.0, CpuLimits(2, affinity=(0,), cpuset=(0, 1))),
    Limit("none", 64, None, CpuLimits(64)),
    Limit("quota", 64, 2.5, CpuLimits(64, quota_cores=2.5)),
    Limit("cpuset", 64, 4.0, CpuLimits(64, cpuset=(0, 1, 2, 3))),
    Limit("affinity", 64, 4.0, CpuLimits(64, affinity=(0, 1, 2, 3))),
]


@dataclass(frozen=True)
class Load:
    """What the workload and other programs did, as shares: the workload's cores are WORKLOAD of
    those it may use (at most ONE_CORE cores where given), other programs took OTHERS of what it
    left of the machine."""

    name: str
    workload: float
    others: float
    waiting: float        # cores' worth of its threads waiting for a core
    threads: int
    one_core: bool = False

    def figures(self, limit: Limit) -> tuple[float, float]:
        used = limit.limit * self.workload
        if self.one_core:
            used = min(used, 1.0)
        return used, (limit.machine - used) * self.others


LOADS = [
    Load("a 0.2-core script beside programs that fill the machine", 0.1, 0.95, 0.01, 1),
    Load("threads fighting other programs", 0.5, 0.9, 1.5, 4),
    Load("threads fighting their quota, alone", 0.99, 0.0, 1.5, 4),
    Load("alone, every core it may use full", 0.98, 0.01, 0.02, 4),
    Load("serial, a quiet machine", 1.0, 0.02, 0.0, 1, one_core=True),
    Load("serial, a busy machine", 1.0, 0.8, 0.05, 1, one_core=True),
    Load("half its cores, others beside", 0.5, 0.5, 0.1, 2),
]

CASES = [(limit, load) for limit in LIMITS for load in LOADS]
IDS = [f"{limit.kind} {limit.allowed or limit.machine} of {limit.machine}: {load.name}" for limit, load in CASES]


# -- what the sentences say, read back ------------------------------------------------------------

NUMBER = r"(\d+(?:\.\d+)?)"
USED_OF_ALLOWED = re.compile(rf"{NUMBER} of {NUMBER} cores? allowed of (\d+)")
OTHERS = re.compile(r"other programs took (?:(\d+\.\d) of (the machine's )?(\d+) cores?\b|(\d+\.\d) cores in A)")
OF_MACHINE = re.compile(rf"(?<![\d.]){NUMBER} of (?:the machine's )?(\d+) cores?\b(?! allowed)")
CAN_GET = re.compile(rf"it can get {NUMBER} of (?:{NUMBER} cores? allowed of (\d+)|(\d+) cores?)"
                     rf"(?: \(other programs took {NUMBER} of)?")
COUNTED = re.compile(rf"(?<![\d.]){NUMBER} (thread|core|worker|sample|step|persistent worker)(s?)\b")


def check(sentence: str, limit: Limit) -> None:
    """The sentence's numbers add up on LIMIT's machine."""
    said = f"{sentence!r} ({limit.kind}, {limit.allowed} of {limit.machine})"
    assert "allowed of" not in sentence or limit.allowed is not None, said
    for used, allowed, machine in USED_OF_ALLOWED.findall(sentence):
        assert limit.allowed is not None and float(allowed) == pytest.approx(limit.allowed, abs=0.05), said
        assert int(machine) == limit.machine and float(used) <= float(allowed) + 0.05, said
    took = sentence.count("other programs took")
    found = OTHERS.findall(sentence)
    assert len(found) == took, f"other programs counted of something else than the machine's cores: {said}"
    for others, machines, machine, _in_a in found:
        if others:
            assert int(machine) == limit.machine and float(others) <= limit.machine, said
            assert bool(machines) == (limit.allowed is not None), said   # "the machine's" beside a limit
    for figure, machine in OF_MACHINE.findall(sentence):
        assert int(machine) == limit.machine and float(figure) <= limit.machine + 0.05, said
    for got, allowed, machine, whole, others in CAN_GET.findall(sentence):
        assert float(got) <= (float(allowed) if allowed else float(whole)) + 0.05, said
        assert float(got) + float(others or 0.0) <= limit.machine + 0.1, said
    for number, _noun, plural in COUNTED.findall(sentence):
        assert (plural == "s") == (number != "1"), said


# -- every sentence that counts cores, over literal figures ---------------------------------------

def cpu_use(limit: Limit, load: Load, busiest: float) -> verdicts.CpuUse:
    used, others = load.figures(limit)
    return verdicts.CpuUse(limit.machine, (used + others) / limit.machine * 100.0, busiest, used,
                           limit.allowed, others)


def verdict_sentences(limit: Limit, load: Load) -> list[str]:
    used, others = load.figures(limit)
    lanes = [verdicts.LaneUse(0.0, {}, {}),
             verdicts.LaneUse(0.3, {"train": 0.95, "validate": 0.3}, {"train": ["train"], "validate": ["validate"]})]
    out = []
    for busiest in (100.0, 60.0):
        cpu = cpu_use(limit, load, busiest)
        out.append(cpu.busy_text())
        out += [verdicts._cpu_verdict(cpu, lane, {}).text for lane in lanes]
        shared = Contention(limit.machine, limit.limit, used, others, 0.0, load.waiting, float(load.threads))
        if shared.wanted is not None and shared.wanted > 0:
            out.append(verdicts._contended(shared, cpu, {}).text)
    return out


def baseline(limit: Limit, load: Load, **changes: Any) -> advice.Baseline:
    used, others = load.figures(limit)
    fields: dict[str, Any] = dict(
        steps_per_s=10.0, data_wait_share=0.5, cores=limit.machine, workload_cores=used, machine_cores=used + others,
        loading_cores=1.0, loader={"num_workers": 0}, threads=load.threads, tf_data=None, gpus=0, instrumented=True,
        allowed_cores=limit.allowed, others_cores=others, waiting_cores=load.waiting)
    fields.update(changes)
    return advice.Baseline(**fields)


def advice_sentences(limit: Limit, load: Load, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    used, others = load.figures(limit)
    figures = {"cores": limit.machine, "cores_busy": round(used + others, 2), "workload_cores": round(used, 2),
               "others_cores": round(others, 2)}
    if limit.allowed is not None:
        figures["allowed_cores"] = limit.allowed
    out = []
    shapes = [("contended", {}), ("contended", {"threads": 1}), ("single-core-bound", {"data_wait_share": 0.0}),
              ("partly parallel", {"data_wait_share": 0.0, "threads": 1}), ("CPU-bound", {"data_wait_share": 0.0}),
              ("input-bound", {}), ("input-bound", {"loader": {"num_workers": 2}}),
              ("input-bound", {"loader": {"num_workers": 8}}),
              ("input-bound", {"loader": {"num_workers": 8, "persistent_workers": True}}),
              ("input-bound", {"loader": {"num_workers": 1}, "restarts": 1.0, "loader_wait_share": 0.4}),
              ("input-bound", {"loader": None, "tf_data": {"sequential_maps": 1}})]
    for label, changes in shapes:
        b = baseline(limit, load, **changes)
        given, held = advice.considered(None, b, verdicts.Verdict(label, "", dict(figures)))  # type: ignore[arg-type]
        out += [advice.text(a) for a in given + held]
    return out


def view_sentences(limit: Limit, load: Load) -> list[str]:
    used, others = load.figures(limit)
    figures: dict[str, Any] = {"cores": limit.machine, "others_cores": others, "waiting_cores": load.waiting}
    if limit.allowed is not None:
        figures["allowed_cores"] = limit.allowed
    out = [report._shared_text(figures) or "", "other programs took " + (demo._others_text(
        verdicts.Verdict("x", "", figures)) or "0.0 of 2 cores")]
    if others >= 0.25:   # the demo says nothing of less
        out[-1] = "other programs took " + (demo._others_text(verdicts.Verdict("x", "", figures)) or "")
    else:
        out.pop()
    gap = compare.load_gap(0.0, others, limit.limit, 10.0, 15.0, used, machine=limit.machine)
    if gap is not None:
        out.append(gap.line() or "")
    trials = [TrialResult(Variant(None, None), "a", "trial", steps_per_s=10.0, cores_busy=used, others_cores=0.0,
                          allowed_cores=limit.limit, machine_cores=limit.machine),
              TrialResult(Variant("threads", 1), "b", "trial", steps_per_s=6.0, cores_busy=used, others_cores=others,
                          allowed_cores=limit.limit, machine_cores=limit.machine, waiting_cores=load.waiting)]
    out.append(load_moved_text(trials) or "")
    changed = CpuLimitsOverRun((LimitsReading(0.0, CpuLimits(limit.machine)), LimitsReading(9.0, limit.limits)))
    out.append(analysis.limits_text(changed, 10.0) or "")
    out.append(analysis.limits_text(CpuLimitsOverRun((LimitsReading(0.0, limit.limits),)), 10.0) or "")
    return [s for s in out if s]


@pytest.mark.parametrize(("limit", "load"), CASES, ids=IDS)
def test_every_sentence_that_counts_cores_adds_up(limit: Limit, load: Load, monkeypatch: pytest.MonkeyPatch) -> None:
    sentences = verdict_sentences(limit, load) + advice_sentences(limit, load, monkeypatch) + view_sentences(limit, load)
    assert len(sentences) >= 15
    for sentence in sentences:
        check(sentence, limit)


# -- the checker catches what was said before ----------------------------------------------------

@pytest.mark.parametrize("wrong", [
    "other programs took 1.6 of 0.5 cores allowed of 2",
    "it can get 1 of 0.5 cores allowed of 2 (other programs took 1.6 of them)",
    "it can get 1.0 of 0.5 cores allowed of 2",
    "the workload's 1 threads wanted 2.0 cores",
    "CPU-bound: the workload keeps 0.9 of 0.5 cores allowed of 2 busy",
    "other programs took 2.6 of 2 cores",
])
def test_the_check_refuses_sentences_that_do_not_add_up(wrong: str) -> None:
    with pytest.raises(AssertionError):
        check(wrong, LIMITS[1])


# -- the limit over a run -------------------------------------------------------------------------

def test_a_limit_set_for_a_second_weighs_a_second() -> None:
    # 2 cores for 9 s, then an affinity of 1 core for the last second of a 10 s run:
    # (2 x 9 + 1 x 1) / 10 = 1.9 cores as held over the run, the two readings listed.
    over = CpuLimitsOverRun((LimitsReading(0.0, CpuLimits(2)), LimitsReading(9.0, CpuLimits(2, affinity=(0,)))))
    assert analysis.time_weighted(over, 0.0, 10.0) == pytest.approx(1.9)
    assert analysis.limits_text(over, 10.0) == ("1.9 cores allowed of 2 over the run, on average "
                                                "(2 cores from 0.0 s; 1 core allowed of 2 (affinity) from 9.0 s)")
    # A limit that held throughout is its reading; none is no line.
    assert analysis.limits_text(CpuLimitsOverRun((LimitsReading(0.0, CpuLimits(2, quota_cores=0.5)),)), 10.0) \
        == "0.5 cores allowed of 2 (CPU quota)"
    assert analysis.limits_text(CpuLimitsOverRun((LimitsReading(0.0, CpuLimits(2)),)), 10.0) is None


def test_nouns_agree_with_their_figures() -> None:
    assert [analysis.counted(n, "thread") for n in (1, 4, 1.0, 0.5)] == ["1 thread", "4 threads", "1 thread",
                                                                        "0.5 threads"]
    assert analysis.Cores(2, 1.0).of() == "1 core allowed of 2" and analysis.Cores(1).of() == "1 core"
    # a limit of every core is none
    assert analysis.Cores(2, 2.0).of() == "2 cores" and not analysis.Cores(2, 2.0).limited
