"""A recording is untrusted input: generated run files whose every string is hostile.

Names, log lines, metric keys and header fields carry terminal escape sequences, control
characters, bidirectional overrides, rich/Textual markup, spreadsheet formulas and paths.
Whatever they hold, `report`, `compare` and `export` show them as text, write CSV that no
spreadsheet reads as a formula, and write files only where `-o` says.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devicewatch import analysis, compare, safe_text
from devicewatch.runformat import runfile
from devicewatch.render import export
from devicewatch.render.compare_text import comparison_text
from devicewatch.render.report import report_text

from .conftest import PY, child_env

NASTY = ["\x1b]0;owned\x07", "\x1b]52;c;ZWNobyBvd25lZA==\x07", "\x1b[2J", "\x1b[31m", "\x1bP+q\x1b\\",
         "\x9b1;1H", "\x07", "\x08", "\r", "\n", "\x00", "\x7f", "\u202e", "\u2066", "[/]", "[bold red]",
         "[link=file:///etc/passwd]x[/link]", "[@click=app.quit]", "\\", "=HYPERLINK(\"http://x\")",
         "+1+1", "-2", "@SUM(A1)", "\tx", "../../etc/x", "/tmp/x", "$(touch pwned)", "{0.__class__}"]
hostile = st.one_of(
    st.lists(st.sampled_from(NASTY) | st.text(max_size=4), min_size=1, max_size=5).map("".join),
    st.text(max_size=20))
BIDI = set("\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")


def assert_inert(text: str) -> None:
    """Nothing a terminal acts on: no control character but the line break, no bidi override."""
    bad = [ch for ch in text if ch != "\n" and (ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f or ch in BIDI)]
    assert not bad, f"control characters reach the terminal: {bad!r}"


def hostile_run(path: Path, s: list[str]) -> None:
    """A run whose strings are s[0..] in turn (cycled): workload, host, phases, metrics, logs."""
    it = iter(s * 20)
    n = lambda: next(it)  # noqa: E731
    header = {"type": "header", "format": "devicewatch-run", "schema": 1, "devicewatch": n(),
              "started": n(), "started_unix": 0.0, "interval": 0.1,
              "host": {"cpu_model": n(), "cpu_count": 2, "hostname": n(), "os": n(),
                       "gpus": [{"name": n(), "index": 0}], "gpu_reason": n()},
              "workload": {"name": n(), "args": [n()], "command": [n(), n()]}}
    records = [header, {"type": "gpu_status", "t": 0.0, "available": False, "reason": n(), "devices": 0},
               {"type": "event", "t": 0.05, "kind": "run_info", "info": {n(): n(), "epochs": 2}}]
    t = 0.0
    for epoch in (1, 2):
        for phase in (n(), "train"):
            lane = n() if epoch == 2 else "main"
            records.append({"type": "event", "t": t, "kind": "phase_begin", "name": phase, "epoch": epoch, "lane": lane})
            for _ in range(4):
                t += 0.1
                records.append({"type": "sample", "t": round(t, 3), "cpu": [30.0, 70.0], "cpu_total": 50.0,
                                "proc": {"cpu": 90.0, "rss": 1000, "threads": 3, "count": 1}})
            records.append({"type": "event", "t": t, "kind": "phase_end", "name": phase, "epoch": epoch, "lane": lane})
        records.append({"type": "event", "t": t, "kind": "epoch_metrics", "epoch": epoch, "metrics": {n(): 0.5, n(): n()}})
        records.append({"type": "log", "t": t, "stream": "stdout", "line": n()})
        records.append({"type": "notice", "t": t, "level": "warning", "message": n()})
    records.append({"type": "event", "t": t, "kind": "result", "name": n(), "values": {n(): 1.5}})
    records.append({"type": "event", "t": t, "kind": "marker", "label": n()})
    records.append({"type": "end", "t": t, "status": n(), "exit_code": 0, "signal": n(), "duration": t, "reason": n()})
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(strings=st.lists(hostile, min_size=3, max_size=12))
def test_report_and_compare_show_hostile_strings_as_text(tmp_path, strings):
    path = tmp_path / "hostile.jsonl"
    hostile_run(path, strings)
    run = runfile.load(path)
    assert_inert(report_text(analysis.run_figures(run), chart=True))
    other = runfile.load(path)
    assert_inert(comparison_text(compare.comparison(run, other)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(strings=st.lists(hostile, min_size=3, max_size=12))
def test_export_writes_no_formula_and_only_where_told(tmp_path, strings):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    for old in work.iterdir():
        old.unlink()
    path = work / "hostile.jsonl"
    hostile_run(path, strings)
    run = runfile.load(path)
    written = export.write_csv(analysis.run_figures(run), str(work / "out"))
    (work / "out.json").write_text(json.dumps(export.perfetto(analysis.run_figures(run))))
    (work / "out.svg").write_text(export.svg(analysis.run_figures(run)))
    expected = {"hostile.jsonl", "out_samples.csv", "out_epochs.csv", "out_phases.csv", "out.json", "out.svg"}
    assert {p.name for p in work.iterdir()} == expected
    assert sorted(os.path.basename(p) for p in written) == sorted(expected & {n for n in expected if n.endswith(".csv")})
    for name in written:
        with open(name, newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or _number(cell), cell


def _number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def test_real_commands_on_a_hostile_file(tmp_path):
    """The same through the command line, as a user would meet it."""
    path = tmp_path / "hostile.jsonl"
    hostile_run(path, NASTY)
    out = tmp_path / "exported"
    out.mkdir()
    env = child_env()
    for argv in (["report", str(path), "--chart"], ["compare", str(path), str(path), "--text"],
                 ["export", str(path), "--format", "csv", "-o", str(out / "x")],
                 ["export", str(path), "--format", "svg", "-o", str(out / "x.svg")]):
        done = subprocess.run([PY, "-m", "devicewatch", *argv], env=env, capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stderr)
        assert "Traceback" not in done.stderr
        assert_inert(done.stdout)
        assert_inert(done.stderr)
    assert sorted(p.name for p in out.iterdir()) == ["x.svg", "x_epochs.csv", "x_phases.csv", "x_samples.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exported", "hostile.jsonl"]


def test_inert_examples():
    """Exact outputs for the sequences that matter most."""
    assert safe_text.inert("a\x1b]0;title\x07b") == "ab"
    assert safe_text.inert("a\x1b[2Jb\x07") == "ab\\x07"
    assert safe_text.inert("x\u202ey") == "x\\u202ey"
    assert safe_text.inert("one\ntwo") == "one\\x0atwo"
    assert safe_text.inert("one\ntwo", newlines=True) == "one\ntwo"
    assert safe_text.markup("[bold]x[/]") == "\\[bold]x\\[/]"
    assert safe_text.csv_cell("=1+1") == "'=1+1" and safe_text.csv_cell(-1.5) == -1.5
