"""The table of frameworks is the one source: the arming, the measured check and the not-active
text read its rows, so a new framework is one row and one hooks module."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devicewatch.integrations.zero_code import frameworks, instrument, process_state
from devicewatch.integrations.zero_code.frameworks import FIT, FRAMEWORKS, LOOP, NONE, Framework
from devicewatch.recorder import instrumentation

ROOT = Path(__file__).resolve().parents[2]


def test_every_row_is_whole_and_its_hooks_module_has_on_import():
    names = [row.name for row in FRAMEWORKS]
    assert len(set(names)) == len(names)
    modules = [module for row in FRAMEWORKS for module in row.modules]
    assert len(set(modules)) == len(modules), "a module arms one framework"
    for row in FRAMEWORKS:
        assert row.measures in (LOOP, FIT, NONE)
        assert set(row.completing) <= set(row.modules)
        hooks = importlib.import_module(f"devicewatch.integrations.zero_code.{row.hooks}")
        assert callable(hooks.on_import), row.hooks
        assert all(instrument.WATCHED[module] == row.name for module in row.modules)
        assert instrument.BY_NAME[row.name] is row


# A framework devicewatch does not know, added as one row and one hooks module (a stand-in
# module: the input of the test), then armed by instrument.arm as sitecustomize would arm it.
NEW_FRAMEWORK = """
import json, sys, types
from devicewatch.integrations.zero_code import frameworks, instrument, process_state

calls = []
hooks = types.ModuleType("devicewatch.integrations.zero_code.toy_hooks")
hooks.on_import = lambda framework, name, module, process: calls.append([framework, name, module.__name__])
sys.modules[hooks.__name__] = hooks
row = frameworks.Framework("toy", "Toy", ("toy", "toy.trainer"), "toy_hooks", measures=frameworks.LOOP,
                           completing=("toy.trainer",))
for module in row.modules:
    frameworks.WATCHED[module] = row.name
frameworks.BY_NAME[row.name] = row
instrument.arm("toy", types.ModuleType("toy"))
instrument.arm("toy.trainer", types.ModuleType("toy.trainer"))
instrument.arm("unwatched", types.ModuleType("unwatched"))
print(json.dumps({"calls": calls, "armed": process_state.PROCESS.armed,
                  "errors": sorted(process_state.PROCESS.errors), "measured": process_state._measured()}))
"""


def test_a_new_row_and_its_hooks_module_are_armed_and_measured():
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-c", NEW_FRAMEWORK], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["calls"] == [["toy", "toy", "toy"], ["toy", "toy.trainer", "toy.trainer"]]
    assert out["armed"] == ["toy"], "a completing module is not said as an arming of its own"
    assert out["errors"] == []
    assert out["measured"] is True, "a LOOP row measures the loop"


@pytest.mark.parametrize("armed, fit_measured, measured", [
    (["torch"], None, True),
    (["lightning"], None, False),                # a callback's row measures nothing itself
    (["keras", "lightning", "transformers"], None, False),
    (["tensorflow", "keras"], lambda: True, True),
    (["tensorflow", "keras"], lambda: False, False),
    (["tensorflow", "keras"], lambda: None, False),   # no fit yet: only a LOOP row would measure
    (["tensorflow", "torch"], lambda: None, True),
    (["tensorflow", "torch"], lambda: False, False),  # the fit's answer wins
])
def test_the_measured_check_reads_each_rows_measures(monkeypatch, armed, fit_measured, measured):
    monkeypatch.setattr(process_state.PROCESS, "armed", armed)
    monkeypatch.setattr(process_state.PROCESS, "fit_measured", fit_measured)
    assert process_state._measured() is measured


def test_a_row_changes_what_the_measured_check_says(monkeypatch):
    """Which rows measure is the table's: torch's row said NONE, torch alone measures nothing."""
    torch = frameworks.BY_NAME["torch"]
    monkeypatch.setitem(frameworks.BY_NAME, "torch", Framework(torch.name, torch.title, torch.modules, torch.hooks))
    monkeypatch.setattr(process_state.PROCESS, "armed", ["torch"])
    monkeypatch.setattr(process_state.PROCESS, "fit_measured", None)
    assert process_state._measured() is False


def test_the_not_active_text_names_every_row():
    titles = [row.title for row in FRAMEWORKS]
    assert instrumentation.NOT_ACTIVE.startswith(
        f"no process of the workload imported {', '.join(titles[:-1])} or {titles[-1]} under it")
    reason = instrumentation.not_active(["torch"], 1, False)
    for row in FRAMEWORKS:
        if row.training is not None:
            what, whom = row.training
            assert f"no {what} of" in reason and whom in reason, row.name


# What each row's hooks take for training, as the not-active text says it: rows that take the
# same thing are said together, in the table's order.
TRAINING_STEPS = ("no optimizer step or backward pass of torch, no fit of Lightning, Keras or the Trainer, "
                  "no GradientTape gradient or optimizer step of TensorFlow")


def test_the_not_active_text_says_each_rows_training_byte_for_byte():
    assert frameworks.training_steps() == TRAINING_STEPS
    assert instrumentation.not_active(["tensorflow"], 1, False) == (
        f"tensorflow imported in 1 process, but its hooks saw no training step ({TRAINING_STEPS})")
    assert instrumentation.NOT_ACTIVE == (
        "no process of the workload imported torch, Lightning, Keras, TensorFlow or transformers under it: "
        "not Python, or Python started without site or PYTHONPATH")


def test_the_not_active_text_of_a_new_row_comes_from_its_row(monkeypatch):
    row = Framework("toy", "Toy", ("toy",), "toy_hooks", training=("toy step", "Toy"))
    monkeypatch.setattr(frameworks, "FRAMEWORKS", FRAMEWORKS + (row,))
    assert frameworks.titles().endswith(", transformers or Toy")
    reason = instrumentation.not_active(["toy"], 2, True)
    assert reason == (f"toy imported in 2 processes, but its hooks saw no training step ({TRAINING_STEPS}, "
                      f"no toy step of Toy){instrumentation.FROM_OUTPUT}")
    # a row that takes what another takes is said with it
    monkeypatch.setattr(frameworks, "FRAMEWORKS", FRAMEWORKS + (row, Framework("twin", "Twin", ("twin",), "toy_hooks",
                                                                               training=("fit", "Twin"))))
    assert "no fit of Lightning, Keras, the Trainer or Twin, " in frameworks.training_steps()


def test_the_startup_file_watches_the_tables_modules():
    import ast

    tree = ast.parse((ROOT / "devicewatch/integrations/zero_code/startup/sitecustomize.py").read_text())
    watched = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                   and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "_WATCHED")
    assert sorted(watched) == sorted(module for row in FRAMEWORKS for module in row.modules)
