"""Whose phases a run shows (``phase_source``), decided one way by the recorder, analysis and the
live model; and the one pairer, fed a whole run or event by event, giving the same phases."""

from __future__ import annotations

from devicewatch import analysis, events, phase_source
from devicewatch.live.model import RunModel
from devicewatch.runformat.runfile import load

from conftest import write_run


def ev(t, kind, **fields):
    return {"type": "event", "t": t, "kind": kind, "pid": 1, **fields}


def printed(t, kind, epoch):
    return ev(t, kind, name="epoch", epoch=epoch, lane="main", source="stdout")


def own(t, kind, name, epoch):
    return ev(t, kind, name=name, epoch=epoch, lane="main")


def test_run_info_and_an_own_phase_speak_for_the_phases_nothing_else_does():
    assert phase_source.speaks_for_its_phases(ev(0, events.RUN_INFO, info={}))
    assert phase_source.speaks_for_its_phases(own(0, events.PHASE_BEGIN, "train", 1))
    assert not phase_source.speaks_for_its_phases(printed(0, events.PHASE_BEGIN, 1))
    assert not phase_source.speaks_for_its_phases(own(0, events.PHASE_END, "train", 1))  # only a begin
    for kind in (events.RESULT, events.MARKER, events.EPOCH, events.INSTRUMENT):
        assert not phase_source.speaks_for_its_phases(ev(0, kind))


def test_printed_epochs_count_until_the_workload_speaks_for_its_phases(tmp_path):
    # Printed epochs 1 and 2, then a result: still the printed epochs' run.
    alone = [printed(0, events.PHASE_BEGIN, 1), printed(2, events.PHASE_END, 1),
             printed(2, events.PHASE_BEGIN, 2), ev(3, events.RESULT, name="r", values={}),
             printed(4, events.PHASE_END, 2)]
    run = load(write_run(tmp_path / "a.jsonl", alone))
    assert [(p.name, p.epoch) for p in analysis.phases(run)] == [("epoch", 1), ("epoch", 2)]
    # The same, and the workload's own train phase of 3 to 4 s: printed epochs drop out.
    with_own = sorted(alone + [own(3, events.PHASE_BEGIN, "train", 2), own(4, events.PHASE_END, "train", 2)],
                      key=lambda r: r["t"])
    run = load(write_run(tmp_path / "b.jsonl", with_own))
    assert [(p.name, p.epoch, p.start, p.end) for p in analysis.phases(run)] == [("train", 2, 3.0, 4.0)]
    # Run info alone (a callback says it first) is enough: no phase from printed lines.
    run = load(write_run(tmp_path / "c.jsonl", [ev(0.5, events.RUN_INFO, info={"framework": "x"})] + alone))
    assert analysis.phases(run) == []


def test_the_pairer_fed_event_by_event_gives_what_it_gives_for_the_whole_run(tmp_path):
    # Nested and overlapping phases, two ending at once, one still open at the end (5 s).
    records = [own(0, events.PHASE_BEGIN, "train", 1), own(1, events.PHASE_BEGIN, "data", 1),
               own(2, events.PHASE_END, "data", 1), own(2, events.PHASE_BEGIN, "data", 1),
               own(3, events.PHASE_END, "data", 1), own(3, events.PHASE_END, "train", 1),
               own(3, events.PHASE_BEGIN, "validate", 1), own(4, events.PHASE_END, "validate", 1),
               own(4, events.PHASE_BEGIN, "train", 2), {"type": "log", "t": 5.0, "stream": "stdout", "line": "x"}]
    run = load(write_run(tmp_path / "r.jsonl", records, end=False))
    whole = analysis.phases(run)
    assert [(p.name, p.epoch, p.start, p.end, p.open) for p in whole] == [
        ("train", 1, 0.0, 3.0, False), ("data", 1, 1.0, 2.0, False), ("data", 1, 2.0, 3.0, False),
        ("validate", 1, 3.0, 4.0, False), ("train", 2, 4.0, 5.0, True)]
    pairer = analysis.PhasePairer()
    for event in run.events:
        pairer.take(event)
    assert pairer.phases(run.duration) == whole
    model = RunModel(run)
    model.refresh_phases()
    assert model.phases == whole
