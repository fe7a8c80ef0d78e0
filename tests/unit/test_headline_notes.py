"""No note contradicts its headline: the headline's "sooner", "longer" or "as long" and every
note that reasons about the same figure (overlapped epochs, the other programs' load) pick their
words from one rule (``compare.direction``), tried here over every combination on literal
figures (each case's expected words reasoned from its numbers in its comment)."""

from __future__ import annotations

import pytest

from devicewatch import compare

DID = {"sooner": "B finished sooner", "longer": "B took longer", "as long": "B took as long"}


def way_of(headline: str) -> str:
    """The headline's word, read back from its text."""
    if headline.startswith("B finished"):
        return "sooner"
    if headline.startswith("B took as long"):
        return "as long"
    assert headline.startswith("B took"), headline
    return "longer"


# spans A, B (the headline's basis) → the headline's word
SPANS = {"sooner": (10.0, 8.5), "longer": (10.0, 12.0), "as long": (10.0, 10.02)}


@pytest.mark.parametrize("way", SPANS)
def test_the_headline_picks_its_word_from_direction(way):
    span_a, span_b = SPANS[way]
    first = compare.timing(span_a, span_b, "epochs")
    assert way_of(first) == way == compare.direction(span_a, span_b)
    assert first.endswith(" over the epochs")


def test_the_headline_in_figures():
    # 8.5 against 10: 15% sooner, 10 / 8.5 = 1.18x; 12 against 10: 20% longer; 10.02 within half a percent
    assert compare.timing(10.0, 8.5, "epochs") == "B finished 15% sooner (8.5s vs 10.0s, 1.18x as fast) over the epochs"
    assert compare.timing(10.0, 12.0, "whole run") == "B took 20% longer (12.0s vs 10.0s)"
    assert compare.timing(10.0, 10.02, "phases") == "B took as long as A (10.0s) over the phases"
    assert compare.timing(0.0, 5.0, "epochs").startswith("the runs cannot be timed")


# The table's epoch totals summed (A, B), beside each headline: they agree with it, point the
# other way, or add up to as much (within half a percent).
SUMS = {"agrees": None, "more": (10.0, 10.5), "less": (12.0, 11.0), "as much": (10.0, 10.03)}


@pytest.mark.parametrize("table", SUMS)
@pytest.mark.parametrize("way", SPANS)
def test_the_overlap_note_never_contradicts_its_headline(way, table):
    span_a, span_b = SPANS[way]
    summed_a, summed_b = SUMS[table] or (span_a, span_b)
    first = compare.timing(span_a, span_b, "epochs")
    clause = compare.reading_clause("epoch", summed_a, summed_b, span_a, span_b)
    table_way = compare.direction(summed_a, summed_b)
    if table_way == way:   # the table reads as the headline does: nothing to reconcile
        assert clause is None
        return
    assert clause is not None
    # the clause says what the headline says, and nothing else of B's time
    assert clause.endswith(f"while over the span {DID[way_of(first)]}")
    assert [phrase for phrase in DID.values() if phrase in clause] == [DID[way]]
    word = {"longer": "more than", "sooner": "less than", "as long": "as much as"}[table_way]
    assert f"B's epoch totals add up to {word} A's ({summed_b:.1f}s vs {summed_a:.1f}s)" in clause


def test_overlap_note_in_figures():
    # 37.5 s of epochs in a span of 29.3 s: overlapped; 10.4 in 10.0 is within 5%: not
    note = compare.overlap_note("B", "epoch", 37.5, 29.3)
    assert note == ("B's epochs overlap (part of one epoch runs beside the next): its epoch totals add up "
                    "to 37.5s but span 29.3s")
    assert compare.overlap_note("A", "epoch", 10.4, 10.0) is None
    # the demo's serial A (28.8 s, not overlapped) against B: B took longer over the span and
    # its epochs add up to more: no clause, and nothing about finishing sooner
    assert compare.reading_clause("epoch", 28.8, 37.5, 28.8, 29.3) is None
    # the presenter's case: B sooner over the span (27.0 vs 29.0) while every epoch, summed, is
    # longer (35.0 vs 29.0)
    assert compare.reading_clause("epoch", 29.0, 35.0, 29.0, 27.0) == (
        "the headline times the span from the first epoch's start to the last's end: B's epoch totals "
        "add up to more than A's (35.0s vs 29.0s) while over the span B finished sooner")


# The load: other programs took 0.1 core in one run and 0.9 in the other (of 2), and could have
# cost the busier run half its time (could_cost 0.5): it matters for every pair of times here
# (half of 10 s or more against at most 2 s between them).
@pytest.mark.parametrize("busier", ["A", "B"])
@pytest.mark.parametrize("way", SPANS)
def test_the_load_line_never_contradicts_its_headline(way, busier):
    span_a, span_b = SPANS[way]
    others = (0.9, 0.1) if busier == "A" else (0.1, 0.9)
    gap = compare.LoadGap(*others, 2.0, 2.0, span_a, span_b, 0.5)
    assert gap.matters and gap.busier == busier
    line = gap.line()
    assert line is not None and line.startswith(f"other programs took {others[0]:.1f} cores in A and "
                                                f"{others[1]:.1f} in B (of 2): ")
    slower = {"sooner": "A", "longer": "B", "as long": None}[way]
    assert gap.slower == slower
    said = line.split(": ", 1)[1]
    if slower == busier:
        assert said == "the difference may be theirs, not the change's"
    elif slower is None:
        assert said == f"{busier} ran beside more of them and may be faster on a quiet machine"
    else:   # the busier run was the faster: it says so, as the headline does
        faster = busier
        assert said == f"{faster} ran beside more of them and still finished sooner: on a quiet machine " \
                       "the difference may be larger"
        assert (faster == "B") == (way == "sooner")
    assert not any(phrase in line for phrase in DID.values() if phrase != DID[way])
