"""The headless summary and `report`: fitted to the terminal, and short for a run that failed early."""

from __future__ import annotations

import sys

from devicewatch import analysis, runfile
from devicewatch.render.report import report_text
from tests.conftest import ROOT, devicewatch, write_run

FIXTURE = ROOT / "tests" / "fixtures" / "demo-cpu.jsonl"


def test_at_100_columns_no_line_is_wider_and_no_header_is_cut():
    text = report_text(runfile.load(FIXTURE), width=100)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "…" not in text


def test_epochs_count_every_named_phase(tmp_path):
    """A data phase is its own column, not "other": 1 s data + 2 s train + 0.5 s validate + 0.5 s in none."""
    events = []
    for name, start, end in (("data", 0.0, 1.0), ("train", 1.0, 3.0), ("validate", 3.0, 3.5)):
        events += [{"type": "event", "t": start, "kind": "phase_begin", "name": name, "epoch": 1, "lane": "main"},
                   {"type": "event", "t": end, "kind": "phase_end", "name": name, "epoch": 1, "lane": "main"}]
    events.append({"type": "event", "t": 4.0, "kind": "marker", "label": "x"})
    events += [{"type": "event", "t": 3.9, "kind": "phase_begin", "name": "copy", "epoch": 1, "lane": "main"},
               {"type": "event", "t": 4.0, "kind": "phase_end", "name": "copy", "epoch": 1, "lane": "main"}]
    run = runfile.load(write_run(tmp_path / "r.jsonl", events))
    (row,) = analysis.epochs(run)
    assert list(row.phases) == ["data", "train", "validate", "copy"]
    assert [round(v, 9) for v in row.phases.values()] == [1.0, 2.0, 0.5, 0.1]
    assert abs(row.untracked - 0.4) < 1e-9
    assert abs(row.other - 1.5) < 1e-9  # the old key stays: total - train - validate
    summary = analysis.summarize(run)
    assert list(summary["epochs"][0]["phase_seconds"]) == ["data", "train", "validate", "copy"]
    text = report_text(run, width=100)
    header = next(line for line in text.splitlines() if "epoch" in line and "total" in line)
    assert [w for w in header.replace("┃", " ").split()] == ["epoch", "total", "data", "train", "validate",
                                                             "copy", "no", "phase"]


def test_a_run_that_fails_before_its_first_phase_prints_its_error_first_and_no_tables(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    record = tmp_path / "r.jsonl"
    script = "import sys; print('boom: no such data file', file=sys.stderr); sys.exit(3)"
    proc = devicewatch("--record", str(record), "--gpu", "off", "--", sys.executable, "-c", script)
    assert proc.returncode == 3
    summary = proc.stdout.strip().splitlines()
    assert summary[0] == "error: boom: no such data file"
    assert "failed (exit code 3)" in summary[1] and "before its first phase" in summary[1]
    assert len(summary) == 2
    report = devicewatch("report", str(record)).stdout
    assert report.splitlines()[0] == "error: boom: no such data file" and "verdict" not in report
