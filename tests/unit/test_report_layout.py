"""The headless summary, `report` and `compare --text`: fitted to the width (the terminal's, or
$COLUMNS in a pipe), no number cut, no phase repeated as a metric, and short for a run that
failed early.

tests/fixtures/pipeline-serial.jsonl and pipeline-overlapped.jsonl are the two runs of
`make demo` on a 2-core machine without a GPU, recorded with
`devicewatch --record F pipeline --variant serial|overlapped --epochs 10 --train-samples 8000
--val-samples 8000 --device auto`: ten epochs of five phases and eight metrics each.
"""

from __future__ import annotations

import sys

import pytest

from devicewatch import analysis, compare
from devicewatch.runformat import runfile
from devicewatch.render.compare_text import comparison_text
from devicewatch.render.report import report_text
from tests.conftest import ROOT, devicewatch, write_run

FIXTURE = ROOT / "tests" / "fixtures" / "demo-cpu.jsonl"
SERIAL = ROOT / "tests" / "fixtures" / "pipeline-serial.jsonl"
OVERLAPPED = ROOT / "tests" / "fixtures" / "pipeline-overlapped.jsonl"
WIDTHS = (80, 100, 200)


def table_rows(text: str, key: str) -> list[list[str]]:
    """The cells of every table row whose first cell is KEY, in the order drawn."""
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if cells[0] == key:
                rows.append(cells)
    return rows


def headers(text: str) -> list[str]:
    return [c.strip() for line in text.splitlines() if line.startswith("┃")
            for c in line.strip("┃").split("┃") if c.strip()]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_pipeline_report_fits_and_cuts_no_number(width):
    run = runfile.load(OVERLAPPED)
    text = report_text(analysis.run_figures(run), width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    # Every cell of every epoch, as the report formats it from the figures, is drawn whole
    # in one of the epoch tables (the key column repeats in each).
    summary = analysis.Summary.of(analysis.run_figures(run)).to_json()
    for row in summary["epochs"]:
        drawn = [cell for cells in table_rows(text, str(row["epoch"])) for cell in cells[1:]]
        # The data wait is the row's one data figure: the data phase's seconds are not shown beside it.
        expected = [f"{row['total']:.1f}s", *[f"{v:.1f}s" for k, v in row["phase_seconds"].items() if k != "data"],
                    f"{row['train_loop']:.1f}s", f"{row['data_wait']:.2f}s {row['loop_wait_share']:.0%}"]
        expected += [f"{v:.4g}" if isinstance(v, float) else str(v) for k, v in row["metrics"].items()
                     if not k.endswith("_s")]
        assert all(cell in drawn for cell in expected), (row["epoch"], expected, drawn)


@pytest.mark.parametrize("width", WIDTHS)
def test_no_phase_is_shown_again_as_a_metric(width):
    text = report_text(analysis.run_figures(runfile.load(OVERLAPPED)), width=width)
    shown = headers(text)
    for phase in ("train", "copy", "validate"):
        assert phase in shown and f"{phase}_s" not in shown
    # One data figure a row: the data wait, neither the data phase's seconds nor data_s beside it.
    assert shown.count("data wait") == 1 and "data" not in shown and "data_s" not in shown
    for metric in ("loss", "accuracy", "val_loss", "val_accuracy", "copy_share_pct"):
        assert shown.count(metric) == 1
    # The epoch table's 13 columns no longer fit 100 (nor 80), in one table at 200.
    assert ("Epochs, continued" in text) == (width < 200)


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_text_fits_and_says_what_became_of_the_verdict(width):
    c = compare.comparison(runfile.load(SERIAL), runfile.load(OVERLAPPED))
    text = comparison_text(c, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    assert "train_s" not in headers(text) and "data wait A → B" in headers(text)
    assert c.headline.endswith("; A: single-core-bound → B: lane-bound")
    for pair in c.epochs:
        drawn = [cell for cells in table_rows(text, str(pair.epoch)) for cell in cells[1:]]
        assert f"{pair.a.total:.2f}s" in drawn and f"{pair.b.total:.2f}s" in drawn


def test_make_demos_recordings_get_the_verdicts_of_their_shape():
    """The serial run: one core's work, its lanes taking turns. The overlapped run: the train
    lane busy throughout with validation beside it, cores to spare."""
    assert analysis.run_figures(runfile.load(SERIAL)).verdict.label == "single-core-bound"
    assert analysis.run_figures(runfile.load(OVERLAPPED)).verdict.label == "lane-bound"


@pytest.mark.parametrize("columns, limit", [("80", 80), ("", 100)])
def test_report_in_a_pipe_takes_its_width_from_columns_else_100(columns, limit, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    proc = devicewatch("report", str(OVERLAPPED))
    assert proc.returncode == 0, proc.stderr
    widths = [len(line) for line in proc.stdout.splitlines()]
    assert max(widths) <= limit and max(widths) > limit - 10   # fills the width it was given
    wide = devicewatch("report", str(OVERLAPPED), "--width", "200").stdout
    assert max(len(line) for line in wide.splitlines()) > 100


def loader_run(path, waits):
    """Two epochs as the zero-code instrumentation records them: train 0-4 s (and 5-9 s) with
    a nested visible wait, validate 4-5 s (9-10 s); ``waits`` is each epoch's data_wait_s."""
    records = [{"type": "sample", "t": 0.05 + 0.1 * k, "cpu": [50.0, 50.0], "cpu_total": 50.0} for k in range(100)]
    for e, wait in enumerate(waits, start=1):
        t0 = 5.0 * (e - 1)
        for name, start, end in (("train", t0, t0 + 4), ("data", t0, t0 + wait - 0.5), ("validate", t0 + 4, t0 + 5)):
            fields = {"type": "event", "pid": 1, "name": name, "epoch": e, "lane": "main", "source": "auto"}
            records += [{**fields, "t": start, "kind": "phase_begin"}, {**fields, "t": end, "kind": "phase_end"}]
        records.append({"type": "event", "pid": 1, "t": t0 + 5, "kind": "epoch", "epoch": e, "source": "auto",
                        "metrics": {"loss": 1.0, "data_wait_s": wait, "steps": 50, "steps_per_s": 12.5}})
    return runfile.load(write_run(path, sorted(records, key=lambda r: r["t"])))


def test_report_and_compare_show_each_epochs_data_wait(tmp_path):
    # Each epoch's loop is its train phase, 4 s (the visible wait is inside it): A waits 1 s of
    # it (25%; 20% of the 5 s epoch), B 3 s (75%; 60% of the epoch). The table's share is the
    # loop's, as the verdict's.
    a, b = loader_run(tmp_path / "a.jsonl", [1.0, 1.0]), loader_run(tmp_path / "b.jsonl", [3.0, 3.0])
    text = report_text(analysis.run_figures(b), width=80)
    assert "data wait" in headers(text) and "data_wait_s" not in headers(text)
    first = headers(text)[:4]
    assert first == ["epoch", "total", "loop", "data wait"]
    assert [rows[0][1:4] for rows in (table_rows(text, "1"), table_rows(text, "2"))] \
        == [["5.0s", "4.0s", "3.00s 75%"], ["5.0s", "4.0s", "3.00s 75%"]]
    assert "input-bound: the training loop waited on its DataLoader 75% of the time" in " ".join(text.split())
    assert "not measured" not in text
    c = compare.comparison(a, b)
    assert [(p.loop_wait_share("a"), p.loop_wait_share("b")) for p in c.epochs] == [(0.25, 0.75), (0.25, 0.75)]
    assert [(p.data_wait_share("a"), p.data_wait_share("b")) for p in c.epochs] == [(0.2, 0.6), (0.2, 0.6)]
    compared = comparison_text(c, width=200)
    assert "1.00s 25% → 3.00s 75%" in compared and "4.00s / 4.00s" in compared and "50 / 50" in compared
    # One data figure a row: the visible waits' data phase has no column of its own beside it.
    epoch_headers = [h for line in compared.splitlines() if line.startswith("┃") and "Δ total" in line
                     for h in (c.strip() for c in line.strip("┃").split("┃"))]
    assert "data wait A → B" in epoch_headers and "data" not in epoch_headers
    data = compare.to_dict(c)
    assert data["epochs"][0]["loop_wait_share"] == {"a": 0.25, "b": 0.75}
    assert data["epochs"][0]["data_wait_share"] == {"a": 0.2, "b": 0.6}
    assert data["units"] == {"a": "epoch", "b": "epoch"} and data["epochs"][0]["a"]["unit"] == "epoch"
    assert data["b"]["data_wait"] == {"seconds": 6.0, "train_loop": 8.0, "share": 0.75, "source": "metric"}
    # A's loop waits 1 of its 4 s (25%, under the 30% of input-bound), its cores at 50% with
    # none saturated: waiting.
    assert c.headline.endswith("; A: waiting → B: input-bound")


def test_at_100_columns_no_line_is_wider_and_no_header_is_cut():
    text = report_text(analysis.run_figures(runfile.load(FIXTURE)), width=100)
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
    (row,) = analysis.epochs(run, analysis.phases(run))
    assert list(row.phases) == ["data", "train", "validate", "copy"]
    assert [round(v, 9) for v in row.phases.values()] == [1.0, 2.0, 0.5, 0.1]
    assert abs(row.untracked - 0.4) < 1e-9
    assert abs(row.other - 1.5) < 1e-9  # the old key stays: total - train - validate
    summary = analysis.Summary.of(analysis.run_figures(run)).to_json()
    assert list(summary["epochs"][0]["phase_seconds"]) == ["data", "train", "validate", "copy"]
    text = report_text(analysis.run_figures(run), width=100)
    header = next(line for line in text.splitlines() if "epoch" in line and "total" in line)
    # The data phase is in the training lane: the loop is it and the train phase, 3 s, of which
    # it waited 1 s, 33%: the data wait, the row's one data figure (no data column beside it).
    assert [w for w in header.replace("┃", " ").split()] == ["epoch", "total", "loop", "data", "wait",
                                                             "train", "validate", "copy", "no", "phase"]
    assert table_rows(text, "1")[0] == ["1", "4.0s", "3.0s", "1.00s 33%", "2.0s", "0.5s", "0.1s", "0.4s"]


def test_a_run_that_fails_before_its_first_phase_prints_its_error_first_and_no_tables(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    record = tmp_path / "r.jsonl"
    script = "import sys; print('boom: no such data file', file=sys.stderr); sys.exit(3)"
    proc = devicewatch("--record", str(record), "--gpu", "off", "--", sys.executable, "-c", script)
    assert proc.returncode == 3
    summary = proc.stdout.strip().splitlines()
    # why it failed, in the one wording every view gives it: how it ended and what it said
    assert summary[0] == "failed (exit code 3): boom: no such data file"
    assert "failed (exit code 3)" in summary[1] and "before its first phase" in summary[1]
    assert len(summary) == 2
    report = devicewatch("report", str(record)).stdout
    assert report.splitlines()[0] == "failed (exit code 3): boom: no such data file" and "verdict" not in report
