"""compare: figures on small hand-made runs (expected values worked out below), the CLI's
handling of bad input, and --text / --pair on real demo recordings."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

from contextlib import redirect_stderr, redirect_stdout

import pytest

from conftest import command
from devicewatch import compare
from devicewatch.errors import UsageError
from devicewatch.render.compare_text import comparison_text
from devicewatch.runformat.runfile import RunFileError, load
from devicewatch.runformat.writer import RunWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_run(path, *, cores=2, gpus=0, phases=(), samples=(), duration=None, epochs_metrics=(),
              name="demo", hostname="host", status="ok"):
    """A run file from literal pieces. phases: (name, epoch, lane, start, end);
    samples: (t, [core percents], [gpu utils])."""
    header = {"interval": 0.5, "host": {"hostname": hostname, "cpu_model": "test cpu", "cpu_count": cores,
                                        "gpus": [{"name": f"Test GPU {g}"} for g in range(gpus)]},
              "workload": {"name": name, "args": [], "command": ["python", "-m", f"workloads.{name}"]}}
    writer = RunWriter(path, header)
    records = []
    for pname, epoch, lane, start, end in phases:
        base = {"type": "event", "pid": 1, "thread": "MainThread", "name": pname, "epoch": epoch, "lane": lane}
        records.append({**base, "t": start, "kind": "phase_begin"})
        records.append({**base, "t": end, "kind": "phase_end"})
    for epoch, metrics in epochs_metrics:
        records.append({"type": "event", "t": 0.0, "kind": "epoch", "pid": 1, "epoch": epoch, "metrics": metrics})
    for t, cpu, gpu in samples:
        record = {"type": "sample", "t": t, "cpu": cpu, "cpu_total": sum(cpu) / len(cpu)}
        if gpu:
            record["gpus"] = [{"index": g, "util": u} for g, u in enumerate(gpu)]
        records.append(record)
    for record in sorted(records, key=lambda r: r["t"]):
        writer.write(record)
    last = max([r["t"] for r in records] or [0.0])
    writer.write({"type": "end", "t": duration or last, "status": status, "exit_code": 0 if status == "ok" else 1,
                  "duration": duration or last})
    writer.close()
    return str(path)


# Run A: two epochs of train 4 s + validate 1 s; samples every second at x.5, so none sits on a
# phase boundary. Train samples: cores [100, 50] (total 75); validate: [20, 20] (total 20).
A_PHASES = [("train", 1, "main", 0.0, 4.0), ("validate", 1, "main", 4.0, 5.0),
            ("train", 2, "main", 5.0, 9.0), ("validate", 2, "main", 9.0, 10.0)]


def a_samples():
    out = []
    for i in range(10):
        t = i + 0.5
        out.append((t, [20.0, 20.0] if t in (4.5, 9.5) else [100.0, 50.0], None))
    return out


# Run B: the same shape, twice as fast: train 2 s + validate 0.5 s per epoch, ended at 5.5 s;
# samples every 0.5 s at x.25 / x.75 (11 of them). Train: [100, 100]; validate: [60, 0] (total
# 30); the last sample (5.25, after every phase) is [0, 0].
B_PHASES = [("train", 1, "main", 0.0, 2.0), ("validate", 1, "main", 2.0, 2.5),
            ("train", 2, "main", 2.5, 4.5), ("validate", 2, "main", 4.5, 5.0)]


def b_samples():
    out = []
    for i in range(11):
        t = 0.25 + 0.5 * i
        if t == 5.25:
            cpu = [0.0, 0.0]
        elif t in (2.25, 4.75):
            cpu = [60.0, 0.0]
        else:
            cpu = [100.0, 100.0]
        out.append((t, cpu, None))
    return out


@pytest.fixture
def pair(tmp_path):
    a = write_run(tmp_path / "a.jsonl", phases=A_PHASES, samples=a_samples(), duration=10.5,
                  epochs_metrics=[(1, {"loss": 2.0}), (2, {"loss": 1.5})])
    b = write_run(tmp_path / "b.jsonl", phases=B_PHASES, samples=b_samples(), duration=5.5,
                  epochs_metrics=[(1, {"loss": 2.1}), (2, {"loss": 1.4})])
    return a, b


def test_totals_and_speedup_use_the_epochs(pair):
    c = compare.comparison(load(pair[0]), load(pair[1]))
    assert c.basis == "epochs"
    assert c.seconds_a == pytest.approx(10.0)   # first epoch start 0 to last epoch end 10
    assert c.seconds_b == pytest.approx(5.0)
    assert c.speedup == pytest.approx(2.0)
    assert c.change == pytest.approx(-0.5)
    assert c.a.duration == pytest.approx(10.5) and c.b.duration == pytest.approx(5.5)


def test_a_run_compared_with_itself_gives_both_sides_the_same_figures(pair):
    """The two sides are worked out in two threads; one Run object on both sides shares its
    columns and their caches between them."""
    run = load(pair[0])
    data = compare.to_dict(compare.comparison(run, run))
    assert data["a"] == data["b"] and data["speedup"] == 1.0
    assert data["a"] == compare.to_dict(compare.comparison(load(pair[0]), load(pair[1])))["a"]


def test_epochs_are_aligned_with_deltas(pair):
    c = compare.comparison(load(pair[0]), load(pair[1]))
    assert [p.epoch for p in c.epochs] == [1, 2]
    first = c.epochs[0]
    assert first.a.total == pytest.approx(5.0) and first.b.total == pytest.approx(2.5)
    assert first.delta("total") == pytest.approx(-2.5)
    assert first.delta("train") == pytest.approx(-2.0)
    assert first.delta("validate") == pytest.approx(-0.5)
    assert first.change() == pytest.approx(-0.5)
    assert first.a.metrics.to_json() == {"loss": 2.0} and first.b.metrics.to_json() == {"loss": 2.1}


def test_phase_utilization_both_runs(pair):
    c = compare.comparison(load(pair[0]), load(pair[1]))
    assert [p.name for p in c.phases] == ["train", "validate", "(no phase)"]
    train, validate, rest = c.phases
    assert train.cpu_total("a") == 75.0 and train.cpu_total("b") == 100.0
    assert train.core("a", 0) == 100.0 and train.core("a", 1) == 50.0
    assert validate.cpu_total("a") == 20.0 and validate.cpu_total("b") == 30.0
    assert validate.core("b", 0) == 60.0 and validate.core("b", 1) == 0.0
    assert rest.a is None and rest.cpu_total("b") == 0.0   # every sample of A lies inside a phase
    assert train.seconds("a") == pytest.approx(8.0) and train.seconds("b") == pytest.approx(4.0)


def test_without_gpus_idle_is_total_cpu_and_said_so(pair):
    c = compare.comparison(load(pair[0]), load(pair[1]))
    assert c.idle_kind == "CPU"
    assert c.a.idle_device.device == "CPU (all cores)"
    # A: 8 samples at 75 and 2 at 20 → mean 64; none under 10%.
    assert c.a.idle_device.mean == 64.0 and c.a.idle_device.idle_fraction == 0.0
    # B: 8 at 100, 2 at 30, 1 at 0 → 860 / 11 = 78.18; 1 of 11 samples idle.
    assert c.b.idle_device.mean == 78.2 and c.b.idle_device.idle_fraction == round(1 / 11, 4)
    assert any("no GPU in either run" in n for n in c.notes)
    # Verdicts, over the samples inside phases: A's busiest core averages (8 x 100 + 2 x 20) / 10
    # = 84%, under the 85% of a saturated core, and its cores 64%: waiting. B's ten in-phase
    # samples (5.25 s lies after every phase) average (8 x 100 + 2 x 30) / 10 = 86%: CPU-bound.
    assert c.headline == ("B finished 50% sooner (5.0s vs 10.0s, 2.00x as fast) over the epochs; "
                          "the CPU averaged 64% in A and 78% in B; A: waiting → B: CPU-bound")


def test_gpu_idle_headline(tmp_path):
    # GPU 0 utilization per sample: A idle (under 10%) in 2 of 4 samples, B in 1 of 4.
    phases = [("train", 1, "main", 0.0, 4.0)]
    a = write_run(tmp_path / "a.jsonl", gpus=1, phases=phases, duration=4.0,
                  samples=[(0.5, [50, 50], [0]), (1.5, [50, 50], [0]), (2.5, [50, 50], [90]), (3.5, [50, 50], [90])])
    b = write_run(tmp_path / "b.jsonl", gpus=1, phases=[("train", 1, "main", 0.0, 3.0)], duration=3.0,
                  samples=[(0.5, [50, 50], [90]), (1.0, [50, 50], [90]), (1.5, [50, 50], [90]), (2.5, [50, 50], [5])])
    c = compare.comparison(load(a), load(b))
    assert c.idle_kind == "GPU" and c.per_gpu
    assert c.a.idle_device.idle_fraction == 0.5 and c.b.idle_device.idle_fraction == 0.25
    # Both GPUs average under 80% (45% and 69%), their dips fall in training, not validation,
    # and the CPU (50% on both cores) is not the limit: both GPU underused.
    assert c.headline == ("B finished 25% sooner (3.00s vs 4.00s, 1.33x as fast) over the epochs; "
                          "GPU idle fell from 50% to 25% of the time; both GPU underused")
    assert c.phases[0].gpu("a", 0) == 45.0 and c.phases[0].gpu("b", 0) == pytest.approx(68.8)


def test_runs_that_differ_still_compare_and_say_what_is_not_comparable(tmp_path, pair):
    other = write_run(tmp_path / "c.jsonl", cores=4, gpus=1, name="training", hostname="gpubox",
                      phases=[("train", 1, "main", 0.0, 1.0), ("train", 2, "main", 1.0, 2.0),
                              ("train", 3, "main", 2.0, 3.0)],
                      samples=[(0.5 + i, [10, 10, 10, 10], [80]) for i in range(3)], duration=3.0)
    c = compare.comparison(load(pair[0]), load(other))
    assert not c.per_core and not c.per_gpu and c.idle_kind == "mixed"
    notes = "\n".join(c.notes)
    assert "A has 2 cores, B has 4: per-core columns omitted" in notes
    assert "A has no GPU samples, B has 1" in notes
    assert "A has 2 epochs, B has 3" in notes
    assert "different workloads" in notes and "different machines" in notes
    assert [p.epoch for p in c.epochs] == [1, 2, 3] and c.epochs[2].a is None
    assert c.epochs[2].delta("total") is None
    text = comparison_text(c)
    assert "core 0" not in text            # per-core columns are omitted, not misaligned
    assert "GPU 0 (B only)" in text
    assert "per-core columns omitted" in text
    assert "B's GPU was idle 0% of the time" in c.headline


def test_no_epochs_falls_back_to_phase_span_then_whole_run(tmp_path):
    a = write_run(tmp_path / "a.jsonl", name="conv", phases=[("im2col", None, "main", 1.0, 3.0)],
                  samples=[(0.5, [10, 10], None), (2.0, [100, 100], None)], duration=4.0)
    b = write_run(tmp_path / "b.jsonl", name="conv", phases=[("im2row", None, "main", 1.0, 2.0)],
                  samples=[(0.5, [10, 10], None), (1.5, [100, 100], None)], duration=3.0)
    c = compare.comparison(load(a), load(b))
    assert c.basis == "phases" and c.seconds_a == 2.0 and c.seconds_b == 1.0
    assert [p.name for p in c.phases] == ["im2col", "im2row", "(no phase)"]
    assert c.phases[0].b is None and c.phases[1].a is None
    bare_a = write_run(tmp_path / "c.jsonl", samples=[(0.5, [10, 10], None)], duration=8.0)
    bare_b = write_run(tmp_path / "d.jsonl", samples=[(0.5, [10, 10], None)], duration=2.0)
    c = compare.comparison(load(bare_a), load(bare_b))
    assert c.basis == "whole run" and c.speedup == 4.0
    assert c.headline.startswith("B finished 75% sooner (2.00s vs 8.00s, 4.00x as fast);")


def test_slower_b_and_failed_run_are_named(tmp_path, pair):
    failed = write_run(tmp_path / "f.jsonl", phases=[("train", 1, "main", 0.0, 12.0)],
                       samples=[(1.0, [50, 50], None), (2.0, [50, 50], None)], duration=12.0, status="failed")
    c = compare.comparison(load(pair[0]), load(failed))
    # a failed run's 12 s are a run cut short, not a result: the headline does not time it
    assert c.headline == "the runs are not timed against each other, as B failed (exit code 1) without a line of output"
    # why it failed comes first among the notes; this one's workload wrote nothing
    assert c.notes[0] == "B failed (exit code 1) without a line of output"


def _run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = command("compare", argv)
    return code, out.getvalue(), err.getvalue()


def test_json_output(pair):
    code, out, _ = _run_main([pair[0], pair[1], "--json"])
    data = json.loads(out)
    assert code == 0
    assert data["speedup"] == 2.0 and data["basis"] == "epochs"
    assert data["epochs"][0]["delta"]["total"] == -2.5
    assert data["phases"][0]["phase"] == "train" and data["phases"][0]["a"]["cpu_total"]["mean"] == 75.0
    assert data["a"]["idle"]["device"] == "CPU (all cores)"
    assert data["headline"].startswith("B finished 50% sooner")


def test_text_output(pair):
    code, out, _ = _run_main([pair[0], pair[1], "--text", "--width", "160"])
    assert code == 0
    assert "\x1b[" not in out      # no colour codes when not a terminal
    for piece in ("Epochs (Δ = B − A; each phase: A / B", "-2.50s", "-50%", "75% → 100%", "20% → 30%", "verdict A:",
                  "in short: B finished 50% sooner"):
        assert piece in out


def test_without_text_falls_back_when_the_dashboard_view_is_missing(pair, monkeypatch):
    monkeypatch.setitem(sys.modules, "devicewatch.tui.app", None)  # import raises ImportError
    code, out, err = _run_main([pair[0], pair[1]])
    assert code == 0 and "in short:" in out
    assert "comparison view is not available" in err and len(err.strip().splitlines()) == 1


def test_without_text_opens_the_dashboard_view(pair, monkeypatch):
    from devicewatch.tui import app

    calls = []
    monkeypatch.setattr(app, "launch_compare", lambda a, b, presenter=False: calls.append((a.path, b.path, presenter)) or 0)
    assert command("compare", [pair[0], pair[1]], "--presenter") == 0
    assert calls == [(pair[0], pair[1], True)]


@pytest.mark.parametrize("argv, message", [
    (["one.jsonl"], "give two run files"),
    ([], "give two run files"),
    (["a", "b", "--text", "--json"], "not both"),
    (["--pair", "demo", "--a", ""], "--pair needs --a"),
    (["a", "b", "--a=--epochs 2"], "go with --pair"),
    (["--pair", "nosuchworkload", "--a", "", "--b", ""], "unknown workload"),
    (["--pair", "demo", "--a=--epochs 0 --bogus", "--b", ""], "demo:"),
    (["--pair", "demo", "--a", "'unclosed", "--b", ""], "cannot split"),
    (["a", "b", "--bogus"], "unrecognized arguments"),
])
def test_bad_arguments_are_usage_errors(argv, message, tmp_path):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")) as info:
        command("compare", argv + (["--out", str(tmp_path / "o")] if "--pair" in argv else []))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "o" / "a.jsonl").exists()   # refused before recording anything


def test_pair_refuses_an_out_dir_that_holds_a_pair(tmp_path, pair):
    out = tmp_path / "o"
    out.mkdir()
    (out / "b.jsonl").write_bytes(open(pair[1], "rb").read())
    with pytest.raises(UsageError, match="already holds a recording; choose another --out") as info:
        command("compare", ["--pair", "demo", "--a", "", "--b", "", "--out", str(out)])
    assert "\n" not in str(info.value) and not (out / "a.jsonl").exists()


def test_missing_and_foreign_files_are_run_file_errors(tmp_path, pair):
    with pytest.raises(RunFileError, match="no such file"):
        command("compare", [pair[0], str(tmp_path / "missing.jsonl"), "--text"])
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello\n")
    with pytest.raises(RunFileError, match="not a devicewatch run file"):
        command("compare", [str(foreign), pair[1], "--json"])


# -- real recordings -------------------------------------------------------------------------

def _devicewatch(*args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "devicewatch", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def recorded_pair(tmp_path_factory):
    """Two real demo runs, recorded one after the other by `compare --pair`."""
    out = tmp_path_factory.mktemp("pair")
    result = _devicewatch("compare", "--pair", "demo", "--a=--epochs 2 --samples 4000",
                          "--b=--epochs 2 --samples 4000 --hidden 256", "--out", str(out), "--json", cwd=out)
    assert result.returncode == 0, result.stderr
    return out, result


def test_pair_records_both_then_compares(recorded_pair):
    out, result = recorded_pair
    data = json.loads(result.stdout)     # the recorder's own output went to stderr
    assert data["a"]["command"] == "demo --epochs 2 --samples 4000"
    assert data["b"]["command"] == "demo --epochs 2 --samples 4000 --hidden 256"
    assert data["a"]["status"] == data["b"]["status"] == "ok"
    assert [e["epoch"] for e in data["epochs"]] == [1, 2]
    assert "recording A: devicewatch --record" in result.stderr
    assert "recording B: devicewatch --record" in result.stderr


def test_text_on_real_recordings(recorded_pair):
    out, _ = recorded_pair
    result = _devicewatch("compare", str(out / "a.jsonl"), str(out / "b.jsonl"), "--text", "--width", "200", cwd=out)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "demo --epochs 2 --samples 4000 --hidden 256" in text
    assert "Epochs (Δ = B − A; each phase: A / B" in text and "Mean utilization per phase" in text
    assert "no GPU in either run" in text     # this machine has none; say what idle means
    lines = text.splitlines()
    assert any(line.startswith("in short: B finished") or line.startswith("in short: B took")
               or line.startswith("in short: B took as long") for line in lines)


def test_pair_with_a_failing_run_says_why(tmp_path):
    # --samples 0 passes the demo's option parser but the demo refuses it when it starts.
    result = _devicewatch("compare", "--pair", "demo", "--a=--epochs 1 --samples 500", "--b=--epochs 1 --samples 0",
                          "--out", str(tmp_path), "--text", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "devicewatch: error: recording B failed (exit code 2): demo: --samples must be at least 1; nothing compared")
    assert result.stdout == ""


def test_overlapped_epochs_are_said_to_overlap(tmp_path):
    """Validation beside the next epoch's training: each epoch is longer, the run shorter."""
    a = write_run(tmp_path / "a.jsonl", phases=A_PHASES, samples=a_samples(), duration=10.5)
    b = write_run(tmp_path / "b.jsonl", duration=9.0, phases=[
        ("train", 1, "main", 0.0, 4.0), ("validate", 1, "validate-0", 4.0, 6.0),
        ("train", 2, "main", 4.0, 8.0), ("validate", 2, "validate-0", 8.0, 8.5)])
    c = compare.comparison(load(a), load(b))
    assert c.seconds_b == pytest.approx(8.5) and c.speedup > 1.0
    assert [e.b.total for e in c.epochs] == [pytest.approx(6.0), pytest.approx(4.5)]
    # A's epochs: 5 + 5 = 10 s over a span of 10; B's 6 + 4.5 = 10.5 s over 8.5: more than A's in
    # the table (5% more) while the span, the headline's basis, is shorter
    overlap = ["B's epochs overlap (part of one epoch runs beside the next): its epoch totals add up to 10.5s "
               "but span 8.5s; the headline times the span from the first epoch's start to the last's end: "
               "B's epoch totals add up to more than A's (10.5s vs 10.0s) while over the span B finished sooner"]
    assert [n for n in c.notes if "overlap" in n] == overlap and c.explains == overlap
    assert c.headline.startswith("B finished 15% sooner (8.5s vs 10.0s, 1.18x as fast) over the epochs")
    assert not any("overlap" in n for n in compare.comparison(load(a), load(a)).notes)
