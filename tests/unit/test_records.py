"""The typed records of a run file: each parses what the writer writes and gives it back exactly."""

import json
from pathlib import Path

import orjson
import pytest

from devicewatch.probes.cpu_limits import CpuLimits
from devicewatch.runformat import records
from devicewatch.runformat.runfile import load
from devicewatch.runformat.writer import RunWriter

from conftest import write_run

FIXTURES = Path(__file__).parent.parent / "fixtures"
MERGED = {"job-stragglers.jsonl"}   # merge's output: no gpu_status or run_info of its own, its nodes' are in their files
TYPED = {"log": records.LogLine, "notice": records.Notice, "end": records.End, "gpu_status": records.GpuStatus,
         "cpu_limits": records.CpuLimitsRecord}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_typed_record_of_every_fixture_is_written_back_as_it_was_read(path):
    lines = path.read_bytes().splitlines()
    typed = [(line, record) for line in lines if (record := orjson.loads(line)).get("type") in TYPED]
    assert {"end", "gpu_status"} - ({"gpu_status"} if path.name in MERGED else set()) <= {
        record["type"] for _, record in typed}
    for line, record in typed:   # byte for byte, as the writer writes it
        assert orjson.dumps(TYPED[record["type"]].parse(record).to_json()) == line


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_phase_and_marker_event_of_every_fixture_is_written_back_byte_for_byte(path):
    lines = path.read_bytes().splitlines()
    phases = [line for line in lines if orjson.loads(line).get("kind") in ("phase_begin", "phase_end")]
    assert phases
    for line in phases:   # the sender's fields (pid, thread) before the phase's own, as the file has them
        assert orjson.dumps(records.Phase.parse(orjson.loads(line)).to_json()) == line
    for line in [line for line in lines if orjson.loads(line).get("kind") == "marker"]:
        assert orjson.dumps(records.Marker.parse(orjson.loads(line)).to_json()) == line


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_event_read_typed_of_every_fixture_is_written_back_byte_for_byte(path):
    lines = path.read_bytes().splitlines()
    by_kind = {kind: [line for line in lines if orjson.loads(line).get("kind") == kind] for kind in records.READ_TYPED}
    assert by_kind["run_info"] or path.name in MERGED   # every recording says what ran
    for kind, cls in records.READ_TYPED.items():
        for line in by_kind[kind]:
            assert orjson.dumps(cls.parse(orjson.loads(line)).to_json()) == line
    # the run reads them typed, one each, in order
    run = load(path)
    for kind, typed in (("epoch", run.epoch_events), ("run_info", run.run_info_events), ("result", run.result_events)):
        assert [e.to_json() for e in typed] == [orjson.loads(line) for line in by_kind[kind]]


def test_an_epoch_event_is_told_apart_and_keeps_the_senders_fields_in_their_order():
    read = {"type": "event", "t": 3.0, "kind": "epoch", "pid": 7, "epoch": 2, "unit": "segment",
            "metrics": {"loss": 0.5, "steps": 40, "data_wait_s": 1.5}, "source": "auto"}
    epoch = records.Epoch.parse(read)
    assert (epoch.epoch, epoch.unit, epoch.extra) == (2, "segment", {"pid": 7, "source": "auto"})
    assert (epoch.metrics.steps, epoch.metrics.data_wait_s, epoch.metrics.workload) == (40, 1.5, {"loss": 0.5})
    assert list(epoch.to_json()) == list(read) and epoch.to_json() == read
    # made, not read: its own fields first, then the sender's; a field the file lacked stays out
    made = records.Epoch(1.0, 1, records.EpochMetrics.of({"loss": 1.0}), extra={"pid": 7})
    assert list(made.to_json()) == ["type", "t", "kind", "epoch", "metrics", "pid"]
    bare = records.Epoch.parse({"type": "event", "t": 1.0, "kind": "epoch", "epoch": 1})
    assert bare.to_json() == {"type": "event", "t": 1.0, "kind": "epoch", "epoch": 1}


def test_an_epoch_event_without_its_epoch_is_a_bad_line_not_a_traceback(tmp_path):
    run = load(write_run(tmp_path / "run.jsonl", [
        {"type": "event", "t": 1.0, "kind": "epoch", "epoch": "one", "metrics": {"loss": 1.0}},
        {"type": "event", "t": 2.0, "kind": "epoch", "epoch": 2, "metrics": {"loss": 0.5}}]))
    assert run.bad_lines == 1 and [(e.epoch, e.metrics.workload) for e in run.epoch_events] == [(2, {"loss": 0.5})]


def test_run_info_and_results_are_read_typed_and_one_without_its_fields_is_a_bad_line(tmp_path):
    run = load(write_run(tmp_path / "run.jsonl", [
        {"type": "event", "t": 0.1, "kind": "run_info", "pid": 3, "info": {"framework": "torch", "epochs": 2}},
        {"type": "event", "t": 0.2, "kind": "run_info"},                                  # no info: bad
        {"type": "event", "t": 0.3, "kind": "run_info", "info": {"epochs": 3}},
        {"type": "event", "t": 1.0, "kind": "result", "name": "im2row", "values": {"ms": 45.1}},
        {"type": "event", "t": 1.1, "kind": "result", "values": {"ms": 9.0}}]))          # no name: bad
    assert run.bad_lines == 2
    assert [(e.info, e.extra) for e in run.run_info_events] == [({"framework": "torch", "epochs": 2}, {"pid": 3}),
                                                                ({"epochs": 3}, {})]
    assert [(e.name, e.values) for e in run.result_events] == [("im2row", {"ms": 45.1})]
    from devicewatch import analysis
    assert analysis.run_info(run) == {"framework": "torch", "epochs": 3}   # a later key wins
    assert analysis.results(run) == [{"name": "im2row", "ms": 45.1}]


def test_the_events_devicewatch_writes_itself_keep_their_own_fields_over_the_senders():
    printed = records.Phase(1.5, True, "epoch", 2, "main", {"epochs": 5, "source": "stdout", "kind": "x", "name": "y"})
    assert printed.to_json() == {"type": "event", "t": 1.5, "kind": "phase_begin", "name": "epoch", "epoch": 2,
                                 "lane": "main", "epochs": 5, "source": "stdout"}
    assert records.Phase.parse(printed.to_json()) == records.Phase(1.5, True, "epoch", 2, "main",
                                                                  {"epochs": 5, "source": "stdout"})
    marker = records.Marker(3.0, "look", {"source": "dashboard"})
    assert marker.to_json() == {"type": "event", "t": 3.0, "kind": "marker", "label": "look", "source": "dashboard"}
    assert records.Marker.parse(marker.to_json()) == marker
    read = {"type": "event", "t": 3.0, "kind": "marker", "pid": 4, "label": "look", "source": "workload"}
    assert list(records.Marker.parse(read).to_json()) == list(read)   # read: the file's order kept
    with pytest.raises(records.RecordError, match="^a marker record without label$"):
        records.Marker.parse({"type": "event", "t": 3.0, "kind": "marker"})
    with pytest.raises(records.RecordError, match="^a phase record without name$"):
        records.Phase.parse({"type": "event", "t": 3.0, "kind": "phase_end", "epoch": 1})


def test_what_the_recorder_writes_is_read_back_as_the_same_record(tmp_path):
    written = [records.log(0.1, "stdout", "loading...", partial=True),
               records.log(0.2, "stdout", "\ufffdPNG", raw="iVBORw==", cut_from=70_000),
               records.notice(0.3, "the workload is waiting for input", "info", state="waiting for input"),
               records.notice(0.4, "2 events over the bound", dropped={"marker": 2}, dropped_from=0.3, dropped_to=0.4),
               records.end(1.0, "cancelled", 143, "SIGTERM", "SIGTERM from outside",
                           clock=records.ClockPair(1000.5, 20.25), instrument={"active": False, "reason": "no torch"},
                           outside_signal="SIGTERM")]
    writer = RunWriter(str(tmp_path / "run.jsonl"), {"host": {"cpu_count": 1}, "workload": {}})
    for record in written:
        writer.write(record)
    writer.close()
    run = load(tmp_path / "run.jsonl")
    assert run.open_line is None and run.logs == [written[1]]   # the complete line replaced the open one
    assert run.notices == written[2:4] and run.end == written[4]
    assert run.duration == 1.0 and run.bad_lines == 0
    lines = (tmp_path / "run.jsonl").read_text().splitlines()[1:]
    assert [json.loads(line) for line in lines] == [record.to_json() for record in written]


@pytest.mark.parametrize("record", [
    {"type": "log", "t": 0.1, "line": "no stream"},
    {"type": "log", "t": 0.1, "stream": "stdout"},
    {"type": "notice", "t": 0.1, "level": "info"},
    {"type": "notice", "message": "no time"},
], ids=["log without stream", "log without line", "notice without message", "notice without t"])
def test_a_record_missing_a_required_field_is_a_bad_line_not_a_traceback(tmp_path, record):
    run = load(write_run(tmp_path / "run.jsonl", [record, {"type": "log", "t": 0.2, "stream": "stdout", "line": "ok"}]))
    assert run.bad_lines == 1 and [log.line for log in run.logs] == ["ok"] and run.notices == []


def test_an_end_without_a_status_is_a_bad_line_and_the_run_reads_as_cut_short(tmp_path):
    run = load(write_run(tmp_path / "run.jsonl", [], end={"type": "end", "t": 1.0, "exit_code": 0}))
    assert run.bad_lines == 1 and run.end is None and run.ended_abruptly


def test_the_gpu_status_and_cpu_limits_the_recorder_writes_are_read_back_as_the_same_records(tmp_path):
    written = [records.gpu_status(0.0, True, None, 2, gpm=[None, "GPM not supported on Tesla T4"]),
               records.cpu_limits(0.02, 77, CpuLimits(4, (0, 1), None, 1.5)),
               records.gpu_status(0.9, True, None, 2, util_period=[None, 0.1]),
               records.gpu_status(1.5, False, "NVML error: GPU is lost", 2)]
    writer = RunWriter(str(tmp_path / "run.jsonl"), {"host": {"cpu_count": 4}, "workload": {}})
    for record in written:
        writer.write(record)
    writer.close()
    run = load(tmp_path / "run.jsonl")
    assert run.gpu_status == [written[0], written[2], written[3]] and run.cpu_limit_records == [written[1]]
    assert run.bad_lines == 0
    assert run.cpu_limits is not None and run.cpu_limits.initial.allowed == 1.5   # two cores, a quota of 1.5
    lines = (tmp_path / "run.jsonl").read_bytes().splitlines()[1:]
    assert lines == [orjson.dumps(record.to_json()) for record in written]
    assert json.loads(lines[0]) == {"type": "gpu_status", "t": 0.0, "available": True, "reason": None, "devices": 2,
                                    "gpm": [None, "GPM not supported on Tesla T4"]}


@pytest.mark.parametrize("record", [
    {"type": "gpu_status", "t": 0.1, "reason": "no available", "devices": 0},
    {"type": "gpu_status", "t": 0.1, "available": "yes", "devices": 0},
    {"type": "cpu_limits", "t": 0.1, "pid": 7},
    {"type": "cpu_limits", "t": 0.1, "pid": 7, "host_cores": 4, "affinity": "0-x", "cpuset": None},
], ids=["gpu_status without available", "gpu_status with a word for available", "cpu_limits without limits",
        "cpu_limits with a damaged core list"])
def test_a_damaged_gpu_status_or_cpu_limits_is_a_bad_line_not_a_traceback(tmp_path, record):
    run = load(write_run(tmp_path / "run.jsonl", [record]))
    assert run.bad_lines == 1 and run.gpu_status == [] and run.cpu_limit_records == []


def test_parse_says_which_field_is_missing_in_one_line():
    with pytest.raises(records.RecordError, match="^a notice record without message$"):
        records.Notice.parse({"type": "notice", "t": 1.0})
    with pytest.raises(records.RecordError, match="^an end record without status$"):
        records.End.parse({"type": "end", "t": 1.0})


def test_an_epoch_events_metrics_are_told_apart_into_the_loops_figures_and_the_workloads_own():
    from devicewatch.loop_figures import UnitFigures

    told = records.EpochMetrics.of({"loss": 0.5, "steps": 50, "data_wait_s": 1.0, "accuracy": 0.9, "steps_per_s": 12.5})
    assert told.figures == UnitFigures(50, data_wait_s=1.0, steps_per_s=12.5)
    assert told.workload == {"loss": 0.5, "accuracy": 0.9}
    assert told.to_json() == {"loss": 0.5, "accuracy": 0.9, "steps": 50, "data_wait_s": 1.0, "steps_per_s": 12.5}
    # a script that says its own data wait, without the instrumentation's steps: its own metric
    own = records.EpochMetrics.of({"data_wait_s": 2.0})
    assert own == records.EpochMetrics(None, {"data_wait_s": 2.0})
    # read as attributes: the loop's figure where it measured one, else the workload's of that name
    assert (told.steps, told.data_wait_s, told.figures.steps_per_s) == (50, 1.0, 12.5)
    assert (own.steps, own.data_wait_s) == (None, 2.0)
    assert told.names() == ["loss", "accuracy", "steps", "data_wait_s", "steps_per_s"]
    assert (told.get("loss"), told.get("steps_per_s"), told.get("wait_s"), own.get("data_wait_s")) == (0.5, 12.5, None, 2.0)
    # two events of one epoch: the workload's loss, then the loop's figures over a loss of its own
    later = records.EpochMetrics.of({"steps": 60, "loss": 0.25})
    merged = told.then(later)
    assert merged.figures == UnitFigures(60, data_wait_s=1.0, steps_per_s=12.5)   # the loop's, one set
    assert merged.workload == {"loss": 0.25, "accuracy": 0.9}


def test_every_key_report_json_gives_for_an_epoch_row_is_declared_or_the_workloads_named_metric(tmp_path, capsys):
    import dataclasses

    from devicewatch.analysis.summary import EpochFigures
    from devicewatch.loop_figures import FIGURES

    from conftest import command

    workload_metrics = {"loss", "val_accuracy"}
    lines = [{"type": "sample", "t": 0.05 + 0.1 * k, "cpu": [50.0, 50.0], "cpu_total": 50.0} for k in range(60)]
    for e in (1, 2):
        t0 = 3.0 * (e - 1)
        begin = {"type": "event", "pid": 1, "name": "train", "epoch": e, "lane": "main", "source": "auto"}
        lines += [{**begin, "t": t0, "kind": "phase_begin"}, {**begin, "t": t0 + 3, "kind": "phase_end"},
                  {"type": "event", "pid": 1, "t": t0 + 3, "kind": "epoch", "epoch": e, "source": "auto",
                   "metrics": {"loss": 1.0 / e, "val_accuracy": 0.5 + e / 10, "steps": 30, "data_wait_s": 0.6,
                               "wait_s": 0.7, "iterators": 1, "steps_per_s": 10.0}}]
    path = write_run(tmp_path / "run.jsonl", sorted(lines, key=lambda r: r["t"]))
    assert command("report", [str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["epochs"]
    assert len(rows) == 2
    declared = {f.name for f in dataclasses.fields(EpochFigures)}
    for row in rows:
        assert set(row) == declared
        assert set(row["metrics"]) - set(FIGURES) == workload_metrics
