"""Steps counted from stack samples are a lower bound: every view says so (``≥100 steps
(sampled)``), and no advice predicts steps a second from them."""

from __future__ import annotations

from pathlib import Path

from devicewatch import analysis
from devicewatch.render.report import report_text
from devicewatch.runformat import runfile
from tests.conftest import write_run
from tests.unit.test_units_and_wait import ACTIVE, end_record, phase, samples


def loader_run(path: Path, sampled: bool) -> runfile.Run:
    """Two epochs whose loop waits on a DataLoader without workers most of the time (2.2 of
    2.3 s, then 1.8 of 2.0 s), 100 steps each: counted exactly, or, SAMPLED, seen at least."""
    records = samples(5.0)
    records.append({"type": "event", "t": 0.0, "kind": "instrument", "state": "setup", "source": "auto", "pid": 1,
                    "loader": {"num_workers": 0}})
    records += [*phase(0.0, 2.3, "train", 1, source="auto"), *phase(0.0, 2.2, "data", 1, source="auto"),
                *phase(2.3, 2.5, "validate", 1, source="auto"),
                *phase(2.5, 4.5, "train", 2, source="auto"), *phase(2.6, 4.4, "data", 2, source="auto"),
                *phase(4.5, 5.0, "validate", 2, source="auto")]
    extra = {"steps_sampled": True} if sampled else {}
    records += [{"type": "event", "t": t, "kind": "epoch", "epoch": e, "source": "auto", "pid": 1,
                 "metrics": {"data_wait_s": w, "steps": 100, **extra}} for e, t, w in ((1, 2.5, 2.2), (2, 5.0, 1.8))]
    records.sort(key=lambda r: r["t"])
    return runfile.load(write_run(path, records, header={"instrument": {"offered": True}},
                                  end=end_record(5.0, ACTIVE)))


def test_sampled_steps_are_shown_as_at_least_and_predict_no_rate(tmp_path: Path) -> None:
    from devicewatch.tui.panels import epoch_bars

    exact, sampled = (analysis.run_figures(loader_run(tmp_path / f"{s}.jsonl", s)) for s in (False, True))
    assert [line.endswith("  100 steps") for line in epoch_bars(exact.epoch_rows, 100, 10).plain.splitlines()[1:]] \
        == [True, True]
    assert [line.endswith("  ≥100 steps (sampled)")
            for line in epoch_bars(sampled.epoch_rows, 100, 10).plain.splitlines()[1:]] == [True, True]
    shown = report_text(sampled)
    assert "steps (sampled)" in shown and shown.count("≥100") == 2
    # Counted exactly, 200 steps in 4.3 s of loop are a rate the advice predicts from; at least
    # 200 steps are none: the advice is the same but for its prediction.
    assert exact.baseline.steps_per_s is not None and abs(exact.baseline.steps_per_s - 200 / 4.3) < 1e-9
    assert sampled.baseline.steps_per_s is None
    exact_advice = [a for a in exact.advice if a.knob == "num_workers"]
    sampled_advice = [a for a in sampled.advice if a.knob == "num_workers"]
    assert exact_advice and exact_advice[0].predicted_gain is not None
    assert sampled_advice and sampled_advice[0].predicted_gain is None and sampled_advice[0].predicted_range is None
    assert sampled_advice[0].value == exact_advice[0].value

