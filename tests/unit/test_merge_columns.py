"""The merge writes its samples from the nodes' columns a block at a time. What it writes is
defined by what it wrote when it took one reader's record per sample (``Samples.record``)
through the writer's encoder: ``conftest.merged_by_record`` does exactly that, and every case
here must come out the same, byte for byte, journal and columnar form alike."""

import json
import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devicewatch import merge
from devicewatch.runformat import columnar, runfile
from devicewatch.runformat import writer as runwriter
from devicewatch.runformat.runfile import load
from devicewatch.runformat.writer import RunWriter, compact
from devicewatch.runformat import encode
from devicewatch.runformat.schema import Chunk

from conftest import merged_by_record, merged_two_gpu_nodes, write_run
from test_merge import node_file, phase, two_nodes


def assert_merges_as_by_record(tmp_path, paths):
    ours, theirs = tmp_path / "merged.jsonl", tmp_path / "by-record.jsonl"
    merge.write(merge.merge([str(p) for p in paths]), str(ours))
    merged_by_record([str(p) for p in paths], str(theirs))
    assert ours.read_bytes().splitlines() == theirs.read_bytes().splitlines()
    assert ours.read_bytes() == theirs.read_bytes()
    # The columns made from the values written equal those decoded from the lines.
    assert open(columnar.path_for(ours), "rb").read() == open(columnar.path_for(theirs), "rb").read()
    assert load(ours).columnar
    return load(ours)


@pytest.fixture(params=[8192, 5], ids=["one block", "blocks of 5 records"])
def block(request, monkeypatch):
    """The merge a block at a time, and in blocks that cut through every node's samples."""
    monkeypatch.setattr(merge, "BLOCK", request.param)
    monkeypatch.setattr(runwriter._Columns, "EVERY", 3)  # the columns spilled every few samples
    return request.param


# -- the runs of the other tests --------------------------------------------------------------

def test_two_nodes_without_gpus(tmp_path, block):
    run = assert_merges_as_by_record(tmp_path, two_nodes(tmp_path))
    assert run.host_labels == ["node 0", "node 1"]


def test_nodes_with_gpus_buffered_samples_and_processes(tmp_path, block):
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    _, a, b = merged_two_gpu_nodes(fixture)
    run = assert_merges_as_by_record(tmp_path, [a, b])
    assert len(run.samples.util_t) == 4 + 4 and len(run.samples.procs_t) == 2 + 2


def test_a_slewed_clock_and_a_killed_recorder(tmp_path, block):
    a = node_file(tmp_path / "node0.jsonl", 0, 1000.0, 50.0)
    b = node_file(tmp_path / "node1.jsonl", 1, 1001.0, 951.0, host="other")
    b.write_text(b.read_text().replace('"unix": 1005.0', '"unix": 1005.0004'))
    c = node_file(tmp_path / "node2.jsonl", 2, 1000.5, 7.0, host="third", world=3, group=2)
    c.write_text("".join(c.read_text().splitlines(keepends=True)[:-1]))  # no end record
    a.write_text(a.read_text().replace('"world_size": 2', '"world_size": 3'))
    b.write_text(b.read_text().replace('"world_size": 2', '"world_size": 3'))
    run = assert_merges_as_by_record(tmp_path, [a, b, c])
    assert run.end.status == "error"


# -- a generated job: 8 GPUs' worth of readings, and a node cut short ------------------------

def test_a_generated_job_with_a_node_cut_short(tmp_path, block):
    """Three nodes of a job as their recorders write them (``make_recording --node``): 4 cores,
    2 GPUs with GPM on every other sample, the driver's buffered samples, a process per GPU,
    two ranks a node; node 2's recorder was killed after a third of the others' time."""
    from bench.make_recording import generate_node

    paths = []
    for node, hours, killed in ((0, 0.01, False), (1, 0.01, False), (2, 0.003, True)):
        path = tmp_path / f"node{node}.jsonl"
        generate_node(str(path), node, 3, cores=4, gpus=2, hours=hours, ranks=2, killed=killed, epoch_seconds=40.0)
        paths.append(path)
    assert not load(paths[2]).end and not load(paths[2]).columnar  # read from its journal
    run = assert_merges_as_by_record(tmp_path, paths)
    samples = run.samples
    assert run.end.status == "error" and run.host_labels == ["node 0", "node 1", "node 2"]
    assert len(samples) == 360 + 360 + 108 and len(samples.util_t) and len(samples.procs_t)
    assert not np.isnan(samples.gpu("sm_active")).all()
    assert {lane for lane in (e.get("lane") for e in run.events) if lane} >= {"rank 0", "rank 3 loader", "rank 5"}


# -- readings at every edge of the encoding -----------------------------------------------------

def edge_nodes(tmp_path):
    """Node 1 (schema 1) starts first, with ties for every rounding (``round(0.35, 1)`` is 0.3,
    ``np.round`` gives 0.4), fractional percents, a core and a GPU that appear later, a sample
    without GPUs or process readings, two samples at one time, buffered samples out of order
    and one older than the sample before. Node 0 (schema 2, written by hand) declares fields of
    its own (none of the probes' GPM, a system field the probes do not have), null readings,
    a process on a GPU it does not have, a slow poll's time and the dashboard's CPU."""
    def gpu(util, util_samples, procs, **more):
        return {"util": util, "mem_used": 3.5 * 2 ** 20, "power_w": 100.5, "temp_c": None, "sm_active": 12.25,
                "util_samples": util_samples, "procs": procs, **more}

    samples = [
        {"type": "sample", "t": 0.25, "cpu": [10.5, 11.5, 12.25], "cpu_total": 11.0, "freq_mhz": 0.35,
         "mem": {"used": 2.5 * 2 ** 20, "total": 8e9, "swap_used": 0, "swap_total": 0.45},
         "proc": {"cpu": 12.35, "rss": 1.5 * 2 ** 20, "threads": 3, "count": 1},
         "gpus": [gpu(50.25, [[0.2, 30.0], [0.15, 20.45]], [{"pid": 7, "mem": 2.0 ** 21, "util": 5.5}]),
                  gpu(60.0, [[0.21, 61.05]], [])],
         "recorder_cpu": 0.45, "watcher_cpu": 1.0, "gpus_t": 0.2},
        {"type": "sample", "t": 0.35, "cpu": [10.0, None, 30.0], "cpu_total": 20.0, "proc": None},
        {"type": "sample", "t": 0.35, "cpu": [1.0, 2.0, 3.0], "cpu_total": 2.0,
         "gpus": [gpu(1.0, [[0.3, 1.0]], [{"pid": 8, "mem": 0.0, "util": 0.45}])]},
        {"type": "sample", "t": 0.45, "cpu": [1.0, 2.0, 3.0, 4.5], "cpu_total": 2.5, "recorder_cpu": -0.05,
         "gpus": [gpu(2.0, [[0.1, 99.0], [0.44, 2.0]], []), gpu(3.0, [], [{"pid": 9}]),
                  gpu(4.0, [[0.4, 4.0]], [])]},
    ]
    one = write_run(tmp_path / "node1.jsonl", [
        *samples, phase("phase_begin", 0.2, 1, 1, group=1), phase("phase_end", 0.5, 1, 1, group=1),
        {"type": "notice", "t": 0.3, "level": "warning", "message": "a GPU went away"},
        {"type": "gpu_status", "t": 0.0, "available": True, "reason": None, "devices": 2}],
        header={"started_unix": 999.9, "clock": {"unix": 999.9, "mono": 20.0},
                "host": {"hostname": "b", "cpu_count": 3, "mem_total": 8e9,
                         "gpus": [{"name": "A100", "mem_total": 40000.0}] * 2}},
        end={"type": "end", "t": 0.6, "status": "failed", "exit_code": 3, "signal": None, "duration": 0.6,
             "reason": "exit 3", "clock": {"unix": 1000.5, "mono": 20.6}})

    fields = {"fields": {"sys": ["mem_used", "mem_total", "load"], "proc": ["cpu", "rss"],
                         "gpu": ["util", "mem_used", "power_w"], "gpu_proc": ["pid", "mem"]},
              "scale": {"sys": [1048576, 1048576, 1], "proc": [1, 1048576],
                        "gpu": [1, 1048576, 1], "gpu_proc": [1, 1048576]}}
    header = {"type": "header", "format": "devicewatch-run", "schema": 2, "devicewatch": "test",
              "started": "2026-01-01T00:00:00+00:00", "started_unix": 1000.0, "interval": 0.1,
              "clock": {"unix": 1000.0, "mono": 300.0},
              "host": {"hostname": "a", "cpu_count": 2, "mem_total": 16e9, "gpus": [{"name": "H100", "mem_total": 80000.0}]},
              "workload": {"name": "literal", "args": [], "command": ["literal"]}, **fields}
    lines = [header,
             {"type": "sample", "t": 0.2, "cpu": [5, None], "sys": [100, 16000, 0.7], "proc": [1.55, 200],
              "gpu": [[40, 100, 250]], "gpu_util": [0, -50, 39.5, 0, -10, 41], "gpu_procs": [0, 123, 50, 1, 999, 1],
              "recorder_cpu": 0.35},
             {"type": "sample", "t": 0.3, "cpu": [6, 7], "sys": [100, 16000, 0.7], "proc": None, "gpu": [[None, None, None]]},
             {"type": "sample", "t": 0.4, "cpu": [6, 7], "sys": [None, 16000, 0.7], "proc": [None, None]},
             {"type": "sample", "t": 0.5, "cpu": [6, 7], "sys": [100, 16000, 0.7], "proc": [2.5, None],
              "gpu": [[41, None, 251]], "gpus_t": 0.45, "watcher_cpu": 3.25},
             phase("phase_begin", 0.1, 0, 1, group=0), phase("phase_end", 0.45, 0, 1, group=0),
             {"type": "log", "t": 0.5, "stream": "stdout", "line": "done"},
             {"type": "end", "t": 0.55, "status": "ok", "exit_code": 0, "signal": None, "duration": 0.55,
              "reason": "the workload finished", "clock": {"unix": 1000.55, "mono": 300.55}}]
    zero = tmp_path / "node0.jsonl"
    zero.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return zero, one


def test_readings_at_every_edge_of_the_encoding(tmp_path, block):
    zero, one = edge_nodes(tmp_path)
    run = assert_merges_as_by_record(tmp_path, [zero, one])
    samples = run.samples
    # node 1 started first: its samples come first, so its host is the first the reader meets
    assert samples.host_labels == ["node 1", "node 0"] and run.host_labels == ["node 0", "node 1"]
    first = next(json.loads(line) for line in (tmp_path / "merged.jsonl").read_text().splitlines()
                 if line.startswith('{"type":"sample"') and '"host":"node 1"' in line)
    assert first["cpu"] == [10, 12, 12, None] and first["sys"][0] == 0.3  # half to even; Python's round
    assert first["recorder_cpu"] == 0.5 and first["gpus_t"] == 0.2  # 0.45 is 0.450000000000000011…


# -- the pieces -----------------------------------------------------------------------------

def near_ties(digits):
    """Values within a few ulps of a decimal tie at ``digits`` decimals, where scaling first tips them."""
    def value(k, steps):
        tie = (k + 0.5) / 10 ** digits
        for _ in range(abs(steps)):
            tie = np.nextafter(tie, math.copysign(math.inf, steps))
        return float(tie)

    return st.builds(value, st.integers(-10 ** 9, 10 ** 9), st.integers(-3, 3))


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 6).flatmap(lambda d: st.tuples(st.just(d), st.lists(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e6, 1e6), near_ties(d)), max_size=30))))
def test_rounding_is_pythons_to_the_bit(case):
    digits, values = case
    ours = encode.python_round(np.array(values, dtype=np.float64), digits)
    for value, got in zip(values, ours.tolist()):
        want = round(value, digits) if math.isfinite(value) else value
        assert (math.isnan(want) and math.isnan(got)) or (got == want and math.copysign(1, got) == math.copysign(1, want)), \
            (value, digits, got, want)


stored_values = st.one_of(st.integers(-2 ** 40, 2 ** 40).map(float), st.floats(-1e6, 1e6), st.just(math.nan),
                          st.just(-0.0), st.floats(1e15, 1e17), st.just(math.inf))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.lists(stored_values, min_size=12, max_size=12), st.booleans())
def test_arrays_become_the_json_the_encoder_wrote(rows, width, values, three_axes):
    """A whole number as an int, any other as its float, NaN and infinity as null; rows cut
    from one text of the block as the per-row ``orjson`` text of the encoder's values."""
    shape = (rows, 2, width) if three_axes else (rows, width)
    array = np.resize(np.array(values), shape)

    def encoded(x):
        return None if not math.isfinite(x) else (int(x) if x == math.floor(x) else x)

    want = [orjson.dumps([[encoded(x) for x in r] for r in row] if three_axes else [encoded(x) for x in row])[1:-1]
            for row in array.tolist()]
    assert encode.rows_json(array) == want
    flat = array.reshape(rows, -1)
    owner = np.repeat(np.arange(rows), 1)
    assert encode.flat_rows_json(flat, owner, rows + 1) == [orjson.dumps([encoded(x) for x in row])[1:-1]
                                                       for row in flat.tolist()] + [b""]
    assert encode.scalars_json(flat[:, 0]) == [orjson.dumps(encoded(x)) for x in flat[:, 0].tolist()]


# -- the writer's part ------------------------------------------------------------------------

FIELDS = {"fields": {"sys": ["freq_mhz"], "proc": ["cpu"], "gpu": ["util", "mem_used"], "gpu_proc": ["pid"]},
          "scale": {"sys": [1], "proc": [1], "gpu": [1, 1048576], "gpu_proc": [1]}}
LINES = [b'{"type":"sample","t":0.1,"cpu":[10,20],"sys":[2000],"proc":[1.5],"gpu":[[40,300]],'
         b'"gpu_util":[0,-50,35],"gpu_procs":[0,77],"recorder_cpu":0.4,"host":"node 1"}',
         b'{"type":"sample","t":0.2,"cpu":[11,null,30],"sys":[null],"proc":null,"host":"node 0"}']


def stored_of_lines(host=("node 1", "node 0")):
    """What ``LINES`` store, by hand: a third core in the second sample, no GPU poll in it."""
    nan = math.nan
    return Chunk({"t": np.array([0.1, 0.2]), "cpu": np.array([[10, 20, nan], [11, nan, 30]]),
                  "recorder_cpu": np.array([0.4, nan]), "watcher_cpu": np.array([nan, nan]),
                  "gpus_t": np.array([nan, nan])},
                 np.array([[2000.0], [nan]]), np.array([[1.5], [nan]]), np.array([True, False]),
                 np.array([[[40.0, 300.0]], [[nan, nan]]]),
                 (np.array([[0.0, -50.0, 35.0]]), np.array([0])), (np.array([[0.0, 77.0]]), np.array([0])), list(host))


def test_the_writer_makes_columns_from_stored_values_as_from_the_lines(tmp_path):
    header = {"host": {"cpu_count": 2, "gpus": [{"mem_total": 1 << 33}]}}
    event = {"type": "event", "t": 0.15, "kind": "marker", "label": "between"}
    end = {"type": "end", "t": 0.3, "status": "ok", "exit_code": 0, "signal": None, "duration": 0.3, "reason": "done"}
    given, decoded = tmp_path / "given.jsonl", tmp_path / "decoded.jsonl"
    writer = RunWriter(given, header, FIELDS)
    writer.write_records([LINES[0], event, LINES[1]], stored_of_lines())
    writer.write(end)
    writer.close()
    compact(given)
    writer = RunWriter(decoded, header, FIELDS)
    for line in (LINES[0], event, LINES[1], end):
        writer.write_line(orjson.loads(line) if isinstance(line, bytes) else line)
    writer.close()
    compact(decoded)
    assert given.read_bytes() == decoded.read_bytes()
    assert open(columnar.path_for(given), "rb").read() == open(columnar.path_for(decoded), "rb").read()
    run = load(given)
    assert run.columnar and run.samples.host_labels == ["node 1", "node 0"] and run.samples.cores == 3
    assert run.samples.gpu("mem_used")[0, 0] == 300 * 2 ** 20 and list(run.samples.util_t) == [0.05]


def test_stored_values_that_do_not_match_the_lines_are_never_believed(tmp_path):
    """One sample fewer than the lines hold: the columns built while writing are dropped, and
    the columnar form is made from the journal as for any run."""
    path = tmp_path / "run.jsonl"
    writer = RunWriter(path, {"host": {"cpu_count": 2, "gpus": []}}, FIELDS)
    wrong = stored_of_lines()
    one = Chunk({name: array[:1] for name, array in wrong.plain.items()}, wrong.sys[:1], wrong.proc[:1],
                wrong.present[:1], wrong.gpu[:1], wrong.util, wrong.procs, wrong.host[:1])
    writer.write_records(LINES, one)
    writer.write({"type": "end", "t": 0.3, "status": "ok", "exit_code": 0, "signal": None, "duration": 0.3,
                  "reason": "done"})
    writer.close()
    assert compact(path) == columnar.path_for(path)
    run = load(path)
    assert run.columnar and len(run.samples) == 2 and run.samples.host_labels == ["node 1", "node 0"]
    writer = RunWriter(tmp_path / "other.jsonl", {"host": {}}, FIELDS)
    with pytest.raises(ValueError, match="must be a sample"):
        writer.write_records([b'{"type":"event","t":0.1,"kind":"marker"}'])
    writer.close()
