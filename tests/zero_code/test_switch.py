"""Whether the instrumentation is offered, the environment that offers it, the event budget of
one process, and the start-up file's constants against the package's."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from devicewatch import events
from devicewatch.integrations import zero_code
from devicewatch.integrations.zero_code import instrument
from devicewatch.integrations.zero_code.process_state import EVENT_BURST, EVENT_RATE, Voice
from devicewatch.loop_figures import UnitFigures

STARTUP = Path(zero_code.STARTUP_DIR)


@pytest.mark.parametrize("command, flags", [
    (["python", "train.py", "-I"], ""),                    # after the script: the script's own
    (["python3.11", "-u", "-I", "train.py"], "uI"),
    (["/usr/bin/python3", "-IS", "x.py"], "IS"),
    (["python", "-W", "ignore", "-E", "x.py"], "WE"),      # -W takes the next word
    (["python", "-Wignore", "-S"], "WS"),
    (["python", "-c", "-I"], "c"),                          # -c: the rest is the program's
    (["python", "-m", "torch.distributed.run", "-S"], "m"),
    (["pypy3", "-E", "x.py"], "E"),
    (["torchrun", "-I"], ""),                               # not an interpreter
    (["bash", "-c", "python -I x.py"], ""),
])
def test_python_flags(command, flags):
    assert zero_code.python_flags(command) == flags


def test_offered_and_why_not():
    assert zero_code.offered(["python", "x.py"], {}) == {"offered": True}
    assert zero_code.offered(["sleep", "1"], {}) == {"offered": True}  # its Python children would be
    assert zero_code.offered(["python", "x.py"], {}, enabled=False) == \
        {"offered": False, "reason": "switched off by --no-instrument"}
    assert zero_code.offered(["python", "x.py"], {"DEVICEWATCH_INSTRUMENT": "Off"}) == \
        {"offered": False, "reason": "switched off by DEVICEWATCH_INSTRUMENT=Off"}
    assert zero_code.offered(["python", "x.py"], {"DEVICEWATCH_INSTRUMENT": "1"}) == {"offered": True}
    why = zero_code.offered(["python", "-I", "x.py"], {})
    assert why["offered"] is False and "-I" in why["reason"]


def test_environment_puts_the_startup_folder_first_and_keeps_the_rest():
    env, info = zero_code.environment(["python", "x.py"], {"PYTHONPATH": "/a:/b", "HOME": "/h"})
    assert info == {"offered": True}
    assert env == {"PYTHONPATH": f"{STARTUP}{os.pathsep}/a:/b", "HOME": "/h",
                   zero_code.WATCHED_VAR: ",".join(f"{m}={f}" for m, f in instrument.WATCHED.items())}
    env, _ = zero_code.environment(["python", "x.py"], {"PYTHONPATH": ""})
    assert env["PYTHONPATH"] == str(STARTUP)  # no empty entry: it would mean the current directory
    given = {"PYTHONPATH": "/a"}
    env, info = zero_code.environment(["python", "-S", "x.py"], given)
    assert env == given and info["offered"] is False


def test_the_startup_folder_holds_only_the_sitecustomize():
    # Its own bytecode aside: an interpreter writing it beside the source (Python 2) or in
    # __pycache__ shadows nothing.
    assert sorted(p.name for p in STARTUP.iterdir()
                  if p.name not in ("__pycache__", "sitecustomize.pyc")) == ["sitecustomize.py"]


def test_the_startup_file_agrees_with_the_package():
    """It cannot import them (that would cost every process): the same values, spelled twice.
    The frameworks it watches it is handed (``zero_code.WATCHED_VAR``): none spelled in it."""
    tree = ast.parse((STARTUP / "sitecustomize.py").read_text())
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
              and node.targets[0].id in ("_WATCHED_VAR", "_EVENTS_VAR", "_SWITCH_VAR", "_SWITCHED_OFF")}
    assert values["_WATCHED_VAR"] == zero_code.WATCHED_VAR
    assert values["_EVENTS_VAR"] == events.ENV_VAR
    assert values["_SWITCH_VAR"] == zero_code.SWITCH_VAR
    assert values["_SWITCHED_OFF"] == zero_code.SWITCHED_OFF
    assert not [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in instrument.WATCHED]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_voice_stays_within_fifty_events_in_any_second_and_keeps_phases_whole():
    sent: list[tuple[str, dict]] = []
    sent_at: list[float] = []
    clock = Clock()
    announced = []

    def emit(kind: str, **fields: object) -> None:
        sent.append((kind, fields))
        sent_at.append(clock.now)

    voice = Voice(emit, clock, lambda: announced.append(1))
    # a pathological loop: a train/validate flip and a visible wait every millisecond for 3 s
    for i in range(3000):
        clock.now = i / 1000
        voice.phase("begin", "train", 1, "main", clock.now)
        voice.data_phase(clock.now, clock.now + 0.0005, 1, "main")
        voice.phase("end", "train", 1, "main", clock.now + 0.0009)
        voice.epoch(1, UnitFigures(1))
    assert announced == [1]  # before the first event, once
    for i, start in enumerate(sent_at):  # any second, from any event on
        assert sum(1 for t in sent_at[i:] if t < start + 1.0) <= 50
    assert len(sent) <= EVENT_BURST + EVENT_RATE * 3 + 1  # one end may borrow past the bound
    begins = [(f["name"], f["mono"]) for k, f in sent if k == events.PHASE_BEGIN]
    ends = [(f["name"], f["mono"]) for k, f in sent if k == events.PHASE_END]
    assert len(begins) == len(ends)  # no phase begun and never ended, none ended unbegun
    assert all(f["source"] == "auto" for _, f in sent)
    voice.say_left_out()
    kind, fields = sent[-1]
    assert kind == events.INSTRUMENT and fields["state"] == "bounded"
    assert fields["left_out"] == 3000 * 5 - (len(sent) - 1)  # each round: begin, data (2), end, epoch


def test_the_instrumentation_imports_no_framework_until_one_is_armed():
    """What the sitecustomize loads on a framework's import must not pull in another one."""
    import subprocess
    import sys

    code = ("import sys; import devicewatch.integrations.zero_code.instrument, devicewatch.integrations.zero_code.process_state, "
            "devicewatch.integrations.zero_code.torch_hooks, devicewatch.integrations.zero_code.framework_hooks, "
            "devicewatch.integrations.lightning_base; "
            "print(sorted(m for m in ('torch', 'lightning', 'pytorch_lightning', 'keras', 'tensorflow', "
            "'transformers', 'numpy') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "DEVICEWATCH_EVENTS"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_no_instrument_reaches_the_recorder_and_the_dashboard():
    from devicewatch import cli

    _, args = cli.parse(["--no-instrument", "--record", "x.jsonl", "--", "python", "x.py"])
    assert args.no_instrument is True
    _, args = cli.parse(["--record", "x.jsonl", "--", "python", "x.py", "--no-instrument"])
    assert args.no_instrument is False and args.target[-1] == "--no-instrument"  # the script's own
    module, args = cli.parse(["run", "--no-instrument", "--", "python", "x.py"])
    assert module.NAME == "run" and args.no_instrument is True
    _, args = cli.parse(["run", "--", "python", "x.py"])
    assert args.no_instrument is False
    assert "--no-instrument" in cli.help_text()
