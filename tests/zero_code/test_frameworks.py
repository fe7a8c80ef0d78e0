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

from devicewatch.integrations import zero_code
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
from devicewatch.integrations import zero_code
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
TRAINING_STEPS = ("no optimizer step or backward pass of torch, no fit of Lightning, Keras, Keras 2 or the Trainer, "
                  "no GradientTape gradient or optimizer step of TensorFlow")


def test_the_not_active_text_says_each_rows_training_byte_for_byte():
    assert frameworks.training_steps() == TRAINING_STEPS
    assert instrumentation.not_active(["tensorflow"], 1, False) == (
        f"tensorflow imported in 1 process, but its hooks saw no training step ({TRAINING_STEPS})")
    assert instrumentation.NOT_ACTIVE == (
        "no process of the workload imported torch, Lightning, Keras, Keras 2, TensorFlow or transformers under it: "
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
    assert "no fit of Lightning, Keras, Keras 2, the Trainer or Twin, " in frameworks.training_steps()


def test_the_recorder_hands_the_startup_the_tables_modules(monkeypatch):
    def handed() -> dict[str, str]:
        env, _ = zero_code.environment(["python", "x.py"], {})
        return dict(pair.split("=") for pair in env[zero_code.WATCHED_VAR].split(","))

    assert handed() == {module: row.name for row in FRAMEWORKS for module in row.modules}
    assert handed()["pytorch_lightning"] == "lightning"
    monkeypatch.setattr(frameworks, "FRAMEWORKS", FRAMEWORKS + (TOY,))
    assert handed() == {**instrument.WATCHED, "toy": "toy", "pytorch_toy": "toy"}


# A made-up framework whose second module's name does not begin with the framework's.
TOY = Framework("toy", "Toy", ("toy", "pytorch_toy"), "toy_hooks", measures=LOOP, completing=("pytorch_toy",))

# The workload's own sitecustomize, which the start-up file runs before anything is imported:
# it adds the row and a hooks module to devicewatch in the workload's process (as a new row and
# its module would be there), or (BROKEN) keeps devicewatch from loading at all.
THEIR_SITE = """
import sys, types
from devicewatch.integrations.zero_code import frameworks
hooks = types.ModuleType("devicewatch.integrations.zero_code.toy_hooks")
def on_import(framework, name, module, process):
    module.armed_as = [framework, name]
hooks.on_import = on_import
sys.modules[hooks.__name__] = hooks
frameworks.FRAMEWORKS += (frameworks.Framework("toy", "Toy", ("toy", "pytorch_toy"), "toy_hooks",
                                               measures=frameworks.LOOP, completing=("pytorch_toy",)),)
frameworks.WATCHED.update(frameworks.watched())
frameworks.BY_NAME.update({row.name: row for row in frameworks.FRAMEWORKS})
"""
BROKEN = "import sys\nsys.modules['devicewatch'] = None\n"
TOY_SCRIPT = """
import json, sys
import toy, pytorch_toy
state = sys.modules.get("devicewatch.integrations.zero_code.process_state")
print(json.dumps({"armed": state.PROCESS.armed if state else [],
                  "as": [getattr(toy, "armed_as", None), getattr(pytorch_toy, "armed_as", None)]}))
"""


def toy_workload(tmp_path: Path, site: str) -> tuple[dict, list[dict]]:
    """The toy framework's script, run as a recorder runs a workload (the start-up folder first
    on PYTHONPATH, the environment zero_code.environment makes from the table as it is now)."""
    from test_safety import run_instrumented

    for folder, files in {"theirs": {"sitecustomize.py": site},
                          "lib": {"toy.py": "", "pytorch_toy.py": ""}}.items():
        (tmp_path / folder).mkdir(exist_ok=True)
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text)
    (tmp_path / "script.py").write_text(TOY_SCRIPT)
    path = os.pathsep.join(str(p) for p in (tmp_path / "theirs", ROOT, tmp_path / "lib"))
    result, sent = run_instrumented(tmp_path, [sys.executable, "script.py"], {"PYTHONPATH": path})
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return json.loads(result.stdout.decode().strip().splitlines()[-1]), sent


def test_the_startup_watches_a_new_row_and_names_it_in_its_errors(tmp_path, monkeypatch):
    # Not in the recorder's table: the start-up hook does not watch it, whatever the process knows.
    out, sent = toy_workload(tmp_path, THEIR_SITE)
    assert out == {"armed": [], "as": [None, None]}
    # One row more in the recorder's table: watched, armed by its hooks module as one framework.
    monkeypatch.setattr(frameworks, "FRAMEWORKS", FRAMEWORKS + (TOY,))
    out, sent = toy_workload(tmp_path, THEIR_SITE)
    assert out == {"armed": ["toy"], "as": [["toy", "toy"], ["toy", "pytorch_toy"]]}
    # devicewatch cannot be loaded in the workload: the start-up file says so under the row's
    # name, for each of its modules (not under the module's first word, "pytorch_toy")
    out, sent = toy_workload(tmp_path, BROKEN)
    assert out == {"armed": [], "as": [None, None]}
    errors = [e for e in sent if e["kind"] == "instrument"]
    assert [(e["state"], e["framework"]) for e in errors] == [("error", "toy"), ("error", "toy")]
    assert all(e["detail"].startswith("loading devicewatch: ModuleNotFoundError") for e in errors)
