"""``devicewatch try`` says when the machine's load moved between its trials: figures from
literal trial results, the rule ``compare.load_differs`` (a quarter of a core, a tenth of the
cores) shared with ``compare`` and the demo."""

from __future__ import annotations

from devicewatch import trials
from devicewatch.trials import TrialResult, Variant


def result(label_value: int | None, steps: float, others: float | None) -> TrialResult:
    variant = Variant(None, None) if label_value is None else Variant("num_workers", label_value)
    return TrialResult(variant, "unused.jsonl", "trial", steps_per_s=steps, others_cores=others, allowed_cores=2.0)


def test_a_variant_run_beside_more_load_is_marked_and_said():
    # as written beside 0.1 core of other programs; workers=2 beside 1.2: 1.1 apart (over 0.25)
    rows = [result(None, 100.0, 0.1), result(2, 90.0, 1.2), result(4, 150.0, 0.2)]
    assert [r.variant.label for r in trials.load_moved(rows)] == ["num_workers=2"]
    text = trials.table_text(rows)
    assert "num_workers=2*" in text and "num_workers=4*" not in text
    assert "* other programs took 0.1 cores during the script as written and num_workers=2 1.2" in text


def test_a_quiet_set_says_nothing_of_the_load():
    rows = [result(None, 100.0, 0.1), result(2, 180.0, 0.2)]
    assert trials.load_moved(rows) == [] and trials.load_moved_text(rows) is None
    assert "*" not in trials.table_text(rows) and "other programs" not in trials.table_text(rows)
