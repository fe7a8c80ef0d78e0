"""Arming that cannot be talked out of it: a framework is armed once its module has really run,
whatever other libraries look up first, in whatever order the script imports them, and however
(``import`` inside a function, ``importlib.import_module``, a ``.pth`` file or the environment's
own sitecustomize importing it before the instrumentation's hook exists).

Each case is a real interpreter started the way a recorder starts the workload (the start-up
folder on PYTHONPATH, an event FIFO), which then prints what the instrumentation armed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_safety import run_instrumented

pytestmark = pytest.mark.slow

# What the script prints at its end: the frameworks armed in this process, and any hook's error.
REPORT = """
import json, sys
instrument = sys.modules.get("devicewatch.integrations.zero_code.process_state")
print(json.dumps({"armed": sorted(instrument.PROCESS.armed) if instrument else [],
                  "errors": sorted(instrument.PROCESS.errors) if instrument else []}))
"""

# Imports that bring each framework in as a user's script does. transformers' Trainer and
# Keras's models load lazily: touching them is what a script that trains does.
IMPORTS = {
    "torch": "import torch",
    "lightning": "import lightning.pytorch",
    "keras": "import keras; keras.Model",
    "tensorflow": "import tensorflow as tf",
    "transformers": "import transformers; transformers.Trainer",
    "accelerate": "import accelerate",
}
ARMED = ["keras", "lightning", "tensorflow", "torch", "transformers"]   # accelerate is no framework of its own
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def armed_after(tmp_path: Path, code: str, env: dict[str, str] | None = None) -> dict:
    script = tmp_path / "script.py"
    script.write_text(code + "\n" + REPORT)
    result, _ = run_instrumented(tmp_path, [sys.executable, str(script)], {**ENV, **(env or {})}, timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("order", [list(IMPORTS), list(reversed(IMPORTS))], ids=["forward", "reverse"])
def test_every_framework_is_armed_whatever_came_first(tmp_path, order):
    """One order and its reverse: every pair of the six in both orders."""
    pytest.importorskip("tensorflow")
    pytest.importorskip("transformers")
    pytest.importorskip("lightning")
    code = "\n".join(IMPORTS[name] for name in order)
    assert armed_after(tmp_path, code) == {"armed": ARMED, "errors": []}


@pytest.mark.parametrize("first, then, armed", [
    # the usual first lines: Hugging Face before torch, TensorFlow before Keras (tf.keras)
    ("import transformers", "import torch", ["torch"]),
    ("import tensorflow as tf", "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])", ["keras", "tensorflow"]),
    # a look-up of what is installed, without importing, then the import
    ("import importlib.util; importlib.util.find_spec('torch'); importlib.util.find_spec('keras')",
     "import torch", ["torch"]),
    # inside a function, and through importlib
    ("def load():\n    import torch\n    return torch", "load()", ["torch"]),
    ("import importlib", "importlib.import_module('torch')", ["torch"]),
])
def test_the_shapes_scripts_import_in(tmp_path, first, then, armed):
    assert armed_after(tmp_path, f"{first}\n{then}")["armed"] == armed


def test_a_framework_the_environments_sitecustomize_imported_is_armed(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import torch\n")
    assert armed_after(tmp_path, "import torch", {"PYTHONPATH": str(theirs)}) == {"armed": ["torch"], "errors": []}


def test_a_framework_a_pth_file_imported_before_the_hook_existed_is_armed(tmp_path):
    """site runs the .pth files of site-packages before any sitecustomize: a user's environment
    whose .pth imports torch (as some distributions' do) has torch loaded before the hook."""
    venv = tmp_path / "users-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    import torch

    site_packages = Path(torch.__file__).resolve().parent.parent
    theirs = next((venv / "lib").glob("python3*/site-packages"))
    (theirs / "a_frameworks.pth").write_text(f"{site_packages}\n")
    (theirs / "b_early.pth").write_text("import torch\n")
    script = tmp_path / "script.py"
    script.write_text("import torch\n" + REPORT)
    result, _ = run_instrumented(tmp_path, [str(venv / "bin" / "python"), str(script)], ENV, timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert json.loads(result.stdout.decode().strip().splitlines()[-1]) == {"armed": ["torch"], "errors": []}


def test_not_active_names_what_was_found_and_never_claims_no_training(tmp_path):
    """A script that imports torch but trains outside the hooks' sight (here: none at all), and
    prints Keras-style epoch lines: the reason names torch and the epochs read from the output."""
    from devicewatch.runformat import runfile

    from test_scripts import run_devicewatch

    out = tmp_path / "run.jsonl"
    code = "import torch\nfor e in (1, 2):\n    torch.ones(3).sum()\n    print(f'Epoch {e}/2')\n"
    result = run_devicewatch(["--record", str(out), "--quiet", "--", sys.executable, "-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    reason = runfile.load(out).end.instrument["reason"]
    assert reason.startswith("torch imported in 1 process, but its hooks saw no training step")
    assert reason.endswith("the epochs were read from the workload's output instead")
    assert "no process of the workload" not in reason
