"""Each core's clock: from the kernel's files, through the run format's codecs (one line in the
sample table), to the report's per-phase table."""

import os

import numpy as np
import pytest

from devicewatch import analysis, merge
from devicewatch.probes import procfs
from devicewatch.probes.cpu import CoreClocks, CpuProbe
from devicewatch.render.report import phase_clocks
from devicewatch.runformat import columnar
from devicewatch.runformat.runfile import Follower, load
from devicewatch.runformat.writer import RunWriter, compact

from conftest import merged_by_record
from test_merge import node_file


def test_cpuinfo_gives_each_processor_its_clock(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: x\ncpu MHz\t\t: 2445.402\n\n"
                       "processor\t: 2\ncpu MHz\t\t: 3000.000\n\n")
    clocks = CoreClocks.__new__(CoreClocks)
    clocks.source, clocks._files, clocks._cpuinfo = "cpuinfo", [], procfs.ProcFile(str(cpuinfo))
    assert clocks.read() == [2445.402, None, 3000.0]  # processor 1 is offline: no reading for it


def test_this_machine_records_a_clock_where_its_kernel_offers_one():
    offered = any(os.path.exists(f"/sys/devices/system/cpu/cpu0/cpufreq/{name}") for name in ("scaling_cur_freq",)) \
        or (os.path.exists("/proc/cpuinfo") and "cpu MHz" in open("/proc/cpuinfo").read())
    probe = CpuProbe()
    first = probe.sample()
    assert ("cpu_mhz" in first) == offered
    if offered:
        assert all(mhz is None or 1 < mhz < 20_000 for mhz in first["cpu_mhz"])
        assert "cpu_mhz" not in probe.sample()  # read once a second (SLOW_EVERY samples), not in between


def clock_run(path, readings):
    """Samples at 10 Hz with a clock reading in some; phases train [0, 1) and validate [1, 2)."""
    writer = RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 2, "gpus": []}})
    writer.write({"type": "event", "t": 0.0, "kind": "phase_begin", "name": "train", "epoch": 1})
    for i in range(20):
        record = {"type": "sample", "t": i / 10, "cpu": [50.0, 50.0]}
        if i in readings:
            record["cpu_mhz"] = readings[i]
        writer.write(record)
        if i == 9:
            writer.write({"type": "event", "t": 1.0, "kind": "phase_end", "name": "train", "epoch": 1})
            writer.write({"type": "event", "t": 1.0, "kind": "phase_begin", "name": "validate", "epoch": 1})
    writer.write({"type": "event", "t": 2.0, "kind": "phase_end", "name": "validate", "epoch": 1})
    writer.write({"type": "end", "t": 2.0, "status": "ok", "exit_code": 0, "signal": None, "duration": 2.0,
                  "reason": "done"})
    writer.close()
    compact(path)
    return path


READINGS = {0: [2000.4, 3000.0], 5: [None, 2500.0], 10: [1000.0, 1000.0]}


def test_the_clock_reads_the_same_by_every_path(tmp_path):
    """The writer's columns (from the values it encoded), the chunked line decoder and the
    record decoder give the same column: whole MHz where a sample read the clock, NaN between."""
    path = clock_run(tmp_path / "run.jsonl", READINGS)
    from_writer = load(path)
    assert from_writer.columnar
    os.unlink(columnar.path_for(path))
    from_lines = load(path)
    with Follower(path) as follower:
        follower.poll(final=True)  # collected: every line through the JSON parser
        from_records = follower.run
    expected = np.full((20, 2), np.nan)
    expected[0], expected[5, 1], expected[10] = [2000, 3000], 2500, [1000, 1000]
    for run in (from_writer, from_lines, from_records):
        assert np.array_equal(run.samples.cpu_mhz, expected, equal_nan=True)
    assert from_lines.samples[0]["cpu_mhz"] == [2000, 3000] and "cpu_mhz" not in from_lines.samples[1]


def test_report_gives_each_phase_its_mean_clock(tmp_path):
    run = load(clock_run(tmp_path / "run.jsonl", READINGS))
    # train: the readings at 0.0 (mean 2500) and 0.5 (2500, one core); validate: at 1.0 (1000)
    assert phase_clocks(run, analysis.phases(run), ["train", "validate", "(no phase)"]) == ["2500", "1000", "-"]
    none = load(clock_run(tmp_path / "none.jsonl", {}))
    assert phase_clocks(none, analysis.phases(none), ["train"]) is None


@pytest.mark.parametrize("block", [8192, 2])
def test_merge_keeps_each_nodes_clock(tmp_path, monkeypatch, block):
    monkeypatch.setattr(merge, "BLOCK", block)
    clocked = [{"type": "sample", "t": 1.5, "cpu": [20.0, 40.0], "cpu_mhz": [2400.4, 1800.0]},
               {"type": "sample", "t": 1.6, "cpu": [20.0, 40.0]}]
    a = node_file(tmp_path / "node0.jsonl", 0, 1000.0, 50.0, records=clocked)
    b = node_file(tmp_path / "node1.jsonl", 1, 1002.0005, 52.0)
    ours, theirs = tmp_path / "merged.jsonl", tmp_path / "by-record.jsonl"
    merge.write(merge.merge([str(a), str(b)]), str(ours))
    merged_by_record([str(a), str(b)], str(theirs))
    assert ours.read_bytes() == theirs.read_bytes()
    run = load(ours)
    node0 = run.of_host("node 0").samples
    assert node0.cpu_mhz[1].tolist() == [2400, 1800] and np.isnan(node0.cpu_mhz[[0, 2]]).all()
    assert np.isnan(run.of_host("node 1").samples.cpu_mhz).all()
