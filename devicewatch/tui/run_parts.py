"""The run screen's parts, declared once: each widget's id, its class, its border title, its
chart's input from the model, and its part of the layout table.

As dolphie declares each graph once (``GraphSpec``: its id, its series, its place in a tab) and
builds its tabs from the declarations, the run screen is composed from ``PARTS``, its charts
are given their inputs by walking ``CHARTS``, its layout table (``LAYOUT``, which
``layout.fit`` reads) is made from the same tree, and its keys find their widgets through the
declarations (``LOG``…), never through an id spelled again. ``tests/tui/test_run_parts.py``
checks that every id used anywhere in ``tui/`` is declared here or composed by another screen,
and that every one declared is composed and laid out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from textual.widget import Widget

from ..live.model import RunModel
from ..render.palette import Palette
from . import layout, panels
from .charts import AreaChart, Chart, HeatStrip, LineChart, TallLanes
from .drawing import AreaInput, ChartInput, HeatInput, LinesInput, Overlay, View
from .kept_lines import KeptFooter, KeptHorizontal, KeptVertical
from .model_inputs import lanes_input
from .output_panel import OutputLog
from .run_window import nice_top, visible_max

WidgetT = TypeVar("WidgetT", bound=Widget, covariant=True)   # a piece of a panel's subclass is a piece of a panel


@dataclass(frozen=True)
class Frame:
    """What a redraw gives every chart: the model, the window, the look, the y scale, and each
    core's clock where the heat strip shows clocks instead of load."""

    model: RunModel
    view: View
    palette: Palette
    overlay: Overlay
    fixed_y: bool
    clock: np.ndarray | None = None


@dataclass(frozen=True)
class Piece(Generic[WidgetT]):
    """One widget of the run screen: ``id`` (without ``#``), its class, its border title, and
    ``draws``, a chart's input from a ``Frame`` (None: nothing to draw yet). The layout's figures
    are ``layout.Part``'s; ``governed``: the layout table shows and hides it (else the screen
    does, by what the run has); ``wraps``: its height follows its text at its width."""

    id: str
    widget: type[WidgetT]
    title: str | None = None
    rows: int = 0
    columns: int = 0
    gives_way: int = layout.STAYS
    presenter: bool = True
    across: bool = False
    governed: bool = False
    wraps: bool = False
    panel: bool = False
    draws: Callable[[Frame], ChartInput | None] | None = None
    parts: tuple[Piece[Any], ...] = ()

    def walk(self) -> Iterator[Piece[Any]]:
        yield self
        for part in self.parts:
            yield from part.walk()

    def part(self) -> layout.Part:
        return layout.Part(self.id, self.rows, self.columns, self.gives_way, self.presenter, self.across,
                           tuple(piece.part() for piece in self.parts))

    def build(self) -> WidgetT:
        """The widget, with its parts inside it."""
        classes = "panel" if self.panel else None
        if self.parts:
            return self.widget(*(piece.build() for piece in self.parts), id=self.id, classes=classes)
        return self.widget(id=self.id, classes=classes)


# -- the charts' inputs from the model ----------------------------------------------------------

def _cores(frame: Frame) -> HeatInput | None:
    model = frame.model
    if model.cpu is None:
        return None
    if frame.clock is not None:
        return HeatInput(frame.view, ("clock", model.samples_version), frame.palette, model.t.values, frame.clock)
    return HeatInput(frame.view, model.samples_version, frame.palette, model.t.values, model.cpu.values)


def _cpu_total(frame: Frame) -> AreaInput:
    model = frame.model
    return AreaInput(frame.view, model.samples_version, frame.palette, model.t.values, model.cpu_total.values,
                     100.0, "%", frame.overlay)


def _lanes(frame: Frame) -> ChartInput:
    return lanes_input(frame.model, frame.view, frame.palette, frame.overlay)


def _proc_cpu(frame: Frame) -> AreaInput:
    model, t = frame.model, frame.model.t.values
    top = 100.0 * max(model.cores, 1) if frame.fixed_y else \
        nice_top(visible_max(t, model.proc_cpu.values, frame.view), 10)
    return AreaInput(frame.view, model.samples_version, frame.palette, t, model.proc_cpu.values, top, "%",
                     frame.overlay)


def _proc_rss(frame: Frame) -> AreaInput:
    model, t = frame.model, frame.model.t.values
    rss = model.proc_rss.values / 2**20
    return AreaInput(frame.view, model.samples_version, frame.palette, t, rss,
                     nice_top(visible_max(t, rss, frame.view), 16), "M", frame.overlay)


def _gpu_mem(frame: Frame) -> LinesInput | None:
    gpus = frame.model.gpus
    if not gpus:
        return None
    mem = tuple((g.t.values, g.mem_used.values / 2**30) for g in gpus)
    totals = [g.mem_total / 2**30 for g in gpus if np.isfinite(g.mem_total)]
    top = max(totals) if totals and frame.fixed_y else nice_top(max(visible_max(t, v, frame.view) for t, v in mem), 1)
    return LinesInput(frame.view, frame.model.samples_version, frame.palette, mem, top, "G")


def _gpu_power(frame: Frame) -> LinesInput | None:
    gpus = frame.model.gpus
    if not gpus:
        return None
    power = tuple((g.t.values, g.power.values) for g in gpus)
    top = nice_top(max(visible_max(t, v, frame.view) for t, v in power), 50)
    return LinesInput(frame.view, frame.model.samples_version, frame.palette, power, top, "W")


# -- the parts ----------------------------------------------------------------------------------
# An all-cores chart and a GPU's utilization draw whole from 6 and 4 rows; GPU memory and power
# give way first, then the process tree's charts, then the bottom row; on a narrow terminal the
# process tree and then the output give way to the epochs, each epoch on one line. Presenter mode
# leaves the bottom row and the GPU memory and power out.

STATUS = Piece("status", panels.TextPanel, rows=1, wraps=True)
PROGRESS = Piece("progress", panels.TextPanel, rows=1, wraps=True)
VERDICT = Piece("verdict", panels.LinesPanel, rows=1, wraps=True)
NO_GPU = Piece("no-gpu", panels.TextPanel, rows=1, gives_way=5, governed=True, wraps=True)
CORES = Piece("cores", HeatStrip, rows=3, governed=True, draws=_cores)
HEAT_LEGEND = Piece("heat-legend", panels.TextPanel, rows=1, governed=True, wraps=True)
CPU_TOTAL = Piece("cpu-total", AreaChart, "all cores %, phases shaded", rows=6, governed=True, draws=_cpu_total)
CPU_LANES = Piece("cpu-lanes", TallLanes, rows=1, draws=_lanes)   # the phase lanes where there is no GPU panel
CPU_PANEL = Piece("cpu-panel", KeptVertical, "CPU: every core, % busy", rows=2, columns=30, panel=True,
                  parts=(CORES, HEAT_LEGEND, CPU_TOTAL, CPU_LANES))
GPU_REASON = Piece("gpu-reason", panels.TextPanel, wraps=True)
GPU_UTILS = Piece("gpu-utils", KeptVertical, rows=4)   # each GPU's charts, mounted as GPUs appear
LANES = Piece("lanes", TallLanes, "phases by lane", rows=1, draws=_lanes)
GPU_MEM = Piece("gpu-mem", LineChart, "GPU memory, GiB", draws=_gpu_mem)
GPU_POWER = Piece("gpu-power", LineChart, "GPU power, W", draws=_gpu_power)
GPU_MEM_POWER = Piece("gpu-mem-power", KeptHorizontal, rows=6, gives_way=1, presenter=False, governed=True,
                      parts=(GPU_MEM, GPU_POWER))
GPU_PANEL = Piece("gpu-panel", KeptVertical, "GPU", rows=2, columns=30, panel=True,
                  parts=(GPU_REASON, GPU_UTILS, LANES, GPU_MEM_POWER))
PROC_CPU = Piece("proc-cpu", AreaChart, "workload CPU, % of one core", rows=3, draws=_proc_cpu)
PROC_RSS = Piece("proc-rss", AreaChart, "workload RSS, MiB", rows=3, draws=_proc_rss)
COST = Piece("cost", panels.TextPanel, rows=2, wraps=True)
PROC_PANEL = Piece("proc-panel", KeptVertical, "workload process tree", rows=2, columns=28, gives_way=2,
                   governed=True, panel=True, parts=(PROC_CPU, PROC_RSS, COST))
EPOCHS = Piece("epochs", panels.EpochBars, "epochs: time per phase", rows=8, columns=40, governed=True, panel=True)
LOG = Piece("log", OutputLog, "workload output", rows=6, columns=30, gives_way=4, governed=True, panel=True)
BOTTOM = Piece("bottom", KeptHorizontal, gives_way=3, presenter=False, across=True, governed=True,
               parts=(PROC_PANEL, EPOCHS, LOG))

PARTS: tuple[Piece[Any], ...] = (
    STATUS, PROGRESS, VERDICT, NO_GPU,
    Piece("top", KeptHorizontal, across=True, parts=(CPU_PANEL, GPU_PANEL)),
    BOTTOM,
    Piece("footer", KeptFooter, rows=1),
)

LAYOUT = layout.Part("run", parts=tuple(piece.part() for piece in PARTS))
DECLARED: tuple[Piece[Any], ...] = tuple(p for piece in PARTS for p in piece.walk())
PARENT = {part.id: piece for piece in DECLARED for part in piece.parts}   # the piece each is in (none: the screen)
GOVERNED = {piece.id for piece in DECLARED if piece.governed}
WRAPPED: tuple[Piece[panels.TextPanel], ...] = tuple(piece for piece in DECLARED if piece.wraps)
# The charts drawn each tick, and those of the bottom row, drawn with it every two seconds.
BOTTOM_CHARTS: tuple[Piece[Chart[Any]], ...] = tuple(p for p in BOTTOM.walk() if p.draws is not None)
TOP_CHARTS: tuple[Piece[Chart[Any]], ...] = tuple(p for p in DECLARED if p.draws is not None and p not in BOTTOM_CHARTS)
