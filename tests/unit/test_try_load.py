"""``devicewatch try`` says when the machine's load moved between its trials by enough to explain
a variant's difference from the script as written: figures from literal trial results, by the
rule of ``devicewatch compare`` (``compare.load_gap``), a step's time for a run's."""

from __future__ import annotations

from devicewatch import analysis, trials
from devicewatch.runformat import runfile
from devicewatch.trials import TrialResult, TrialSet, Variant
from tests.conftest import write_run


def result(value: int | None, steps: float, others: float | None, busy: float = 1.0,
           waiting: float | None = None) -> TrialResult:
    variant = Variant(None, None) if value is None else Variant("num_workers", value)
    return TrialResult(variant, "unused.jsonl", "trial", steps_per_s=steps, data_wait_share=0.1, cores_busy=busy,
                       others_cores=others, allowed_cores=2.0, waiting_cores=waiting)


def test_a_variant_run_beside_more_load_is_marked_and_said():
    # as written: 100 steps/s beside 0.1 core of other programs. workers=2: 90 steps/s beside 1.2,
    # whose 1.1 core more could have cost its 1 core 1.1 / 2.1 of a step's time, far over half of
    # the 11% it lost. workers=4: 150 steps/s beside 0.2, a load like the first's.
    rows = [result(None, 100.0, 0.1), result(2, 90.0, 1.2), result(4, 150.0, 0.2)]
    assert [r.variant.label for r in trials.load_moved(rows)] == ["num_workers=2"]
    lines = trials.table_text(rows).splitlines()
    assert lines[0].split() == ["variant", "steps/s", "predicted", "data", "wait", "cores", "busy", "others",
                                "GPU", "busy", "verdict"]
    assert lines[2].split()[:2] == ["num_workers=2", "90.0*"] and lines[2].split()[5] == "1.2"
    assert lines[3].split()[:2] == ["num_workers=4", "150.0"] and "*" not in lines[1] + lines[3]
    assert lines[4] == ("* the machine's load moved: other programs took 0.1 of 2 cores during the script as "
                        "written and 1.2 during num_workers=2: the steps/s marked * may differ for them, not "
                        "for the knob (run the set again on a quieter machine)")
    data = TrialSet(["python", "train.py"], {}, rows).to_json()
    assert data["load_moved"] is True and data["load"]["line"] == lines[4]
    (moved,) = data["load"]["variants"]
    assert moved["label"] == "num_workers=2" and moved["others_cores"] == {"a": 0.1, "b": 1.2}
    assert moved["could_cost"] == round(1.1 / 2.1, 3) and data["variants"][1]["others_cores"] == 1.2


def test_a_quiet_set_says_nothing_of_the_load():
    rows = [result(None, 100.0, 0.1), result(2, 180.0, 0.2)]
    assert trials.load_moved(rows) == [] and trials.load_moved_text(rows) is None
    assert "*" not in trials.table_text(rows) and "other programs" not in trials.table_text(rows)
    data = TrialSet(["python", "train.py"], {}, rows).to_json()
    assert data["load_moved"] is False and data["load"] is None


def test_a_load_too_small_for_a_fourfold_gain_is_not_blamed():
    # workers=8: 400 steps/s beside 0.4 core more, but its threads waited for 0.1 core's worth:
    # at most 0.1 / 1.6 of its step, a sliver of the 4x it gained
    rows = [result(None, 100.0, 0.1), result(8, 400.0, 0.5, busy=1.5, waiting=0.1)]
    assert trials.load_moved(rows) == [] and "*" not in trials.table_text(rows)


def test_the_others_column_is_what_other_programs_took_during_the_measured_window(tmp_path):
    # 4 s of a workload keeping 0.4 core busy on 2 cores; the machine reads 20 % (the workload
    # alone) for 2 s, then 100 %: other programs took 1.6 cores in the last 2 s, which is the
    # window (its "done" at 4 s, 2 s long); over the whole training phase they averaged about 0.8
    samples = [{"type": "sample", "t": round(i / 10, 3), "cpu": [busy, busy], "cpu_total": busy,
                "proc": {"cpu": 40.0}} for i in range(41) for busy in [20.0 if i < 20 else 100.0]]
    events = [{"type": "event", "t": 0.0, "kind": "phase_begin", "name": "train", "epoch": 1, "lane": "main"},
              {"type": "event", "t": 4.0, "kind": "phase_end", "name": "train", "epoch": 1, "lane": "main"},
              {"type": "event", "t": 4.0, "kind": "instrument", "state": "trial", "stage": "done", "steps": 40,
               "seconds": 2.0, "steps_per_s": 20.0}]
    run = runfile.load(write_run(tmp_path / "trial.jsonl", sorted(samples + events, key=lambda r: r["t"])))
    result = trials.result_of(analysis.run_figures(run), Variant())
    assert result.steps_per_s == 20.0 and result.others_cores == 1.6
    assert 0.7 < analysis.run_figures(run).verdict.figures["others_cores"] < 0.9   # the phase's, not the window's
