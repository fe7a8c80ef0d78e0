"""The layout table (``tui/layout.py``): what each screen gives up first, by terminal size."""

from __future__ import annotations

from devicewatch.tui.run_parts import LAYOUT as RUN
from devicewatch.tui.layout import Part, fit, need

# A run without GPUs as its screen measures it at 80 columns: three rows of status, a verdict
# of three, a line that says why there is no GPU, three phase lanes.
NO_GPU = {"status": 3, "progress": 1, "verdict": 3, "no-gpu": 2, "cpu-lanes": 3, "heat-legend": 1, "cost": 2}
ABSENT = {"gpu-panel", "lanes", "gpu-mem-power"}


def test_a_tall_terminal_shows_every_part():
    assert fit(RUN, 200, 50, measured=NO_GPU, absent=ABSENT) == ABSENT


def test_a_short_terminal_gives_up_the_bottom_row_before_a_row_of_the_charts():
    hidden = fit(RUN, 80, 24, measured=NO_GPU, absent=ABSENT)
    assert "bottom" in hidden and not hidden & {"cores", "cpu-total", "status", "verdict"}
    # what is left fits: 3 + 1 + 3 + the CPU panel (2 + 3 + 1 + 6 + 3) + the footer, the no-GPU line gone
    assert "no-gpu" in hidden and need(RUN, hidden, NO_GPU)[0] == 3 + 1 + 3 + 15 + 1 <= 24


def test_a_narrow_terminal_gives_up_the_process_tree_then_the_output_beside_the_epochs():
    wide_epochs = {**NO_GPU, "epochs": (8, 84)}   # an epoch's line needs 84 columns
    assert {"proc-panel", "log"} <= fit(RUN, 100, 60, measured=wide_epochs, absent=ABSENT)
    assert not {"proc-panel", "log"} & fit(RUN, 200, 60, measured=wide_epochs, absent=ABSENT)
    narrow = fit(RUN, 80, 60, measured=NO_GPU, absent=ABSENT)
    assert "proc-panel" in narrow and "log" not in narrow   # 28 + 40 + 30 > 80 ≥ 40 + 30


def test_presenter_mode_leaves_out_what_the_table_says():
    hidden = fit(RUN, 200, 50, presenter=True, measured=NO_GPU, absent={"gpu-panel"})
    assert {"bottom", "gpu-mem-power"} <= hidden


def test_parts_give_way_in_their_order_the_later_first_of_two():
    screen = Part("s", parts=(Part("a", rows=5, gives_way=2), Part("b", rows=5, gives_way=1),
                              Part("c", rows=5, gives_way=1), Part("d", rows=5)))
    assert fit(screen, 80, 20) == set()
    assert fit(screen, 80, 15) == {"c"}
    assert fit(screen, 80, 10) == {"b", "c"}
    assert fit(screen, 80, 5) == {"a", "b", "c"}
    assert fit(screen, 80, 4) == {"a", "b", "c"}   # what stays stays, even where it does not fit
