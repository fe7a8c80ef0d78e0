"""The loop's voice sends only the figures ``UnitFigures`` declares: one it does not declare is
refused where the epoch event is made, before anything is sent, so it never reaches a run file."""

import pytest

from devicewatch import events
from devicewatch.integrations.zero_code.process_state import Voice
from devicewatch.loop_figures import UnitFigures


def voice_and_sent() -> tuple[Voice, list[tuple[str, dict]]]:
    sent: list[tuple[str, dict]] = []
    return Voice(lambda kind, **fields: sent.append((kind, fields)), clock=lambda: 0.0), sent


def test_an_epochs_declared_figures_are_sent_as_its_metrics():
    voice, sent = voice_and_sent()
    figures = UnitFigures(40, data_wait_s=1.5, wait_s=1.75, iterators=1, waited_on="DataLoader", steps_per_s=8.0)
    voice.epoch(3, figures.to_json(), unit="segment")
    assert sent == [(events.EPOCH, {"source": "auto", "epoch": 3, "unit": "segment", "metrics": figures.to_json()})]


def test_a_figure_the_dataclass_does_not_declare_is_refused_where_the_event_is_made():
    voice, sent = voice_and_sent()
    with pytest.raises(TypeError, match="queue_depth"):
        voice.epoch(1, {"steps": 40, "data_wait_s": 1.5, "queue_depth": 3})
    assert sent == []   # nothing was sent: the run file never sees it
    with pytest.raises(TypeError, match="queue_depth"):
        UnitFigures(40, queue_depth=3)   # the loop makes its figures as UnitFigures(steps, **figures)
