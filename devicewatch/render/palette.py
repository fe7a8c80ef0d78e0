"""The colours of every view: the dashboard's two looks and the light look of exported SVG.

One palette, so a phase has the same hue wherever it is drawn; ``phase`` has a colour for each
of ``phase_kinds.KINDS`` (``other`` included).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Palette:
    """The colours of one look; ``PRESENTER`` is high contrast for a projector."""

    heat: list[str]
    phase: dict[str, str]
    lines: list[str]
    area: str
    axis: str
    boundary: str
    marker: str
    empty_bg: str | None
    spread: str = "#b0b0b0"     # the band of the cores' min to max
    text: str = "#555555"


NORMAL = Palette(
    heat=["#1b1f3a", "#1f3c78", "#1f6fa8", "#1fa39a", "#4cbf4c", "#a6d13a", "#e8d22a",
          "#f5a623", "#f06a1f", "#e0301e", "#ff2e6e"],
    phase={"train": "#0f3320", "validate": "#3a2a08", "data": "#0d2a45", "copy": "#2f1240",
              "other": "#2a2a2a"},
    lines=["#5fd7ff", "#ffaf5f", "#87ff87", "#ff87d7", "#d7d75f", "#af87ff", "#ff5f5f", "#5fffd7"],
    area="#5fd7ff", axis="#8a8a8a", boundary="#e8d22a", marker="#ff5fff", empty_bg=None)

PRESENTER = Palette(
    heat=["#000000", "#00008b", "#0000ff", "#008b8b", "#00c000", "#7fff00", "#ffff00",
          "#ffa500", "#ff4500", "#ff0000", "#ffffff"],
    phase={"train": "#004000", "validate": "#604000", "data": "#00306a", "copy": "#500070",
              "other": "#404040"},
    lines=["#ffffff", "#ffff00", "#00ffff", "#ff00ff", "#00ff00", "#ff8000", "#ff0000", "#8080ff"],
    area="#ffffff", axis="#ffffff", boundary="#ffff00", marker="#ff00ff", empty_bg="#000000")

# Exported SVG: a white page for slides and papers.
PRINT = Palette(
    heat=NORMAL.heat,
    phase={"train": "#4e79a7", "validate": "#f28e2b", "data": "#59a14f", "copy": "#b07aa1", "other": "#9c755f"},
    lines=["#1f1f1f", "#e15759", "#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948"],
    area="#1f1f1f", axis="#888888", boundary="#555555", marker="#b07aa1", empty_bg="#ffffff")
