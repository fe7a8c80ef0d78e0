"""Training scripts whose input does not arrive through a DataLoader read on the training thread
(``round3/``: a queue filled by a thread, ``next(iter(loader))`` per step, a generator,
``itertools.cycle``, a loader built anew each epoch, a shard loaded per step, a sampler that
never runs out, HF ``evaluate()`` after ``train()``, an evaluation before training), and public
training scripts fetched unmodified, each recorded unmodified with
``devicewatch --record F --quiet -- python script.py`` and its report compared with the truth.

A script of round3/ measures its own truth in the same run and prints it as its last line,
``DEVICEWATCH-TRUTH {json}``: the unit (an epoch where the pass's iterator runs out, else
segments between evaluations), how many, the optimizer steps and evaluations in each, and the
share of its training loop spent fetching its batches, timed around the fetch with
``time.perf_counter()`` (evaluation left out). A public script cannot print its truth: its
truth is written in its row, worked out from its code (``public/*.md`` shows the work).
Their code is not kept here: fetch each at the commit its ``public/NAME.md`` names into
``$DEVICEWATCH_PUBLIC_SCRIPTS/NAME/`` (the layout of the source's folder, with the data named
there); their rows are skipped, with that reason, where it is not set.

Counts must be exact, the wait share within ``share_tolerance`` (10 points), and a run whose
truth waits half its loop or more must be called input-bound. A failure lists every field read
differently. A row devicewatch reads wrong today is marked xfail (strict) with what it reads,
so the mark must go once it reads right.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile

from conftest import ROOT, devicewatch

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ROUND3 = HERE / "round3"
# public scripts, fetched as public/*.md say; their rows run only where they are
PUBLIC = Path(os.environ.get("DEVICEWATCH_PUBLIC_SCRIPTS", HERE / "public" / "not-fetched"))
WLM = PUBLIC / "word_language_model"
TRUTH_PREFIX = "DEVICEWATCH-TRUTH "
INPUT_BOUND_TRUTH = 0.5      # a truth at or over this share must be read input-bound
RECORD_TIMEOUT = 120         # each script runs in seconds; this only catches a hang

BASE_ENV = {
    "OMP_NUM_THREADS": "1",         # one thread keeps a tiny model's time steady on a shared machine
    "HF_HUB_OFFLINE": "1",          # no network: every model is built from a config
    "TRANSFORMERS_OFFLINE": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


@dataclass(frozen=True)
class Row:
    id: str
    script: Path
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    # a public script's truth, worked out from its code (or from the count it prints itself);
    # a wait_share of None: where the code does not tell the share, it is not compared
    truth: dict[str, Any] | Callable[[str], dict[str, Any]] | None = None
    share_tolerance: float = 0.10
    needs: tuple[str, ...] = ()             # modules the script imports beyond torch
    xfail: str | None = None                # what devicewatch reads today, where it reads wrong

    def param(self) -> Any:
        marks = [pytest.mark.xfail(strict=True, reason=self.xfail)] if self.xfail else []
        if self.script.is_relative_to(PUBLIC) and not self.script.exists():
            marks = [pytest.mark.skip(reason=f"public script not fetched: see tests/zero_code/public/"
                                             f"{self.script.relative_to(PUBLIC).parts[0]}.md and set "
                                             f"DEVICEWATCH_PUBLIC_SCRIPTS")]
        return pytest.param(self, id=self.id, marks=marks)


ROWS = [
    Row("prefetch_thread", ROUND3 / "prefetch_thread.py"),
    Row("next_iter", ROUND3 / "next_iter.py"),
    Row("generator_batches", ROUND3 / "generator_batches.py"),
    Row("cycle_steps", ROUND3 / "cycle_steps.py"),
    Row("loader_per_epoch", ROUND3 / "loader_per_epoch.py"),
    Row("shard_per_step", ROUND3 / "shard_per_step.py"),
    Row("infinite_sampler", ROUND3 / "infinite_sampler.py"),
    Row("hf_evaluate_after_train", ROUND3 / "hf_evaluate_after_train.py", needs=("transformers",)),
    Row("eval_at_step0", ROUND3 / "eval_at_step0.py"),
    # pytorch/examples word_language_model: 20,897 training tokens / batch 20 = 1,044 rows, cut
    # every bptt 35 from row 0 to 1,042: 30 batches an epoch, each one backward pass and a weight
    # update by hand; evaluate(val_data) after each epoch, evaluate(test_data) once after the
    # last; get_batch slices a tensor already in memory (no wait worth a share)
    Row("word_language_model", WLM / "main.py",
        args=("--data", str(WLM / "data" / "wikitext-2"), "--epochs", "3", "--emsize", "32", "--nhid", "32",
              "--log-interval", "10"),
        truth={"unit": "epoch", "units": 3, "steps": [30, 30, 30], "validations": [1, 1, 2], "wait_share": 0.0}),
    # the same script as its README trains a Transformer with AdamW: the same batches and
    # evaluations, each step an optimizer step
    Row("word_language_model_transformer", WLM / "main.py",
        args=("--data", str(WLM / "data" / "wikitext-2"), "--epochs", "3", "--emsize", "32", "--nhid", "32",
              "--log-interval", "10", "--model", "Transformer", "--use-optimizer", "--lr", "0.001"),
        truth={"unit": "epoch", "units": 3, "steps": [30, 30, 30], "validations": [1, 1, 2], "wait_share": 0.0}),
    # pytorch/examples regression: one batch a step until the loss is under 1e-3, no evaluation,
    # no checkpoint, nothing logged until the end: one segment of the steps it prints it took
    Row("regression", PUBLIC / "regression" / "main.py", truth=lambda output: {
        "unit": "segment", "units": 1, "steps": [int(re.search(r"after (\d+) batches", output).group(1))],
        "validations": [0], "wait_share": None}),
    # keras examples/demo_subclass.py: fit on 50,000 random rows, validation_split 0.2: 40,000 /
    # batch 32 = 1,250 steps an epoch, 6 epochs, each validated on the other 10,000
    Row("keras_demo_subclass", PUBLIC / "keras_demo_subclass" / "demo_subclass.py", needs=("tensorflow", "keras"),
        truth={"unit": "epoch", "units": 6, "steps": [1250] * 6, "validations": [1] * 6, "wait_share": None}),
]


def record(tmp_path: Path, row: Row) -> tuple[Path, dict[str, Any], str, float]:
    """Record ROW's script in TMP_PATH as a user would, then read its report; also the
    script's output and the recording's wall time."""
    out = tmp_path / "run.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env.update(PYTHONPATH=str(ROOT), **BASE_ENV, **row.env)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(out), "--quiet", "--",
                             sys.executable, str(row.script), *row.args],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RECORD_TIMEOUT)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-3000:]
    report = devicewatch("report", str(out), "--json")
    assert report.returncode == 0, report.stderr
    return out, json.loads(report.stdout), result.stdout, elapsed


def printed_truth(output: str) -> dict[str, Any]:
    """The last truth line the script printed."""
    lines = output.splitlines()
    truths = [line.split(TRUTH_PREFIX, 1)[1] for line in lines if TRUTH_PREFIX in line]
    assert truths, "the script printed no truth line"
    return json.loads(truths[-1])


def wait_share_read(report: dict[str, Any]) -> float | str | None:
    """The report's data wait as a share of the training loop, or its text where it gives none."""
    wait = report.get("data_wait")
    if wait and wait.get("share") is not None:
        return float(wait["share"])
    unmeasured = report.get("data_wait_unmeasured")
    return (unmeasured or {}).get("text") or None


def compare(row: Row, truth: dict[str, Any], report: dict[str, Any],
            phases: list[Any]) -> list[tuple[str, Any, Any, bool]]:
    """(field, devicewatch read, truth, whether they agree) for every field of the truth."""
    rows = report["epochs"]
    units = int(truth["units"])
    numbers = list(range(1, max(len(rows), units) + 1))
    validations = [sum(1 for p in phases if p.name == "validate" and p.epoch == n) for n in numbers]
    checks: list[tuple[str, Any, Any, bool]] = [
        ("unit", sorted({str(r.get("unit")) for r in rows}), [truth["unit"]]),
        ("units", len(rows), units),
        ("unit numbers", [r["epoch"] for r in rows], list(range(1, units + 1))),
        ("units without training", [r["epoch"] for r in rows if not r["train"] > 0], []),
        ("steps per unit", [r["metrics"].get("steps") for r in rows], list(truth["steps"])),
        ("validations per unit", validations, list(truth["validations"]) + [0] * (len(numbers) - units)),
        # an evaluation before any training step is seen, in no unit; every other one is in a unit
        ("validations in no unit", sum(1 for p in phases if p.name == "validate") - sum(validations),
         int(truth.get("validations_before_training", 0))),
    ]
    checks = [(name, read, want, read == want) for name, read, want in checks]
    if truth["wait_share"] is None:
        return checks
    share, read = float(truth["wait_share"]), wait_share_read(report)
    checks.append(("wait share", read, share,
                   isinstance(read, float) and abs(read - share) <= row.share_tolerance))
    if share >= INPUT_BOUND_TRUTH:
        label = report["verdict"]["label"]
        checks.append(("verdict", label, "input-bound", label == "input-bound"))
    return checks


@pytest.mark.parametrize("row", [row.param() for row in ROWS])
def test_devicewatch_reads_the_script(row: Row, tmp_path: Path) -> None:
    for module in row.needs:
        pytest.importorskip(module)
    out, report, stdout, elapsed = record(tmp_path, row)
    run = runfile.load(out)
    output = "\n".join(log.line for log in run.logs) + "\n" + stdout
    truth = printed_truth(output) if row.truth is None else row.truth(output) if callable(row.truth) else row.truth
    checks = compare(row, truth, report, analysis.phases(run))
    print(f"{row.id}: recorded in {elapsed:.1f} s; verdict {report['verdict']['label']!r}; truth {truth}")
    for name, read, want, ok in checks:
        print(f"  {'ok   ' if ok else 'WRONG'} {name}: read {read!r}, truth {want!r}")
    wrong = "\n".join(f"  {name}: devicewatch read {read!r}, truth {want!r}"
                      for name, read, want, ok in checks if not ok)
    assert not wrong, f"{row.id}, recorded in {elapsed:.1f} s:\n{wrong}"
