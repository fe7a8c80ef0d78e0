"""What ``devicewatch demo`` says of the machine's load: before its first run, where other
programs (or the cores allowed) leave the story's overlapped run too few cores, one line with
how to get them back (``demo.Load``, measured from /proc/stat by ``demo.measure_load``); and
when the dashboard closes, each run's file, what other programs took during it where it
mattered, the headline, and where a run was contended that the overlapped run gains only from
a free core. The dashboard itself is replaced by two runs made here from rules
(tests/unit/test_verdicts.py's Shape), whose figures are known."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch import cli
from devicewatch.commands import demo
from devicewatch.tui import app as tui_app
from tests.unit.test_verdicts import Shape, constant, every_core


def run_file(path: Path, workload: float, waiting: float) -> Path:
    # both of 2 cores full; the workload WORKLOAD % of one core, its threads waiting WAITING %
    Shape(2, 5.0, every_core(2, 100.0), [("train", 1, "main", 0.0, 5.0)], workload=constant(workload),
          waiting=constant(waiting)).run(path)
    return path


QUIET = demo.Load(2, 2, 0.1)   # 1.9 of 2 cores free: the story has its cores


def demo_output(tmp_path, monkeypatch, capsys, files: list[Path], headline: str,
                load: demo.Load | None = QUIET, notices: list[str | None] | None = None) -> list[str]:
    def story(settings, targets, pause, notice=None):
        if notices is not None:
            notices.append(notice)
        return 0, headline, files

    monkeypatch.setattr(tui_app, "launch_story", story)
    monkeypatch.setattr(demo, "measure_load", lambda: load)
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


def test_a_sooner_headline_over_slower_epochs_is_followed_by_why(tmp_path, monkeypatch, capsys):
    # tests/tui/test_tui_compare_load's pair: B 15% sooner over a span of 8.5 s against 10, its
    # epochs adding up to 10.5 s against A's 10; other programs 0.1 and 0.9 of 2 cores
    from tests.tui.test_tui_compare_load import overlapped_pair

    a, b = overlapped_pair(tmp_path)
    files = [Path(a.path), Path(b.path)]
    out = demo_output(tmp_path, monkeypatch, capsys, files, "B finished 15% sooner …")
    assert out[-2:] == ["B finished 15% sooner …",
                        "why: B's epochs overlap (part of one epoch runs beside the next): its epoch totals add up "
                        "to 10.5s but span 8.5s; the headline times the span from the first epoch's start to the "
                        "last's end: B's epoch totals add up to more than A's (10.5s vs 10.0s) while over the span "
                        "B finished sooner"]


NEEDS = "the demo's overlapped run needs about 1.5 cores free to finish sooner than the serial one"


@pytest.mark.parametrize("load, line", [
    # 2 cores, other programs 1.6: 0.4 free of the 1.5 the overlapped run needs
    (demo.Load(2, 2, 1.6), f"other programs are using 1.6 of 2 cores: {NEEDS}; close them, or run "
                           "`devicewatch demo` on a quieter machine"),
    # 1.9 free, 1.5 needed: nothing to say; 64 cores with 3 busy: 61 free
    (demo.Load(2, 2, 0.1), None),
    (demo.Load(64, 64, 3.0), None),
    # 0.3 taken leaves 1.7: enough, though other programs took a notable share
    (demo.Load(2, 2, 0.3), None),
    # an affinity of one core of two: 1 free whatever the load
    (demo.Load(2, 1, 0.0), f"the demo runs on 1 core allowed of 2: {NEEDS}; run the demo where more cores are allowed"),
    (demo.Load(2, 1, 0.9), f"other programs are using 0.9 of 1 core allowed of 2: {NEEDS}; close them and run the "
                           "demo where more cores are allowed"),
    # a 0.5-core quota: 0.5 free
    (demo.Load(2, 2, 0.1, 0.5), f"a CPU quota allows it 0.5 cores: {NEEDS}; run the demo where more cores are allowed"),
    (demo.Load(2, 2, 1.6, 0.5), f"other programs are using 1.6 of 2 cores and a CPU quota allows it 0.5 cores: "
                                f"{NEEDS}; close them and run the demo where more cores are allowed"),
    # a one-core machine: 1 free
    (demo.Load(1, 1, 0.0), f"the demo runs on 1 core: {NEEDS}; run the demo on a machine with two cores or more"),
    # 2 allowed of 8, 0.6 of them taken: 1.4 free
    (demo.Load(8, 2, 0.6), f"other programs are using 0.6 of 2 cores allowed of 8: {NEEDS}; close them, or run "
                           "`devicewatch demo` on a quieter machine"),
], ids=["busy", "quiet", "big", "a-little", "affinity", "affinity-busy", "quota", "quota-busy", "one-core", "cpuset"])
def test_the_line_before_the_first_run_in_figures(load, line):
    assert load.line() == line
    assert (line is None) == (load.free >= demo.STORY_CORES)


def test_a_busy_laptop_is_said_before_the_first_run_on_the_terminal_and_the_dashboard(tmp_path, monkeypatch, capsys):
    notices: list[str | None] = []
    out = demo_output(tmp_path, monkeypatch, capsys, [], "", load=demo.Load(2, 2, 1.6), notices=notices)
    line = demo.Load(2, 2, 1.6).line()
    assert out == [f"devicewatch demo: {line}"] and notices == [line]


def test_a_quiet_laptop_or_no_proc_says_nothing_before(tmp_path, monkeypatch, capsys):
    for load in (QUIET, None):
        notices: list[str | None] = []
        assert demo_output(tmp_path, monkeypatch, capsys, [], "", load=load, notices=notices) == []
        assert notices == [None]


SPINNER = "import os, time\nos.sched_setaffinity(0, {0})\nwhile True: pass\n"
MEASURE = ("import os\nos.sched_setaffinity(0, {0})\nfrom devicewatch.commands import demo\n"
           "load = demo.measure_load(1.0)\nprint(load.cores, load.others, load.line() is not None)\n")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/stat"), reason="Linux only")
def test_a_program_spinning_on_the_only_core_allowed_is_measured():
    # The measuring process may use core 0 alone, where a spinner keeps it busy: of its one
    # core, at least most is other programs' (more if anything else runs there too), so the
    # story cannot have its 1.5 cores and the line is said.
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER])
    try:
        done = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    finally:
        spinner.kill()
        spinner.wait()
    cores, others, said = done.stdout.split()
    assert done.returncode == 0, done.stderr
    assert cores == "1" and float(others) >= 0.8 and said == "True"
