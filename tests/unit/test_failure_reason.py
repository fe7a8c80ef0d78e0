"""Why a run failed, worked out once (``analysis.failure``) and said first by every view that
shows the run: report (text and --json), compare, the line ``devicewatch run`` prints when its
dashboard quits; and an epoch the run ended inside, marked partial. Literal runs: each expected
reason is a line the run holds, picked by the rule (the start error; else the last exception of
a traceback, on stderr or on the terminal stderr shared; else the last line on stderr; else the
last line of output)."""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from types import SimpleNamespace

from devicewatch import analysis, compare
from devicewatch.analysis import wording
from devicewatch.commands.run import ending
from devicewatch.render.compare_text import comparison_text
from devicewatch.render.report import report_text
from devicewatch.runformat.runfile import load
from tests.conftest import write_run

TRACEBACK = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
             "    step(batch)", '  File "train.py", line 5, in step', "    raise ValueError('bad batch 7')",
             "ValueError: bad batch 7"]


def failed_end(t: float, exit_code: int = 1, signal: str | None = None) -> dict:
    how = f"killed by {signal}" if signal else f"exit code {exit_code}"
    return {"type": "end", "t": t, "status": "failed", "exit_code": exit_code, "signal": signal,
            "duration": t, "reason": how}


def logs(stream: str, lines: list[str], t: float = 1.0) -> list[dict]:
    return [{"type": "log", "t": t + i * 0.001, "stream": stream, "line": line} for i, line in enumerate(lines)]


def run_of(tmp_path: Path, records: list[dict], end: dict | bool | None, name: str = "r.jsonl"):
    return load(write_run(tmp_path / name, records, end=end))  # type: ignore[arg-type]


def test_a_command_that_could_not_start_is_named_by_its_start_error(tmp_path):
    said = "cannot start nosuchcmd: No such file or directory"
    run = run_of(tmp_path, [{"type": "notice", "t": 0.01, "level": "error", "message": said}],
                 {"type": "end", "t": 0.01, "status": "error", "exit_code": 127, "signal": None, "reason": said})
    found = analysis.failure(run)
    assert found == wording.Failure(said, None, "start")
    assert found.text == said and found.of("B") == f"B could not be started: {said}"


def test_the_exception_of_a_traceback_on_stderr_is_the_reason_not_what_came_after_it(tmp_path):
    # a line after the traceback (a library's atexit message) is not why it failed
    run = run_of(tmp_path, logs("stdout", ["epoch 1 done"]) + logs("stderr", [*TRACEBACK, "wandb: syncing"], 2.0),
                 failed_end(3.0))
    assert analysis.failure(run) == wording.Failure("exit code 1", "ValueError: bad batch 7", "exception")
    assert analysis.failure_text(run) == "failed (exit code 1): ValueError: bad batch 7"


def test_a_traceback_on_the_terminal_stderr_shared_is_found_in_the_output(tmp_path):
    # the dashboard gives the workload one terminal: its traceback is recorded as stdout
    run = run_of(tmp_path, logs("stdout", ["epoch 1 done", *TRACEBACK, ""]), failed_end(2.0))
    assert analysis.failure_text(run) == "failed (exit code 1): ValueError: bad batch 7"


def printed(exc: BaseException) -> list[str]:
    """EXC's traceback as Python prints it when it ends a program, line by line."""
    return "".join(traceback.format_exception(exc)).splitlines()


def raised(make) -> BaseException:
    try:
        make()
    except BaseException as exc:  # the test's own exception, kept to be printed
        return exc
    raise AssertionError("nothing was raised")


def test_of_chained_exceptions_the_last_one_ended_the_program():
    def chained():
        try:
            open("/nonexistent/devicewatch-test")
        except FileNotFoundError:
            raise RuntimeError("no data")  # noqa: B904  # chained implicitly, as most code does

    lines = printed(raised(chained))
    assert any(line.startswith("FileNotFoundError") for line in lines)   # the first is printed too
    assert wording.exception_line(lines) == "RuntimeError: no data"
    assert wording.exception_line(["Traceback (most recent call last):", "  File 'x', line 1"]) is None
    assert wording.exception_line(["plain output"]) is None


def test_an_exception_group_is_read_inside_its_margins():
    def group():
        def sub():
            raise TypeError("batch of str")
        errors = [ValueError("bad batch 7")]
        try:
            sub()
        except TypeError as exc:
            errors.append(exc)
        raise ExceptionGroup("loader failed", errors)

    lines = printed(raised(group))
    assert any(line.lstrip().startswith("|") for line in lines)   # drawn in its margins
    # the last exception with a traceback of its own: the sub-exception raised in sub()
    assert wording.exception_line(lines) == "TypeError: batch of str"
    plain = printed(raised(lambda: (_ for _ in ()).throw(ExceptionGroup("loader failed", [ValueError("x")]))))
    assert wording.exception_line(plain) == "ExceptionGroup: loader failed (1 sub-exception)"


def test_without_a_traceback_the_last_line_on_stderr_else_the_last_output_else_nothing(tmp_path):
    on_stderr = run_of(tmp_path, logs("stdout", ["loading"]) + logs("stderr", ["error: no such data file", ""], 2.0),
                       failed_end(3.0, exit_code=3), "a.jsonl")
    assert analysis.failure_text(on_stderr) == "failed (exit code 3): error: no such data file"
    only_output = run_of(tmp_path, logs("stdout", ["step 40", "Segmentation fault"]),
                         failed_end(2.0, exit_code=139), "b.jsonl")
    assert analysis.failure(only_output).source == "output"
    assert analysis.failure_text(only_output) == "failed (exit code 139); its last output: Segmentation fault"
    silent = run_of(tmp_path, [], failed_end(2.0, exit_code=137, signal="SIGKILL"), "c.jsonl")
    assert analysis.failure_text(silent) == "failed (killed by SIGKILL) without a line of output"


def test_a_line_an_ended_line_replaced_and_escape_sequences_are_not_the_reason(tmp_path):
    records = [*logs("stderr", ["\x1b[31mValueError: \x1b[0mbad batch 7"]),
               {"type": "log", "t": 1.5, "stream": "stdout", "line": "loading 40%", "partial": True},
               {"type": "log", "t": 1.6, "stream": "stdout", "line": "loading done"}]
    run = run_of(tmp_path, records, failed_end(2.0))
    assert analysis.failure_text(run) == "failed (exit code 1): ValueError: bad batch 7"
    errors, output = wording._tail(run.logs)
    assert errors == ["ValueError: bad batch 7"] and output == ["loading done"]


def test_a_run_that_did_not_fail_has_no_failure(tmp_path):
    ok = run_of(tmp_path, logs("stderr", TRACEBACK), None, "ok.jsonl")   # printed and caught: it finished
    cancelled = run_of(tmp_path, [], {"type": "end", "t": 1.0, "status": "cancelled", "exit_code": -2,
                                      "signal": "SIGINT", "reason": "cancelled by the user"}, "c.jsonl")
    cut = run_of(tmp_path, logs("stderr", TRACEBACK), False, "cut.jsonl")   # no end record: unknown
    assert [analysis.failure(r) for r in (ok, cancelled, cut)] == [None, None, None]


def test_a_verdict_of_too_few_samples_is_not_shown_beside_a_failure(tmp_path):
    one_sample = run_of(tmp_path, [{"type": "sample", "t": 0.1, "cpu": [50, 50], "cpu_total": 50}], failed_end(0.2))
    judged = analysis.run_figures(one_sample).verdict
    found = analysis.failure(one_sample)
    assert judged.label in wording.NOT_JUDGED   # the labels the rule leaves out are the verdict's own
    assert not wording.verdict_beside(found, judged.label)
    assert wording.verdict_beside(None, judged.label)   # a run that did not fail shows it
    assert wording.verdict_beside(found, "contended")


def epoch_phases(epoch: int, start: float, end: float | None, source: str | None = None) -> list[dict]:
    attrs = {"source": source} if source else {}
    out = [{"type": "event", "t": start, "kind": "phase_begin", "name": "train", "epoch": epoch, "lane": "main",
            "pid": 1, **attrs}]
    if end is not None:
        out.append({"type": "event", "t": end, "kind": "phase_end", "name": "train", "epoch": epoch, "lane": "main",
                    "pid": 1, **attrs})
    return out


def test_an_epoch_whose_phase_never_ended_is_partial_and_its_seconds_run_to_the_end(tmp_path):
    records = [*epoch_phases(1, 0.0, 2.0), {"type": "event", "t": 2.0, "kind": "epoch", "pid": 1, "epoch": 1,
                                            "metrics": {"loss": 0.5}},
               *epoch_phases(2, 2.0, None), *logs("stderr", TRACEBACK, 2.9)]
    run = run_of(tmp_path, records, failed_end(3.0))
    rows = analysis.epochs(run, analysis.phases(run))
    assert [(r.epoch, r.partial) for r in rows] == [(1, False), (2, True)]
    assert rows[1].total == 1.0   # from its start at 2.0 to the end at 3.0


def test_a_printed_epoch_the_end_of_a_failed_run_closed_is_partial_of_a_finished_run_not(tmp_path):
    # the recorder closes a printed epoch when the run ends, whatever ended it
    printed = [*epoch_phases(1, 0.0, 2.0, "stdout"), *epoch_phases(2, 2.0, 2.95, "stdout")]
    failed = run_of(tmp_path, printed, failed_end(3.0), "f.jsonl")
    finished = run_of(tmp_path, printed, {"type": "end", "t": 3.0, "status": "ok", "exit_code": 0,
                                          "signal": None, "duration": 3.0}, "ok.jsonl")
    assert [r.partial for r in analysis.epochs(failed, analysis.phases(failed))] == [False, True]
    assert [r.partial for r in analysis.epochs(finished, analysis.phases(finished))] == [False, False]
    # an epoch that ended well before the failure was done (a crash while saving, say)
    early = run_of(tmp_path, printed, failed_end(3.0 + analysis.epoch_rows.END_SLACK + 0.5), "e.jsonl")
    assert [r.partial for r in analysis.epochs(early, analysis.phases(early))] == [False, False]


def failed_with_epochs(tmp_path: Path) -> Path:
    samples = [{"type": "sample", "t": 0.1 + 0.5 * i, "cpu": [90, 10], "cpu_total": 50} for i in range(6)]
    records = [*samples, *epoch_phases(1, 0.0, 1.5), {"type": "event", "t": 1.5, "kind": "epoch", "pid": 1,
                                                      "epoch": 1, "metrics": {}},
               *epoch_phases(2, 1.5, None), *logs("stderr", TRACEBACK, 2.9)]
    return write_run(tmp_path / "failed.jsonl", records, end=failed_end(3.0))


def test_report_says_why_first_and_marks_the_partial_epoch(tmp_path):
    run = load(failed_with_epochs(tmp_path))
    lines = report_text(analysis.run_figures(run), width=120).splitlines()
    assert lines[0] == "failed (exit code 1): ValueError: bad batch 7"
    rows = [line for line in lines if line.startswith("│")]
    assert rows[0].split("│")[1].strip() == "1" and rows[1].split("│")[1].strip() == "2 partial"
    assert "partial: epoch 2 never ended (the run ended inside it); its seconds run to the end" in lines
    as_json = json.loads(json.dumps(analysis.Summary.of(analysis.run_figures(run)).to_json()))
    assert as_json["failure"] == {"how": "exit code 1", "said": "ValueError: bad batch 7", "source": "exception",
                                  "text": "failed (exit code 1): ValueError: bad batch 7"}
    assert [e["partial"] for e in as_json["epochs"]] == [False, True]


def test_compare_says_which_run_failed_and_why_first(tmp_path):
    failed = load(failed_with_epochs(tmp_path))
    fine = load(Path(__file__).resolve().parents[1] / "fixtures" / "demo-cpu.jsonl")
    c = compare.comparison(fine, failed)
    assert c.notes[0] == "B failed (exit code 1): ValueError: bad batch 7"
    text = comparison_text(c, width=120).splitlines()
    assert text[0] == "B failed (exit code 1): ValueError: bad batch 7"
    # once first and once in the headline that closes the text, not again among the notes
    assert sum("ValueError: bad batch 7" in line for line in text) == 2
    # and the headline does not time a run cut short against a finished one
    assert c.headline == "the runs are not timed against each other, as B failed (exit code 1): ValueError: bad batch 7"
    assert text[-1] == f"in short: {c.headline}"
    assert compare.to_dict(c)["b"]["failure"]["said"] == "ValueError: bad batch 7"
    assert compare.to_dict(c)["a"]["failure"] is None


def test_the_quit_line_of_a_failed_run_says_why_first(tmp_path):
    path = failed_with_epochs(tmp_path)
    lines = ending(SimpleNamespace(path=path, process=None), left_recording=False)
    assert lines[0] == "failed (exit code 1): ValueError: bad batch 7"
    assert lines[1] == f"recording: {path}"
    judged = analysis.run_figures(load(path)).verdict
    assert lines[2:] == ([f"verdict: {judged.text}"] if judged.label not in wording.NOT_JUDGED else [])
