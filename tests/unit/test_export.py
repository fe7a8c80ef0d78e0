"""export: Perfetto trace structure, CSV round trip, well-formed SVG, bad input."""

from __future__ import annotations

import csv
from pathlib import Path
import io
import json
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout

import pytest

from conftest import command, merged_two_gpu_nodes
from devicewatch import analysis
from devicewatch.render import export
from devicewatch.errors import UsageError
from devicewatch.runformat.runfile import RunFileError, load
from devicewatch.runformat.writer import RunWriter

SVG = "{http://www.w3.org/2000/svg}"


def event(t, kind, **fields):
    return {"type": "event", "t": t, "kind": kind, "pid": 7, "thread": "MainThread", **fields}


def phase(name, epoch, lane, start, end, **attrs):
    base = {"name": name, "epoch": epoch, "lane": lane, **attrs}
    return [event(start, "phase_begin", **base), event(end, "phase_end", **base)]


@pytest.fixture
def run_path(tmp_path):
    """Two epochs; validation runs in its own lane and the two validations overlap each other
    (1.5–3.5 and 3.0–5.0), so that lane needs two tracks. One GPU with buffered samples."""
    path = tmp_path / "run.jsonl"
    writer = RunWriter(path, {"interval": 0.5,
                              "host": {"cpu_count": 2, "gpus": [{"name": "Test GPU"}]},
                              "workload": {"name": "pipe<&>line", "args": []}})
    records = [
        *phase("train", 1, "main", 0.0, 1.5), *phase("train", 2, "main", 1.5, 3.0),
        *phase("validate", 1, "validate", 1.5, 3.5), *phase("validate", 2, "validate", 3.0, 5.0),
        *phase("copy", 1, "main", 1.5, 1.5),
        event(2.25, "marker", label="checkpoint", step=100),
        event(3.5, "epoch", epoch=1, metrics={"loss": 1.25, "val_accuracy": 0.5}),
        event(5.0, "result", name="im2row", values={"ms": 45.1}),
    ]
    for i in range(10):
        t = 0.5 * (i + 1)
        gpu = {"index": 0, "util": 10.0 * i, "mem_used": 2**20 * (i + 1), "power_w": 50.0 + i,
               "util_samples": [[t - 0.25, 5.0 * i], [t, 10.0 * i]]}
        records.append({"type": "sample", "t": t, "cpu": [10.0 * i, 100.0 - 10.0 * i], "cpu_total": 50.0,
                        "proc": {"cpu": 100.0 + i, "rss": 1000 + i}, "gpus": [gpu] if i != 4 else []})
    records.append({"type": "notice", "t": 2.0, "message": "something to note"})
    for record in sorted(records, key=lambda r: r["t"]):
        writer.write(record)
    writer.write({"type": "end", "t": 5.2, "status": "ok", "exit_code": 0, "duration": 5.2})
    writer.close()
    return path


def test_assign_tracks_never_overlaps_on_a_track():
    assert export.assign_tracks([(0, 2), (1, 3), (2, 4), (2.5, 3)]) == [0, 1, 0, 2]
    assert export.assign_tracks([]) == []


def test_perfetto_structure(run_path):
    trace = export.perfetto(analysis.run_figures(load(run_path)))
    json.dumps(trace, allow_nan=False)   # strict JSON: no NaN or infinity
    events = trace["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "C", "X", "i"}
    # every slice is a complete event with a duration; no B/E pairs to leave open
    slices = [e for e in events if e["ph"] == "X"]
    assert all(isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] >= 0 for e in slices)
    # timestamps are microseconds since the run started
    train2 = next(e for e in slices if e["name"] == "train" and e["args"]["epoch"] == 2)
    assert (train2["ts"], train2["dur"]) == (1_500_000, 1_500_000)
    # no two slices on one track overlap
    by_track: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_track.values():
        spans.sort()
        assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    validations = [e for e in slices if e["name"] == "validate"]
    assert validations[0]["tid"] != validations[1]["tid"]     # overlapping: two tracks of one lane
    # names for the process and every track that holds something
    names = {(e["name"], e.get("tid")): e["args"] for e in events if e["ph"] == "M"}
    assert names[("process_name", 0)]["name"] == "devicewatch: pipe<&>line"
    thread_names = {tid: args["name"] for (kind, tid), args in names.items() if kind == "thread_name"}
    used = {e["tid"] for e in events if e["ph"] in ("X", "i")}
    assert used <= set(thread_names)
    assert {"lane main", "lane validate", "lane validate (2)", "epochs", "markers"} <= set(thread_names.values())
    # counters: one per core and per GPU metric
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"CPU total %", "CPU core 0 %", "CPU core 1 %", "GPU 0 utilization %", "GPU 0 memory MiB",
            "GPU 0 power W", "workload CPU % of one core", "workload memory MiB"} <= counters
    core1 = [e for e in events if e["ph"] == "C" and e["name"] == "CPU core 1 %"]
    assert [(e["ts"], e["args"]["value"]) for e in core1[:2]] == [(500_000, 100.0), (1_000_000, 90.0)]
    # GPU utilization from the driver's buffered samples: two per sample, for the 9 samples with a GPU
    gpu = [e for e in events if e["ph"] == "C" and e["name"] == "GPU 0 utilization %"]
    assert len(gpu) == 18 and (gpu[0]["ts"], gpu[0]["args"]["value"]) == (250_000, 0.0)
    marker = next(e for e in events if e["ph"] == "i" and e["name"] == "checkpoint")
    assert marker["ts"] == 2_250_000 and marker["args"] == {"step": 100}
    assert any(e["ph"] == "i" and e["name"] == "result im2row" for e in events)


def test_perfetto_marks_an_unended_phase_open(tmp_path):
    path = tmp_path / "cut.jsonl"
    writer = RunWriter(path, {"host": {"cpu_count": 1}})
    writer.write(event(1.0, "phase_begin", name="train", epoch=1, lane="main"))
    writer.write({"type": "sample", "t": 2.0, "cpu": [50.0], "cpu_total": 50.0})
    writer.close()   # no end record: the recorder was killed
    slices = [e for e in export.perfetto(analysis.run_figures(load(path)))["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["ts"], e["dur"], e["args"]["open"]) for e in slices if e["cat"] == "train"] == [
        ("train", 1_000_000, 1_000_000, "never ended")]


def test_csv_round_trip(run_path, tmp_path):
    run = load(run_path)
    paths = export.write_csv(analysis.run_figures(run), str(tmp_path / "out.csv"))
    assert paths == [str(tmp_path / f"out_{kind}.csv") for kind in ("samples", "epochs", "phases")]
    with open(paths[0], newline="") as handle:
        samples = list(csv.DictReader(handle))
    assert list(samples[0]) == ["t", "cpu_total", "core0", "core1", "proc_cpu", "proc_rss",
                                "gpu0_util", "gpu0_mem_used", "gpu0_power_w", "phases"]
    assert len(samples) == len(run.samples) == 10
    for row, sample in zip(samples, run.samples):
        assert float(row["t"]) == sample["t"]
        assert [float(row["core0"]), float(row["core1"])] == sample["cpu"]
        assert float(row["proc_cpu"]) == sample["proc"]["cpu"] and int(row["proc_rss"]) == sample["proc"]["rss"]
    assert samples[4]["gpu0_util"] == "" and samples[4]["gpu0_power_w"] == ""   # the sample without a GPU
    assert float(samples[3]["gpu0_util"]) == 30.0 and int(samples[3]["gpu0_mem_used"]) == 4 * 2**20
    assert samples[0]["phases"] == "train"                      # t 0.5
    assert samples[2]["phases"] == "copy+train+validate"        # t 1.5: every phase touching it
    assert samples[6]["phases"] == "validate"                   # t 3.5
    with open(paths[1], newline="") as handle:
        epochs = list(csv.DictReader(handle))
    # epoch 1 spans train 0–1.5, copy at 1.5 and validate 1.5–3.5; epoch 2 train 1.5–3.0, validate 3.0–5.0
    assert [(int(e["epoch"]), float(e["start"]), float(e["end"]), float(e["train"]), float(e["validate"]))
            for e in epochs] == [(1, 0.0, 3.5, 1.5, 2.0), (2, 1.5, 5.0, 1.5, 2.0)]
    assert epochs[0]["loss"] == "1.25" and epochs[1]["loss"] == ""
    with open(paths[2], newline="") as handle:
        phases = list(csv.DictReader(handle))
    assert [(p["name"], p["lane"], float(p["duration"])) for p in phases[:2]] == [
        ("train", "main", 1.5), ("copy", "main", 0.0)]


def test_svg_is_well_formed(run_path):
    text = export.svg(analysis.run_figures(load(run_path)))
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    lines = [p.findtext(f"{SVG}title") for p in root.iter(f"{SVG}polyline")]
    assert lines == ["core 0", "core 1", "CPU total", "GPU 0"]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "pipe<&>line: utilization over time" in texts         # escaped, then read back
    assert "epoch 1" in texts and "epoch 2" in texts
    titles = [r.findtext(f"{SVG}title") for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert "validate 2: 2.000s" in titles


def test_svg_many_cores_draws_the_spread(tmp_path):
    path = tmp_path / "wide.jsonl"
    writer = RunWriter(path, {"host": {"cpu_count": 32}})
    for i in range(5):
        writer.write({"type": "sample", "t": float(i), "cpu": [float(c) for c in range(32)], "cpu_total": 15.5})
    writer.close()
    root = ET.fromstring(export.svg(analysis.run_figures(load(path))))
    assert [p.findtext(f"{SVG}title") for p in root.iter(f"{SVG}polyline")] == ["CPU total"]
    assert len(list(root.iter(f"{SVG}polygon"))) == 1


def test_downsampling_keeps_a_dip():
    t = [i / 100 for i in range(10_000)]
    v = [100.0] * 10_000
    v[5_123] = 0.0
    rt, rv = export._reduce(t, v, 200)
    assert len(rt) <= 400 and 0.0 in rv and rt == sorted(rt)


def test_main_writes_each_format(run_path, tmp_path):
    for fmt, out in (("perfetto", "t.json"), ("svg", "t.svg"), ("csv", "t")):
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            assert command("export", [str(run_path), "--format", fmt, "-o", str(tmp_path / out)]) == 0
        for written in buffer.getvalue().split():
            with open(written) as handle:
                assert handle.read(1)
    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())
    assert (tmp_path / "t_epochs.csv").exists()


def test_bad_input(run_path, tmp_path):
    with pytest.raises(RunFileError, match="no such file"):
        command("export", [str(tmp_path / "missing.jsonl"), "--format", "csv", "-o", str(tmp_path / "x")])
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"traceEvents": []}\n')
    with pytest.raises(RunFileError, match="not a devicewatch run file"):
        command("export", [str(foreign), "--format", "svg", "-o", str(tmp_path / "x.svg")])
    with pytest.raises(UsageError, match="invalid choice"):
        command("export", [str(run_path), "--format", "png", "-o", str(tmp_path / "x.png")])
    with pytest.raises(UsageError, match="required"):
        command("export", [str(run_path), "--format", "svg"])
    with pytest.raises(UsageError, match="cannot write"):
        command("export", [str(run_path), "--format", "svg", "-o", str(tmp_path / "no" / "such" / "dir.svg")])


@pytest.mark.parametrize("fmt, names", [("perfetto", [".json"]), ("svg", [".svg"]),
                                        ("csv", ["_samples.csv", "_epochs.csv", "_phases.csv"])])
def test_an_existing_directory_gets_the_files_inside_it(run_path, tmp_path, fmt, names):
    out = tmp_path / "out"
    out.mkdir()
    assert command("export", [str(run_path), "--format", fmt, "-o", str(out)]) == 0
    stem = Path(run_path).name.removesuffix(".jsonl")
    assert sorted(p.name for p in out.iterdir()) == sorted(stem + n for n in names)


def test_a_merged_run_exports_each_node_as_its_own_machine(tmp_path):
    """CSV rows say which node's machine they describe; the SVG draws a CPU chart and GPU
    charts per node instead of two machines' samples on one line."""
    out, _a, _b = merged_two_gpu_nodes(tmp_path)
    run = load(out)
    header, rows = export.sample_rows(run, analysis.phases(run))
    assert header[:3] == ["t", "host", "cpu_total"]
    assert [(r[0], r[1], r[2]) for r in rows] == [(0.5, "node 0", 20.0), (0.5, "node 1", 20.0),
                                                  (1.0, "node 1", 30.0), (1.5, "node 0", 7.5), (2.0, "node 1", 67.5)]
    titles = [t.text for t in ET.fromstring(export.svg(analysis.run_figures(run))).iter("{http://www.w3.org/2000/svg}text")
              if t.text and "utilization %" in t.text]
    assert titles == ["node 0: CPU utilization %, 2 cores", "node 0: GPU 0 utilization % (A100)",
                      "node 0: GPU 1 utilization % (A100)", "node 1: CPU utilization %, 2 cores",
                      "node 1: GPU 0 utilization % (H100)"]


def _export(run_path, fmt, out, *more):
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert command("export", [str(run_path), "--format", fmt, "-o", str(out), *more]) == 0
    return buffer.getvalue().split()


@pytest.mark.parametrize("fmt, suffix", [("perfetto", ".json"), ("svg", ".svg")])
def test_the_format_suffix_is_added_where_out_lacks_it(run_path, tmp_path, fmt, suffix):
    """``-o NAME`` writes NAME.json or NAME.svg, as --help says; NAME with the suffix is kept as it is."""
    assert _export(run_path, fmt, tmp_path / "talk") == [str(tmp_path / f"talk{suffix}")]
    assert _export(run_path, fmt, tmp_path / f"given{suffix.upper()}") == [str(tmp_path / f"given{suffix.upper()}")]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["run.jsonl", f"talk{suffix}", f"given{suffix.upper()}"])


def test_an_svg_then_a_trace_to_one_name_keeps_both(run_path, tmp_path):
    """What lost the SVG before: the trace goes to its own file."""
    svg = _export(run_path, "svg", tmp_path / "fig")
    trace = _export(run_path, "perfetto", tmp_path / "fig")
    assert (svg, trace) == ([str(tmp_path / "fig.svg")], [str(tmp_path / "fig.json")])
    ET.fromstring((tmp_path / "fig.svg").read_text())
    assert "traceEvents" in json.loads((tmp_path / "fig.json").read_text())


@pytest.mark.parametrize("fmt, existing", [("svg", "fig.svg"), ("perfetto", "fig.json"), ("csv", "fig_phases.csv")])
def test_an_existing_file_is_kept_unless_overwrite(run_path, tmp_path, fmt, existing):
    """One clear line and nothing written, not even the tables that did not exist yet; with
    --overwrite the file is replaced."""
    kept = tmp_path / existing
    kept.write_text("mine\n")
    with pytest.raises(UsageError, match=rf"export: {kept} already exists; nothing was written .*--overwrite"):
        command("export", [str(run_path), "--format", fmt, "-o", str(tmp_path / "fig")])
    assert kept.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["run.jsonl", existing])
    written = _export(run_path, fmt, tmp_path / "fig", "--overwrite")
    assert str(kept) in written and kept.read_text() != "mine\n"


def test_a_refused_export_exits_non_zero_with_one_line(run_path, tmp_path):
    import subprocess
    import sys

    (tmp_path / "fig.svg").write_text("mine\n")
    done = subprocess.run([sys.executable, "-m", "devicewatch", "export", str(run_path), "--format", "svg",
                           "-o", str(tmp_path / "fig")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "already exists" in done.stderr
    assert (tmp_path / "fig.svg").read_text() == "mine\n"
