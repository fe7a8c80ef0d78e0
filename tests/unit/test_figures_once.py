"""A run's figures are made once (``analysis.run_figures``) and rendered as given: each step of
the chain (series, phases, epoch rows and each row, data wait, verdict, stragglers, advice) is
built exactly once per run by ``report --json``, ``report`` with its chart, ``export --format
svg`` and ``compare --text A B``; and the dashboard's advice is worked out from the figures its
verdict was judged on, never again from the whole run.

The steps are counted as tests/count_builds does it by hand: each is wrapped with a counter
wherever a devicewatch module holds it, and each call is keyed by what it was built from (the
run, or the list it was handed), so a step built twice for one run shows as a count of 2.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, command, write_run
from devicewatch import analysis
from devicewatch.runformat import runfile

FIXTURES = ROOT / "tests" / "fixtures"
SERIAL = FIXTURES / "pipeline-serial.jsonl"          # 20 epochs, one node
OVERLAPPED = FIXTURES / "pipeline-overlapped.jsonl"
GPU = FIXTURES / "gpu-synthetic.jsonl"               # a GPU: the verdict looks at its dips too
JOB = FIXTURES / "job-stragglers.jsonl"              # two nodes merged: each judged on its own

# module: the steps it defines, as count_builds wraps them
STEPS = {
    "devicewatch.analysis.utilization": ["series", "phase_utilization"],
    "devicewatch.analysis.pairing": ["phases"],
    "devicewatch.analysis.epoch_rows": ["epochs", "data_wait", "_epoch_row"],
    "devicewatch.analysis.verdicts": ["verdict"],
    "devicewatch.analysis.stragglers": ["stragglers"],
    "devicewatch.analysis.advice": ["baseline", "considered", "shown"],
}
ONCE = ["series", "phase_utilization", "phases", "epochs", "data_wait", "verdict", "stragglers", "baseline",
        "considered"]


class Builds:
    """The calls of each step, keyed by the step and what it was built from."""

    def __init__(self) -> None:
        self.calls: collections.Counter[tuple[str, int]] = collections.Counter()
        self.kept: list[Any] = []   # what calls were keyed by, kept alive so that no id is reused

    def count(self, step: str, first: Any) -> None:
        self.kept.append(first)
        self.calls[(step, id(first))] += 1

    def from_(self, step: str, first: Any) -> int:
        """The builds of STEP from FIRST."""
        return self.calls[(step, id(first))]

    def of(self, step: str) -> list[int]:
        """The number of builds of STEP from each thing it was built from."""
        return [n for (name, _), n in self.calls.items() if name == step]


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Builds]:
    found = Builds()
    for modname, names in STEPS.items():
        module = importlib.import_module(modname)
        for name in names:
            original = getattr(module, name)

            def counted(*args: Any, _step: str = name, _original: Any = original, **kwargs: Any) -> Any:
                found.count(_step, args[0] if args else None)
                return _original(*args, **kwargs)

            functools.update_wrapper(counted, original)
            for held in list(sys.modules.values()):
                if getattr(held, "__name__", "").startswith("devicewatch") and getattr(held, name, None) is original:
                    monkeypatch.setattr(held, name, counted)
    yield found


def run_quietly(name: str, *argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command(name, list(argv)) == 0
    return out.getvalue()


def epoch_count(path: Path) -> int:
    run = runfile.load(path)
    return len({p.epoch for p in analysis.phases(run) if p.epoch is not None})


@pytest.mark.parametrize("argv", [["--json"], ["--chart", "--width", "100"]], ids=["json", "text"])
@pytest.mark.parametrize("path", [SERIAL, GPU], ids=["serial", "gpu"])
def test_report_builds_each_figure_once(builds: Builds, path: Path, argv: list[str]) -> None:
    rows = epoch_count(path)   # counted before the counters are on (the fixture wraps as the test starts)
    builds.calls.clear()
    run_quietly("report", str(path), *argv)
    for step in ONCE:
        assert builds.of(step) == [1], (step, builds.of(step))
    # each epoch row built once: one per epoch of the run, and no more
    assert len(builds.of("_epoch_row")) == rows > 1 and sum(builds.of("_epoch_row")) == rows


def test_export_svg_builds_each_figure_once(builds: Builds, tmp_path: Path) -> None:
    builds.calls.clear()
    run_quietly("export", str(SERIAL), "--format", "svg", "-o", str(tmp_path / "run.svg"))
    assert (tmp_path / "run.svg").read_text().startswith("<svg")
    for step in ONCE:
        assert builds.of(step) == [1], (step, builds.of(step))


def test_compare_builds_each_figure_once_per_run(builds: Builds) -> None:
    builds.calls.clear()
    run_quietly("compare", str(SERIAL), str(OVERLAPPED), "--text")
    for step in ONCE:
        assert builds.of(step) == [1, 1], (step, builds.of(step))   # A's once, B's once


def test_a_merged_run_builds_each_nodes_figures_once_and_the_jobs_once(builds: Builds) -> None:
    builds.calls.clear()
    run_quietly("report", str(JOB), "--json")
    # the job's series, phases, rows and wait, and each of its two nodes' own
    for step in ("series", "phases", "epochs", "data_wait"):
        assert builds.of(step) == [1, 1, 1], (step, builds.of(step))
    # a verdict per node (the job's is theirs joined); the stragglers and advice the job's
    assert builds.of("verdict") == [1, 1]
    for step in ("stragglers", "phase_utilization", "baseline", "considered"):
        assert builds.of(step) == [1], (step, builds.of(step))


def instrumented_run(path: Path) -> runfile.Run:
    """Two epochs of a training loop the zero-code instrumentation saw (its ``setup`` event: a
    DataLoader without workers), waiting on its data 2.2 s of epoch 1 and 0.5 s of epoch 2."""
    records: list[dict[str, Any]] = [{"type": "sample", "t": round(0.1 * i, 1), "cpu": [60.0, 20.0],
                                      "cpu_total": 40.0} for i in range(1, 51)]
    records.append({"type": "event", "t": 0.0, "kind": "instrument", "state": "setup", "pid": 1,
                    "loader": {"num_workers": 0, "persistent_workers": False, "pin_memory": False}, "threads": 2})
    for epoch, (start, wait, end) in {1: (0.0, 2.2, 2.5), 2: (2.5, 0.5, 5.0)}.items():
        records += [{"type": "event", "t": t, "kind": kind, "name": name, "epoch": epoch, "lane": "main",
                     "pid": 1, "source": "auto"}
                    for t, kind, name in ((start, "phase_begin", "train"), (start, "phase_begin", "data"),
                                          (start + wait, "phase_end", "data"), (end - 0.2, "phase_end", "train"),
                                          (end - 0.2, "phase_begin", "validate"), (end, "phase_end", "validate"))]
        records.append({"type": "event", "t": end, "kind": "epoch", "epoch": epoch, "source": "auto", "pid": 1,
                        "metrics": {"data_wait_s": wait, "steps": 100}})
    records.sort(key=lambda r: r["t"])
    return runfile.load(write_run(path, records, header={"instrument": {"offered": True}}))


def test_the_dashboards_advice_reads_the_figures_its_verdict_was_judged_on(builds: Builds, tmp_path: Path) -> None:
    from devicewatch.live.model import RunModel

    run = instrumented_run(tmp_path / "run.jsonl")
    model = RunModel(run)
    builds.calls.clear()
    assert model.refresh_verdict(force=True)
    # advice there is (the loop waited on a DataLoader without workers), worked out here, once
    assert model.advice and model.advice[0].knob == "num_workers", model.advice
    assert builds.of("baseline") == [1] and builds.of("considered") == [1] and builds.of("shown") == [1]
    # and nothing was built again from the run: its series, phases and rows are the model's
    # own, kept up to date as records come (an epoch's rows from its phases alone)
    for step in ("series", "phases", "epochs"):
        assert builds.from_(step, run) == 0, (step, builds.calls)
    # the one data wait the verdict was handed, the advice's too
    assert builds.of("data_wait") == [1]
    # what it advises is what report advises from the finished run's figures
    assert [a.to_json() for a in model.advice] == [a.to_json() for a in analysis.run_figures(run).advice]
