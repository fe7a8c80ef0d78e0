"""What keeps long runs cheap: events kept packed, phases paired as they arrive, columns in place."""

import numpy as np

from devicewatch import analysis
from devicewatch.runformat import runfile
from devicewatch.live.model import RunModel
from devicewatch.runformat.runfile import Follower, load
from devicewatch.runformat.eventlog import Events
from devicewatch.runformat.writer import RunWriter


def _event(t, kind, **fields):
    return {"type": "event", "t": t, "kind": kind, **fields}


def test_events_read_back_in_file_order_and_by_kind(tmp_path):
    """Markers are packed in blocks, the analysis's kinds are kept as dicts; both read back
    as the records written, in file order, by index, by slice and by kind."""
    kinds = ["marker", "phase_begin", "marker", "epoch", "custom", "phase_end", "result"]
    written = [_event(i / 10, kinds[i % len(kinds)], label=f"m{i}", name="train", epoch=1)
               for i in range(3 * Events.BLOCK + 5)]
    path = tmp_path / "events.jsonl"
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 1}})
    for record in written:
        writer.write(record)
    writer.close()
    events = load(path).events
    assert len(events) == len(written)
    assert list(events) == written
    assert events[0] == written[0] and events[-1] == written[-1]
    assert events[Events.BLOCK + 2] == written[Events.BLOCK + 2]
    assert events[5:12] == written[5:12]
    assert events.of("phase_begin", "phase_end") == [e for e in written if e["kind"] in ("phase_begin", "phase_end")]
    assert events.of("marker") == [e for e in written if e["kind"] == "marker"]
    assert len(events._kept) == sum(1 for e in written if e["kind"] in Events.DECODED)


def test_a_list_of_events_given_to_a_run_reads_the_same():
    records = [_event(1.0, "marker", label="a"), _event(2.0, "phase_begin", name="train")]
    run = runfile.Run("x.jsonl", {"host": {}}, events=records)
    assert list(run.events) == records and run.events.of("phase_begin") == records[1:]


def test_the_live_model_pairs_phases_as_analysis_does(tmp_path):
    """Fed a few records at a time, the model's phases equal ``analysis.phases`` of the whole
    run at every step: stdout epochs until the workload's own phases arrive, two lanes, a
    phase begun twice under one key, and a phase still open."""
    script = [
        _event(0.5, "phase_begin", name="epoch", epoch=1, source="stdout", pid=1),
        _event(1.0, "phase_end", name="epoch", epoch=1, source="stdout", pid=1),
        _event(1.5, "phase_begin", name="train", epoch=1, pid=1),
        _event(1.6, "phase_begin", name="data", epoch=1, lane="loader", pid=1),
        _event(1.6, "phase_begin", name="data", epoch=1, lane="loader", pid=1),
        _event(1.7, "phase_end", name="data", epoch=1, lane="loader", pid=1),
        _event(2.0, "marker", label="look", pid=1),
        _event(2.5, "phase_end", name="train", epoch=1, pid=1),
        _event(2.5, "phase_begin", name="validate", epoch=1, pid=1),
        _event(3.0, "phase_end", name="validate", epoch=1, pid=1),
        _event(3.0, "phase_begin", name="train", epoch=2, pid=1),
        _event(3.1, "epoch", epoch=1, metrics={"loss": 0.5}),
        _event(3.2, "epoch", epoch=1, metrics={"accuracy": 0.9}),
    ]
    path = tmp_path / "live.jsonl"
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 1}})
    follower = Follower(path)
    follower.poll()
    model = RunModel(follower.run)
    for i, record in enumerate(script):
        writer.write(record)
        writer.write({"type": "sample", "t": record["t"] + 0.05, "cpu": [50.0]})
        if i % 2:
            continue
        model.ingest(follower.poll())
        model.refresh_phases()
        expected = analysis.phases(follower.run)
        assert model.phases == expected
        assert [model.phases[j] for j in model._open] == [p for p in expected if p.open]
        # Epoch rows, computed again only for the epochs that changed, as analysis gives them.
        assert model.epoch_rows == analysis.epochs(follower.run, expected)
    writer.close()
    model.ingest(follower.poll())
    model.refresh_phases()
    names = [(p.name, p.lane, p.open) for p in model.phases]
    assert names == [("train", "main", False), ("data", "loader", False), ("data", "loader", True),
                     ("validate", "main", False), ("train", "main", True)]
    assert model.phases == analysis.phases(follower.run)
    assert model.epoch_rows == analysis.epochs(follower.run, analysis.phases(follower.run))
    assert model.epoch_rows[0].metrics.to_json() == {"loss": 0.5, "accuracy": 0.9}
    assert model.epochs_done == 0  # epoch 1's second data phase is still open, epoch 2's train too


def _random_script(rng):
    """Phases in three lanes over a dozen epochs as a workload's threads write them: nested,
    overlapping, ended out of the order they began, some left open, printed epochs before the
    workload's own phases, and epoch events with metrics."""
    records, t = [], 0.0
    for epoch in range(1, 4):   # printed epochs first (left out once the workload's own arrive)
        records += [_event(t, "phase_begin", name="epoch", epoch=epoch, source="stdout", pid=1),
                    _event(t + 0.4, "phase_end", name="epoch", epoch=epoch, source="stdout", pid=1)]
        t += 0.5
    for epoch in range(1, 13):
        begun = []
        for _ in range(int(rng.integers(2, 6))):
            lane = str(rng.choice(["main", "loader", "rank 1 main"]))
            name = str(rng.choice(["train", "validate", "data", "copy"]))
            t += float(rng.choice([0.0, 0.1, 0.3]))   # equal starts too
            records.append(_event(round(t, 3), "phase_begin", name=name, epoch=epoch, lane=lane, pid=1))
            begun.append((name, lane))
        rng.shuffle(begun)                              # ended in another order
        for name, lane in begun[:len(begun) - int(epoch % 5 == 0)]:   # every fifth epoch leaves one open
            t += float(rng.choice([0.05, 0.2]))
            records.append(_event(round(t, 3), "phase_end", name=name, epoch=epoch, lane=lane, pid=1))
        if rng.random() < 0.7:
            records.append(_event(round(t, 3), "epoch", epoch=epoch, metrics={"loss": float(rng.random())}))
    return records


def test_the_live_model_taking_phases_as_they_end_equals_pairing_the_whole_run(tmp_path):
    """Every pairing of the live model builds on the one before (each ended phase is looked at
    once): after each poll its phases, their arrays, lanes, epoch rows and lines equal what the
    whole run paired afresh gives."""
    from devicewatch.live.model import ordered_lanes
    from devicewatch.phase_kinds import KINDS

    for seed in range(6):
        rng = np.random.default_rng(seed)
        path = tmp_path / f"live-{seed}.jsonl"
        writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 1}})
        follower = Follower(path)
        follower.poll()
        model = RunModel(follower.run)
        script = _random_script(rng)
        at = 0
        while at < len(script):
            step = int(rng.integers(1, 8))
            for record in script[at:at + step]:
                writer.write(record)
            at = min(at + step, len(script))
            writer.write({"type": "sample", "t": script[at - 1]["t"] + 0.05, "cpu": [50.0]})
            model.ingest(follower.poll())
            model.refresh_phases()
            expected = analysis.phases(follower.run)
            assert model.phases == expected
            assert [model.phases[j] for j in model._open] == [p for p in expected if p.open]
            assert model.lanes == ordered_lanes(analysis.lanes(expected))
            arrays = model.phase_arrays
            assert arrays.starts.tolist() == [p.start for p in expected]
            assert arrays.ends.tolist() == [p.end for p in expected]
            assert arrays.kinds.tolist() == [KINDS.index(p.kind) for p in expected]
            assert arrays.names == tuple(p.name if p.epoch is None else f"{p.name} {p.epoch}" for p in expected)
            assert [model.lanes[i] for i in arrays.lanes] == [p.lane for p in expected]
            rows = analysis.epochs(follower.run, expected)
            assert model.epoch_rows == rows
            assert model.boundaries.tolist() == sorted({r.start for r in rows[1:]})
            open_epochs = {p.epoch for p in expected if p.open}
            assert model.epochs_done == sum(1 for r in rows if r.epoch not in open_epochs)
            # Time passes without an event: the open phases stretch to now, in the first lane's too.
            writer.write({"type": "sample", "t": script[at - 1]["t"] + 0.3, "cpu": [50.0]})
            model.ingest(follower.poll())
            model.refresh_phases()
            expected = analysis.phases(follower.run)
            main = model.main_lane_phases()
            first = [p for p in expected if p.lane == model.lanes[0]]
            assert main.ends.tolist() == [p.end for p in first] and main.starts.tolist() == [p.start for p in first]
            assert main.names == tuple(p.name if p.epoch is None else f"{p.name} {p.epoch}" for p in first)
        writer.close()
        follower.close()


def test_columns_grow_in_place_and_match_one_decode(tmp_path):
    """Read in many polls or all at once, the columns are the same."""
    path = tmp_path / "grow.jsonl"
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 3}})
    follower = Follower(path)
    follower.poll()
    for i in range(1, 20_001):
        writer.write({"type": "sample", "t": i / 10, "cpu": [i % 100, 50.0, 0.0]})
        if i % 4999 == 0:
            follower.poll()
    writer.close()
    follower.poll(final=True)
    whole = load(path).samples
    grown = follower.run.samples
    assert len(grown) == len(whole) == 20_000
    np.testing.assert_array_equal(grown.t, whole.t)
    np.testing.assert_array_equal(grown.cpu, whole.cpu)
    assert grown.cpu[12_345, 0] == 12_346 % 100


def _columns_equal(a, b):
    x_columns, y_columns = a.columns(), b.columns()
    assert list(x_columns) == list(y_columns)
    for key in x_columns:
        x, y = x_columns[key], y_columns[key]
        assert x.shape == y.shape and x.dtype == y.dtype, key
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), key


def test_sample_lines_decoded_by_chunk_equal_record_by_record(tmp_path):
    """``load`` decodes sample lines a chunk at a time (``samples.SAMPLE_LINE``); a follower
    collecting records decodes them one by one. Same columns, also for a chunk with a damaged
    line (counted bad: that chunk goes record by record) and one with GPU rows cut short of
    their trailing nulls (decoded row by row); the third chunk takes the flat path."""
    from bench.make_recording import generate

    path = tmp_path / "gen.jsonl"
    generate(str(path), 4, 2, 0.25, 10.0)  # 9,000 samples: three chunks
    lines = path.read_bytes().split(b"\n")
    samples_at = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"sample"')]
    lines[samples_at[100]] = lines[samples_at[100]][:-20] + b'x' * 20  # damaged in the middle
    lines[samples_at[5000]] = lines[samples_at[5000]].replace(b",null,null,null,null,null,null]", b"]")
    path.write_bytes(b"\n".join(lines))
    fast = load(path)
    with Follower(path) as follower:
        follower.poll(final=True)
        slow = follower.run
    assert fast.bad_lines == slow.bad_lines == 1
    assert len(fast.samples) == len(samples_at) - 1
    _columns_equal(fast.samples, slow.samples)
    assert not np.isnan(fast.samples.procs("mem_util")).all()


def test_a_machine_without_gpus_decodes_by_chunk_as_record_by_record(tmp_path):
    """Lines as the recorder writes them on a machine without GPUs (no GPU poll, buffered or
    per-process readings; core clocks once a second), followed five lines a poll as a live
    dashboard reads them: the kept rows equal the newest rows decoded one by one."""
    from bench.make_recording import probe_fields

    path = tmp_path / "cpu.jsonl"
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 3}}, probe_fields())
    grown = tmp_path / "grown.jsonl"
    follower = None
    for i in range(1, 701):
        sample = {"type": "sample", "t": i / 10, "cpu": [i % 100, 50.0, 0.0], "freq_mhz": 2400.0,
                  "mem": {"used": 2**30 + i * 2**20, "total": 2**33, "swap_used": 0, "swap_total": 0},
                  "proc": {"cpu": 99.5, "rss": 2**28 + i * 2**20, "threads": 3, "count": 1}, "recorder_cpu": 0.4}
        if i % 10 == 0:
            sample["cpu_mhz"] = [2400.0 + i % 7, 2401.0, 2402.0]
        writer.write(sample)
        if i % 5 == 0:
            grown.write_bytes(path.read_bytes())   # what the recorder has written by now
            follower = follower or Follower(grown, keep=100)
            follower.poll(samples=False)
    writer.close()
    sample_lines = [line for line in path.read_bytes().split(b"\n") if line.startswith(b'{"type":"sample"')]
    assert not any(b'"gpu' in line for line in sample_lines) and sum(b'"cpu_mhz"' in line for line in sample_lines) == 70
    whole = load(path).samples
    kept = follower.run.samples
    assert kept.total == len(whole) == 700 and 100 <= len(kept) <= 200
    expected = whole.columns()
    for key, column in kept.columns().items():
        rows = expected[key][len(whole) - len(kept):] if len(expected[key]) == len(whole) else expected[key]
        assert column.shape == rows.shape and column.dtype == rows.dtype, key
        assert np.array_equal(column, rows, equal_nan=column.dtype.kind == "f"), key
    assert not np.isnan(kept.cpu_mhz).all() and np.isnan(kept.cpu_mhz).any()


def test_a_followed_run_joins_a_column_when_read_and_every_row_is_there(tmp_path):
    """A follower whose reader asks for a few columns at each poll (as the live model does):
    the others are joined when read, later, at the widths reached by then (a fourth core and a
    clock reading appear halfway), or every ``JOIN_EVERY`` polls, and every column equals the
    file read whole."""
    from bench.make_recording import probe_fields
    from devicewatch.runformat.samples import JOIN_EVERY

    path = tmp_path / "grow.jsonl"
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 3}}, probe_fields())
    grown = tmp_path / "grown.jsonl"
    follower = None
    for i in range(1, 401):
        cores = 3 if i < 200 else 4
        sample = {"type": "sample", "t": i / 10, "cpu": [float(i % 100)] * cores, "freq_mhz": 2400.0,
                  "mem": {"used": 2**30 + i * 2**20, "total": 2**33, "swap_used": 0, "swap_total": 0},
                  "proc": {"cpu": 99.5, "rss": 2**28, "threads": 3, "count": 1}, "recorder_cpu": 0.4}
        if i >= 250 and i % 10 == 0:
            sample["cpu_mhz"] = [2400.0] * cores
        writer.write(sample)
        if i % 5 == 0:
            grown.write_bytes(path.read_bytes())
            follower = follower or Follower(grown)
            follower.poll(samples=False)
            samples = follower.run.samples
            assert len(samples.t) == samples.total == i and samples.cpu.shape == (i, cores)
            assert samples.proc("cpu").shape == (i,)
            assert max(map(len, samples._unjoined.values()), default=0) < JOIN_EVERY   # bounded while unread
    writer.close()
    whole = load(path).samples.columns()
    kept = follower.run.samples.columns()
    assert list(kept) == list(whole)
    for key, rows in whole.items():
        column = kept[key]
        assert column.shape == rows.shape and column.dtype == rows.dtype, key
        assert np.array_equal(column, rows, equal_nan=column.dtype.kind == "f"), key
    assert kept["cpu_mhz"].shape == (400, 4) and np.isnan(kept["cpu_mhz"][:249]).all()
    assert np.isnan(kept["cpu"][:199, 3]).all()


def test_per_core_bytes_fold_as_their_floats_do():
    """Folding per-core percents as bytes gives the rows folding their floats gives: a missing
    reading left out of its bucket, a bucket of missing ones missing, the rows past the last
    whole bucket kept as they are."""
    from devicewatch.runformat.downsample import minmax_rows, minmax_rows_bytes
    from devicewatch.runformat.percent import MISSING_PERCENT, percent_to_float

    rng = np.random.default_rng(7)
    percent = rng.integers(0, 101, size=(103, 3), dtype=np.uint8)
    percent[rng.random((103, 3)) < 0.2] = MISSING_PERCENT
    percent[10:15, 1] = MISSING_PERCENT  # one whole bucket of factor 5 missing on core 1
    for factor in (2, 5, 7):
        _, (floats,) = minmax_rows(np.arange(103.0), [percent_to_float(percent)], factor)
        folded = percent_to_float(minmax_rows_bytes(percent, factor, MISSING_PERCENT))
        np.testing.assert_array_equal(folded, floats)


def test_a_long_finished_run_is_folded_from_its_bytes_as_from_its_floats(tmp_path, monkeypatch):
    """The model of a finished run longer than it keeps: the per-core history folded from the
    stored bytes equals the one folded from floats, row for row."""
    from devicewatch.runformat.samples import Samples

    path = tmp_path / "long.jsonl"
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 2, "gpus": []}})
    for i in range(500):
        cpu = [float(i % 97), None if i % 11 == 0 else float((3 * i) % 101)]
        writer.write({"type": "sample", "t": i / 10, "cpu": cpu, "cpu_total": 40.0})
    writer.write({"type": "end", "t": 50.0, "status": "ok", "exit_code": 0})
    writer.close()
    monkeypatch.setattr(RunModel, "WINDOW", 60)
    monkeypatch.setattr(RunModel, "LIMIT", 120)
    run = load(path)
    assert run.samples.core_percent() is not None
    from_bytes = RunModel(run)
    monkeypatch.setattr(Samples, "core_percent", lambda self: None)
    from_floats = RunModel(load(path))
    assert len(from_bytes.t.values) <= RunModel.LIMIT
    np.testing.assert_array_equal(from_bytes.t.values, from_floats.t.values)
    np.testing.assert_array_equal(from_bytes.cpu.values, from_floats.cpu.values)


def test_the_live_verdict_judges_with_the_models_epochs_and_waits_longer_when_it_costs_more():
    from pathlib import Path

    run = load(Path(__file__).resolve().parent.parent / "fixtures" / "pipeline-serial.jsonl")
    now, cpu = [100.0], iter([0.0, 0.2])   # the verdict's CPU: 0.2 s
    model = RunModel(run, clock=lambda: now[0])
    model.cpu_clock = lambda: next(cpu)
    assert model.refresh_verdict(force=True)
    # The model's epoch rows, kept up to date, give the verdict analysis gives from the phases.
    rows = analysis.epochs(run, model.phases)
    assert model.verdict == analysis.verdict(run, model.series(), model.phases, rows, analysis.data_wait(rows))
    assert model.epoch_rows
    # 0.2 s of CPU at 1% of a core: the next verdict waits 20 s, not 3.
    model.version = -1   # new data
    now[0] += 2 * RunModel.VERDICT_EVERY
    assert not model.refresh_verdict()
    now[0] += 20.0
    model.cpu_clock = lambda: 0.0
    assert model.refresh_verdict()
