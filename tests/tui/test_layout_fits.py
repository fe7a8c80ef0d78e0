"""The run screen fits its layout table again only when a part's size may have changed: its
redraw each second measures nothing while every part keeps its size, a text that wraps onto
more rows is measured (and only it), and a resize measures every part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from rich.text import Text

from devicewatch.live.source import open_replay
from devicewatch.tui import run_screen
from devicewatch.tui.app import DashboardApp, DashboardSettings
from devicewatch.tui.run_parts import VERDICT, WRAPPED
from tests.conftest import first_frame, until

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"


class Measures:
    """Counts the text panels measured (by id), the epochs panel's widths and the fits, and
    what each fit was handed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.texts: list[str] = []
        self.epochs = 0
        self.fits: list[dict[str, Any]] = []
        text_rows, epochs_width, fit = (run_screen.RunScreen._text_rows, run_screen.panels.epoch_bars_width,
                                        run_screen.layout.fit)

        def counted_rows(screen: Any, piece: Any) -> int:
            self.texts.append(piece.id)
            return text_rows(screen, piece)

        def counted_width(rows: Any) -> int:
            self.epochs += 1
            return epochs_width(rows)

        def counted_fit(*args: Any, **kwargs: Any) -> set[str]:
            self.fits.append(dict(args[4]))
            return fit(*args, **kwargs)

        monkeypatch.setattr(run_screen.RunScreen, "_text_rows", counted_rows)
        monkeypatch.setattr(run_screen.panels, "epoch_bars_width", counted_width)
        monkeypatch.setattr(run_screen.layout, "fit", counted_fit)

    def clear(self) -> None:
        self.texts, self.epochs, self.fits = [], 0, []


@pytest.mark.asyncio
async def test_a_redraw_measures_only_what_changed_size(monkeypatch):
    measures = Measures(monkeypatch)
    app = DashboardApp(DashboardSettings(), open_replay(str(FIXTURES / "demo-cpu.jsonl")))
    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: first_frame(app))
        screen = app.screen
        assert isinstance(screen, run_screen.RunScreen)
        await pilot.pause()
        assert measures.fits and measures.epochs, "the first layout measures every part"

        measures.clear()
        for _ in range(3):   # the finished run's redraw: the same texts, the same sizes
            screen._redraw(force=True)
            await pilot.pause()
        assert (measures.texts, measures.epochs, measures.fits) == ([], 0, [])

        # The verdict wraps onto more rows: it alone is measured, and the fit is handed its rows.
        rows_before = screen._rows_measured[VERDICT.id][1]
        words = " ".join(["bottleneck"] * 40)   # 439 columns: three rows of a panel under 200
        screen._set(VERDICT, Text(words))
        await pilot.pause()
        screen._fit_layout()
        assert measures.texts == [VERDICT.id] and measures.epochs == 0
        assert measures.fits and measures.fits[-1][VERDICT.id] == 3 != rows_before

        # A resize measures every text panel again (at the widths the new layout gives).
        measures.clear()
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.pause()
        assert set(measures.texts) == {piece.id for piece in WRAPPED}
        assert measures.fits and measures.epochs
