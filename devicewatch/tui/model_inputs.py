"""A run model's phases and markers as the charts' inputs: what the run screen, the comparison
and the trials view draw behind their data, built one way for all three.

No Textual here: the screens import it, and it imports none of them.
"""

from __future__ import annotations

import numpy as np

from ..live.model import RunModel
from ..render.palette import Palette
from .drawing import LanesInput, Overlay, View


def overlay_of(model: RunModel) -> Overlay:
    """The shading of the model's first lane, its epoch lines and markers."""
    main = model.main_lane_phases()
    markers = np.array([m[0] for m in model.all_markers], float)
    return Overlay(main.starts, main.ends, main.kinds, model.boundaries, markers, model.phases_version)


def lanes_input(model: RunModel, view: View, palette: Palette, overlay: Overlay) -> LanesInput:
    """Every lane of the model (``main`` when there is none yet) with epoch lines and markers."""
    phases = model.phase_arrays
    return LanesInput(view, model.phases_version, palette, tuple(model.lanes) or ("main",), phases.starts,
                      phases.ends, phases.kinds, phases.names, phases.lanes, overlay.lines_only())
