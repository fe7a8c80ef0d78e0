"""The analysis's quick ways give numpy's own figures exactly: per-core statistics counted from
whole percents, the 95th percentile without np.unique, and the phases at each dip found in one
sweep, each against the plain computation it replaces."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from devicewatch.analysis import NO_PHASE, Phase
from devicewatch.analysis.idle import _phases_at
from devicewatch.analysis.utilization import _p95, _percent_counts, _stats_columns, _stats_of_counts
from devicewatch.runformat.percent import MISSING_PERCENT, percent_to_float, whole_percents


def plain_stats_columns(values):
    """The per-core figures as numpy computes them on floats (``np.nanmean``, ``np.nanpercentile``)."""
    values = values.astype(float)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(values, axis=0) if len(values) else np.full(values.shape[1], np.nan)
        p95 = np.nanpercentile(values, 95, axis=0) if len(values) else means
    return [{"mean": None, "p95": None} if np.isnan(m) else {"mean": round(float(m), 1), "p95": round(float(p), 1)}
            for m, p in zip(means, p95)]


percents = arrays(np.uint8, st.tuples(st.integers(0, 400), st.integers(1, 5)),
                  elements=st.one_of(st.integers(0, 100), st.just(MISSING_PERCENT)))


@settings(max_examples=300, deadline=None)
@given(percents)
def test_per_core_figures_counted_from_percents_are_numpys(percent):
    floats = percent_to_float(percent)
    assert _stats_of_counts(_percent_counts(percent)) == plain_stats_columns(floats)
    assert np.array_equal(whole_percents(floats), percent)


def test_per_core_figures_of_long_columns_are_numpys():
    """Thousands of rows: the interpolation's rounding at every position, counting in blocks,
    and an odd number of cores (counted in pairs)."""
    rng = np.random.default_rng(7)
    for rows, cores in ((1, 3), (2, 3), (19, 2), (20, 3), (21, 4), (999, 3), (1000, 1), (1001, 3), (40_000, 3),
                        (70_001, 2), (300_001, 5)):
        percent = rng.integers(0, 101, (rows, cores)).astype(np.uint8)
        percent[rng.random((rows, cores)) < 0.05] = MISSING_PERCENT
        assert _stats_of_counts(_percent_counts(percent)) == plain_stats_columns(percent_to_float(percent))


def test_fractional_percents_are_not_taken_for_whole_ones():
    assert whole_percents(np.array([[1.5, 2.0]], np.float32)) is None
    assert whole_percents(np.array([[255.0, 2.0]], np.float32)) is None  # 255 marks a missing value
    assert whole_percents(np.array([[-1.0, 2.0]], np.float32)) is None
    # halves stay floats: mean 2.5, p95 = 1.5 + 0.95 × (3.5 - 1.5) = 3.4
    assert _stats_columns(np.array([[1.5], [3.5]], np.float32)) == [{"mean": 2.5, "p95": 3.4}]


@settings(max_examples=300, deadline=None)
@given(arrays(st.sampled_from([np.float64, np.float32]), st.integers(1, 500),
              elements=st.floats(-1e6, 1e6, allow_nan=False, width=32)))
def test_the_95th_percentile_is_numpys(values):
    ours, theirs = _p95(values), np.percentile(values, 95)
    assert ours == theirs and np.asarray(ours).dtype == np.asarray(theirs).dtype


def brute_phase_at(all_phases, time):
    names = sorted({p.name for p in all_phases if p.start <= time < p.end})
    return "+".join(names) if names else NO_PHASE


phases = st.lists(st.builds(lambda name, start, length: Phase(name, "main", None, start / 4, (start + length) / 4),
                            st.sampled_from("abc"), st.integers(0, 40), st.integers(-4, 20)), max_size=15)


@settings(max_examples=300, deadline=None)
@given(phases, st.lists(st.integers(-8, 70).map(lambda x: x / 8), max_size=20))
def test_the_phases_at_each_time_are_found_as_a_scan_finds_them(all_phases, times):
    assert _phases_at(all_phases, times) == [brute_phase_at(all_phases, t) for t in times]

