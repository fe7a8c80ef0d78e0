"""Analysis on literal runs; every expected figure is worked out by hand in the comments."""

import dataclasses

import pytest

from devicewatch import analysis
from devicewatch.runformat.runfile import load

from conftest import write_run


def ev(t, kind, **fields):
    return {"type": "event", "t": t, "kind": kind, "pid": 1, **fields}


def begin(t, name, epoch=None, lane="main"):
    return ev(t, "phase_begin", name=name, epoch=epoch, lane=lane)


def end(t, name, epoch=None, lane="main"):
    return ev(t, "phase_end", name=name, epoch=epoch, lane=lane)


def samples(values, step=1.0, gpu=None):
    """One sample per second; ``values`` are (core0, core1) pairs; ``gpu`` a list of GPU util."""
    out = []
    for i, (c0, c1) in enumerate(values):
        record = {"type": "sample", "t": i * step, "cpu": [c0, c1], "cpu_total": (c0 + c1) / 2}
        if gpu is not None:
            record["gpus"] = [{"index": 0, "util": gpu[i], "mem_used": 1000, "power_w": 50.0}]
        out.append(record)
    return out


def two_epoch_run(tmp_path, gpu=None):
    # Epoch 1: train 0-4 s, validate 4-6 s; epoch 2: train 6-10 s, validate 10-11 s, then 1 s
    # of nothing before the end at 12 s.
    events = [begin(0, "train", 1), end(4, "train", 1), begin(4, "validate", 1), end(6, "validate", 1),
              ev(6, "epoch", epoch=1, metrics={"loss": 1.5}),
              begin(6, "train", 2), end(10, "train", 2), begin(10, "validate", 2), end(11, "validate", 2),
              ev(11, "epoch", epoch=2, metrics={"loss": 0.5})]
    cpu = [(100, 0)] * 4 + [(50, 50)] * 2 + [(100, 0)] * 4 + [(50, 50)] + [(0, 0)] * 2  # t = 0..12
    return load(write_run(tmp_path / "r.jsonl", [*samples(cpu, gpu=gpu), *events]))


def test_phases_pair_begin_and_end(tmp_path):
    run = two_epoch_run(tmp_path)
    phases = analysis.phases(run)
    assert [(p.name, p.epoch, p.start, p.end) for p in phases] == [
        ("train", 1, 0, 4), ("validate", 1, 4, 6), ("train", 2, 6, 10), ("validate", 2, 10, 11)]
    assert not any(p.open for p in phases)


def test_an_unended_phase_runs_to_the_end_of_the_run(tmp_path):
    run = load(write_run(tmp_path / "r.jsonl", [*samples([(0, 0)] * 6), begin(2, "train", 1)]))
    (phase,) = analysis.phases(run)
    assert phase.open and phase.start == 2 and phase.end == 5  # last record at t=5


def test_epoch_table(tmp_path):
    rows = analysis.run_figures(two_epoch_run(tmp_path)).epoch_rows
    assert [(r.epoch, r.total, r.train, r.validate, r.other) for r in rows] == [
        (1, 6, 4, 2, 0), (2, 5, 4, 1, 0)]
    assert rows[1].metrics.to_json() == {"loss": 0.5}


def test_epoch_other_time_is_what_no_train_or_validate_phase_covers(tmp_path):
    # data 0-1, train 1-3, (gap 3-4), validate 4-5: total 5, train 2, validate 1, other 2.
    events = [begin(0, "data", 1), end(1, "data", 1), begin(1, "train", 1), end(3, "train", 1),
              begin(4, "validate", 1), end(5, "validate", 1)]
    run = load(write_run(tmp_path / "r.jsonl", [*samples([(0, 0)] * 6), *events]))
    (row,) = analysis.epochs(run, analysis.phases(run))
    assert (row.total, row.train, row.validate, row.other) == (5, 2, 1, 2)


def test_utilization_per_phase(tmp_path):
    util = analysis.run_figures(two_epoch_run(tmp_path)).utilization
    # Phases are half-open: train [0,4) and [6,10) hold samples t=0-3 and 6-9, where core 0
    # is 100 and core 1 is 0.
    assert util["train"].cores[0].mean == 100.0
    assert util["train"].cpu_total.mean == 50.0
    assert util["train"].seconds == 8
    # validate [4,6) and [10,11) hold t=4, 5 and 10, where both cores are at 50.
    assert util["validate"].cores[1].mean == 50.0
    assert util["validate"].samples == 3
    # t=11 and t=12 lie outside every phase
    assert util[analysis.NO_PHASE].samples == 2
    # as report --json prints it: the figures in their order, each core's and GPU's mean and p95
    assert util["validate"].to_json() == {"seconds": 3, "samples": 3, "cpu_total": {"mean": 50.0, "p95": 50.0},
                                          "cores": [{"mean": 50.0, "p95": 50.0}, {"mean": 50.0, "p95": 50.0}],
                                          "gpus": []}


def test_gpu_dips_fall_in_the_phase_they_happen_in(tmp_path):
    gpu = [90, 90, 90, 90, 5, 5, 90, 90, 90, 90, 5, 90, 90]  # low during each validation
    run = two_epoch_run(tmp_path, gpu=gpu)
    (device,) = analysis.run_figures(run).devices
    assert len(device.dips) == 2
    assert [d.phase for d in device.dips] == ["validate", "validate"]
    # The dips run from the last high sample to the first high sample again: 3-6 and 9-11;
    # the middle of each (4.5 and 10) lies in a validate phase.
    assert [(d.start, d.end) for d in device.dips] == [(3, 6), (9, 11)]
    assert device.idle_fraction == pytest.approx(3 / 13, abs=1e-4)


def test_verdicts(tmp_path):
    gpu = [90, 90, 90, 90, 5, 5, 90, 90, 90, 90, 5, 90, 90]
    assert analysis.run_figures(two_epoch_run(tmp_path, gpu=gpu)).verdict.label == "validation-bound"
    assert analysis.run_figures(two_epoch_run(tmp_path, gpu=[95] * 13)).verdict.label == "GPU-bound"
    # No GPU: one core at 100 while the other idles -> serial work
    serial = load(write_run(tmp_path / "serial.jsonl", samples([(100, 2)] * 5)))
    assert analysis.run_figures(serial).verdict.label == "single-core-bound"


def test_cpu_bound_and_waiting(tmp_path):
    busy = load(write_run(tmp_path / "a.jsonl", samples([(95, 97)] * 5)))
    idle = load(write_run(tmp_path / "b.jsonl", samples([(5, 3)] * 5)))
    assert analysis.run_figures(busy).verdict.label == "CPU-bound"
    assert analysis.run_figures(idle).verdict.label == "waiting"


def test_lane_overlap(tmp_path):
    # train lane busy 0-10; validate lane 4-6 and 8-12: two lanes active 2 + 2 = 4 s of 12 busy.
    events = [begin(0, "train", lane="train"), end(10, "train", lane="train"),
              begin(4, "validate", 1, lane="validate"), end(6, "validate", 1, lane="validate"),
              begin(8, "validate", 2, lane="validate"), end(12, "validate", 2, lane="validate")]
    run = load(write_run(tmp_path / "r.jsonl", [*samples([(0, 0)] * 13), *events]))
    overlap = analysis.lane_overlap(analysis.phases(run))
    assert overlap["busy_seconds"] == 12 and overlap["overlap_seconds"] == 4
    assert overlap["overlap_fraction"] == pytest.approx(1 / 3)


def test_summarize_is_plain_data(tmp_path):
    import json

    typed = analysis.Summary.of(analysis.run_figures(two_epoch_run(tmp_path, gpu=[50] * 13)))
    summary = typed.to_json()
    assert json.loads(json.dumps(summary)) == summary  # plain data, nothing lost on the way
    assert [e["epoch"] for e in summary["epochs"]] == [e.epoch for e in typed.epochs] == [1, 2]
    assert summary["status"] == typed.status == "ok"
    assert summary["verdict"] == {"label": typed.verdict.label, "text": typed.verdict.text,
                                  "figures": typed.verdict.figures}
    assert not {"series", "phase_list", "epoch_rows"} & set(summary)  # what it was computed from stays out
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.status = "failed"  # type: ignore[misc]


def test_a_run_whose_phases_hold_no_sample_is_judged_on_all_samples(tmp_path):
    # Five busy samples at t=0…4 (enough to judge); one phase from 0.2 to 0.4 holds none of them.
    records = [*samples([(95, 97), (96, 98)] * 2 + [(95, 97)]), begin(0.2, "train", 1), end(0.4, "train", 1)]
    run = load(write_run(tmp_path / "r.jsonl", records))
    assert analysis.run_figures(run).verdict.label == "CPU-bound"


# -- the data wait and nested phases ----------------------------------------------------------

def zero_code_run(tmp_path, metric=None, source="auto"):
    """What the zero-code instrumentation records for one epoch: train 0-10 s with two visible
    DataLoader waits nested in it (1-3 s and 5-8 s, 5 s together), then validate 10-12 s, all in
    lane main; ``metric`` is the epoch's data_wait_s."""
    def phase(t0, t1, name):
        return [ev(t0, "phase_begin", name=name, epoch=1, lane="main", source=source),
                ev(t1, "phase_end", name=name, epoch=1, lane="main", source=source)]

    records = [*phase(0, 10, "train"), *phase(1, 3, "data"), *phase(5, 8, "data"), *phase(10, 12, "validate")]
    metrics = {"loss": 0.5, "steps": 100, "steps_per_s": 10.0}
    if metric is not None:
        metrics["data_wait_s"] = metric
    records.append(ev(12, "epoch", epoch=1, metrics=metrics, source=source))
    records = sorted(records, key=lambda r: r["t"])
    return load(write_run(tmp_path / "r.jsonl", [*samples([(50, 50)] * 13), *records]))


def test_a_data_wait_nested_in_train_counts_as_data_not_also_as_train(tmp_path):
    (row,) = analysis.run_figures(zero_code_run(tmp_path)).epoch_rows
    # train 10 s less the 5 s of waits inside it; the lane's seconds add up to the epoch's 12.
    assert row.phases == {"train": 5.0, "data": 5.0, "validate": 2.0}
    assert (row.train, row.validate, row.other, row.untracked) == (5.0, 2.0, 5.0, 0.0)
    # No metric: the data phases are the wait, 5 of the loop's 10 s and of the epoch's 12.
    assert (row.data_wait, row.data_wait_source, row.train_loop) == (5.0, "phases", 10.0)
    assert row.loop_wait_share == 0.5 and row.data_wait_share == pytest.approx(5 / 12)


def test_the_metric_is_the_exact_wait_and_wins_over_the_visible_phases(tmp_path):
    run = zero_code_run(tmp_path, metric=6.2)   # 1.2 s of waits too short to be drawn
    (row,) = analysis.epochs(run, analysis.phases(run))
    assert (row.data_wait, row.data_wait_source) == (6.2, "metric")
    assert row.phases["data"] == 5.0            # the lanes still draw what was visible
    assert row.loop_wait_share == pytest.approx(0.62)
    v = analysis.run_figures(run).verdict
    assert v.label == "input-bound" and v.figures["data_wait_share"] == 0.62
    assert v.text.startswith("input-bound: the training loop waited on its DataLoader 62% of the time (6.2 of 10.0 s)")
    summary = analysis.Summary.of(analysis.run_figures(run)).to_json()
    epoch = summary["epochs"][0]
    assert (epoch["data_wait"], epoch["data_wait_share"], epoch["data_wait_source"]) == (6.2, round(6.2 / 12, 4), "metric")
    assert summary["data_wait"] == {"seconds": 6.2, "train_loop": 10.0, "share": 0.62, "source": "metric"}


def test_data_phases_outside_the_training_lanes_are_not_a_wait(tmp_path):
    # A loader lane prefetching beside training (0-4 s) does not block the loop; an epoch with
    # neither the metric nor a data phase in its training lane has no data wait measured.
    events = [begin(0, "train", 1), end(4, "train", 1),
              begin(0, "data", 1, lane="loader"), end(3, "data", 1, lane="loader"),
              begin(4, "train", 2), end(8, "train", 2)]
    run = load(write_run(tmp_path / "r.jsonl", [*samples([(100, 0)] * 9), *events]))
    first, second = analysis.epochs(run, analysis.phases(run))
    assert first.phases == {"train": 4.0, "data": 3.0}      # lanes side by side each count
    assert first.data_wait is None and second.data_wait is None
    assert analysis.data_wait([first, second]) is None
    assert "data_wait_share" not in analysis.run_figures(run).verdict.figures


def test_repeated_metrics_are_a_phases_seconds_and_the_data_wait():
    assert analysis.repeated_metrics(["data", "train", "validate"],
                                     ["loss", "data_s", "train_s", "copy_s", "data_wait_s", "steps_per_s"]
                                     ) == {"data_s", "train_s", "data_wait_s"}


def test_the_loops_workings_are_said_by_the_verdict_not_shown_as_a_second_wait_column():
    # a round's unit figures: one data figure (the data wait) for the table, the rest for the
    # verdict and the advice; the workload's own metrics and steps/s stay
    figures = ["loss", "steps", "steps_per_s", "data_wait_s", "wait_s", "loader_wait_s", "iterators", "waited_on",
               "worker_batch_s"]
    assert analysis.repeated_metrics(["train", "validate"], figures) == \
        {"data_wait_s", "wait_s", "loader_wait_s", "iterators", "waited_on", "worker_batch_s"}


def test_every_figure_the_loop_measures_is_placed_by_its_declaration():
    # each field of UnitFigures says where a view puts it (a table column, the data wait, or one
    # of the loop's workings); the analysis's names are read from there, never listed again
    from devicewatch import loop_figures
    from devicewatch.analysis.epoch_rows import DATA_WAIT_METRIC, LOOP_WORKINGS
    from devicewatch.integrations.zero_code.loop import UnitFigures

    roles = {f.name: f.metadata["role"] for f in dataclasses.fields(UnitFigures)}
    assert set(roles.values()) == {loop_figures.COLUMN, loop_figures.DATA_WAIT, loop_figures.WORKING}
    assert DATA_WAIT_METRIC == "data_wait_s" and LOOP_WORKINGS == {n for n, r in roles.items() if r == "working"}
    # the epoch table shows the steps and their rate as the loop's columns, the rest elsewhere
    assert analysis.repeated_metrics([], loop_figures.FIGURES) == set(roles) - {"steps", "steps_per_s"}


def _swept_overlap(all_phases):
    """The sweep lane_overlap replaced: one edge at a time, counting lanes with a phase running."""
    busy = overlap = 0.0
    running: dict[str, int] = {}
    previous = None
    edges = sorted([edge for p in all_phases if p.duration > 0 for edge in ((p.start, 1, p.lane), (p.end, -1, p.lane))],
                   key=lambda e: (e[0], e[1]))   # at one instant, ends before starts
    for time, delta, lane in edges:
        if previous is not None:
            lanes = sum(1 for n in running.values() if n > 0)
            busy += (time - previous) if lanes >= 1 else 0.0
            overlap += (time - previous) if lanes >= 2 else 0.0
        running[lane] = running.get(lane, 0) + delta
        previous = time
    return busy, overlap


def test_lane_overlap_in_arrays_equals_the_sweep_one_edge_at_a_time():
    import random
    rng = random.Random(7)
    for _ in range(300):
        phases = []
        for _ in range(rng.randint(0, 25)):
            start = round(rng.uniform(0, 20), rng.choice([0, 1, 3]))   # ties and touching phases too
            end = start + rng.choice([0.0, round(rng.uniform(0, 5), rng.choice([0, 1, 3]))])
            phases.append(analysis.Phase(rng.choice(["train", "validate"]), rng.choice(["main", "val", "io"]),
                                         None, start, end))
        busy, overlap = _swept_overlap(phases)
        found = analysis.lane_overlap(phases)
        assert found["busy_seconds"] == pytest.approx(busy, abs=1e-9)
        assert found["overlap_seconds"] == pytest.approx(overlap, abs=1e-9)
