"""What the instrumentation must never do: change a script's output or exit status, hide a
user's own sitecustomize, run where it was switched off, or need devicewatch installed in the
workload's interpreter. Real processes throughout: the start-up folder on PYTHONPATH and a FIFO
read the way the recorder reads it, or the recorder itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from devicewatch.runformat.header import Instrument
from devicewatch import analysis
from devicewatch.runformat import runfile
from devicewatch.integrations import zero_code
from devicewatch.integrations.zero_code.frameworks import FRAMEWORKS

from conftest import ROOT
from test_scripts import run_devicewatch

SCRIPTS = Path(__file__).parent / "scripts"
BASE_PYTHON = Path("/root/.pyenv/versions/3.11.7/bin/python3")   # an interpreter without devicewatch
OLD_PYTHONS = [Path(f"/root/.pyenv/versions/{v}/bin/python") for v in ("2.7.18", "3.6.15")]
PY39 = Path("/root/.pyenv/versions/3.9.18/bin/python")


def run_instrumented(tmp_path: Path, command: list[str], extra_env: dict[str, str] | None = None,
                     offered: bool = True, timeout: float = 120) -> tuple[subprocess.CompletedProcess[bytes], list[dict]]:
    """COMMAND with the environment a recorder gives it (OFFERED: the start-up folder on
    PYTHONPATH) and a FIFO for its events; returns its raw output and the events it sent."""
    fifo = tmp_path / "events"
    if not fifo.exists():
        os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEVICEWATCH_EVENTS")}
    env.update(extra_env or {})
    env["DEVICEWATCH_EVENTS"] = str(fifo)
    if offered:
        env, _ = zero_code.environment(command, env)
    received: list[bytes] = []
    read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(fifo, os.O_WRONLY)  # as the recorder does: no EOF before the workload is done

    def drain() -> None:
        os.set_blocking(read_fd, True)
        while chunk := os.read(read_fd, 1 << 16):
            received.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, timeout=timeout)
    finally:
        os.close(keep)
        reader.join(timeout=10)
        os.close(read_fd)
    lines = b"".join(received).decode().splitlines()
    return result, [json.loads(line) for line in lines if line]


def run_plain(tmp_path: Path, command: list[str], extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEVICEWATCH_EVENTS")}
    env.update(extra_env or {})
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, timeout=120)


@pytest.mark.slow
def test_output_and_results_are_byte_for_byte_the_same(tmp_path):
    command = [sys.executable, str(SCRIPTS / "tiny_loop.py")]
    plain = run_plain(tmp_path, command)
    instrumented, sent = run_instrumented(tmp_path, command)
    assert plain.returncode == instrumented.returncode == 0, instrumented.stderr[-2000:]
    assert instrumented.stdout == plain.stdout and instrumented.stderr == plain.stderr
    assert b"weights" in plain.stdout
    kinds = [(e["kind"], e.get("name"), e.get("epoch")) for e in sent if e["kind"] in ("phase_begin", "epoch")]
    assert kinds == [("phase_begin", "train", 1), ("epoch", None, 1), ("phase_begin", "validate", 1),
                     ("phase_begin", "train", 2), ("epoch", None, 2), ("phase_begin", "validate", 2)]


@pytest.mark.slow
def test_a_hook_that_fails_is_reported_once_and_the_script_goes_on_unchanged(tmp_path):
    command = [sys.executable, str(SCRIPTS / "hidden_parameters.py")]
    plain = run_plain(tmp_path, command)
    instrumented, sent = run_instrumented(tmp_path, command)
    assert plain.returncode == instrumented.returncode == 0
    assert (instrumented.stdout, instrumented.stderr) == (plain.stdout, plain.stderr)
    errors = [e for e in sent if e["kind"] == "instrument" and e["state"] == "error"]
    assert len(errors) == 1
    assert errors[0]["framework"] == "torch"
    assert "counted train" in errors[0]["detail"] and "parameters are private" in errors[0]["detail"]
    # the other hooks go on: the optimizer's steps of both epochs (4 each) are still counted,
    # though without model.eval() to go by the loop sees one stretch of training
    assert [(e["epoch"], e["metrics"]["steps"]) for e in sent if e["kind"] == "epoch"] == [(1, 8)]


@pytest.mark.slow
def test_a_users_own_sitecustomize_still_runs(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(
        "import os, sys\nopen(os.environ['MARK'], 'w').write(repr(sys.path[:2]))\n")
    mark = tmp_path / "mark"
    command = [sys.executable, str(SCRIPTS / "tiny_loop.py")]
    result, sent = run_instrumented(tmp_path, command, {"PYTHONPATH": str(theirs), "MARK": str(mark)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert mark.exists()  # their side effect happened ...
    assert zero_code.STARTUP_DIR not in mark.read_text()  # ... with our folder already off sys.path
    assert any(e["kind"] == "phase_begin" for e in sent)  # and ours armed too


def test_a_failing_sitecustomize_of_the_users_fails_as_it_would_without_devicewatch(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("raise ValueError('broken site')\n")
    command = [sys.executable, "-c", "print('ran')"]
    plain = run_plain(tmp_path, command, {"PYTHONPATH": str(theirs)})
    instrumented, sent = run_instrumented(tmp_path, command, {"PYTHONPATH": str(theirs)})
    assert b"broken site" in plain.stderr
    assert (instrumented.returncode, instrumented.stdout, instrumented.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)
    assert sent == []


def test_a_python_process_that_imports_no_framework_sends_nothing(tmp_path):
    result, sent = run_instrumented(tmp_path, [sys.executable, "-c", "import json, sys; print(sys.path[0] == '')"])
    assert result.stdout == b"True\n" and sent == []


@pytest.mark.parametrize("python", OLD_PYTHONS, ids=lambda p: p.parent.parent.name)
def test_old_pythons_run_unchanged_and_still_run_the_users_sitecustomize(tmp_path, python):
    if not python.exists():
        pytest.skip(f"{python} is not installed")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import sys\nsys.stdout.write('their site\\n')\n")
    command = [str(python), "-c", "import sys; print(sys.version_info[:2])"]
    plain = run_plain(tmp_path, command, {"PYTHONPATH": str(theirs)})
    instrumented, sent = run_instrumented(tmp_path, command, {"PYTHONPATH": str(theirs)})
    assert plain.stdout.startswith(b"their site\n")
    assert (instrumented.returncode, instrumented.stdout, instrumented.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)
    assert sent == []


def test_the_instrumentation_modules_load_on_python_3_9():
    """The oldest interpreter it arms on: its modules must parse and import there (no torch here)."""
    if not PY39.exists():
        pytest.skip(f"{PY39} is not installed")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import devicewatch.integrations.zero_code.instrument as i, "
            "devicewatch.integrations.zero_code.torch_hooks, devicewatch.integrations.zero_code.framework_hooks; "
            "print(sorted(set(i.WATCHED.values())))")
    result = subprocess.run([str(PY39), "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    # every framework of the table is armed there too
    assert result.stdout.strip() == str(sorted({row.name for row in FRAMEWORKS}))


@pytest.mark.slow
def test_an_interpreter_without_devicewatch_still_sends_its_events(tmp_path):
    """A user's own environment: torch importable (a .pth naming the torch install), devicewatch not."""
    if not BASE_PYTHON.exists():
        pytest.skip(f"{BASE_PYTHON} is not installed")
    venv = tmp_path / "users-env"
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    import torch

    torch_home = Path(torch.__file__).resolve().parent.parent
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "frameworks.pth").write_text(f"{torch_home}\n")
    python = str(venv / "bin" / "python")
    check = run_plain(tmp_path, [python, "-c", "import torch, devicewatch"])
    assert b"No module named 'devicewatch'" in check.stderr  # torch is there, devicewatch is not
    out = tmp_path / "run.jsonl"
    result = subprocess.run([sys.executable, "-m", "devicewatch", "--record", str(out), "--quiet", "--",
                             python, str(SCRIPTS / "tiny_loop.py")],
                            cwd=ROOT, env={k: v for k, v in os.environ.items()
                                           if k not in ("PYTHONPATH", "DEVICEWATCH_EVENTS")},
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    run = runfile.load(out)
    assert [e["state"] for e in run.events if e["kind"] == "instrument"] == ["loaded", "armed", "setup"]
    assert [(e["name"], e["epoch"]) for e in run.events if e["kind"] == "phase_begin"] == \
        [("train", 1), ("validate", 1), ("train", 2), ("validate", 2)]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["option", "variable"])
def test_switched_off_nothing_is_sent_and_the_header_says_why(tmp_path, how):
    out = tmp_path / "run.jsonl"
    args = ["--record", str(out), "--quiet"] + (["--no-instrument"] if how == "option" else [])
    env = {"DEVICEWATCH_INSTRUMENT": "0"} if how == "variable" else {}
    result = run_devicewatch([*args, "--", sys.executable, str(SCRIPTS / "tiny_loop.py")], tmp_path, env)
    assert result.returncode == 0, result.stderr
    run = runfile.load(out)
    assert not list(run.events)  # the same script sends phases when instrumented (above)
    assert "done" in [log.line for log in run.logs]  # it ran to its end
    reason = run.header.instrument.reason
    assert run.header.instrument.offered is False
    assert reason == ("switched off by --no-instrument" if how == "option" else
                      "switched off by DEVICEWATCH_INSTRUMENT=0")


def test_python_run_isolated_is_not_instrumented_and_runs_as_before(tmp_path):
    out = tmp_path / "run.jsonl"
    code = "import sys; print(sys.flags.isolated, any('startup' in p for p in sys.path))"
    result = run_devicewatch(["--record", str(out), "--quiet", "--", sys.executable, "-I", "-c", code], tmp_path)
    assert result.returncode == 0, result.stderr
    run = runfile.load(out)
    assert [log.line for log in run.logs] == ["1 False"]
    reason = "the command runs Python with -I (isolated mode ignores PYTHONPATH)"
    assert run.header.instrument == Instrument(offered=False, reason=reason)
    assert run.end.instrument == {"active": False, "reason": reason}
    assert not list(run.events)


def test_a_workload_that_is_not_python_runs_as_before(tmp_path):
    out = tmp_path / "run.jsonl"
    result = run_devicewatch(["--record", str(out), "--quiet", "--", "sh", "-c", "echo not python"], tmp_path)
    assert result.returncode == 0, result.stderr
    run = runfile.load(out)
    assert run.end.status == "ok" and [log.line for log in run.logs] == ["not python"]
    # offered (a shell may start Python), but nothing ran it: no instrument event says "loaded",
    # and the end record says why nothing was instrumented
    assert run.header.instrument == Instrument(offered=True)
    assert not list(run.events)
    assert run.end.instrument["active"] is False and "not Python" in run.end.instrument["reason"]
    assert analysis.instrumentation_text(run).startswith("not active: no process of the workload imported")


@pytest.mark.slow
def test_a_script_that_sends_its_own_phases_gets_no_second_set(tmp_path):
    result, sent = run_instrumented(tmp_path, [sys.executable, str(SCRIPTS / "declared_phases.py")],
                                    {"PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-2000:]
    phases = [(e["name"], e["epoch"], e.get("source")) for e in sent if e["kind"] == "phase_begin"]
    assert phases == [("train", 1, None), ("validate", 1, None), ("train", 2, None), ("validate", 2, None)]
