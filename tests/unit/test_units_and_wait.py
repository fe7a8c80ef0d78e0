"""How report, compare and their JSON show segments (step-based training, no epochs), a training
loop that mostly waited on its data, and a data wait that was not measured (and why, once).

Every run here is literal; every figure is worked out in the comments from its phases.
"""

from __future__ import annotations

import json

from devicewatch import analysis, compare
from devicewatch.runformat import runfile
from devicewatch.render.compare_text import comparison_text
from devicewatch.render.report import report_text
from tests.conftest import write_run

ACTIVE = {"active": True, "processes": 1, "frameworks": ["torch"]}


def table_rows(text: str, key: str) -> list[list[str]]:
    """The cells of every table row whose first cell is KEY."""
    return [cells for line in text.splitlines() if line.startswith("│")
            for cells in [[c.strip() for c in line.strip("│").split("│")]] if cells[0] == key]


def headers(text: str) -> list[list[str]]:
    """Each table's header cells, table by table."""
    return [[c.strip() for c in line.strip("┃").split("┃")] for line in text.splitlines() if line.startswith("┃")]


def phase(t0: float, t1: float, name: str, epoch: int, **fields) -> list[dict]:
    base = {"type": "event", "name": name, "epoch": epoch, "lane": "main", "pid": 1, **fields}
    return [{**base, "t": t0, "kind": "phase_begin"}, {**base, "t": t1, "kind": "phase_end"}]


def samples(seconds: float) -> list[dict]:
    return [{"type": "sample", "t": 0.05 + 0.1 * k, "cpu": [50.0, 50.0], "cpu_total": 50.0}
            for k in range(int(seconds * 10))]


def end_record(t: float, instrument: dict | None = None) -> dict:
    end = {"type": "end", "t": t, "status": "ok", "exit_code": 0, "signal": None, "duration": t,
           "reason": "the workload finished"}
    if instrument is not None:
        end["instrument"] = instrument
    return end


def segment_run(path, count: int = 3, finished: bool = True, wait: float | None = None):
    """A step-based loop as the zero-code instrumentation records it: COUNT segments of train
    2 s then validate 0.5 s, each ended by an epoch event marked ``unit: segment`` with 250
    steps (125 a second of training); no loader read, so no data_wait_s unless WAIT is given.
    Not FINISHED: no end record, and the last segment still training without its event."""
    records = samples(2.5 * count)
    for k in range(1, count + 1):
        t0 = 2.5 * (k - 1)
        last_open = not finished and k == count
        records += phase(t0, t0 + 2.0, "train", k, source="auto")[:1 if last_open else 2]
        if last_open:
            break
        records += phase(t0 + 2.0, t0 + 2.5, "validate", k, source="auto")
        metrics = {"steps": 250, "steps_per_s": 125.0, **({"data_wait_s": wait} if wait is not None else {})}
        records.append({"type": "event", "t": t0 + 2.5, "kind": "epoch", "epoch": k, "unit": "segment",
                        "source": "auto", "pid": 1, "metrics": metrics})
    records.sort(key=lambda r: r["t"])
    return runfile.load(write_run(path, records, header={"instrument": {"offered": True}},
                                  end=end_record(2.5 * count, ACTIVE) if finished else False))


def waiting_run(path):
    """Two epochs of the zero-code instrumentation. Epoch 1 mostly waits: its train phase
    0-2.3 s holds a DataLoader wait 0-2.2 s (the first wait begins with the phase), validate
    2.3-2.5 s, data_wait_s 2.2. Epoch 2: train 2.5-4.5 s with a wait 2.6-3.1 s, validate
    4.5-5 s, data_wait_s 0.5. 100 steps each."""
    records = samples(5.0)
    records += [*phase(0.0, 2.3, "train", 1, source="auto"), *phase(0.0, 2.2, "data", 1, source="auto"),
                *phase(2.3, 2.5, "validate", 1, source="auto"),
                *phase(2.5, 4.5, "train", 2, source="auto"), *phase(2.6, 3.1, "data", 2, source="auto"),
                *phase(4.5, 5.0, "validate", 2, source="auto")]
    records += [{"type": "event", "t": t, "kind": "epoch", "epoch": e, "source": "auto", "pid": 1,
                 "metrics": {"data_wait_s": w, "steps": 100}} for e, t, w in ((1, 2.5, 2.2), (2, 5.0, 0.5))]
    records.sort(key=lambda r: r["t"])
    return runfile.load(write_run(path, records, header={"instrument": {"offered": True}},
                                  end=end_record(5.0, ACTIVE)))


def own_epochs_run(path, end: dict | None = None, header: dict | None = None, source: str | None = None):
    """Two epochs of train 1 s, validate 0.5 s, with a loss and no data wait; the phases are
    the workload's own (no source) unless SOURCE is given."""
    records = samples(3.0)
    extra = {"source": source} if source else {}
    for e in (1, 2):
        t0 = 1.5 * (e - 1)
        records += [*phase(t0, t0 + 1.0, "train", e, **extra), *phase(t0 + 1.0, t0 + 1.5, "validate", e, **extra),
                    {"type": "event", "t": t0 + 1.5, "kind": "epoch", "epoch": e, "metrics": {"loss": 1.0}}]
    records.sort(key=lambda r: r["t"])
    return runfile.load(write_run(path, records, header=header, end=end))


# -- segments ----------------------------------------------------------------------------------

def test_epoch_events_marked_segment_make_a_run_of_segments(tmp_path):
    run = segment_run(tmp_path / "s.jsonl")
    rows = analysis.epochs(run, analysis.phases(run))
    assert [(r.epoch, r.unit) for r in rows] == [(1, "segment"), (2, "segment"), (3, "segment")]
    assert analysis.unit(rows) == "segment"
    summary = analysis.Summary.of(analysis.run_figures(run)).to_json()
    assert summary["unit"] == "segment" and {row["unit"] for row in summary["epochs"]} == {"segment"}
    # An epoch event without the field is an epoch.
    assert analysis.unit(analysis.run_figures(own_epochs_run(tmp_path / "e.jsonl")).epoch_rows) == "epoch"


def test_a_segment_whose_event_has_not_come_is_still_a_segment_of_the_run(tmp_path):
    rows = analysis.run_figures(segment_run(tmp_path / "s.jsonl", finished=False)).epoch_rows
    assert [r.unit for r in rows] == ["segment", "segment", None]
    assert analysis.unit(rows) == "segment"
    assert analysis.epoch_dict(rows[-1], "segment")["unit"] == "segment"


def test_the_report_of_a_segment_run_says_segment_with_its_steps_and_why_no_data_wait(tmp_path):
    text = report_text(analysis.run_figures(segment_run(tmp_path / "s.jsonl")), width=100)
    lines = text.splitlines()
    title = lines.index("Segments (seconds in each phase, lanes merged)")
    assert headers("\n".join(lines[title:]))[0] == ["segment", "total", "train", "validate", "no phase", "steps",
                                                    "steps_per_s"]
    assert [table_rows(text, str(k))[0] for k in (1, 2, 3)] == [
        [str(k), "2.5s", "2.0s", "0.5s", "0.0s", "250", "125"] for k in (1, 2, 3)]
    # Said once, under the table, not as a column of dashes or 0%.
    assert lines[title + 8] == "data wait: not measured — the training loop read no DataLoader or tf.data dataset"
    assert text.count("not measured") == 1 and "epoch" not in text.split("Utilization")[0].lower()


def test_the_report_json_of_a_segment_run(tmp_path):
    summary = json.loads(json.dumps(analysis.Summary.of(analysis.run_figures(segment_run(tmp_path / "s.jsonl"))).to_json()))
    assert summary["unit"] == "segment"
    first = summary["epochs"][0]
    assert (first["unit"], first["epoch"], first["train_loop"], first["data_wait"], first["loop_wait_share"]) \
        == ("segment", 1, 2.0, None, None)
    assert summary["data_wait"] is None
    assert summary["data_wait_unmeasured"] == {
        "unit": "segment", "rows": [1, 2, 3], "reason": "the training loop read no DataLoader or tf.data dataset",
        "text": "data wait: not measured — the training loop read no DataLoader or tf.data dataset"}


# -- a loop that mostly waited ------------------------------------------------------------------

def test_a_wait_that_begins_with_its_train_phase_is_the_nested_one(tmp_path):
    first, second = analysis.run_figures(waiting_run(tmp_path / "w.jsonl")).epoch_rows
    # Epoch 1: the wait (0-2.2 s) is inside train (0-2.3 s) though both begin at 0: data owns
    # 2.2 s, train the 0.1 s left; the loop is train with its wait, 2.3 s.
    assert round(first.phases["data"], 9) == 2.2 and round(first.phases["train"], 9) == 0.1
    assert round(first.train_loop, 9) == 2.3 and round(first.loop_wait_share, 4) == round(2.2 / 2.3, 4)
    assert round(second.phases["train"], 9) == 1.5 and second.train_loop == 2.0 and second.loop_wait_share == 0.25


def test_the_report_shows_the_loop_and_its_wait_so_no_one_reads_no_training(tmp_path):
    text = report_text(analysis.run_figures(waiting_run(tmp_path / "w.jsonl")), width=120)
    # One data figure a row: the data wait; the data phase (the wait, drawn) has no column beside it.
    assert headers(text)[0] == ["epoch", "total", "loop", "data wait", "train", "validate", "no phase", "steps"]
    # Epoch 1: 2.5 s; loop 2.3 s of which 2.2 s waiting (96%); train 0.1, validate 0.2.
    # Epoch 2: 2.5 s; loop 2.0 s, 0.5 s waiting (25%); train 1.5, validate 0.5.
    assert table_rows(text, "1")[0] == ["1", "2.5s", "2.3s", "2.20s 96%", "0.1s", "0.2s", "0.0s", "100"]
    assert table_rows(text, "2")[0] == ["2", "2.5s", "2.0s", "0.50s 25%", "1.5s", "0.5s", "0.0s", "100"]
    flat = " ".join(text.split())
    assert "data wait: the loop's seconds waiting on input, and their share of the loop" in flat
    # The verdict judges the same share: 2.7 s of the loops' 4.3 s, 63%.
    assert "the training loop waited on its DataLoader 63% of the time (2.7 of 4.3 s)" in flat
    assert "not measured" not in text


# -- a data wait not measured, and why ------------------------------------------------------------

def unmeasured_text(run) -> str | None:
    found = analysis.run_figures(run).unmeasured
    return None if found is None else found.text


def test_why_the_data_wait_is_not_measured(tmp_path):
    own = own_epochs_run(tmp_path / "own.jsonl")
    assert unmeasured_text(own) == "data wait: not measured — the workload sends its own phases and reports no data wait"
    off = own_epochs_run(tmp_path / "off.jsonl", source="stdout",
                         end=end_record(3.0, {"active": False, "reason": "switched off by --no-instrument"}))
    assert unmeasured_text(off) == ("data wait: not measured — zero-code instrumentation not active "
                                    "(switched off by --no-instrument)")
    refused = own_epochs_run(tmp_path / "refused.jsonl", source="stdout",
                             header={"instrument": {"offered": False, "reason": "the command runs Python with -I"}})
    assert unmeasured_text(refused) == ("data wait: not measured — zero-code instrumentation not offered "
                                        "(the command runs Python with -I)")
    old = own_epochs_run(tmp_path / "old.jsonl", source="stdout")
    assert unmeasured_text(old) == "data wait: not measured — the run was recorded without zero-code instrumentation"
    assert unmeasured_text(waiting_run(tmp_path / "w.jsonl")) is None


def test_the_reason_is_said_once_for_the_rows_that_lack_it(tmp_path):
    # Three segments; the third's event has no data_wait_s (its loop read no measured loader).
    run = segment_run(tmp_path / "s.jsonl", wait=0.5)
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    third = next(i for i, line in enumerate(lines) if '"epoch": 3' in line and '"kind": "epoch"' in line)
    record = json.loads(lines[third])
    del record["metrics"]["data_wait_s"]
    lines[third] = json.dumps(record)
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    run = runfile.load(tmp_path / "s.jsonl")
    assert unmeasured_text(run) == ("data wait: not measured in 1 of 3 segments (3) — "
                                    "the training loop read no DataLoader or tf.data dataset")
    text = report_text(analysis.run_figures(run), width=120)
    # The loop is the train phase, 2 s, of which 0.5 s waiting: 25%; the third says "-".
    assert [table_rows(text, str(k))[0][2:4] for k in (1, 2, 3)] \
        == [["2.0s", "0.50s 25%"], ["2.0s", "0.50s 25%"], ["2.0s", "-"]]
    assert text.count("not measured") == 1


def test_a_recording_run_does_not_call_the_unit_in_progress_unmeasured(tmp_path):
    # Segments 1 and 2 ended without data_wait_s; segment 3 is training, its event to come.
    run = segment_run(tmp_path / "s.jsonl", finished=False)
    found = analysis.run_figures(run).unmeasured
    assert found is not None and (found.numbers, found.rows) == ([1, 2], 2)
    assert found.text == "data wait: not measured — the training loop read no DataLoader or tf.data dataset"


# -- compare ------------------------------------------------------------------------------------

def test_compare_two_segment_runs(tmp_path):
    a = segment_run(tmp_path / "a.jsonl", count=3)
    b = segment_run(tmp_path / "b.jsonl", count=3, wait=0.5)
    c = compare.comparison(a, b)
    assert (c.a.unit, c.b.unit, c.basis) == ("segment", "segment", "segments")
    # Both span 7.5 s of segments: "B took as long as A (7.50s) over the segments".
    assert c.headline.startswith("B took as long as A (7.50s) over the segments")
    text = comparison_text(c, width=200)
    assert table_rows(text, "segments")[0][1:] == ["3 in 7.50s", "3 in 7.50s"]
    epochs_table = next(h for h in headers(text) if h[0] == "segment")
    assert epochs_table[:7] == ["segment", "A total", "B total", "Δ total", "Δ %", "loop A / B", "data wait A → B"]
    # A measured no wait, B 0.5 s of each 2 s loop: 25%. Steps 250 on both sides.
    row = table_rows(text, "1")[0]
    assert row[5:7] == ["2.00s / 2.00s", "- → 0.50s 25%"] and row[-1] == "250 / 250"
    assert "A: data wait: not measured — the training loop read no DataLoader or tf.data dataset" in text
    assert "Segment metrics (A → B)" in text and "Epoch" not in text
    data = compare.to_dict(c)
    assert data["units"] == {"a": "segment", "b": "segment"} and data["basis"] == "segments"
    assert data["a"]["data_wait_unmeasured"]["rows"] == [1, 2, 3] and data["b"]["data_wait_unmeasured"] is None
    assert data["epochs"][0]["loop_wait_share"] == {"a": None, "b": 0.25}


def test_compare_says_plainly_when_one_run_has_epochs_and_the_other_segments(tmp_path):
    c = compare.comparison(waiting_run(tmp_path / "a.jsonl"), segment_run(tmp_path / "b.jsonl", count=2))
    assert ("A counts epochs, B counts segments (a segment is the training between two evaluations of a "
            "loop without epochs): the table pairs epoch n of A with segment n of B, which are not the same work"
            ) in c.notes
    assert c.basis == "epochs and segments"
    text = comparison_text(c, width=200)
    assert "Epochs of A beside segments of B, paired by number: not the same work (" in text
    assert next(h for h in headers(text) if h[0] == "epoch/segment")[1] == "A total"
    assert table_rows(text, "epochs and segments")[0][1:] == ["2 epochs in 5.00s", "2 segments in 5.00s"]
