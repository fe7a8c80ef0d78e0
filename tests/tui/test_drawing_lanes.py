"""The lanes chart's labels: every lane's name in the columns left of the plot, no two alike."""

from __future__ import annotations

from devicewatch.tui.drawing import AXIS, lane_labels


def test_lane_names_that_fit_stay_as_they_are():
    assert lane_labels(["main", "train", "rank 0"]) == ["main", "train", "rank 0"]


def test_long_names_keep_the_part_that_tells_them_apart():
    # the overlapped pipeline's two validation lanes: both would read "valida" cut to 6 columns
    assert lane_labels(["train", "validate-0", "validate-1"]) == ["train", "val-0", "val-1"]
    assert lane_labels(["prefetcher-0", "prefetcher-1"]) == ["pref-0", "pref-1"]


def test_a_long_word_takes_its_usual_short_form_not_a_cut():
    # "valida" on a projector reads as a mistake; "val" and "eval" are what training code writes
    assert lane_labels(["validate", "evaluation", "checkpoint"]) == ["val", "eval", "ckpt"]


def test_names_alike_at_every_cut_fall_back_to_their_words_and_numbers_then_their_place():
    # a merged run's rank lanes: "rank 1 train" and "rank 10 train" share their first 6 columns
    assert lane_labels(["rank 0", "rank 1 train", "rank 10 train"]) == ["rank 0", "r1t", "r10t"]
    # no separator, no number: their place among those alike
    assert lane_labels(["validation", "validation2", "validate"]) == ["vali~1", "val2", "vali~2"]


def test_labels_are_distinct_and_fit_for_many_lanes():
    lanes = [f"rank {r} validate-{k}" for r in range(16) for k in range(2)]
    labels = lane_labels(lanes)
    assert len(set(labels)) == len(lanes) and max(map(len, labels)) <= AXIS - 1
