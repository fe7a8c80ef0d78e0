"""The recorder's event bound on lines it is handed, written through the real run-file writer."""

from __future__ import annotations

import json

from devicewatch import runfile
from devicewatch.recorder import EVENT_BURST, Recorder, RecordOptions
from devicewatch.runfile import RunWriter


def recorder_writing(tmp_path) -> Recorder:
    recorder = Recorder(RecordOptions(output=str(tmp_path / "run.jsonl"), command=["true"]))
    recorder.writer = RunWriter(recorder.options.output, {"interval": 0.1, "host": {}, "workload": {}})
    return recorder


def line(kind: str, compact: bool = True, **fields) -> bytes:
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps({"kind": kind, "mono": 1.0, **fields}, separators=separators).encode() + b"\n"


def test_over_the_bound_markers_results_and_unknown_kinds_are_counted_phases_written(tmp_path):
    recorder = recorder_writing(tmp_path)
    recorder._tokens = 0.0
    recorder._refilled = float("inf")   # no refill while the test runs
    mixed = (line("marker", label="a") * 3 + line("result", compact=False, name="r")
             + line("phase_begin", name="train", epoch=1, lane="main") + line("custom")
             + line("epoch", epoch=1, metrics={}))
    recorder._take_events(mixed)
    recorder._take_events(line("marker", label="b") * 1000)   # all markers: counted in bulk
    recorder._note_drops(final=True)
    recorder.writer.close()
    run = runfile.load(tmp_path / "run.jsonl")
    assert [e["kind"] for e in run.events] == ["phase_begin", "epoch"]
    (notice,) = run.notices
    assert notice["dropped"] == {"marker": 1003, "result": 1, "other": 1}
    assert notice["message"].startswith("1005 events over the bound")


def test_within_the_bound_every_event_is_written_and_nothing_noted(tmp_path):
    recorder = recorder_writing(tmp_path)
    recorder._take_events(line("marker", label="x") * (EVENT_BURST - 1))
    recorder._note_drops(final=True)
    recorder.writer.close()
    run = runfile.load(tmp_path / "run.jsonl")
    assert len(run.events) == EVENT_BURST - 1 and not run.notices
