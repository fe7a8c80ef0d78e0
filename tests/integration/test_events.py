"""devicewatch.events: a no-op outside devicewatch, JSON lines on the FIFO inside, stdlib only."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, devicewatch


def run_python(code, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    env.pop("DEVICEWATCH_EVENTS", None) if not env_extra else None
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_events_do_nothing_outside_devicewatch():
    result = run_python("""
        from devicewatch import events
        assert not events.enabled()
        with events.phase("train", epoch=1):
            events.epoch_metrics(1, loss=float("nan"))
        events.result("x", ms=1.0)
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_events_without_a_reader_do_not_block_or_fail(tmp_path):
    fifo = tmp_path / "events"
    os.mkfifo(fifo)  # nobody reads it: opening for writing fails at once, events turn off
    result = run_python("""
        from devicewatch import events
        events.marker("x")
        print(events.enabled())
    """, {"DEVICEWATCH_EVENTS": str(fifo)})
    assert result.returncode == 0 and result.stdout.strip() == "False"


def test_non_json_values_are_sent_as_valid_json(tmp_path):
    work = tmp_path / "w.py"
    work.write_text(textwrap.dedent("""
        from devicewatch import events
        import numpy as np
        events.epoch_metrics(1, loss=float("nan"), acc=np.float32(0.5), steps=np.int64(7), when=object)
        events.result("huge", blob="x" * 10_000)
    """))
    out = tmp_path / "r.jsonl"
    assert devicewatch("--record", str(out), "--quiet", "--", sys.executable, str(work)).returncode == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    (epoch,) = [r for r in lines if r.get("kind") == "epoch"]
    assert epoch["metrics"]["loss"] is None
    assert epoch["metrics"]["acc"] == 0.5 and epoch["metrics"]["steps"] == 7
    assert isinstance(epoch["metrics"]["when"], str)
    (oversize,) = [r for r in lines if r.get("kind") == "oversize"]  # over PIPE_BUF: replaced, not torn
    assert oversize["of"] == "result"


def test_a_torchrun_rank_says_who_it_is_in_every_event_and_the_clock_pairs_are_written(tmp_path):
    work = tmp_path / "w.py"
    work.write_text(textwrap.dedent("""
        import os
        from devicewatch import events
        with events.phase("train", epoch=1):
            os.environ["RANK"] = "9"   # read once: a later change does not relabel the process
        events.marker("done", rank=5)  # a field the script sets itself wins
    """))
    out = tmp_path / "r.jsonl"
    torchrun_env = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "GROUP_RANK": "1",
                    "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "none"}
    plain_env = {k: v for k, v in os.environ.items() if k not in torchrun_env and k != "DEVICEWATCH_EVENTS"}

    def record(path, env):
        return subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(path), "--quiet", "--",
                               sys.executable, str(work)], cwd=ROOT, env=dict(env, PYTHONPATH=str(ROOT)),
                              capture_output=True, text=True, timeout=120)

    result = record(out, dict(plain_env, **torchrun_env))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    begin, end, marker = [r for r in lines if r["type"] == "event"]
    who = {"rank": 3, "local_rank": 1, "world_size": 4, "group_rank": 1, "job": "10.0.0.1:29500"}
    assert {k: begin.get(k) for k in who} == who and {k: end.get(k) for k in who} == who
    assert marker["rank"] == 5 and marker["group_rank"] == 1
    header, last = lines[0], lines[-1]
    # t = mono - the header's mono; the end pair is read after every other record
    assert last["t"] == pytest.approx(last["clock"]["mono"] - header["clock"]["mono"], abs=1e-4)
    assert last["clock"]["unix"] - header["clock"]["unix"] == pytest.approx(last["t"], abs=0.05)
    alone = tmp_path / "alone.jsonl"
    assert record(alone, plain_env).returncode == 0
    events = [json.loads(line) for line in alone.read_text().splitlines() if '"event"' in line]
    assert "rank" not in events[0] and "job" not in events[0]


def _modules_outside_the_ui() -> list[str]:
    """Every module of devicewatch but the dashboard and the framework callbacks (which import
    their framework on purpose); the command line is included: it may load the UI only when
    a dashboard command runs."""
    import pkgutil

    import devicewatch

    names = ["devicewatch"] + [m.name for m in pkgutil.walk_packages(devicewatch.__path__, "devicewatch.")]
    return [n for n in names if not n.startswith(("devicewatch.tui", "devicewatch.integrations.", "devicewatch.__main__"))]


CORE_MODULES = _modules_outside_the_ui()


def test_the_core_imports_neither_textual_nor_a_framework():
    result = run_python(f"""
        import importlib, sys
        for name in {CORE_MODULES!r}:
            importlib.import_module(name)
        from devicewatch import registry
        for name in registry.available():
            registry.get(name)  # describing a workload must not import its framework
        banned = [m for m in ("textual", "torch", "tensorflow", "keras", "numba", "pynvml") if m in sys.modules]
        print(banned)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_events_imports_only_the_standard_library():
    result = run_python("""
        import sys
        before = set(sys.modules)
        import devicewatch.events
        new = set(sys.modules) - before
        foreign = sorted(m for m in new if m.split(".")[0] not in sys.stdlib_module_names
                         and m.split(".")[0] != "devicewatch")
        print(foreign)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.slow
def test_keras_callback_reports_train_and_validate_phases(tmp_path):
    work = tmp_path / "fit.py"
    work.write_text(textwrap.dedent("""
        import os
        os.environ["KERAS_BACKEND"] = "torch"
        import numpy as np, keras
        from devicewatch.integrations.keras import DevicewatchCallback
        x = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
        y = (x[:, 0] > 0).astype("float32")
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, activation="sigmoid")])
        model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
        model.fit(x, y, epochs=2, batch_size=32, validation_split=0.25, verbose=2,
                  callbacks=[DevicewatchCallback()])
    """))
    out = tmp_path / "r.jsonl"
    result = devicewatch("--record", str(out), "--quiet", "--", sys.executable, str(work), timeout=300)
    assert result.returncode == 0, result.stderr
    from devicewatch import analysis
    from devicewatch.runformat.runfile import load

    run = load(out)
    phases = [(p.name, p.epoch) for p in analysis.phases(run)]
    assert phases == [("train", 1), ("validate", 1), ("train", 2), ("validate", 2)]
    rows = analysis.epochs(run, analysis.phases(run))
    assert {"loss", "val_loss", "accuracy"} <= set(rows[0].metrics.names())
