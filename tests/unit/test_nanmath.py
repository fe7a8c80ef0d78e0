"""The NaN-ignoring reductions: NumPy's figures where a slice has readings, NaN where it has
none, and never a warning (so nothing has to touch the process-wide warning filters)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from devicewatch import nanmath


@pytest.fixture
def readings() -> np.ndarray:
    values = np.random.default_rng(7).uniform(0, 100, size=(50, 8))
    values[values < 15] = np.nan
    values[:, 3] = np.nan   # a core that never read
    values[10] = np.nan     # a sample with no reading at all
    return values


@pytest.mark.parametrize("name", ["nanmean", "nanmin", "nanmax"])
@pytest.mark.parametrize("axis", [0, 1])
def test_the_figures_are_numpys_and_a_slice_without_readings_is_nan_silently(readings, name, axis):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = getattr(np, name)(readings, axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        got = getattr(nanmath, name)(readings, axis=axis)
    np.testing.assert_allclose(got, expected, equal_nan=True)
    assert np.isnan(got).sum() == 1  # the silent core or the silent sample


@pytest.mark.parametrize("name", ["nanmean", "nanmin", "nanmax"])
def test_nothing_along_the_axis_is_nan(name):
    got = getattr(nanmath, name)(np.zeros((3, 0)), axis=1)
    assert got.shape == (3,) and np.isnan(got).all()
