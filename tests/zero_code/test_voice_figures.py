"""The loop's voice sends only the figures ``UnitFigures`` declares: the loop hands it its
figures as one, which refuses a figure it does not declare where it is made, so none reaches a
run file unnamed."""

from typing import Any

import pytest

from devicewatch import events
from devicewatch.integrations.zero_code.loop import Loop
from devicewatch.integrations.zero_code.process_state import Voice
from devicewatch.loop_figures import UnitFigures


class FiguresHeard:
    """A voice that keeps the figures the loop gives it, as given."""

    def __init__(self) -> None:
        self.figures: list[Any] = []

    def phase(self, *args: Any) -> None: ...
    def data_phase(self, *args: Any) -> bool: return True
    def setup(self, *args: Any) -> None: ...
    def epoch(self, epoch: int, figures: Any, unit: str = "epoch") -> None:
        self.figures.append(figures)


def voice_and_sent() -> tuple[Voice, list[tuple[str, dict]]]:
    sent: list[tuple[str, dict]] = []
    return Voice(lambda kind, **fields: sent.append((kind, fields)), clock=lambda: 0.0), sent


def test_an_epochs_declared_figures_are_sent_as_its_metrics():
    voice, sent = voice_and_sent()
    figures = UnitFigures(40, data_wait_s=1.5, wait_s=1.75, iterators=1, waited_on="DataLoader", steps_per_s=8.0)
    voice.epoch(3, figures, unit="segment")
    assert sent == [(events.EPOCH, {"source": "auto", "epoch": 3, "unit": "segment", "metrics": {
        "steps": 40, "data_wait_s": 1.5, "wait_s": 1.75, "iterators": 1, "waited_on": "DataLoader",
        "steps_per_s": 8.0}})]   # what was not measured is absent, never 0


def test_a_figure_the_dataclass_does_not_declare_cannot_be_made_so_it_cannot_be_sent():
    # the voice sends UnitFigures alone, and the loop makes them as UnitFigures(steps, **figures)
    with pytest.raises(TypeError, match="queue_depth"):
        UnitFigures(40, queue_depth=3)
    heard = FiguresHeard()
    loop = Loop(heard)
    loop.mode(True, 0.0)
    loop.backward(1.0)
    loop.mode(False, 2.0)   # a loop without a DataLoader: the evaluation ends its segment
    assert heard.figures == [UnitFigures(1, steps_per_s=0.5)]
