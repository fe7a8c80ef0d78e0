"""Run files that are not what they claim: every command that reads one answers with one line.

Each case is tried on ``report``, ``compare`` (as file A and as file B) and ``export``, and on
``replay`` in a subprocess; a command whose module is absent from this build is skipped, by
name, until it lands. Reading never executes or evaluates the content.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devicewatch import cli
from devicewatch.runformat import runfile

from .conftest import PY, child_env

HEADER = {"type": "header", "format": "devicewatch-run", "schema": 1, "devicewatch": "0.1.0",
          "started": "2026-01-01T00:00:00+00:00", "started_unix": 0.0, "interval": 0.1,
          "host": {"cpu_model": "test", "cpu_count": 2, "gpus": []},
          "workload": {"name": "literal", "args": [], "command": ["literal"]}}


def _line(record) -> bytes:
    return json.dumps(record).encode() + b"\n"


def _good_body() -> bytes:
    lines = [_line(HEADER)]
    for i in range(20):
        lines.append(_line({"type": "sample", "t": i * 0.1, "cpu": [50.0, 10.0], "cpu_total": 30.0}))
    lines.append(_line({"type": "end", "t": 2.0, "status": "ok", "exit_code": 0, "signal": None,
                        "duration": 2.0, "reason": "the workload finished"}))
    return b"".join(lines)


BAD_FILES: dict[str, bytes | None] = {
    "missing": None,
    "directory": b"<dir>",
    "empty": b"",
    "blank lines": b"\n\n   \n",
    "binary with NUL": bytes(range(256)) * 4,
    "binary without NUL": b"\xff\xd8\xff\xe0 JFIF-like \x80\x81\x82 bytes\n\xfe\xfe",
    "foreign JSON object": b'{"name": "not a run", "values": [1, 2, 3]}\n',
    "foreign JSON list": b"[1, 2, 3]\n",
    "CSV": b"t,cpu\n0.0,12.5\n0.1,13.0\n",
    "newer schema": _line({**HEADER, "schema": 99}),
    "schema not a number": _line({**HEADER, "schema": "1"}),
    "header cut mid-line": _line(HEADER)[:40],
    "header fields of the wrong type": _line({**HEADER, "host": "a string", "workload": [1, 2],
                                               "interval": "fast"}),
    "Python literal": b"{'type': 'header', 'format': 'devicewatch-run', 'schema': 1}\n",
    "deeply nested": b"[" * 100_000 + b"]" * 100_000 + b"\n",
}


def _materialize(tmp_path: Path, name: str) -> str:
    content = BAD_FILES[name]
    path = tmp_path / "bad run.jsonl"
    if content == b"<dir>":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    return str(path)


def _good(tmp_path: Path) -> str:
    path = tmp_path / "good.jsonl"
    path.write_bytes(_good_body())
    return str(path)


def _argv(command: str, bad: str, tmp_path: Path) -> list[str]:
    if command == "report":
        return ["report", bad, "--no-chart"]
    if command == "report --json":
        return ["report", bad, "--json"]
    if command == "compare A":
        return ["compare", bad, _good(tmp_path), "--text"]
    if command == "compare B":
        return ["compare", _good(tmp_path), bad, "--text"]
    if command == "export":
        return ["export", bad, "--format", "csv", "-o", str(tmp_path / "out")]
    raise AssertionError(command)


MODULE_OF = {"compare A": "devicewatch.compare", "compare B": "devicewatch.compare",
             "export": "devicewatch.render.export", "replay": "devicewatch.tui.app"}
COMMANDS = ["report", "report --json", "compare A", "compare B", "export"]


def _needs(command: str) -> None:
    module = MODULE_OF.get(command)
    if module:
        pytest.importorskip(module, reason=f"{command.split()[0]} is not in this build yet")


def _one_error_line(code: int, err: str) -> None:
    assert code != 0
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("devicewatch: error: "), err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_in_process(case, command, tmp_path, capsys):
    _needs(command)
    bad = _materialize(tmp_path, case)
    code = cli.main(_argv(command, bad, tmp_path))
    _one_error_line(code, capsys.readouterr().err)


@pytest.mark.parametrize("case", ["missing", "empty", "binary with NUL", "foreign JSON object",
                                  "newer schema", "header fields of the wrong type"])
@pytest.mark.parametrize("command", ["report", "compare A", "export", "replay"])
def test_bad_file_real_cli(case, command, tmp_path):
    _needs(command)
    bad = _materialize(tmp_path, case)
    argv = ["replay", bad] if command == "replay" else _argv(command, bad, tmp_path)
    proc = subprocess.run([PY, "-m", "devicewatch", *argv], env=child_env(), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    _one_error_line(proc.returncode, proc.stderr)


def test_truncated_file_still_reads(tmp_path):
    """A run cut anywhere after its header loads: the cut line is flagged, the rest is kept."""
    body = _good_body()
    header_end = body.index(b"\n") + 1
    for cut in range(header_end, len(body), 97):
        path = tmp_path / "cut.jsonl"
        path.write_bytes(body[:cut])
        run = runfile.load(path)
        complete = body[:cut].count(b"\n") - 1   # whole lines after the header
        assert run.end is None and run.bad_lines == 0
        assert len(run.samples) == complete + (0 if run.cut_last_line or body[:cut].endswith(b"\n") else 1)
        if body[:cut].endswith(b"\n"):
            assert not run.cut_last_line
        assert cli.main(["report", str(path), "--no-chart"]) == 0


def test_reading_never_evaluates_content(tmp_path, capsys):
    """Strings that would run code if a reader ever eval'd, unpickled or formatted them."""
    marker = tmp_path / "evaluated"
    payload = f"__import__('os').system('touch {marker}')"
    records = [HEADER | {"workload": {"name": payload, "args": [payload], "command": [payload]}},
               {"type": "event", "t": 0.1, "kind": "phase_begin", "name": payload, "lane": "{0.__class__}"},
               {"type": "event", "t": 0.5, "kind": "phase_end", "name": payload, "lane": "{0.__class__}"},
               {"type": "log", "t": 0.2, "stream": "stdout", "line": "[red]$(touch x)[/] %s {}"},
               {"type": "sample", "t": 0.3, "cpu": [1.0, 2.0], "cpu_total": 1.5, "note": payload}]
    path = tmp_path / "evil.jsonl"
    path.write_bytes(b"".join(_line(r) for r in records) + b"cos\nsystem\n(S'touch x'\ntR.\n")
    assert cli.main(["report", str(path), "--no-chart"]) == 0
    assert cli.main(["report", str(path), "--json"]) == 0
    assert not marker.exists()
    assert runfile.load(path).bad_lines == 4   # the pickle's four lines are not records


# -- generated garbage ----------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
record_types = st.sampled_from(list(runfile.RECORD_TYPES) + ["other"])
field_names = st.sampled_from(["t", "cpu", "cpu_total", "gpus", "proc", "mem", "kind", "name", "lane",
                               "epoch", "metrics", "info", "values", "status", "exit_code", "duration",
                               "available", "reason", "message", "line", "stream", "util_samples",
                               "util", "recorder_cpu", "label", "pid", "level"])
records = st.builds(lambda kind, fields: {"type": kind, **fields}, record_types,
                    st.dictionaries(field_names, json_values, max_size=6))
headers = st.builds(lambda fields: {**HEADER, **fields},
                    st.dictionaries(st.sampled_from(["host", "workload", "interval", "started", "started_unix"]),
                                    json_values, max_size=3))
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _check_cli(tmp_path: Path, data: bytes, capsys) -> None:
    path = tmp_path / "generated.jsonl"
    path.write_bytes(data)
    for argv in (["report", str(path), "--no-chart"], ["report", str(path), "--json"]):
        code = cli.main(argv)
        captured = capsys.readouterr()
        if code != 0:
            _one_error_line(code, captured.err)
        else:
            assert captured.err == ""


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_random_bytes(tmp_path, capsys, data):
    _check_cli(tmp_path, data, capsys)


@SETTINGS
@given(header=headers, body=st.lists(records, max_size=12), cut=st.integers(min_value=0, max_value=40))
def test_valid_header_then_generated_records(tmp_path, capsys, header, body, cut):
    data = b"".join(json.dumps(r, allow_nan=True).encode() + b"\n" for r in [header, *body])
    _check_cli(tmp_path, data[: len(data) - cut], capsys)
