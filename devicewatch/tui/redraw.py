"""What the run and comparison screens share: their reactive state redraws them once.

Several attributes often change in one handler (a key that zooms and pans, the presenter look
switched by the app); each watcher asks for a redraw, and the screen redraws once, after the
handler, with all of them applied.
"""

from __future__ import annotations

from textual.screen import Screen

from .kept_lines import KeptLines


class RedrawOnce(Screen[None], KeptLines):
    """A screen redrawn whole (``redraw_all``) once after any change of its state."""

    _redraw_pending = False

    def redraw_all(self) -> None:
        raise NotImplementedError

    def _follow_presenter(self, presenter: bool) -> None:
        self.presenter = presenter

    def _redraw_soon(self) -> None:
        """One redraw after the current handler, however many attributes it changed."""
        if not self._redraw_pending:
            self._redraw_pending = True
            self.call_next(self._redraw_after_change)

    def _redraw_after_change(self) -> None:
        self._redraw_pending = False
        if self.is_mounted:
            self.redraw_all()
