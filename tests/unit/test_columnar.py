"""The columnar form beside a finished run's journal: it never disagrees with the journal, and a
stale, mismatched or damaged one is never believed."""

import gzip
import io
import json
import os
import shutil
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devicewatch import analysis
from devicewatch.runformat import columnar, runfile
from devicewatch.runformat import writer as runwriter
from devicewatch.recorder import Recorder, RecordOptions
from devicewatch.probes.gpu import GpuProbe
from devicewatch.runformat.header import Header
from devicewatch.runformat.runfile import Follower, load
from devicewatch.runformat.writer import RunWriter, compact
from devicewatch.runformat.schema import COLUMNS, SAMPLE_LINE

from conftest import ROOT, merged_two_gpu_nodes
from tests.fakes.nvml import FakeGpu, FakeNVML, FakeProcess

FIXTURES = ROOT / "tests" / "fixtures"


def journal(path):
    """The run as its journal alone gives it (the reader that ``load`` falls back to)."""
    with Follower(path) as follower:
        follower.poll(final=True, collect=False)
        return follower.run


def assert_same_run(fast, slow):
    """Every column, every other record and every figure of the two runs are the same."""
    assert fast.header == slow.header and fast.header.to_json() == slow.header.to_json()
    a, b = fast.samples, slow.samples
    assert (a.cores, a.gpus, a.host_labels, a.total, a.fields) == (b.cores, b.gpus, b.host_labels, b.total, b.fields)
    x_columns, y_columns = a.columns(), b.columns()
    assert list(x_columns) == list(y_columns)
    for key in x_columns:
        x, y = x_columns[key], y_columns[key]
        assert x.dtype == y.dtype and x.shape == y.shape, key
        np.testing.assert_array_equal(x, y, err_msg=key)
    assert list(fast.events) == list(slow.events)
    assert (fast.logs, fast.notices, fast.gpu_status, fast.end) == (slow.logs, slow.notices, slow.gpu_status, slow.end)
    assert (fast.bad_lines, fast.cut_last_line) == (slow.bad_lines, slow.cut_last_line)
    assert analysis.Summary.of(analysis.run_figures(fast)) == analysis.Summary.of(analysis.run_figures(slow))


def compacted(path):
    """``path`` compacted, read back from its columnar form, and read from its journal."""
    assert compact(path) == columnar.path_for(path)
    fast = load(path)
    assert fast.columnar
    slow = journal(path)
    assert not slow.columnar
    return fast, slow


def generated(tmp_path, name="gen.jsonl", **options):
    from bench.make_recording import generate

    path = tmp_path / name
    generate(str(path), **{"cores": 4, "gpus": 2, "hours": 0.05, "rate": 10.0, **options})
    return path


# -- the columnar form agrees with the journal ------------------------------------------------

def test_a_generated_gpu_run_is_compacted_as_it_is_written_and_agrees_column_by_column(tmp_path, monkeypatch):
    """Buffered utilization, per-process GPU use and GPM fields on every other sample; the
    writer spills a chunk every 100 samples, so the file joins many chunks."""
    monkeypatch.setattr(runwriter._Columns, "EVERY", 100)
    path = generated(tmp_path, events=50)
    assert os.path.exists(columnar.path_for(path))  # make_recording ends its run as the recorder does
    fast, slow = load(path), journal(path)
    assert fast.columnar
    samples = fast.samples
    assert len(samples) == 1800 and len(samples.util_t) and len(samples.procs_t)
    assert not np.isnan(samples.gpu("sm_active")).all() and np.isnan(samples.gpu("sm_active")[1::2]).all()  # GPM windows close on every other sample
    assert samples.core_percent() is not None  # whole percents stored as bytes
    assert_same_run(fast, slow)


def test_the_columns_built_while_writing_equal_those_built_from_the_journal(tmp_path):
    path = generated(tmp_path)
    written = open(columnar.path_for(path), "rb").read()
    os.remove(columnar.path_for(path))
    compact(path)  # no writer's columns in hand: the journal is read
    assert open(columnar.path_for(path), "rb").read() == written


def test_a_merged_run_keeps_its_hosts_and_each_node_reads_the_same(tmp_path):
    merged, _, _ = merged_two_gpu_nodes(tmp_path)
    assert os.path.exists(columnar.path_for(merged))  # merge ends its output as a run
    fast, slow = load(merged), journal(merged)
    assert fast.columnar and fast.host_labels == ["node 0", "node 1"]
    assert_same_run(fast, slow)
    for label in fast.host_labels:
        assert_same_run(fast.of_host(label), slow.of_host(label))


def test_the_recorder_compacts_its_run_when_it_ends(tmp_path):
    """The real recorder, with two fake GPUs (GPM on one, a workload process on the other)."""
    out = tmp_path / "run.jsonl"
    options = RecordOptions(output=str(out), command=[sys.executable, "-c", "import time; time.sleep(1.5)"],
                            interval=0.05, echo=False, status_line=False, grace=0.5)
    nvml = FakeNVML([FakeGpu(), FakeGpu(name="Tesla T4", gpm=False, processes=[FakeProcess(pid=os.getpid())])])
    assert Recorder(options, gpu_probe=GpuProbe(nvml_loader=nvml.module), out=io.StringIO(), err=io.StringIO()).run() == 0
    fast, slow = load(out), journal(out)
    assert fast.columnar and fast.end.status == "ok" and fast.samples.gpus == 2
    assert len(fast.samples.util_t) and not np.isnan(fast.samples.gpu("sm_active")).all()
    assert_same_run(fast, slow)


def test_widths_that_grow_and_fractional_percents_are_kept_exact(tmp_path, monkeypatch):
    """A chunk spilled before a third core and a GPU appeared is padded when the file is
    joined; a fractional per-core value keeps ``cpu`` in floats for the whole run."""
    monkeypatch.setattr(runwriter._Columns, "EVERY", 2)
    path = tmp_path / "grow.jsonl"
    writer = RunWriter(path, {"host": {"cpu_count": 2, "gpus": []}})
    for i in range(5):
        writer.write({"type": "sample", "t": i / 10, "cpu": [10.0, 20.0]})
    writer.write({"type": "event", "t": 0.45, "kind": "marker", "label": "more"})
    for i in range(5, 9):
        writer.write({"type": "sample", "t": i / 10, "cpu": [10.0, 20.0, 30.0],
                      "gpus": [{"util": 50.0 + i, "util_samples": [[i / 10 - 0.05, 40.0]], "mem_used": 1 << 20,
                                "procs": [{"pid": 7, "mem": 1 << 20, "util": 5.0}]}]})
    writer.write_line({"type": "sample", "t": 0.9, "cpu": [12.5, 20, 30], "sys": [None, None, None, None],
                       "proc": None})
    writer.write({"type": "end", "t": 1.0, "status": "ok", "exit_code": 0, "duration": 1.0})
    writer.close()
    fast, slow = compacted(path)
    assert fast.samples.cores == 3 and fast.samples.gpus == 1 and fast.samples.cpu[-1, 0] == 12.5
    assert fast.samples.core_percent() is None
    assert_same_run(fast, slow)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.jsonl")))
def test_every_fixture_reads_the_same_from_its_columnar_form(tmp_path, name):
    """Schema 1 and schema 2 alike: compacting an old recording changes nothing it shows."""
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    fast, slow = compacted(path)
    assert_same_run(fast, slow)
    assert analysis.Summary.of(analysis.run_figures(load(FIXTURES / name))).to_json() == dict(analysis.Summary.of(analysis.run_figures(fast)).to_json(), file=str(FIXTURES / name))


def test_a_gzipped_recording_reads_with_or_without_a_columnar_form(tmp_path):
    path = tmp_path / "run.jsonl.gz"
    path.write_bytes(gzip.compress((FIXTURES / "gpu-gpm.jsonl").read_bytes()))
    before = load(path)
    assert not before.columnar
    fast, slow = compacted(path)
    assert_same_run(fast, slow)
    assert_same_run(before, slow)


def test_damaged_lines_in_the_journal_are_counted_the_same(tmp_path):
    path = tmp_path / "damaged.jsonl"
    shutil.copy(FIXTURES / "gpu-synthetic-v2.jsonl", path)
    lines = path.read_bytes().split(b"\n")
    samples = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"sample"')]
    lines[samples[3]] = lines[samples[3]][:-9] + b"#" * 9          # a sample line in the writer's form, damaged
    lines[samples[8]] = b'{"t": 1.0, "cpu": [1, 2], "type": "sample", "sys": []}'  # a sample, keys reordered
    lines.insert(samples[5], b"not json at all")                    # a line of no record
    lines.insert(samples[6], b'{"type": "event", "t": "soon", "kind": "marker"}')  # an event out of shape
    path.write_bytes(b"\n".join(lines))
    fast, slow = compacted(path)
    assert slow.bad_lines == 3
    assert_same_run(fast, slow)


# -- a run cut short, a stale or a damaged columnar form ----------------------------------

def test_a_run_cut_short_gets_no_columnar_form_and_reads_from_its_journal(tmp_path):
    """A recorder killed mid-run writes no end record, and compacts nothing."""
    path = tmp_path / "cut.jsonl"
    writer = RunWriter(path, {"host": {"cpu_count": 2, "gpus": []}})
    for i in range(50):
        writer.write({"type": "sample", "t": i / 10, "cpu": [i % 100, 3.0]})
    writer.close()
    with open(path, "ab") as handle:
        handle.write(b'{"type":"sample","t":5.0,"cpu":[1,')  # the line being written when it died
    assert compact(path) is None and not os.path.exists(columnar.path_for(path))
    run = load(path)
    assert not run.columnar and run.ended_abruptly and run.cut_last_line and len(run.samples) == 50


def test_a_journal_that_grew_or_changed_after_compaction_is_read_instead(tmp_path):
    path = generated(tmp_path)
    data = path.read_bytes()
    with open(path, "ab") as handle:  # grew: a line appended
        handle.write(b'{"type":"log","t":200.0,"stream":"stdout","line":"later"}\n')
    run = load(path)
    assert not run.columnar and run.logs[-1].line == "later"
    path.write_bytes(data.replace(b'"line":"Epoch 1/1', b'"line":"Epoch 9/1'))  # same size, head or tail changed
    assert len(path.read_bytes()) == len(data)
    run = load(path)
    assert not run.columnar and any(log.line.startswith("Epoch 9/1") for log in run.logs)
    path.write_bytes(data)  # as it was: believed again
    assert load(path).columnar


def test_a_new_recording_at_the_same_path_never_inherits_the_old_columnar_form(tmp_path):
    path = generated(tmp_path, seed=1)
    old = columnar.path_for(path)
    kept = tmp_path / "old.columns"
    shutil.copy(old, kept)
    writer = RunWriter(path, {"host": {"cpu_count": 4, "gpus": []}})  # a new run at the same path
    assert not os.path.exists(old)  # the writer took the old run's columns away
    for i in range(30):
        writer.write({"type": "sample", "t": i / 10, "cpu": [1.0, 2.0, 3.0, 4.0]})
    writer.close()
    shutil.copy(kept, old)  # and should the old form come back (copied in with other files)…
    run = load(path)
    assert not run.columnar and len(run.samples) == 30  # …its fingerprint gives it away
    assert compact(path) is None  # no end record: nothing to compact
    run = load(path)
    assert not run.columnar and len(run.samples) == 30


def test_a_columnar_form_of_another_layout_or_version_is_ignored(tmp_path, monkeypatch):
    path = generated(tmp_path)
    monkeypatch.setattr(columnar, "LAYOUT", columnar.LAYOUT + 1)
    assert not load(path).columnar
    monkeypatch.undo()
    monkeypatch.setattr(columnar, "VERSION", columnar.VERSION + 1)
    assert not load(path).columnar
    monkeypatch.undo()
    assert load(path).columnar


def test_a_damaged_columnar_form_is_never_believed_and_never_raises(tmp_path):
    path = generated(tmp_path, hours=0.01)
    good = open(columnar.path_for(path), "rb").read()
    expected = journal(path)
    rng = np.random.default_rng(0)
    damaged = [good[:n] for n in sorted({0, 1, 8, 15, 16, 40, len(good) // 2, len(good) - 1}
                                         | set(rng.integers(0, len(good), 24).tolist()))]
    damaged += [b"garbage" * 100, columnar.MAGIC + b"\xff" * 8 + b"{", columnar.MAGIC + (10).to_bytes(8, "little") + b"[1,2,3]   "]
    head_length = int.from_bytes(good[8:16], "little")
    meta = good[16:16 + head_length]
    for old, new in [(b'"shape":[', b'"shape":[9'), (b'"offset":', b'"offset":-'), (b'"dtype":"<f8"', b'"dtype":"|O8"'),
                     (b'"state":{', b'"state":{"cores":"many",'), (b'"bad_lines":', b'"bad_lines":1.5,"x":')]:
        changed = meta.replace(old, new, 1)
        damaged.append(good[:8] + len(changed).to_bytes(8, "little") + changed + good[16 + head_length:])
    for data in damaged:
        with open(columnar.path_for(path), "wb") as handle:
            handle.write(data)
        run = load(path)
        assert not run.columnar
        assert len(run.samples) == len(expected.samples) and run.end == expected.end


def test_compact_of_a_foreign_file_writes_nothing_or_is_one_clear_error(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    assert compact(path) is None  # no end record: nothing to compact, and nothing read
    path.write_text('{"hello": "world"}\n{"type": "end", "t": 1.0}\n')
    with pytest.raises(runfile.RunFileError, match="not a devicewatch run file"):
        compact(path)
    assert not os.path.exists(columnar.path_for(path))
    assert compact(tmp_path / "missing.jsonl") is None


def test_the_layout_follows_the_declared_columns():
    """Every declared column is stored, under its key, in its dtype."""
    header = {"schema": 2, "host": {"cpu_count": 2, "gpus": [{}]},
              "fields": {"sys": ["a"], "proc": ["b"], "gpu": ["util", "mem_used"], "gpu_proc": ["pid", "mem"]}}
    samples = runfile.Samples(Header.parse(header))
    keys = [key for key, _, _ in samples.layout()]
    assert keys[:6] == ["t", "cpu", "cpu_total", "sys.a", "proc.b", "gpu_present"]
    assert "gpu.util" in keys and "gpu.mem_used" in keys and "procs.pid" in keys
    assert {column.name for column in COLUMNS if column.group is None} <= set(keys)
    for key, column, shape in samples.layout():
        array = samples.columns()[key]
        assert array.dtype == np.dtype(column.dtype) and array.shape == (0, *shape)


# -- the fingerprint ----------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=1, max_size=300_000), st.data())
def test_the_fingerprint_changes_with_the_size_and_with_any_byte_it_reads(tmp_path_factory, data, draw):
    """Growing, cutting, or changing a byte of the head, the tail or a probed block changes it;
    the same bytes always give the same fingerprint (a copy of the journal keeps its form)."""
    folder = tmp_path_factory.mktemp("fp")
    path = folder / "run.jsonl"
    path.write_bytes(data)
    before = columnar.fingerprint(path)
    copy = folder / "copy.jsonl"
    copy.write_bytes(data)
    assert columnar.fingerprint(copy) == before
    change = draw.draw(st.sampled_from(["grow", "cut", "head", "tail", "probe"]))
    if change == "grow":
        changed = data + draw.draw(st.binary(min_size=1, max_size=10))
    elif change == "cut":
        changed = data[:draw.draw(st.integers(0, len(data) - 1))]
    else:
        size = len(data)
        if change == "head":
            at = draw.draw(st.integers(0, min(size, columnar.HEAD) - 1))
        elif change == "tail":
            at = draw.draw(st.integers(max(0, size - columnar.TAIL), size - 1))
        else:
            probe = draw.draw(st.integers(0, columnar.PROBES - 1))
            start = size * (probe + 1) // (columnar.PROBES + 1)
            if start >= size:
                return
            at = draw.draw(st.integers(start, min(size, start + columnar.PROBE) - 1))
        changed = data[:at] + bytes([data[at] ^ (1 << draw.draw(st.integers(0, 7)))]) + data[at + 1:]
    path.write_bytes(changed)
    assert columnar.fingerprint(path) != before


def test_a_columnar_run_feeds_every_export(tmp_path):
    """Memory-mapped columns are read-only: nothing downstream may write into them."""
    from devicewatch.render import export

    path = generated(tmp_path, hours=0.01)
    run = load(path)
    assert run.columnar
    export.write_csv(analysis.run_figures(run), str(tmp_path / "out"))
    assert export.perfetto(analysis.run_figures(run))["traceEvents"] and export.svg(analysis.run_figures(run)).startswith("<svg")
    assert export.sample_rows(run, analysis.phases(run)) == export.sample_rows(journal(path), analysis.phases(run))


@pytest.mark.parametrize("label", ["node 1", "nœud 1", 'node "1"'])
def test_a_merged_runs_sample_lines_decode_by_chunk_as_one_by_one(tmp_path, label):
    """Samples with a host decode a chunk at a time (``samples.SAMPLE_LINE``), a name with an
    escape record by record: the same hosts, in the same order, as the JSON parser gives."""
    merged, _, _ = merged_two_gpu_nodes(tmp_path)
    text = merged.read_text().replace('"host":"node 1"', '"host":' + json.dumps(label, ensure_ascii=False))
    merged.write_text(text)
    chunked = journal(merged)
    with Follower(merged) as follower:
        follower.poll(final=True)  # records collected: each sample through the JSON parser
        one_by_one = follower.run
    written = json.dumps(label, ensure_ascii=False).encode()
    sample = next(line for line in text.encode().split(b"\n") if line.startswith(b'{"type":"sample"') and written in line)
    assert (SAMPLE_LINE.fullmatch(sample) is not None) == ('"' not in label)
    assert set(chunked.samples.host_labels) == {"node 0", label}
    assert chunked.samples.host_labels == one_by_one.samples.host_labels
    x, y = chunked.samples.columns(), one_by_one.samples.columns()
    for key in x:
        np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def test_replay_maps_a_finished_runs_columnar_form_and_follows_a_run_cut_short(tmp_path):
    """The replay screen's source reads a finished run as ``load`` does (its columns mapped,
    the same run); a run without its columnar form is read from its journal and followed."""
    from devicewatch.live.source import ReplaySource

    path = generated(tmp_path)
    source = ReplaySource(path)
    assert source.run is not None and source.run.columnar and source.finished_writing()
    assert source.poll() == []
    os.remove(columnar.path_for(path))
    assert_same_run(source.run, ReplaySource(path).run)
    assert not ReplaySource(path).run.columnar

    cut = tmp_path / "cut.jsonl"
    writer = RunWriter(cut, {"host": {"cpu_count": 2, "gpus": []}})
    for i in range(5):
        writer.write({"type": "sample", "t": i / 10, "cpu": [10.0, 3.0]})
    writer.close()
    growing = ReplaySource(cut)
    assert not growing.run.columnar and len(growing.run.samples) == 5
    with open(cut, "ab") as handle:
        handle.write(b'{"type":"sample","t":0.5,"cpu":[20,4]}\n')
    growing.poll()
    assert len(growing.run.samples) == 6


def test_a_followed_run_keeps_its_newest_rows_within_twice_keep_and_drops_the_rest_by_time(tmp_path):
    """A live view's run holds only a staging area (``keep``): polled a few lines at a time, its
    rows are always the newest of the whole run, every column cut at the same time, between
    ``keep`` and twice as many once that many came, and ``dropped`` counts the rest."""
    path = generated(tmp_path)   # 4 cores, 2 GPUs: buffered utilization and per-process readings
    whole = journal(path)
    lines = open(path, "rb").read().splitlines(keepends=True)
    keep, follow = 40, tmp_path / "followed.jsonl"
    t_all, util_t, procs_t = whole.samples.t, whole.samples.util_t, whole.samples.procs_t
    trims, step = 0, 7
    with open(follow, "wb") as out, Follower(follow, keep=keep) as follower:
        at, before = 0, 0
        while at < len(lines):
            out.writelines(lines[at:at + step])
            out.flush()
            at += step
            follower.poll(samples=False)
            samples = follower.run.samples
            n = len(samples)
            trims += n < before
            before = n
            if n:
                assert samples.total == int(np.searchsorted(t_all, samples.t[-1], side="right"))
            assert n <= 2 * keep and (n >= keep or samples.total == n)
            assert samples.dropped == samples.total - n
            first = samples.dropped
            np.testing.assert_array_equal(samples.t, t_all[first:samples.total])
            np.testing.assert_array_equal(samples.cpu, whole.samples.cpu[first:samples.total])
            cut = t_all[first] if first else -np.inf   # nothing dropped: the buffered samples before the first too
            # The other families are cut at the same time: their rows from the first kept row's on.
            for family_t, kept in ((util_t, samples.util_t), (procs_t, samples.procs_t)):
                chosen = family_t[(family_t >= cut) & (family_t <= samples.t[-1])]
                np.testing.assert_array_equal(np.sort(kept), np.sort(chosen))
    # Trimmed now and then, not at every poll: each trim leaves ``keep`` rows, and the next
    # comes once more than ``keep`` rows came (at most ``step`` a poll).
    total = whole.samples.total
    assert (total - 2 * keep) // (keep + step) <= trims <= (total - keep) // keep
