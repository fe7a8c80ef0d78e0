"""The trained model loaded back from a checkpoint is the trained model, a frozen teacher is
not: ``scripts/teacher_and_checkpoint.py`` recorded unmodified, its teacher of another class
and of the student's own, both built, loaded and frozen before training and put in
``eval()`` after the student's ``train()`` at every epoch's start, and the best checkpoint
``torch.load``-ed and tested after the last epoch."""

from __future__ import annotations

import sys

import pytest

from devicewatch import analysis
from devicewatch.runformat import runfile

from test_scripts import SCRIPTS, record

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("teacher", ["other", "same"])
def test_a_teachers_eval_is_no_validation_and_a_checkpoint_loaded_back_is_tested(tmp_path, teacher):
    out, report = record(tmp_path, sys.executable, str(SCRIPTS / "teacher_and_checkpoint.py"), teacher)
    rows = report["epochs"]
    assert [(row["epoch"], row["unit"], row["metrics"]["steps"]) for row in rows] == \
        [(1, "epoch", 8), (2, "epoch", 8), (3, "epoch", 8)]
    run = runfile.load(out)
    # every phase was kept: none left out by the instrumentation's event bound
    assert not [e for e in run.events.of("instrument") if e.get("state") == "bounded"]
    validations = [p.epoch for p in analysis.phases(run) if p.name == "validate"]
    # one an epoch (a teacher's eval() counted would add one before each epoch's first step:
    # in no unit before the first, in the epoch before it after), and the test of the
    # checkpoint loaded back in the last
    assert validations == [1, 2, 3, 3]
