"""Schema 2 (field lists in the header, samples as per-device arrays) against schema 1."""

import gzip
import json
import shutil

import numpy as np
import pytest

from devicewatch import analysis
from devicewatch.runformat import downsample, runfile
from devicewatch.runformat import writer as runwriter
from devicewatch.runformat.runfile import RunFileError, load
from devicewatch.live.model import RunModel

from conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize("name", ["gpu-synthetic", "demo-cpu"])
def test_both_schemas_of_one_run_give_the_same_figures(name):
    v1, v2 = load(FIXTURES / f"{name}.jsonl"), load(FIXTURES / f"{name}-v2.jsonl")
    assert v1.header.schema == 1 and v2.header.schema == 2
    a, b = v1.samples, v2.samples
    assert np.array_equal(a.t, b.t)
    # Schema 2 stores whole percents per core: the same within half a percent.
    assert np.allclose(a.cpu, b.cpu, atol=0.5, equal_nan=True)
    assert np.allclose(a.gpu("util"), b.gpu("util"), equal_nan=True)
    assert np.allclose(a.gpu("mem_total"), b.gpu("mem_total"), equal_nan=True)  # header vs sample
    # Memory in MiB: within half a MiB of the bytes schema 1 wrote.
    assert np.allclose(a.sys("mem_used"), b.sys("mem_used"), atol=2**19, equal_nan=True)
    assert np.allclose(a.proc("rss"), b.proc("rss"), atol=2**19, equal_nan=True)
    s1, s2 = analysis.Summary.of(analysis.run_figures(v1)).to_json(), analysis.Summary.of(analysis.run_figures(v2)).to_json()
    assert s1["verdict"]["label"] == s2["verdict"]["label"]
    assert s1["epochs"] == s2["epochs"]
    assert [d["dips"] for d in s1["devices"]] == [d["dips"] for d in s2["devices"]]


def test_the_synthetic_gpu_run_dips_in_every_validation():
    """Three epochs of 4 s training at 95% and 1 s validation at 10%: three dips."""
    summary = analysis.Summary.of(analysis.run_figures(load(FIXTURES / "gpu-synthetic-v2.jsonl"))).to_json()
    assert summary["devices"][0]["dips"] == 3
    assert summary["devices"][0]["dip_phases"] == ["validate"]


def test_a_file_cut_anywhere_still_loads(tmp_path):
    data = (FIXTURES / "gpu-synthetic-v2.jsonl").read_bytes()
    full = len(load(FIXTURES / "gpu-synthetic-v2.jsonl").samples)
    header_end = data.index(b"\n") + 1
    previous = 0
    for cut in range(header_end, len(data), 97):
        path = tmp_path / "cut.jsonl"
        path.write_bytes(data[:cut])
        run = load(path)
        assert run.bad_lines == 0 and run.ended_abruptly
        assert previous <= len(run.samples) <= full
        previous = len(run.samples)
        tail = data[:cut].rsplit(b"\n", 1)[-1]
        assert run.cut_last_line == (tail != b"" and not _parses(tail))


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def test_a_gzipped_run_reads_like_the_plain_one(tmp_path):
    plain = FIXTURES / "gpu-synthetic-v2.jsonl"
    packed = tmp_path / "run.jsonl.gz"
    with open(plain, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert np.array_equal(load(packed).samples.t, load(plain).samples.t)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:-40])  # a compressed file cut short: what is there loads
    assert 0 < len(load(cut).samples) <= len(load(plain).samples)


def test_field_lists_come_from_the_header(tmp_path):
    """A GPU field the probes add later is written and read without either knowing its name."""
    path = tmp_path / "r.jsonl"
    fields = runwriter.probe_fields()
    fields["fields"]["gpu"].append("new_metric")
    fields["scale"]["gpu"].append(1)
    fields["digits"]["gpu"].append(1)
    writer = runwriter.RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 1, "gpus": [{"index": 0}]}}, fields)
    writer.write({"type": "sample", "t": 0.1, "cpu": [50.0], "gpus": [{"util": 7, "new_metric": 0.42}]})
    writer.close()
    assert json.loads(path.read_text().splitlines()[1])["gpu"][0][-1] == 0.4  # rounded to tenths
    samples = load(path).samples
    assert samples.gpu("new_metric")[0, 0] == pytest.approx(0.4)
    assert samples.gpu("util")[0, 0] == 7


def test_a_newer_schema_is_refused_in_one_line(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"type": "header", "format": "devicewatch-run", "schema": runfile.SCHEMA + 1}) + "\n")
    with pytest.raises(RunFileError, match=f"schema {runfile.SCHEMA + 1}; this one reads up to {runfile.SCHEMA}"):
        load(path)


def test_minmax_keeps_a_dip():
    t = np.arange(10_000) / 10.0
    v = np.full(10_000, 90.0)
    v[5_000] = 3.0  # one sample at 3% in a thousand seconds at 90%
    rt, rv = downsample.minmax(t, v, 100)
    assert len(rt) <= 200 and rv.min() == 3.0 and rt[np.argmin(rv)] == 500.0


def test_the_live_model_stays_bounded_and_keeps_dips(tmp_path):
    """Rows beyond the window are folded into (min, max) pairs: the row count stays under the
    limit however long the run, and a one-sample dip long ago is still in the history."""
    path = tmp_path / "long.jsonl"
    writer = runwriter.RunWriter(path, {"interval": 0.1, "host": {"cpu_count": 2}})
    follower = runfile.Follower(path)
    follower.poll()
    model = RunModel(follower.run)
    model.WINDOW, model.LIMIT = 100, 300
    for i in range(1, 3001):
        writer.write({"type": "sample", "t": i / 10, "cpu": [2.0 if i == 50 else 80.0, 80.0]})
        if i % 37 == 0:
            model.ingest(follower.poll())
    model.ingest(follower.poll())
    writer.close()
    assert model.t.size <= 300
    assert np.all(np.diff(model.t.values) >= 0)
    assert model.t.values[-1] == 300.0
    assert model.cpu.values[:, 0].min() == 2.0   # the dip at t = 5 s survived
    assert model.cpu_total.values.min() == 41.0  # (2 + 80) / 2
