"""What ``devicewatch run`` prints once its dashboard closes: where the recording is and, for a
finished run, how it ended and its verdict as ``report`` prints it."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("textual")

from devicewatch import analysis, cli
from devicewatch.commands.run import ending
from devicewatch.render.report import report_text
from devicewatch.runformat import runfile
from devicewatch.tui import app as dashboard

ROOT = Path(__file__).resolve().parents[2]
CPU_RUN = ROOT / "tests" / "fixtures" / "demo-cpu.jsonl"


def report_verdict(path: Path) -> str:
    """The verdict line of ``devicewatch report PATH``."""
    lines = report_text(analysis.run_figures(runfile.load(path)), width=10_000).splitlines()
    return next(line for line in lines if line.startswith("verdict: "))


def test_a_finished_run_ends_with_its_file_how_it_ended_and_the_reports_verdict():
    lines = ending(SimpleNamespace(path=CPU_RUN, process=None), left_recording=False)
    assert runfile.load(CPU_RUN).end.status == "ok"
    assert lines == [f"recording: {CPU_RUN} (ok)", report_verdict(CPU_RUN)]


def test_a_run_left_recording_says_so_and_one_never_finished_claims_no_verdict(tmp_path):
    assert ending(SimpleNamespace(path=CPU_RUN, process=None), left_recording=True) == [
        f"recording: {CPU_RUN} (still recording; `devicewatch runs` lists it)"]
    cut = tmp_path / "cut.jsonl"  # the recording without its end record
    cut.write_text("".join(CPU_RUN.read_text().splitlines(keepends=True)[:200]))
    assert not runfile.load(cut).finished
    assert ending(SimpleNamespace(path=cut, process=None), left_recording=False) == [f"recording: {cut} (not finished)"]
    assert ending(SimpleNamespace(path=tmp_path / "none.jsonl", process=None), left_recording=False) == []


def test_run_prints_its_recording_and_verdict_after_q_on_the_finished_run(tmp_path, monkeypatch, capsys):
    """``devicewatch run -- COMMAND`` end to end: the dashboard headless, q once the run ended."""
    seen: dict[str, object] = {}

    async def quit_once_finished(pilot):
        for _ in range(600):
            await pilot.pause(0.1)
            screen = pilot.app.run_screen()
            if screen is not None and screen.source.run is not None and screen.source.run.finished:
                break
        seen["finished"] = screen.source.run.finished
        await pilot.press("q")

    run_app = dashboard.DashboardApp.run
    monkeypatch.setattr(dashboard.DashboardApp, "run",
                        lambda self: run_app(self, headless=True, size=(120, 40), auto_pilot=quit_once_finished))
    runs = tmp_path / "runs"
    code = cli.main(["--runs-dir", str(runs), "run", "--", sys.executable, "-c", "print('done')"])
    out = capsys.readouterr().out
    assert code == 0 and seen["finished"]
    [path] = runs.glob("*.jsonl")
    assert out.splitlines() == [f"recording: {path} (ok)", report_verdict(path)]
