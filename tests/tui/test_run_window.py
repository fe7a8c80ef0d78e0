"""The run screen's time window (``tui/run_window.py``): pure, so tested with literal figures."""

from __future__ import annotations

import numpy as np

from devicewatch.tui.drawing import View
from devicewatch.tui.run_window import WINDOWS, nice_top, panned, view_of, visible_max, zoomed


def test_a_round_axis_top_is_the_next_of_1_2_2_5_5_times_a_power_of_ten():
    assert [nice_top(v) for v in (0.5, 1.0, 1.5, 2.2, 4.0, 7.0, 12.0, 260.0)] == [1, 1, 2, 2.5, 5, 10, 20, 500]
    assert nice_top(float("nan"), 16) == 16 and nice_top(3.0, 10) == 10


def test_the_largest_reading_in_the_window_leaves_out_gaps_and_what_is_outside():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    values = np.array([9.0, np.nan, 4.0, 8.0])
    assert visible_max(t, values, View(1.0, 2.0)) == 4.0
    assert visible_max(t, values, View(5.0, 6.0)) == 0.0


def test_a_finished_run_shows_its_window_ending_where_it_ends_or_where_it_was_panned_to():
    assert view_of(100.0, 60, 0.0, growing=False) == View(40.0, 100.0)
    assert view_of(100.0, 60, 30.0, growing=False) == View(10.0, 70.0)
    assert view_of(100.0, None, 0.0, growing=False) == View(0.0, 100.0)
    assert view_of(20.0, 60, 0.0, growing=False) == View(0.0, 60.0)   # shorter than the window: from 0


def test_a_growing_run_slides_in_steps_of_a_twentieth_of_the_window():
    # 60 s window, steps of 3 s: at 100.5 s the end is the next step, 102, the newest data is
    # in the step from 99, which alone still changes.
    assert view_of(100.5, 60, 0.0, growing=True) == View(42.0, 102.0, 99.0)
    # the whole run: steps of the round figure above 1/20 of it (100.5 / 20 = 5.03: 10)
    assert view_of(100.5, None, 0.0, growing=True) == View(0.0, 110.0, 100.0)


def test_zoom_steps_through_the_windows_and_in_from_the_whole_run_below_its_length():
    assert zoomed(60, -1, 100.0) == 30 and zoomed(60, 1, 100.0) == 120
    assert zoomed(10, -1, 100.0) == 10 and zoomed(None, 1, 100.0) is None   # the ends stay
    assert zoomed(60, 0, 100.0) is None
    # from the whole run of 100 s, the window below the first that holds it (120): 60
    assert zoomed(None, -1, 100.0) == 60
    assert zoomed(None, -1, None) == WINDOWS[-2]


def test_pan_moves_half_a_window_within_the_run_and_zero_follows_the_end():
    assert panned(60, 0.0, -1, 100.0) == 30.0
    assert panned(60, 30.0, -1, 100.0) == 40.0   # no earlier than the run's start: 100 - 60
    assert panned(60, 10.0, 1, 100.0) == 0.0
    assert panned(60, 40.0, 0, 100.0) == 0.0
