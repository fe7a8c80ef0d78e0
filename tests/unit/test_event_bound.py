"""The event channel's bound on lines it is handed, written through the real run-file writer."""

from __future__ import annotations

import json

from devicewatch.runformat import runfile
from devicewatch.recorder import EVENT_BURST, EventChannel
from devicewatch.runformat.writer import RunWriter


class Frozen:
    """A clock that stands still: no token is earned while a test runs."""

    def __call__(self) -> float:
        return 100.0


def channel_writing(tmp_path) -> tuple[EventChannel, RunWriter]:
    writer = RunWriter(tmp_path / "run.jsonl", {"interval": 0.1, "host": {}, "workload": {}})
    channel = EventChannel(writer.write, lambda: 1.0, start_mono=0.0)
    return channel, writer


def line(kind: str, compact: bool = True, **fields) -> bytes:
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps({"kind": kind, "mono": 1.0, **fields}, separators=separators).encode() + b"\n"


def test_over_the_bound_markers_results_and_unknown_kinds_are_counted_phases_written(tmp_path):
    channel, writer = channel_writing(tmp_path)
    channel.bound.tokens = 0.0
    channel.bound._clock = Frozen()
    channel.bound._refilled = 100.0
    mixed = (line("marker", label="a") * 3 + line("result", compact=False, name="r")
             + line("phase_begin", name="train", epoch=1, lane="main") + line("custom")
             + line("epoch", epoch=1, metrics={}) + line("instrument", state="armed", framework="torch"))
    channel.take(mixed)
    channel.take(line("marker", label="b") * 1000)   # all markers: counted in bulk
    channel.note_drops(final=True)
    writer.close()
    run = runfile.load(tmp_path / "run.jsonl")
    assert [e["kind"] for e in run.events] == ["phase_begin", "epoch", "instrument"]
    (notice,) = run.notices
    assert notice.dropped == {"marker": 1003, "result": 1, "other": 1}
    assert notice.message.startswith("1005 events over the bound")
    assert channel.seen == 1005 + 3


def test_within_the_bound_every_event_is_written_and_nothing_noted(tmp_path):
    channel, writer = channel_writing(tmp_path)
    channel.take(line("marker", label="x") * (EVENT_BURST - 1))
    channel.note_drops(final=True)
    writer.close()
    run = runfile.load(tmp_path / "run.jsonl")
    assert len(run.events) == EVENT_BURST - 1 and not run.notices


def test_an_event_keeps_the_recorders_time_and_type_whatever_fields_it_carries(tmp_path):
    channel, writer = channel_writing(tmp_path)
    channel.take(json.dumps({"kind": "marker", "mono": 3.5, "t": 99, "type": "log", "label": "x"}).encode() + b"\n")
    writer.close()
    (event,) = runfile.load(tmp_path / "run.jsonl").events
    assert (event["type"], event["t"], event["kind"], event["label"]) == ("event", 3.5, "marker", "x")
