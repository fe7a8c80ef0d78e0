"""What ``devicewatch demo`` prints when the dashboard closes: each run's file, what other
programs took during it where it mattered, the headline, and where a run was contended that
the overlapped run gains only from a free core. The dashboard itself is replaced by two runs
made here from rules (tests/unit/test_verdicts.py's Shape), whose figures are known."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch import cli
from devicewatch.tui import app as tui_app
from tests.unit.test_verdicts import Shape, constant, every_core


def run_file(path: Path, workload: float, waiting: float) -> Path:
    # both of 2 cores full; the workload WORKLOAD % of one core, its threads waiting WAITING %
    Shape(2, 5.0, every_core(2, 100.0), [("train", 1, "main", 0.0, 5.0)], workload=constant(workload),
          waiting=constant(waiting)).run(path)
    return path


def demo_output(tmp_path, monkeypatch, capsys, files: list[Path], headline: str) -> list[str]:
    monkeypatch.setattr(tui_app, "launch_story", lambda settings, story, pause: (0, headline, files))
    module, args = cli.parse(["--runs-dir", str(tmp_path / "runs"), "demo"])
    assert module.run(args) == 0
    return capsys.readouterr().out.splitlines()


def test_a_busy_laptop_is_named_after_each_run_and_a_contended_run_needs_a_free_core(tmp_path, monkeypatch, capsys):
    # A: the workload 1.9 cores, waiting 0.05: other programs 0.1, not contended.
    # B: the workload 1.1 cores, its threads waiting 0.6 core (0.6 / 1.7 of the time): other
    # programs 0.9 of 2 cores, contended.
    a, b = run_file(tmp_path / "a.jsonl", 190.0, 5.0), run_file(tmp_path / "b.jsonl", 110.0, 60.0)
    out = demo_output(tmp_path, monkeypatch, capsys, [a, b], "B finished …\nother programs took …")
    assert out[:4] == [f"A: {a}", f"B: {b}", "   other programs took 0.9 of 2 cores during the overlapped run",
                       "B finished …"]
    assert out[5:] == ["the overlapped run was contended (threads waited for a core): overlapping validation "
                       "gains only from a core left free, so here its gain shrinks or vanishes; close other "
                       "programs and run the demo again to see it"]


def test_a_quiet_laptop_adds_nothing(tmp_path, monkeypatch, capsys):
    a, b = run_file(tmp_path / "a.jsonl", 190.0, 5.0), run_file(tmp_path / "b.jsonl", 185.0, 5.0)
    out = demo_output(tmp_path, monkeypatch, capsys, [a, b], "B finished 27% sooner")
    assert out == [f"A: {a}", f"B: {b}", "B finished 27% sooner"]
