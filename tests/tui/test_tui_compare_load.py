"""The comparison view says, at every size and in presenter mode, what explains its headline:
when other programs took the cores unequally in A and B (the headline's second line and the
load lines), and why the epochs table reads otherwise than the headline (overlapped epochs).
Driven by Pilot on runs made here from rules (tests/unit/test_verdicts.py's Shape), whose
figures are known by construction, and read back from the terminal as Textual composes it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from devicewatch.tui.app import DashboardApp, DashboardSettings
from devicewatch.tui.compare import CompareScreen
from tests.conftest import first_frame, until
from tests.tui.test_every_screen import SIZES, screen_lines, settled_problems
from tests.tui.test_tui_compare import text_of
from tests.unit.test_compare_load import run
from tests.unit.test_verdicts import Shape, constant, every_core

# A serial: two epochs of 4 s training and 1 s validation, one after the other (10 s). B
# overlapped: epoch 1's validation (2 s, its own lane) beside epoch 2's training, so its
# epochs take 6 and 4.5 s, 10.5 s summed, over a span of 8.5 s.
SERIAL = [("train", 1, "main", 0.0, 4.0), ("validate", 1, "main", 4.0, 5.0),
          ("train", 2, "main", 5.0, 9.0), ("validate", 2, "main", 9.0, 10.0)]
OVERLAPPED = [("train", 1, "main", 0.0, 4.0), ("validate", 1, "validate-0", 4.0, 6.0),
              ("train", 2, "main", 4.0, 8.0), ("validate", 2, "validate-0", 8.0, 8.5)]


def overlapped_pair(folder: Path):
    """Both cores full; the workload 1.9 cores in A (other programs 0.1), 1.1 in B (0.9)."""
    a = Shape(2, 10.0, every_core(2, 100.0), SERIAL, workload=constant(190.0)).run(folder / "a.jsonl")
    b = Shape(2, 9.0, every_core(2, 100.0), OVERLAPPED, workload=constant(110.0)).run(folder / "b.jsonl")
    return a, b


def on_screen(app) -> str:
    """The terminal's text as one line of words: a sentence wrapped over rows reads whole."""
    return " ".join(" ".join(screen_lines(app)).split())


def words(sentence: str) -> str:
    return " ".join(sentence.split())


def cut_text(problems: list[str]) -> list[str]:
    """What is wrong on the screen but the figures panel's further tables (it scrolls): a text
    cut, a figure or word cut, the quit key missing."""
    return [p for p in problems if not p.startswith("RenderedTable")]


async def opened(pilot, app) -> CompareScreen:
    await until(pilot, lambda: first_frame(app))
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    await until(pilot, lambda: screen.comparison is not None and screen.query(".cmp-table"), 30)
    assert screen.comparison is not None
    return screen


@pytest.mark.asyncio
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_pair_whose_background_load_differed_says_so_at_every_size(tmp_path, size, presenter):
    # A: other programs 0.1 core, 5 s; B: 0.9, 6 s, its threads waiting 0.6 core (see
    # test_compare_load: the load may be the difference, and B was contended)
    app = DashboardApp(DashboardSettings(presenter=presenter),
                       compare=(run(tmp_path / "a.jsonl", 190.0, 5.0), run(tmp_path / "b.jsonl", 110.0, 6.0, 60.0)))
    async with app.run_test(size=size) as pilot:
        await opened(pilot, app)
        assert not cut_text(await settled_problems(pilot))
        shown = on_screen(app)
        for sentence in ["B took 20% longer (6.00s vs 5.00s) over the epochs",
                         "other programs took 0.1 cores in A and 0.9 in B (of 2): the difference may be theirs, "
                         "not the change's",
                         "load: other programs took 0.1 of 2 cores during A and 0.9 during B",
                         "load: B was contended: its threads waited for a core (0.6 cores' worth), so what it "
                         "gains by running work side by side needs a free core"]:
            assert words(sentence) in shown, f"{sentence!r} is not on the screen at {size}"


@pytest.mark.asyncio
@pytest.mark.parametrize("presenter", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_sooner_headline_over_slower_epochs_says_why_at_every_size(tmp_path, size, presenter):
    # B's span 8.5 s against A's 10: 15% sooner, 10 / 8.5 = 1.18x; its epochs 6 and 4.5 s against
    # A's 5 and 5, so the table's first epoch reads +1.00s for B: the note says both. B ran beside
    # 0.8 core more of other programs and still finished sooner.
    app = DashboardApp(DashboardSettings(presenter=presenter), compare=overlapped_pair(tmp_path))
    async with app.run_test(size=size) as pilot:
        screen = await opened(pilot, app)
        assert not cut_text(await settled_problems(pilot))
        shown = on_screen(app)
        assert "+1.00s" in text_of(screen, ".cmp-table")
        for sentence in ["B finished 15% sooner (8.5s vs 10.0s, 1.18x as fast) over the epochs",
                         "why: B's epochs overlap (part of one epoch runs beside the next): its epoch totals add "
                         "up to 10.5s but span 8.5s; the headline times the span from the first epoch's start to "
                         "the last's end: B's epoch totals add up to more than A's (10.5s vs 10.0s) while over "
                         "the span B finished sooner",
                         "other programs took 0.1 cores in A and 0.9 in B (of 2): B ran beside more of them and "
                         "still finished sooner: on a quiet machine the difference may be larger",
                         "load: other programs took 0.1 of 2 cores during A and 0.9 during B"]:
            assert words(sentence) in shown, f"{sentence!r} is not on the screen at {size}"
        # said once, beside the headline, not again among the notes
        assert "overlap" not in text_of(screen, "#cmp-notes")
