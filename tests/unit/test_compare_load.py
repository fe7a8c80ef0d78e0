"""compare says when the two runs' machines were not alike: other programs took the cores
unequally (a quarter of a core and a tenth of the cores apart), and says nothing of it for a
quiet pair. Runs made here from rules (tests/unit/test_verdicts.py's Shape)."""

from __future__ import annotations

from pathlib import Path

from devicewatch import compare
from devicewatch.render.compare_text import comparison_text
from tests.unit.test_verdicts import Shape, constant, every_core

TRAIN = [("train", 1, "main", 0.0, 5.0)]


def run(path: Path, workload: float):
    # both cores full; the workload's tree WORKLOAD % of one core: others take 200 - WORKLOAD
    return Shape(2, 5.0, every_core(2, 100.0), TRAIN, workload=constant(workload)).run(path)


def test_a_pair_whose_background_load_differed_says_so(tmp_path):
    c = compare.comparison(run(tmp_path / "a.jsonl", 110.0), run(tmp_path / "b.jsonl", 190.0))
    assert (c.a.others, c.b.others) == (0.9, 0.1)
    assert c.headline.endswith("; other programs took 0.9 cores in A and 0.1 in B (of 2): the runs did not have "
                               "the same machine, and A's time may be theirs as much as the change's")
    assert compare.to_dict(c)["load_differs"] is True and compare.to_dict(c)["a"]["others_cores"] == 0.9
    assert "other programs" in comparison_text(c, width=200)


def test_a_quiet_pair_says_nothing_of_it(tmp_path):
    c = compare.comparison(run(tmp_path / "a.jsonl", 190.0), run(tmp_path / "b.jsonl", 185.0))
    assert "other programs took" not in c.headline and compare.to_dict(c)["load_differs"] is False
