"""compare says when the two runs' machines were not alike: other programs took the cores
unequally (``compare.LOAD_MOVED_*``) by enough to explain, or hide, the difference between A and
B (``LOAD_EXPLAINS``, ``LOAD_COST_FLOOR``); and says nothing of it for a quiet pair. Runs made
here from rules (tests/unit/test_verdicts.py's Shape): both cores of a 2-core machine full, the
workload's tree WORKLOAD % of one core, so other programs take 2 - WORKLOAD / 100 cores."""

from __future__ import annotations

from pathlib import Path

from devicewatch import compare
from devicewatch.render.compare_text import comparison_text
from tests.unit.test_verdicts import Shape, constant, every_core


def run(path: Path, workload: float, seconds: float = 5.0, waiting: float | None = None):
    # one epoch of training over the whole run: the comparison's basis is its SECONDS
    train = [("train", 1, "main", 0.0, seconds)]
    return Shape(2, seconds, every_core(2, 100.0), train, workload=constant(workload),
                 waiting=None if waiting is None else constant(waiting)).run(path)


def test_the_busier_run_is_the_slower_and_its_load_may_be_the_difference(tmp_path):
    # A: others 0.1 core, 5 s; B: others 0.9, 6 s. B's 1.1 cores could have had 0.8 more: 0.8 / 1.9
    # of its 6 s (2.5 s) against the 1 s between them: over half of it, so it may be theirs.
    c = compare.comparison(run(tmp_path / "a.jsonl", 190.0, 5.0), run(tmp_path / "b.jsonl", 110.0, 6.0))
    assert (c.a.others, c.b.others) == (0.1, 0.9)
    first, line = c.headline.split("\n")
    assert first.startswith("B took 20% longer")
    assert line == ("other programs took 0.1 cores in A and 0.9 in B (of 2): "
                    "the difference may be theirs, not the change's")
    data = compare.to_dict(c)
    assert data["load_differs"] is True and data["a"]["others_cores"] == 0.1 and data["b"]["others_cores"] == 0.9
    assert data["load"]["busier"] == "B" and data["load"]["could_cost"] == round(0.8 / 1.9, 3)
    assert data["load"]["line"] == line and data["headline"] == c.headline
    text = comparison_text(c, width=200)
    row = next(line for line in text.splitlines() if "other programs" in line and "│" in line)   # the runs table
    assert [cell.strip() for cell in row.split("│")[1:4]] == ["other programs", "0.1 of 2 cores", "0.9 of 2 cores"]
    assert "load: other programs took 0.1 of 2 cores during A and 0.9 during B" in text
    assert line in text


def test_the_busier_run_is_the_faster_so_it_may_gain_more_on_a_quiet_machine(tmp_path):
    # A (others 0.9) took as long as B (others 0.1): the load worked against A, not for it
    c = compare.comparison(run(tmp_path / "a.jsonl", 110.0), run(tmp_path / "b.jsonl", 190.0))
    assert c.headline.endswith("\nother programs took 0.9 cores in A and 0.1 in B (of 2): "
                               "A ran beside more of them and may be faster on a quiet machine")


def test_a_quiet_pair_says_nothing_of_it(tmp_path):
    # 0.1 and 0.15 core: under a quarter of a core apart, and neither enough to name
    c = compare.comparison(run(tmp_path / "a.jsonl", 190.0), run(tmp_path / "b.jsonl", 185.0, 4.0))
    assert "\n" not in c.headline and "other programs took" not in c.headline
    data = compare.to_dict(c)
    assert data["load_differs"] is False and data["load"] is None and data["load_lines"] == []
    assert "load:" not in comparison_text(c, width=200)


def test_a_load_too_small_for_the_difference_is_not_blamed(tmp_path):
    # B 12 s against A's 3 s; its 0.4 extra core could have cost 0.4 / 1.9 of 12 s = 2.5 s,
    # under half of the 9 s between them: the load moved, but the change made the difference
    c = compare.comparison(run(tmp_path / "a.jsonl", 190.0, 3.0), run(tmp_path / "b.jsonl", 150.0, 12.0))
    assert "\n" not in c.headline
    load = compare.to_dict(c)["load"]
    assert load["matters"] is False and load["line"] is None and load["busier"] == "B"


def test_a_busier_run_whose_threads_never_waited_lost_nothing_to_it(tmp_path):
    # the same 0.8 core more taken in B, but B's threads waited for no core: it could have had none more
    c = compare.comparison(run(tmp_path / "a.jsonl", 190.0, 5.0, waiting=0.0),
                           run(tmp_path / "b.jsonl", 110.0, 6.0, waiting=0.0))
    assert (c.a.others, c.b.others) == (0.1, 0.9)
    assert "\n" not in c.headline and compare.to_dict(c)["load"]["could_cost"] == 0.0


def test_the_rule_in_figures():
    # under a quarter of a core apart: not moved, whatever the times
    assert compare.load_gap(0.1, 0.3, 2.0, 10.0, 20.0, 1.0) is None
    # on 64 cores a tenth of them is 6.4: 5 cores apart is the background of a big machine
    assert compare.load_gap(1.0, 6.0, 64.0, 10.0, 20.0, 8.0) is None
    # not recorded on one side: nothing to say
    assert compare.load_gap(None, 1.0, 2.0, 10.0, 20.0, 1.0) is None
    gap = compare.load_gap(0.0, 1.0, 2.0, 10.0, 12.0, 1.0)   # B could have had 1 core more: half its time
    assert gap is not None and gap.could_cost == 0.5 and gap.matters and gap.slower == gap.busier == "B"
    # a load that could take under a twentieth of the busier run's time is not named, even for
    # a pair that took as long
    small = compare.load_gap(0.0, 1.0, 2.0, 10.0, 10.0, 1.0, busier_waiting=0.04)
    assert small is not None and not small.matters
