"""Training scripts written the way users write them (``shapes/``), each recorded unmodified
(``devicewatch --record F --quiet -- python script.py``) and its reading compared with the
truth written beside it (``shapes/truths.py``): the unit (epoch or segment), how many, the
optimizer steps and validate phases of each, the data wait and, where certain, the verdict.

A failure lists every field devicewatch read differently from the truth: the suite is meant
to fail where devicewatch reads a shape wrong.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile

from conftest import ROOT, devicewatch


def _load_truths():
    path = Path(__file__).parent / "shapes" / "truths.py"
    spec = importlib.util.spec_from_file_location("zero_code_shape_truths", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


truths = _load_truths()
CASES = truths.CASES
NOT_MEASURED = truths.NOT_MEASURED

pytestmark = pytest.mark.slow

RECORD_TIMEOUT = 110  # each case runs in well under a minute; this only catches a hang


def record(tmp_path: Path, command: list[str], env: dict[str, str]) -> tuple[Path, dict, float]:
    """Record COMMAND in TMP_PATH (where frameworks leave their logs and outputs), then read
    its report as a user would; also the recording's wall time."""
    out = tmp_path / "run.jsonl"
    full = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    full.update(PYTHONPATH=str(ROOT), **env)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(out), "--quiet", "--", *command],
                            cwd=tmp_path, env=full, capture_output=True, text=True, timeout=RECORD_TIMEOUT)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-3000:]
    report = devicewatch("report", str(out), "--json")
    assert report.returncode == 0, report.stderr
    return out, json.loads(report.stdout), elapsed


def data_wait_read(report: dict) -> float | str | None:
    """The run's data wait as the report gives it: its share of the training loops, or
    NOT_MEASURED when the report says it was not measured (None when it says neither)."""
    wait = report.get("data_wait")
    if wait and wait.get("share") is not None:
        return wait["share"]
    unmeasured = report.get("data_wait_unmeasured")
    if unmeasured and NOT_MEASURED in (unmeasured.get("text") or ""):
        return NOT_MEASURED
    return None


def data_wait_matches(case, read: float | str | None) -> bool:
    if case.data_wait == NOT_MEASURED:
        return read == NOT_MEASURED
    if read == NOT_MEASURED:
        return case.wait_may_be_unmeasured
    low, high = case.data_wait
    return isinstance(read, (int, float)) and low <= read <= high


def last_lane_to_finish(phases: list, epoch: int) -> str | None:
    """The lane whose work (any phase but a wait) in EPOCH ends last."""
    ends = {}
    for p in phases:
        if p.epoch == epoch and p.name != "wait" and p.end is not None:
            ends[p.lane] = max(ends.get(p.lane, p.end), p.end)
    return max(ends, key=ends.get) if ends else None


def compare(case, report: dict, phases: list) -> list[tuple[str, Any, Any, bool]]:
    """(field, devicewatch read, truth, whether they agree) for every field of the truth."""
    rows = report["epochs"]
    numbers = list(range(1, max(len(rows), case.units) + 1))
    checks: list[tuple[str, Any, Any, bool | None]] = [
        ("unit", sorted({row.get("unit") for row in rows}, key=str), [case.unit], None),
        ("units", len(rows), case.units, None),
        ("unit numbers", [row["epoch"] for row in rows], list(range(1, case.units + 1)), None),
        ("units without training", [row["epoch"] for row in rows if not row["train"] > 0], [], None),
        ("steps per unit", [row["metrics"].get("steps") for row in rows], list(case.steps), None),
        ("validations per unit",
         [sum(1 for p in phases if p.name == "validate" and p.epoch == n) for n in numbers],
         list(case.validations) + [0] * (len(numbers) - case.units), None),
    ]
    read_wait = data_wait_read(report)
    checks.append(("data wait", read_wait, case.data_wait, data_wait_matches(case, read_wait)))
    if case.verdict is not None:
        checks.append(("verdict", report["verdict"]["label"], case.verdict, None))
    if case.lanes is not None:
        expected_epochs = list(range(1, case.units + 1))
        checks += [
            ("lanes", sorted(report.get("lanes") or []), sorted(case.lanes), None),
            ("epochs trained per lane",
             {lane: sorted({p.epoch for p in phases if p.lane == lane and p.name == "train"},
                           key=lambda e: (e is None, e or 0))
              for lane in sorted({p.lane for p in phases})},
             {lane: expected_epochs for lane in case.lanes}, None),
            ("lanes that validate", sorted({p.lane for p in phases if p.name == "validate"}),
             [case.lanes[0]], None),
        ]
    if case.last_rank is not None:
        checks += [
            ("last rank per epoch (report's stragglers)",
             [s.get("last_rank") for s in report.get("stragglers", [])], list(case.last_rank), None),
            ("last lane to finish per epoch (phases)",
             [last_lane_to_finish(phases, n) for n in range(1, case.units + 1)],
             [f"rank {r}" for r in case.last_rank], None),
        ]
    return [(name, read, truth, ok if ok is not None else read == truth) for name, read, truth, ok in checks]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_devicewatch_reads_the_shape(case, tmp_path):
    if case.script.startswith(("hf_", "accelerate")):
        pytest.importorskip("transformers" if case.script.startswith("hf_") else "accelerate")
    if case.script.startswith("lightning"):
        pytest.importorskip("lightning")
    if case.script.startswith(("keras", "tf_")):
        pytest.importorskip("tensorflow")
        pytest.importorskip("keras")
    out, report, elapsed = record(tmp_path, case.command(), case.environment())
    phases = analysis.phases(runfile.load(out))
    checks = compare(case, report, phases)
    print(f"{case.id}: recorded in {elapsed:.1f} s; verdict {report['verdict']['label']!r}")
    for name, read, truth, ok in checks:
        print(f"  {'ok   ' if ok else 'WRONG'} {name}: read {read!r}, truth {truth!r}")
    wrong = "\n".join(f"  {name}: devicewatch read {read!r}, truth {truth!r}"
                      for name, read, truth, ok in checks if not ok)
    assert not wrong, f"{case.id} ({case.note}), recorded in {elapsed:.1f} s:\n{wrong}"
