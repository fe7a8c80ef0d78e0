"""`report`'s utilization timeline, drawn with the plotext that constraints.txt pins: a run with
a GPU, as a terminal shows it. The fallback line is for a missing plotext only, so a chart that
is not drawn fails here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from devicewatch import analysis, cli
from devicewatch.render.report import report_text
from devicewatch.runformat import runfile
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "gpu-synthetic.jsonl"


def chart_rows(text: str) -> list[str]:
    """The timeline's lines: from its title to the end of the report."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Utilization: "))
    return lines[start:]


@pytest.mark.parametrize("width", [80, 100])
def test_the_timeline_is_drawn_within_the_width(width):
    run = runfile.load(FIXTURE)
    summary = analysis.run_figures(run)
    s = summary.series
    assert s.gpus == 1 and len(s.t)
    text = report_text(summary, chart=True, width=width)
    assert "not drawn" not in text
    rows = chart_rows(text)
    assert max(len(line) for line in text.splitlines()) <= width
    assert rows[0].strip() == f"Utilization: {run.title}"
    frame_top = next(row for row in rows if "┐" in row)
    # one vertical line per epoch start, each meeting the frame's top in a ┬
    starts = {e.start for e in summary.epoch_rows}
    assert len(starts) > 1 and frame_top.count("┬") == len(starts)
    # the x axis spans the samples: its first and last ticks are the first and last sample's time
    ticks = rows[rows.index(next(row for row in rows if "┘" in row)) + 1].split()
    first, last = min(s.t[0], s.gpu_t[0][0]), max(s.t[-1], s.gpu_t[0][-1])
    assert (ticks[0], ticks[-1]) == (f"{first:.1f}", f"{last:.1f}")
    assert rows[-2].strip() == f"seconds (vertical lines: {summary.unit} starts)"
    # each series in its own marker, named in the key under the chart, and drawn in the canvas
    assert rows[-1] == "▚ CPU total %   ⢕ GPU 0 %"
    canvas = "\n".join(rows[1:-3])
    assert any("\u2801" <= c <= "\u28ff" for c in canvas)  # the GPU's braille
    assert any(c in "▖▗▘▙▚▛▜▝▞▟▄▀▌▐" for c in canvas)  # the CPU's quarter blocks


def test_report_in_a_terminal_ends_with_the_timeline(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli.main(["report", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "not drawn" not in out and out.rstrip().endswith("▚ CPU total %   ⢕ GPU 0 %")
    assert max(len(line) for line in out.splitlines()) <= 80


def test_without_plotext_the_report_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "plotext", None)  # import plotext raises ImportError
    text = report_text(analysis.run_figures(runfile.load(FIXTURE)), chart=True, width=100)
    assert text.rstrip().endswith("(timeline not drawn: plotext is not installed)")
    assert "Utilization:" not in text


def test_samples_without_a_reading_are_left_out_not_drawn_as_zero():
    # In a child process: plotext 6.1 aborts the interpreter (std::bad_alloc) on a NaN point.
    script = f"""
import numpy as np
from devicewatch import analysis
from devicewatch.render.report import timeline_chart
from devicewatch.runformat import runfile
run = runfile.load({str(FIXTURE)!r})
summary = analysis.run_figures(run)
summary.series.cpu_total[:] = np.nan      # no CPU reading at all: no CPU series
summary.series.gpu_util[0][5:40] = np.nan  # a gap in the GPU's
print(timeline_chart(summary, width=70, height=10))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.rstrip("\n").splitlines()
    assert rows[-1] == "▚ GPU 0 %"  # the only series with readings, in the first marker
    assert any(c in "▖▗▘▙▚▛▜▝▞▟▄▀▌▐" for c in "".join(rows[1:-3]))
