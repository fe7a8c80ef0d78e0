"""The charts' pure drawing functions on small literal inputs, cell by cell (no widget, no terminal).

Each expected grid is worked out from the function's rules: one value per column (the mean of
the samples in it), eighth blocks from the bottom, braille dots, the heat scale's steps, the
label column of ``AXIS`` cells, and the time axis's tick labels.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style

from devicewatch.render.palette import NORMAL, PRESENTER
from devicewatch.tui.chart_cells import draw_area, draw_heat, draw_lanes, draw_lines
from devicewatch.tui.drawing import (AXIS, AreaInput, Grid, HeatInput, LanesInput, LinesInput, Overlay, Row, View,
                                     kind_codes, per_column, style_id, style_of)

TRAIN_BG, VALIDATE_BG = NORMAL.phase["train"], NORMAL.phase["validate"]


def test_per_column_means_and_fills_the_gaps_between_samples():
    t = np.array([0.5, 0.6, 2.5])
    values = np.array([10.0, 30.0, 50.0])
    # Columns of 1 s: column 0 holds two samples (mean 20), column 1 none (filled from the
    # left: inside the data), column 2 one, column 3 is after the last sample: NaN.
    got = per_column(t, values, View(0, 4), 4)
    assert got[:3].tolist() == [20.0, 20.0, 50.0] and np.isnan(got[3])
    assert np.isnan(per_column(t, values, View(0, 4), 4, fill=False)[1])


def test_area_fills_eighths_from_the_bottom_over_the_phase_shading():
    # One sample per column of a 4 s window: 0, 25, 50, 100 % of a 100 % top on 2 plot rows
    # (16 eighths): levels 0, 4, 8, 16. Train shades 0-2 s (columns 0-2), an epoch line at
    # 2.5 s (column 2), a marker at 0.5 s (column 0).
    data = AreaInput(View(0, 4), 1, NORMAL, np.array([0.5, 1.5, 2.5, 3.5]), np.array([0.0, 25.0, 50.0, 100.0]),
                     100.0, "%", Overlay.of([(0.0, 2.0, "train")], [2.5], [0.5]))
    grid = draw_area(data, AXIS + 4, 3)
    assert grid.text() == [
        "  100% ▼ ┊█",   # the marker where the top row is empty, the epoch line in an empty cell
        "    0%  ▄██",
        "       0s  ",   # the 4 s label would touch 0s: left out
    ]
    assert grid.style(0, AXIS) == Style(color=NORMAL.marker, bgcolor=TRAIN_BG)
    assert grid.style(0, AXIS + 2) == Style(color=NORMAL.boundary, bgcolor=TRAIN_BG)
    assert grid.style(1, AXIS + 2) == Style(color=NORMAL.boundary, bgcolor=TRAIN_BG)  # the line's block
    assert grid.style(1, AXIS + 1) == Style(color=NORMAL.area, bgcolor=TRAIN_BG)
    assert grid.style(1, AXIS + 3) == Style(color=NORMAL.area)  # after the phase: no shading
    assert grid.style(1, 0) == Style(color=NORMAL.axis)


def test_area_labels_its_middle_from_five_rows_on():
    data = AreaInput(View(0, 1), 1, NORMAL, np.array([0.5]), np.array([40.0]), 8.0, "G", axis=False)
    texts = draw_area(data, AXIS + 1, 5).text()
    assert [row[:AXIS] for row in texts] == ["    8G ", "       ", "    4G ", "       ", "    0G "]
    assert [row[AXIS] for row in texts] == ["█"] * 5  # 40 over a top of 8: full


def test_lines_join_neighbouring_columns_with_a_vertical_run_of_dots():
    # Four dot columns (two cells), 8 dot rows (two cells): values 0, 0, 100, 100 are dot
    # rows 0, 0, 7, 7. The jump from 0 to 7 fills dot rows 0-7 in the third dot column.
    series = ((np.array([0.25, 0.75, 1.25, 1.75]), np.array([0.0, 0.0, 100.0, 100.0])),)
    grid = draw_lines(LinesInput(View(0, 2), 1, NORMAL, series, 100.0, "%"), AXIS + 2, 2)
    assert grid.text() == ["  100%  ⡏", "    0% ⣀⡇"]
    assert grid.style(1, AXIS) == Style(color=NORMAL.lines[0])
    assert grid.style(0, AXIS) == Style()  # no dot: the empty background


def test_lines_where_two_series_share_a_cell_the_later_colours_it():
    # One cell, two dot columns: both series' one sample (at 0.5 s of 1 s) is in the right one.
    t = np.array([0.5])
    series = ((t, np.array([0.0])), (t, np.array([0.0])))
    grid = draw_lines(LinesInput(View(0, 1), 1, NORMAL, series, 100.0, "W"), AXIS + 1, 1)
    assert grid.text() == ["  100W ⢀"]
    assert grid.style(0, AXIS) == Style(color=NORMAL.lines[1])


def test_heat_gives_few_cores_whole_rows_in_the_heat_colours():
    # Two cores, 7 rows: 6 plot rows, three per core, and the time axis. 0 / 50 / 100 % are
    # steps 0, 5 and 10 of the 11-colour scale.
    cpu = np.array([[0.0, 100.0], [50.0, 50.0], [100.0, 0.0]])
    grid = draw_heat(HeatInput(View(0, 3), 1, NORMAL, np.array([0.5, 1.5, 2.5]), cpu), AXIS + 3, 7)
    assert grid.text() == ["  cpu0 ███", "       ███", "       ███", "  cpu1 ███", "       ███", "       ███",
                           "       0s "]
    assert [grid.style(0, AXIS + x).color.name for x in range(3)] == [NORMAL.heat[0], NORMAL.heat[5], NORMAL.heat[10]]
    assert [grid.style(3, AXIS + x).color.name for x in range(3)] == [NORMAL.heat[10], NORMAL.heat[5], NORMAL.heat[0]]


def test_heat_gives_each_core_a_row_as_soon_as_every_core_has_one():
    # Two cores in three plot rows (a 100×30 screen): a row each, not one half row and two
    # rows left blank; three cores in the same rows: a row each too; four: half rows.
    t, cpu = np.array([0.5]), np.array([[0.0, 100.0, 50.0, 50.0]])
    two = draw_heat(HeatInput(View(0, 1), 1, NORMAL, t, cpu[:, :2]), AXIS + 1, 4)
    assert two.text() == ["  cpu0 █", "  cpu1 █", "       0s"[:AXIS + 1]]
    assert two.style(1, AXIS).color.name == NORMAL.heat[10]
    assert draw_heat(HeatInput(View(0, 1), 1, NORMAL, t, cpu[:, :3]), AXIS + 1, 4).text()[:3] == \
        ["  cpu0 █", "  cpu1 █", "  cpu2 █"]
    assert draw_heat(HeatInput(View(0, 1), 1, NORMAL, t, cpu), AXIS + 1, 4).text()[:2] == ["   0-1 ▀", "   2-3 ▀"]


def test_heat_shares_rows_between_cores_when_they_do_not_fit():
    # Eight cores in two plot rows: four half rows, so two cores averaged per half row; row 0
    # is cores 0-1 (upper half) and 2-3 (lower), row 1 cores 4-7.
    cpu = np.array([[0.0, 0.0, 100.0, 100.0, 100.0, 100.0, 0.0, 0.0]])
    grid = draw_heat(HeatInput(View(0, 1), 1, NORMAL, np.array([0.5]), cpu), AXIS + 1, 3)
    assert grid.text() == ["   0-3 ▀", "   4-7 ▀", "       0s"[:AXIS + 1]]
    assert grid.style(0, AXIS) == Style(color=NORMAL.heat[0], bgcolor=NORMAL.heat[10])
    assert grid.style(1, AXIS) == Style(color=NORMAL.heat[10], bgcolor=NORMAL.heat[0])


def test_lanes_name_the_phases_that_fit_and_draw_epoch_lines_and_markers():
    # 20 columns for 10 s. main: train 1 over 0-6 s (columns 0-12, its name fits), validate 1
    # over 6-10 s (columns 12-19: 8 columns, too few for "validate 1" and a margin), drawn over
    # train's last column; loader: data 1 over 1-3 s (columns 2-6). The epoch line at 6 s is
    # column 12, the marker at 8.5 s column 17.
    data = LanesInput(View(0, 10), 1, NORMAL, ("main", "loader"), np.array([0.0, 6.0, 1.0]), np.array([6.0, 10.0, 3.0]),
                      kind_codes(["train", "validate", "data"]), ("train 1", "validate 1", "data 1"), np.array([0, 0, 1]),
                      Overlay.of([], [6.0], [8.5]))
    grid = draw_lanes(data, AXIS + 20, 5)
    assert grid.text() == ["  main  train 1    ┊    ▼  ", "loader             ┊    ▼  "]
    assert grid.style(0, AXIS + 1) == Style(color="#d0d0d0", bgcolor=TRAIN_BG)
    assert grid.style(0, AXIS + 12) == Style(color=NORMAL.boundary, bgcolor=VALIDATE_BG)
    assert grid.style(1, AXIS + 2) == Style(color="#d0d0d0", bgcolor=NORMAL.phase["data"])
    assert grid.style(1, AXIS + 7) == Style(color="#d0d0d0")  # no phase there
    presenter = draw_lanes(LanesInput(data.view, 1, PRESENTER, data.lanes, data.starts, data.ends, data.kinds,
                                      data.names, data.lane_of, data.overlay), AXIS + 20, 5)
    assert presenter.style(0, AXIS + 1) == Style(color="#ffffff", bgcolor=PRESENTER.phase["train"])


def test_a_nested_phase_is_named_only_where_a_blank_parts_it_from_the_name_before():
    # 30 columns for 15 s on one lane: train 1 over 0-15 s, named from column 1 to 7; data 1
    # nested inside it from 3 s (column 6) would be written over its name: not named; data 2 from
    # 10 s (column 20) has a blank before it and room: named.
    data = LanesInput(View(0, 15), 1, NORMAL, ("main",), np.array([0.0, 3.0, 10.0]), np.array([15.0, 8.0, 15.0]),
                      kind_codes(["train", "data", "data"]), ("train 1", "data 1", "data 2"), np.array([0, 0, 0]),
                      Overlay.of([], [], []))
    row = draw_lanes(data, AXIS + 30, 3).text()[0][AXIS:]
    assert "train 1data" not in row and row.split() == ["train", "1", "data", "2"]


def test_a_row_is_merged_into_one_segment_per_run_of_a_style():
    red, blue = Style(color="red"), Style(color="blue")
    grid = Grid(np.array([list("ab cd▼")], dtype="<U1"),
                np.array([[style_id(red), style_id(Style(color="red")), style_id(red), style_id(blue),
                           style_id(blue), style_id(red)]], dtype=np.int32))
    assert grid.row(0) == Row([0, 3, 5], [Segment("ab ", red), Segment("cd", blue), Segment("▼", red)])


def test_changes_are_the_cells_between_the_first_and_last_difference_of_each_row():
    before = Grid.blank(3, 8)
    after = Grid(before.chars.copy(), before.styles.copy())
    after.chars[0, 5] = "x"
    after.styles[2, 1] = style_id(Style(bold=True))
    after.chars[2, 6] = "y"
    assert after.changes(before) == [(0, 5, 6), (2, 1, 7)]
    assert after.changes(after) == []
    assert after.changes(Grid.blank(3, 9)) is None and after.changes(None) is None


def test_a_row_rebuilt_from_its_first_change_equals_one_built_whole():
    """The live path: cells change at the right; the runs left of them are kept."""
    a, b, c = style_id(Style(color="red")), style_id(Style(color="blue")), style_id(Style(color="green"))
    before = Grid(np.array([list("aaabbbcc")], dtype="<U1"), np.array([[a, a, a, b, b, b, c, c]], dtype=np.int32))
    drawn = before.row(0)
    for x0, ids in [(6, [a, a, a, b, b, b, b, b]),    # the new cells join the run on their left
                    (7, [a, a, a, b, b, b, c, a]),    # a new run at the end
                    (3, [a, a, a, a, c, c, c, c]),    # the change starts a run: it joins the one before
                    (1, [a, c, c, c, c, c, c, c])]:
        after = Grid(np.array([list("aaabbbcc")], dtype="<U1"), np.array([ids], dtype=np.int32))
        assert after.changes(before)[0][1] >= x0
        assert after.row(0, drawn, x0) == after.row(0)


def _runs_by_the_arrays(grid: Grid, y: int) -> Row:
    """Row ``y`` as the arrays say it: where its style changes, and a segment per run."""
    ids = grid.styles[y]
    if not ids.size:
        return Row([], [])
    starts = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist()]
    text = "".join(grid.chars[y].tolist())
    return Row(starts, [Segment(text[a:b], style_of(int(ids[a])))
                        for a, b in zip(starts, [*starts[1:], grid.width])])


def test_rows_built_run_by_run_equal_the_runs_found_by_the_arrays():
    rng = np.random.default_rng(7)
    looks = [style_id(Style(color=c)) for c in ("red", "blue", "green")]
    for _ in range(50):
        rows, width = int(rng.integers(1, 6)), int(rng.integers(0, 12))
        grid = Grid(rng.choice(np.array(list("ab ▀"), dtype="<U1"), (rows, width)),
                    rng.choice(np.array(looks, dtype=np.int32), (rows, width)))
        if rows > 2:
            grid.chars[2], grid.styles[2] = grid.chars[1], grid.styles[1]   # a repeated row
        assert grid.repeats() == [y > 0 and grid.chars[y].tolist() == grid.chars[y - 1].tolist()
                                  and grid.styles[y].tolist() == grid.styles[y - 1].tolist() for y in range(rows)]
        whole = grid.rows_at([(y, None, 0) for y in range(rows)])
        assert whole == [_runs_by_the_arrays(grid, y) for y in range(rows)]
        if width:   # from a changed column on, the runs left of it kept
            x0 = int(rng.integers(0, width))
            assert grid.rows_at([(y, whole[y], x0) for y in range(rows)]) == whole
        # A run of the same text and look is the same segment, whichever row or grid drew it.
        again = Grid(grid.chars.copy(), grid.styles.copy()).rows_at([(y, None, 0) for y in range(rows)])
        assert all(a is b for row, other in zip(whole, again) for a, b in zip(row.segments, other.segments))


def test_inputs_are_equal_when_they_draw_the_same():
    t = np.array([1.0])
    one = AreaInput(View(0, 10), 7, NORMAL, t, np.array([5.0]), 100.0, "%")
    assert one == AreaInput(View(0, 10), 7, NORMAL, t.copy(), np.array([5.0]), 100.0, "%")  # arrays never compared
    assert one != AreaInput(View(0, 10), 8, NORMAL, t, np.array([5.0]), 100.0, "%")          # a new version
    assert one != AreaInput(View(0, 20), 7, NORMAL, t, np.array([5.0]), 100.0, "%")          # another window
    assert one != AreaInput(View(0, 10), 7, PRESENTER, t, np.array([5.0]), 100.0, "%")       # another look
    assert one != AreaInput(View(0, 10), 7, NORMAL, t, np.array([5.0]), 200.0, "%")          # another scale


def test_an_empty_row_has_no_runs():
    grid = Grid.blank(2, 5).columns(5, 5)
    assert grid.row(0) == Row([], []) and grid.row(1).segments == []


def _same_cells(a: Grid, b: Grid) -> bool:
    return a.chars.tolist() == b.chars.tolist() and a.styles.tolist() == b.styles.tolist()


def test_area_drawn_from_its_previous_grid_redraws_only_the_changed_columns():
    # A 10 s window of 10 columns on 3 plot rows, samples every 0.5 s up to 6 s, then two more
    # (6.5 s and 7.5 s): columns 6 and 7 gain samples; the train phase open until now grows.
    t, values = np.arange(0.25, 6.0, 0.5), np.linspace(0.0, 100.0, 12)
    overlay = Overlay.of([(0.0, 6.0, "train")], [3.0], [1.0])
    before = draw_area(AreaInput(View(0, 10, 5), 1, NORMAL, t, values, 100.0, "%", overlay), AXIS + 10, 4)
    t2, values2 = np.r_[t, 6.5, 7.5], np.r_[values, 40.0, 60.0]
    overlay2 = Overlay.of([(0.0, 8.0, "train")], [3.0], [1.0], version=1)
    data = AreaInput(View(0, 10, 5), 2, NORMAL, t2, values2, 100.0, "%", overlay2)
    from_before, whole = draw_area(data, AXIS + 10, 4, before), draw_area(data, AXIS + 10, 4)
    assert _same_cells(from_before, whole)
    # What differs from before: columns 6 and 7 (their levels: 40 % is 10 eighths of 24, 60 %
    # is 14, both below the top row) and the shading of columns 7 and 8 (the phase now ends at
    # 8 s, in column 8). The top row of column 6 was empty and shaded and still is.
    assert from_before.changes(before) == [(0, AXIS + 7, AXIS + 9), (1, AXIS + 6, AXIS + 9), (2, AXIS + 6, AXIS + 9)]
    # Nothing visible changed: the previous grid itself.
    assert draw_area(data, AXIS + 10, 4, from_before) is from_before


def test_area_drawn_in_another_frame_is_drawn_whole():
    # The window stepped on (another frame: the time axis and every column move): the whole
    # grid is drawn again, and it is what a draw without the previous grid gives.
    t, values = np.arange(0.25, 12.0, 0.5), np.full(24, 50.0)
    before = draw_area(AreaInput(View(0, 10, 5), 1, NORMAL, t, values, 100.0, "%"), AXIS + 10, 4)
    data = AreaInput(View(2, 12, 10), 2, NORMAL, t, values, 100.0, "%")
    assert _same_cells(draw_area(data, AXIS + 10, 4, before), draw_area(data, AXIS + 10, 4))
    assert draw_area(data, AXIS + 10, 4, before).text()[-1] != before.text()[-1]  # the time axis moved


def test_heat_drawn_from_its_previous_grid_matches_a_whole_draw():
    # Whole rows per core (2 cores), then half rows (8 cores in 2 rows): new samples in the
    # last column change only that column's cells.
    for cores, height in ((2, 7), (8, 3)):
        rng = np.random.default_rng(cores)
        t = np.arange(0.5, 8.0, 1.0)
        cpu = rng.uniform(0, 100, (len(t), cores))
        before = draw_heat(HeatInput(View(0, 8, 6), 1, NORMAL, t[:-1], cpu[:-1]), AXIS + 8, height)
        data = HeatInput(View(0, 8, 6), 2, NORMAL, t, cpu)
        from_before, whole = draw_heat(data, AXIS + 8, height, before), draw_heat(data, AXIS + 8, height)
        assert _same_cells(from_before, whole)
        assert {(x0, x1) for _, x0, x1 in from_before.changes(before)} == {(AXIS + 7, AXIS + 8)}


def test_every_chart_is_drawn_in_exact_colours_so_the_terminal_colour_filter_would_change_nothing():
    # A chart part leaves out Textual's conversion of terminal colours (and dim) to exact ones
    # while every style drawn is exact: the conversion would give each line back unchanged.
    from rich.terminal_theme import DEFAULT_TERMINAL_THEME
    from textual.color import Color
    from textual.filter import ANSIToTruecolor

    from devicewatch.tui import drawing

    conversion = ANSIToTruecolor(DEFAULT_TERMINAL_THEME)
    t = np.arange(0.25, 10.0, 0.5)
    overlay = Overlay.of([(0.0, 4.0, "train"), (4.0, 6.0, "validate"), (6.0, 9.0, "data")], [4.0, 6.0], [5.0])
    for palette in (NORMAL, PRESENTER):
        view = View(0, 10, 8)
        grids = [draw_area(AreaInput(view, 1, palette, t, np.linspace(0, 100, len(t)), 100.0, "%", overlay), AXIS + 20, 6),
                 draw_heat(HeatInput(view, 1, palette, t, np.linspace(0, 100, 2 * len(t)).reshape(-1, 2)), AXIS + 20, 7),
                 draw_lines(LinesInput(view, 1, palette, ((t, np.linspace(0, 50, len(t))), (t, np.full(len(t), 25.0))),
                                       50.0, "W"), AXIS + 20, 5),
                 draw_lanes(LanesInput(view, 1, palette, ("main", "loader"), np.array([0.0, 4.0, 1.0]),
                                       np.array([4.0, 6.0, 3.0]), kind_codes(["train", "validate", "data"]),
                                       ("train 1", "validate 1", "data 1"), np.array([0, 0, 1]), overlay), AXIS + 20, 2)]
        for grid in grids:
            for y in range(grid.rows):
                segments = grid.row(y).segments
                assert conversion.apply(segments, Color(18, 18, 18)) == segments
            # ... and none of its styles is one that turns the filter back on (other tests here
            # register terminal colours of their own, so the table as a whole is not asked)
            assert not set(np.unique(grid.styles).tolist()) & drawing._TERMINAL_STYLES


def test_a_style_in_a_terminal_colour_or_dim_brings_the_colour_filter_back(monkeypatch):
    from devicewatch.tui import drawing

    monkeypatch.setattr(drawing, "_STYLES", [None])
    monkeypatch.setattr(drawing, "_STYLE_IDS", {})
    monkeypatch.setattr(drawing, "_TERMINAL_STYLES", set())
    style_id(Style(color="#ff0000", bgcolor="#000000"))
    assert drawing.truecolor_only()
    style_id(Style(color="#ff0000", dim=True))
    assert not drawing.truecolor_only()
    monkeypatch.setattr(drawing, "_TERMINAL_STYLES", set())
    style_id(Style(bgcolor="red"))   # the terminal's own red: only the filter knows its exact colour
    assert not drawing.truecolor_only()


def test_a_line_already_as_wide_as_asked_is_handed_back_without_being_cached_on_itself():
    # Textual's crop_extend keeps its result on the strip; at the strip's own width that is the
    # strip itself, a cycle only the full collector frees (thousands of chart lines a minute).
    import gc

    from textual.strip import Strip

    from devicewatch.tui.strips import fit

    strip = Strip([Segment("abc", Style(color="#ffffff"))], 3)
    assert fit(strip, 0, 3) is strip
    assert not [r for r in gc.get_referrers(strip) if not type(r).__name__ == "frame"]
    assert "".join(s.text for s in fit(strip, 0, 5)) == "abc  " and "".join(s.text for s in fit(strip, 1, 3)) == "bc"


def test_a_strip_divided_or_cut_at_its_own_length_is_not_kept_in_its_own_caches():
    import gc

    from textual.strip import Strip

    from devicewatch.tui import strips

    strips.mend_strip_cycles()
    strips.mend_strip_cycles()   # twice changes nothing
    segments = [Segment("abc", Style(color="#ffffff")), Segment("de")]
    strip = Strip(segments, 5)
    assert list(strip.divide([5])) == [strip] and list(strip.divide([5, 9])) == [strip]
    assert strip.crop_extend(0, 5, None) is strip
    assert not [r for r in gc.get_referrers(strip) if not type(r).__name__ == "frame"]
    # Every other cut is Textual's own, as it was.
    for cuts in ([2, 5], [1, 3, 5], [3], [0, 5]):
        mended = [s.text for s in strip.divide(cuts)]
        assert mended == [s.text for s in strips._textual_divide(Strip(segments, 5), cuts)]
    for start, end in ((1, 7), (0, 3), (2, 5), (0, 8)):
        mended_text = strip.crop_extend(start, end, None).text
        assert mended_text == strips._textual_crop_extend(Strip(segments, 5), start, end, None).text


def test_a_strip_makes_its_caches_when_first_used_and_cuts_as_textual_does():
    from rich.console import Console
    from textual.strip import Strip

    from devicewatch.tui import strips

    assert strips._CACHES and set(strips._CACHES) <= set(Strip.__slots__)
    strips.mend_strip_cycles()
    segments = [Segment("abc", Style(color="#ffffff")), Segment("de", Style(bold=True)), Segment("f")]
    mended, textual = Strip(segments, 6), Strip(segments, 6)
    strips._textual_init(textual, segments, 6)   # made as Textual makes it
    for name in strips._CACHES:   # no cache until one is used
        try:
            object.__getattribute__(mended, name)
            raise AssertionError(f"{name} made at once")
        except AttributeError:
            pass
    console = Console(width=20, color_system="truecolor")
    for strip in (mended, textual):
        assert strip.crop(1, 4) is strip.crop(1, 4)   # kept in the cache made when first asked
    assert mended.crop(1, 4).text == textual.crop(1, 4).text == "bcd"
    assert [s.text for s in mended.divide([2, 4, 6])] == [s.text for s in textual.divide([2, 4, 6])]
    assert mended.crop_extend(2, 9, None).text == textual.crop_extend(2, 9, None).text
    assert mended.apply_style(Style(italic=True)).render(console) == textual.apply_style(Style(italic=True)).render(console)
    assert mended.render(console) == textual.render(console) and mended.cell_length == 6
    try:
        mended.no_such_thing  # noqa: B018
        raise AssertionError("an unknown attribute was made")
    except AttributeError:
        pass


def test_the_light_start_of_a_strip_is_installed_only_over_the_start_it_knows(monkeypatch):
    from textual.strip import Strip

    from devicewatch.tui import strips

    monkeypatch.setattr(Strip, "__init__", strips._textual_init)
    assert strips._caches_of_a_new_strip() == strips._CACHES

    def more(self, segments, cell_length=None):   # a Textual that starts a strip with more state
        strips._textual_init(self, segments, cell_length)
        self._cell_count = 0

    monkeypatch.setattr(Strip, "__init__", more)
    assert strips._caches_of_a_new_strip() is None


def test_a_chart_part_builds_a_repeated_row_once_and_shows_every_row_as_drawn():
    import numpy as np
    from textual.geometry import Region
    from textual.strip import Strip

    from devicewatch.tui.charts import ChartPart

    palette = NORMAL
    t = np.arange(0, 30, 0.1)
    cpu = np.column_stack([np.full(t.size, 30.0), (t * 7) % 100])
    data = HeatInput(View(0.0, 30.0), 1, palette, t, cpu)
    width, height = 60, 7
    part = ChartPart()

    def shown(grid):
        return [[(s.text, s.style) for s in strip] for strip in part._strips] == \
            [[(s.text, s.style) for s in Strip(grid.row(y).segments, width)] for y in range(grid.rows)]

    grid = draw_heat(data, width, height)
    part.show(grid, 0, width, None)
    assert shown(grid)
    assert part._strips[1] is part._strips[2] and part._strips[4] is part._strips[5]   # a core's rows
    assert part._strips[0] is not part._strips[1]                                        # its label
    # The next draw, second core's levels changed in the newest columns: drawn row by row again.
    later = HeatInput(View(0.0, 30.0), 2, palette, t, np.column_stack([cpu[:, 0], np.where(t > 25, 95.0, cpu[:, 1])]))
    after = draw_heat(later, width, height, grid)
    repainted: list[tuple] = []
    part.refresh = lambda *regions, **_: repainted.append(regions)   # what the part asks the screen to repaint
    changes = after.changes(grid)
    part.show(after, 0, width, changes)
    assert shown(after)
    assert part._strips[4] is part._strips[5]
    # Each run of changed rows is repainted across the part's whole width: the compositor writes
    # a line from the part's first column anyway, and a region ending inside it makes the
    # compositor crop the new strip first.
    rows = [y for y, _, _ in changes]
    assert rows and all(a > 0 for _, a, _ in changes)   # the change is not at the part's start
    runs = [[rows[0]]]
    for y in rows[1:]:
        runs[-1].append(y) if y == runs[-1][-1] + 1 else runs.append([y])
    assert repainted == [tuple(Region(0, run[0], width, len(run)) for run in runs)]
