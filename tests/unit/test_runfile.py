import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devicewatch.runformat.runfile import FORMAT, SCHEMA, Follower, RunFileError, load
from devicewatch.runformat.writer import RunWriter

from conftest import write_run


def sample(t, cores=(10.0, 20.0)):
    return {"type": "sample", "t": t, "cpu": list(cores), "cpu_total": sum(cores) / len(cores)}


def test_load_sorts_records_by_type(tmp_path):
    path = write_run(tmp_path / "r.jsonl", [
        sample(0.1), {"type": "event", "t": 0.15, "kind": "marker", "label": "x"},
        {"type": "log", "t": 0.2, "stream": "stdout", "line": "hello"}, sample(0.2)])
    run = load(path)
    assert run.header.raw["format"] == FORMAT
    assert [s["t"] for s in run.samples] == [0.1, 0.2]
    assert run.events[0]["label"] == "x"
    assert run.logs[0].line == "hello"
    assert run.finished and not run.ended_abruptly
    assert run.duration == 0.2


def test_a_cut_last_line_is_accepted_and_marked(tmp_path):
    path = write_run(tmp_path / "r.jsonl", [sample(0.1), sample(0.2)], end=False)
    with open(path, "a") as f:
        f.write('{"type":"sample","t":0.3,"cpu":[1')
    run = load(path)
    assert len(run.samples) == 2
    assert run.cut_last_line
    assert run.ended_abruptly


def test_a_bad_line_in_the_middle_is_counted_not_fatal(tmp_path):
    path = tmp_path / "r.jsonl"
    write_run(path, [sample(0.1)], end=False)
    with open(path, "a") as f:
        f.write("not json\n")
        f.write(json.dumps(sample(0.2)) + "\n")
    run = load(path)
    assert run.bad_lines == 1 and len(run.samples) == 2


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    ('{"type": "header", "format": "something-else", "schema": 1}\n', "not a devicewatch run file"),
    ("hello world\n", "not a devicewatch run file"),
    ("\x00\x01\x02binary", "not a devicewatch run file"),
    ('{"type": "header", "format": "devicewatch-run", "schema": 99}\n', "newer devicewatch"),
    ('{"type": "header", "format": "devicewatch-run", "schema": "x"}\n', "invalid schema"),
])
def test_unreadable_files_are_refused_in_one_line(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(RunFileError) as error:
        load(path)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(RunFileError, match="no such file"):
        load(tmp_path / "absent.jsonl")
    with pytest.raises(RunFileError, match="directory"):
        load(tmp_path)


def test_follower_returns_only_complete_new_lines(tmp_path):
    path = tmp_path / "live.jsonl"
    writer = RunWriter(path, {"interval": 0.1})
    follower = Follower(path)
    assert follower.poll() == []
    assert follower.run is not None and follower.run.header.schema == SCHEMA
    writer.write(sample(0.1))
    with open(path, "a") as f:  # half a line, as a reader may see mid-write
        f.write('{"type":"sample","t":0.2,')
    new = follower.poll()
    assert [r["t"] for r in new] == [0.1]
    with open(path, "a") as f:
        f.write('"cpu":[5.0],"cpu_total":5.0}\n')
    assert [r["t"] for r in follower.poll()] == [0.2]
    assert len(follower.run.samples) == 2
    writer.close()
    follower.close()


def test_a_follower_without_sample_records_gives_the_same_columns_and_the_other_records(tmp_path):
    path = tmp_path / "live.jsonl"
    writer = RunWriter(path, {"interval": 0.1})
    both, columns_only = Follower(path), Follower(path)
    for follower in (both, columns_only):
        follower.poll()
    for i in range(1, 8):
        writer.write(sample(i / 10, (10.0 * i, 50.0)))
        if i % 3 == 0:
            writer.write({"type": "event", "t": i / 10, "kind": "phase_begin", "phase": "train"})
    records = both.poll()
    others = columns_only.poll(samples=False)
    assert [r["type"] for r in others] == ["event", "event"] == [r["type"] for r in records if r["type"] != "sample"]
    a, b = both.run.samples, columns_only.run.samples
    assert len(a) == len(b) == 7
    assert a.t.tolist() == b.t.tolist() and a.cpu.tolist() == b.cpu.tolist()
    assert a.cpu_total.tolist() == b.cpu_total.tolist()
    writer.close()
    both.close()
    columns_only.close()


def test_writer_flushes_every_record(tmp_path):
    path = tmp_path / "w.jsonl"
    writer = RunWriter(path, {"interval": 0.1})
    writer.write(sample(0.1))
    # Read while the writer is still open: the record must already be in the file.
    assert len(load(path).samples) == 1
    writer.close()


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(st.text(max_size=60), st.binary(max_size=60).map(lambda b: b.decode("latin-1")),
                                st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)
                                .map(json.dumps)), max_size=20))
def test_garbage_after_a_valid_header_never_breaks_the_reader(tmp_path, lines):
    path = tmp_path / "garbage.jsonl"
    write_run(path, [], end=False)
    with open(path, "a", encoding="utf-8", errors="surrogateescape") as f:
        for line in lines:
            f.write(line.replace("\n", " ") + "\n")
    run = load(path)  # must not raise: garbage is counted or ignored
    assert run.bad_lines >= 0
    assert all(isinstance(s, dict) for s in run.samples)
