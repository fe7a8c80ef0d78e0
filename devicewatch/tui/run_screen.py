"""The run screen: one live or recorded run on one time axis.

What the screen shows is a function of reactive state: the window (``window``, ``pan_offset``),
the y scale (``fixed_y``), the look (``presenter``, following the app's), whether the picture is
paused, and the model's data. A key changes state; its watcher asks for one redraw after the
handler, however many attributes it changed. One timer polls the run file (reading only the
bytes appended since the last poll) and redraws when records arrived. A redraw gives each chart
its typed input; a chart whose input did not change draws nothing, and one whose input changed
repaints only the cells that differ. Polling and drawing both happen on the UI thread, so no
widget is touched from another thread. When the run ends, the screen posts ``RunScreen.Finished``.

Over 500 lines because it is one Textual screen: its reactive state, the actions of its keys
and its redraw belong to the class; what can be pure is elsewhere (``panels``, ``model_inputs``,
``chart_cells``, ``output_panel``).
"""

from __future__ import annotations

import math
import time
from typing import TypeVar

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget

from .. import analysis
from ..analysis.advice import Advice
from ..live.model import RunModel
from ..live.source import LiveSource, Source
from ..render.palette import NORMAL, PRESENTER, Palette
from ..runformat.runfile import RunFileError
from . import layout, panels
from .output_panel import OutputLog
from .charts import AreaChart, HeatStrip, LineChart, PhaseLanes
from .chart_cells import heat_legend
from .drawing import AreaInput, HeatInput, LinesInput, Overlay, View, format_seconds
from .model_inputs import lanes_input, overlay_of
from .kept_lines import KeptFooter, KeptHorizontal, KeptVertical
from .redraw import RedrawOnce

WINDOWS: list[float | None] = [10, 30, 60, 120, 300, 600, 1800, None]  # seconds; None: whole run
WidgetT = TypeVar("WidgetT", bound=Widget)
# The parts whose display the layout table decides; the screen shows the GPU half, its reason
# line and the CPU panel's lanes by what the run has (``_draw_gpus``).
GOVERNED = {"bottom", "proc-panel", "epochs", "log", "heat-legend", "gpu-mem-power", "cores", "cpu-total", "no-gpu"}

TICK = 0.5  # seconds between poll-and-redraw ticks (2 Hz)
VIEW_STEPS = 20  # a live view's end advances in steps of 1/20 of the window
SLOW_EVERY = 1.0  # seconds between redraws of the status, progress and verdict lines while live
BOTTOM_EVERY = 2.0  # seconds between redraws of the bottom row (workload charts, cost, epochs) while live
LOG_EVERY = 2.0  # seconds between appends to the workload-output panel while a run is live


def _nice_top(value: float, floor: float = 1.0) -> float:
    """A round axis maximum at or above ``value`` (1, 2, 5 × 10^n)."""
    if not math.isfinite(value) or value <= floor:
        return floor
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exponent >= value:
            return step * exponent
    return 10 * exponent


def _visible_max(t: np.ndarray, values: np.ndarray, view: View) -> float:
    lo, hi = np.searchsorted(t, view.t0, "left"), np.searchsorted(t, view.t1, "right")
    part = values[lo:hi]
    part = part[~np.isnan(part)]
    return float(part.max()) if part.size else 0.0


def _title(widget: Widget, title: str) -> None:
    """Set a border title only when it changes: setting one repaints the whole widget."""
    if widget.border_title != title:
        widget.border_title = title


class RunScreen(RedrawOnce):
    BINDINGS = [
        # Quit first: the footer shows a screen's keys before the app's, and cuts what does not
        # fit, so the way out stays on screen at 80 columns.
        Binding("q", "app.quit", "Quit"),
        Binding("s", "stop", "Stop run"),
        Binding("m", "marker", "Marker"),
        Binding("space", "pause", "Pause"),
        Binding("plus,equals_sign", "zoom_in", "Zoom in", key_display="+"),
        Binding("minus", "zoom_out", "Zoom out", key_display="-"),
        Binding("0", "zoom_all", "Whole run"),
        Binding("left", "pan(-1)", "Earlier", show=False),
        Binding("right", "pan(1)", "Later", show=False),
        Binding("end", "follow", "Follow the end", show=False),
        Binding("y", "yscale", "Y 0-100/auto"),
        Binding("f", "core_clock", "Core clock", show=False),
        Binding("l", "toggle_log", "Log", show=False),
        Binding("h", "next_host", "Next host"),
        Binding("t", "try_advice", "Try the advice"),
        Binding("i", "type_into", "Type into the workload"),
        Binding("escape", "back", "Back", show=False),
    ]

    class Finished(Message):
        """The run on a screen has ended: its end record was read (``status``: ok, failed,
        cancelled…) or its recorder stopped without one (``status`` None)."""

        def __init__(self, screen: RunScreen, status: str | None) -> None:
            super().__init__()
            self.screen = screen
            self.status = status

    class TryWanted(Message):
        """Try the run's advice: ``command`` (the run's own ``-- COMMAND``) as written and once
        per advised knob (``advised``), as ``devicewatch try`` runs them; the app asks first."""

        def __init__(self, screen: RunScreen, command: list[str], advised: list[Advice]) -> None:
            super().__init__()
            self.screen = screen
            self.command = command
            self.advised = advised

    class HomeWanted(Message):
        """Back to the home screen, which this screen was opened without (a replay or a run
        started from the command line: the home screen is built only when wanted)."""

        def __init__(self, screen: RunScreen) -> None:
            super().__init__()
            self.screen = screen

    window: var[float | None] = var(None, init=False)
    pan_offset: var[float] = var(0.0, init=False)   # seconds the view ends before the newest data
    fixed_y: var[bool] = var(True, init=False)
    core_clock: var[bool] = var(False, init=False)   # the per-core panel shows each core's clock
    paused: var[bool] = var(False, init=False)
    presenter: var[bool] = var(False, init=False)

    def __init__(self, source: Source, tick: float = TICK):
        super().__init__()
        self.source = source
        self.tick = tick
        self.model: RunModel | None = None
        self.set_reactive(RunScreen.window, 60 if source.live else None)
        self.gpu_charts: list[AreaChart] = []
        self.sm_charts: list[LineChart] = []
        self._new_lines: list[str] = []
        self._open_line: str | None = None   # the output's line not yet ended, as the panel shows it
        self._log_written = -1e9
        self._workload_state: str | None = None
        self._slow_at = -1e9
        self._bottom_at = -1e9
        self._error_noted = False
        self._saw_finished = False
        self._try_offered = False
        self._found: dict[str, Widget] = {}
        self._legend_of: tuple[Palette, str] | None = None   # what the heat legend shows was made for
        self._gpu_half_of: tuple[bool, str | None] | None = None   # what the GPU half shows without GPUs
        self._laid_out: tuple[object, ...] | None = None   # what the layout table was last fitted to
        self._applied: layout.Plan | None = None   # and what it gave the widgets then
        self._half_shown: tuple[bool, str | None] | None = None   # the GPU half's displays as last set
        self._epochs_columns = 0
        self._log_closed = False   # ``l`` closed the output panel
        self._widths: dict[str, int] = {}   # each text panel's width when last shown
        self._announcement = ""   # what the app says of this run's next step (``announce``)
        self._failure: analysis.Failure | None = None   # why the run failed, once its end is read

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield panels.TextPanel(id="status")
        yield panels.TextPanel(id="progress")
        yield panels.LinesPanel(id="verdict")
        yield panels.TextPanel(id="no-gpu")
        with KeptHorizontal(id="top"):
            with KeptVertical(id="cpu-panel", classes="panel"):
                yield HeatStrip(id="cores")
                yield panels.TextPanel(id="heat-legend")
                yield AreaChart(id="cpu-total")
                yield PhaseLanes(id="cpu-lanes")
            with KeptVertical(id="gpu-panel", classes="panel"):
                yield panels.TextPanel(id="gpu-reason")
                yield KeptVertical(id="gpu-utils")
                yield PhaseLanes(id="lanes")
                with KeptHorizontal(id="gpu-mem-power"):
                    yield LineChart(id="gpu-mem")
                    yield LineChart(id="gpu-power")
        with KeptHorizontal(id="bottom"):
            with KeptVertical(id="proc-panel", classes="panel"):
                yield AreaChart(id="proc-cpu")
                yield AreaChart(id="proc-rss")
                yield panels.TextPanel(id="cost")
            yield panels.EpochBars(id="epochs", classes="panel")
            yield OutputLog(id="log", classes="panel", max_lines=2000)
        yield KeptFooter()

    def on_mount(self) -> None:
        titles = {"cpu-panel": "CPU: every core, % busy", "gpu-panel": "GPU",
                  "proc-panel": "workload process tree", "epochs": "epochs: time per phase",
                  "log": "workload output", "cpu-total": "all cores %, phases shaded", "lanes": "phases by lane",
                  "gpu-mem": "GPU memory, GiB", "gpu-power": "GPU power, W",
                  "proc-cpu": "workload CPU, % of one core", "proc-rss": "workload RSS, MiB"}
        for widget_id, title in titles.items():
            self.query_one(f"#{widget_id}").border_title = title
        if isinstance(self.source, LiveSource) and self.source.process is None:
            try:
                self.source.start()
            except OSError as exc:
                self.source.error = f"cannot start the recorder: {exc.strerror or exc}"
        self.watch(self.app, "presenter", self._follow_presenter)
        self._poll()
        self.refresh_bindings()
        self._redraw(force=True)
        self.set_interval(self.tick, self._on_tick)

    def on_resize(self) -> None:
        self._fit_layout()

    def _fit_layout(self) -> None:
        """Show what the terminal holds whole (``layout.RUN``): the text lines' rows as they wrap
        at this width, the GPUs' charts this run has, the epochs panel as wide as its rows."""
        width, height = self.size
        if not width or not height:
            return
        no_gpu = self.has_class("-no-gpu")
        gpus = [c for c in self.gpu_charts if c.display]
        lanes = max(1, len(self.model.lanes)) if self.model is not None else 1
        measured: dict[str, int | tuple[int | None, int | None]] = {
            name: self._text_rows(name) for name in ("status", "progress", "verdict", "no-gpu", "heat-legend",
                                                      "cost", "gpu-reason")}
        measured.update({"gpu-utils": 4 * len(gpus) + 5 * sum(c.display for c in self.sm_charts),
                         "lanes": lanes, "cpu-lanes": lanes})
        bars = self._find("#epochs", panels.EpochBars)
        if bars.epochs.rows:   # one epoch a line, and room for the legend, the newest and its note
            # as wide as the widest epoch so far: a width that moved with each epoch's figures
            # laid the bottom row out again at every epoch
            columns = self._epochs_columns = max(self._epochs_columns, panels.epoch_bars_width(bars.epochs.rows))
            least = panels.epoch_bars(bars.epochs.rows, columns, 1, bars.epochs.unmeasured)
            measured["epochs"] = (2 + bars._shown_lines(least, bars.size.width - 2 if bars.size.width > 2 else columns),
                                  columns + 4)
        absent = {"gpu-panel", "lanes"} if no_gpu else {"no-gpu", "cpu-lanes"}
        if not self.gpu_charts:
            absent.add("gpu-mem-power")
        if self._log_closed:
            absent.add("log")
        key = (width, height, self.presenter, tuple(sorted(measured.items())), tuple(sorted(absent)))
        if key == self._laid_out:
            return
        self._laid_out = key
        hidden = layout.fit(layout.RUN, width, height, self.presenter, measured, absent)
        before = self._applied
        self._applied = layout.apply(self, layout.RUN, hidden, measured, governed=GOVERNED, applied=before)
        if before is not None and any(shown and not before.get(key, (True,))[0]
                                      for key, (shown, _rows, _columns) in self._applied.items()):
            # A panel shown again (a larger terminal) is drawn now: a finished run has no next
            # tick to fill it, and its epochs would read "no epochs yet".
            self._redraw_soon()
        if self._applied != before:
            # Once laid out, the panels' text is measured again at the widths they got: a panel
            # shown or hidden changes its neighbours' widths, and with them how their text wraps.
            self.call_after_refresh(self._fit_layout)

    def _text_rows(self, widget_id: str) -> int:
        """The rows a text panel of the screen takes at its width: the width it has, or had when
        last shown (a hidden panel measured at its own width, the layout would show it again),
        or its share of the screen before it was ever laid out."""
        panel = self._find(f"#{widget_id}", panels.TextPanel)
        width = panel.size.width or self._widths.get(widget_id) or \
            (self.size.width * 2 // 7 if widget_id == "cost" else self.size.width) - panel.styles.gutter.width
        if panel.size.width:
            self._widths[widget_id] = panel.size.width
        return len(panel._wrapped(max(1, width)))

    # -- state: every change redraws once -----------------------------------------------------

    def watch_window(self) -> None:
        self._redraw_soon()

    def watch_pan_offset(self) -> None:
        self._redraw_soon()

    def watch_fixed_y(self) -> None:
        self._redraw_soon()

    def watch_core_clock(self) -> None:
        self._redraw_soon()

    def watch_paused(self) -> None:
        self._redraw_soon()

    def watch_presenter(self) -> None:
        self._laid_out = None
        self._redraw_soon()

    def redraw_all(self) -> None:
        self._redraw(force=True)

    def announce(self, text: str) -> None:
        """Say TEXT after the progress bar (the demo's next run): a toast would be drawn over a
        panel's figures and border."""
        self._announcement = text
        self._redraw_soon()

    # -- the tick ----------------------------------------------------------------------------

    def _on_tick(self) -> None:
        changed = self._poll()
        if changed and not self.paused:
            self._redraw()
        elif not self.paused and self.source.live and self.source.error and not self._error_noted:
            self._redraw()

    def poll_now(self) -> None:
        if self._poll() and not self.paused:
            self._redraw()

    def _poll(self) -> bool:
        try:
            records = self.source.poll()
        except RunFileError as exc:
            self.source.error = str(exc)
            records = []
        run = self.source.run
        if run is None:
            self._note_finished()
            return self.source.error is not None
        if self.model is None:
            self.model = RunModel(run)
            self.refresh_bindings()  # a merged run's ``h``
            self._new_lines = self.model.take_logs()
            self._note_finished()
            return True
        # New samples come in the run's columns, not as records: the model takes them either way.
        version = self.model.version
        self.model.ingest(records)
        self._note_finished()
        return bool(records) or self.model.version != version or self.source.error is not None

    def _note_finished(self) -> None:
        """Once a live run has ended, show all of it (the periodic pattern needs no key), and
        say so (the app may go on with the next run of a story, or quit). A recorder that
        stopped without finishing its file ends the run too, without a status."""
        if self._saw_finished:
            return
        if self.model is not None and self.model.run.finished:
            self._saw_finished = True
            self._failure = analysis.failure(self.model.run)
            if self.source.live:
                self.window, self.pan_offset = None, 0.0
            self.refresh_bindings()
            end = self.model.run.end
            self.post_message(self.Finished(self, end.status if end else None))
        elif self.source.live and not self.source.running and self.source.error:
            self._saw_finished = True
            self.refresh_bindings()
            self.post_message(self.Finished(self, None))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("stop", "type_into"):  # only a run that is still recording can be stopped, or typed into
            return isinstance(self.source, LiveSource) and self.source.running
        if action == "next_host":  # a merged run's charts show one node at a time
            return self.model is not None and len(self.model.run.host_labels) > 1
        if action == "try_advice":  # a run of a command whose advice names a knob
            return self._try_offered
        return True

    def _tryable(self) -> tuple[list[str], list[Advice]] | None:
        """The run's command and the advice that names a knob, when ``t`` can try them: a run of
        ``-- COMMAND`` (a registered workload is devicewatch's own, not the user's script)."""
        model = self.model
        if model is None:
            return None
        workload = model.run.header.workload
        advised = [a for a in model.advice if a.knob is not None]
        if workload.name or not workload.command or not advised:
            return None
        return list(workload.command), advised

    # -- drawing -----------------------------------------------------------------------------

    @property
    def palette(self) -> Palette:
        return PRESENTER if self.presenter else NORMAL

    def _view(self) -> View:
        assert self.model is not None
        latest = self.model.latest
        growing = self.source.live and not self.model.run.finished
        if self.window is None:
            # Following the whole run: the end moves in steps of 1/VIEW_STEPS of the run so far.
            end = max(latest, 1.0)
            if not growing:
                return View(0.0, end)
            step = _nice_top(end / VIEW_STEPS, 0.1)
            return View(0.0, math.ceil(end / step) * step, math.floor(latest / step) * step)
        end = max(latest - self.pan_offset, self.window)
        if not growing or self.pan_offset:
            return View(max(end - self.window, 0.0), end)
        # The window slides in steps of 1/VIEW_STEPS of its width, not every tick: between
        # steps only the newest columns change, and only their cells are repainted.
        step = self.window / VIEW_STEPS
        end = max(math.ceil(latest / step) * step, self.window)
        return View(end - self.window, end, max(math.floor(latest / step) * step, end - self.window))

    def _redraw(self, force: bool = False) -> None:
        model = self.model
        if model is None:
            self._set("status", Text(" starting the recorder… ", style="bold black on cyan") if not self.source.error
                      else Text(f" error: {self.source.error} ", style="bold white on red"))
            return
        if self.source.error:
            self._note_error()
        model.refresh_phases()
        if model.refresh_verdict(force=force or model.run.finished):
            offered = self._tryable() is not None
            if offered != self._try_offered:
                self._try_offered = offered
                self.refresh_bindings()
        view = self._view()
        # The text lines (status, progress, verdict) and the bottom row (workload
        # charts, cost, epochs, log) change every tick too, but are read at a glance: the
        # lines once a second, the bottom row every two (a frame that repaints it is twice as
        # dear as one of the top charts' changed columns alone: the compositor renders every
        # widget under the bounds of what changed).
        now = time.monotonic()
        everything = force or not self.source.running   # a forced redraw, or a run no longer live
        # A quarter of a tick early still counts: with the timer's jitter a strict comparison
        # skipped a tick now and then (1.5 s instead of 1).
        slow = everything or now - self._slow_at >= SLOW_EVERY - TICK / 4
        palette = self.palette
        if slow:
            self._slow_at = now
            self._set("status", self._status(model, view))
            progress = panels.progress_text(model, 40 if self.presenter else 30)
            if self._announcement:
                progress.append(f"   {self._announcement}", style="bold")
            self._set("progress", progress)
            self._set("verdict", panels.verdict_text(model, try_key=self._try_offered, failure=self._failure))
        overlay = overlay_of(model)
        t = model.t.values
        if model.cpu is not None:
            strip = self._find("#cores", HeatStrip)
            if 0 < model.cores <= 8:  # a few cores: up to three rows each and the time axis, no blank rows
                strip.styles.max_height = 3 * model.cores + 1
            clock, clock_legend = panels.core_clock(model, palette) if self.core_clock else (None, None)
            strip.data = HeatInput(view, model.samples_version, palette, t, model.cpu.values) if clock is None \
                else HeatInput(view, ("clock", model.samples_version), palette, t, clock)
        else:
            clock, clock_legend = None, None
        title = "CPU: every core, clock" if clock is not None else "CPU: every core, % busy"
        panel = self._find("#cpu-panel", Widget)
        if panel.border_title != title:   # setting it, even to the same text, repaints the whole panel
            panel.border_title = title
        if clock_legend is not None:
            self._set("heat-legend", clock_legend)
            self._legend_of = None
        elif self._legend_of != (palette, cores := model.cores_text()):   # the same legend: not made again each tick
            self._legend_of = (palette, cores)
            self._set("heat-legend", Text.assemble(
                "colour: ", *[(s.text, s.style or "") for s in heat_legend(palette)], f"   {cores}"))
        self._find("#cpu-total", AreaChart).data = AreaInput(
            view, model.samples_version, palette, t, model.cpu_total.values, 100.0, "%", overlay)
        self._draw_gpus(model, view, palette, overlay)
        lanes = lanes_input(model, view, palette, overlay)
        for lanes_id in ("lanes", "cpu-lanes"):
            if self._visible(lanes_id):
                chart = self._find(f"#{lanes_id}", PhaseLanes)
                chart.styles.height = max(1, len(lanes.lanes))
                chart.data = lanes
        if everything or (slow and now - self._bottom_at >= BOTTOM_EVERY - TICK / 4):
            self._bottom_at = now
            self._redraw_bottom(model, view, palette, overlay, force)
        if slow:
            self._fit_layout()

    def _redraw_bottom(self, model: RunModel, view: View, palette: Palette, overlay: Overlay, force: bool) -> None:
        t = model.t.values
        if self._visible("proc-panel"):
            cores = max(model.cores, 1)
            cpu_top = 100.0 * cores if self.fixed_y else _nice_top(_visible_max(t, model.proc_cpu.values, view), 10)
            self._find("#proc-cpu", AreaChart).data = AreaInput(
                view, model.samples_version, palette, t, model.proc_cpu.values, cpu_top, "%", overlay)
            rss = model.proc_rss.values / 2**20
            self._find("#proc-rss", AreaChart).data = AreaInput(
                view, model.samples_version, palette, t, rss, _nice_top(_visible_max(t, rss, view), 16), "M", overlay)
            self._set("cost", panels.cost_text(model))
        if self._visible("epochs"):
            bars = self._find("#epochs", panels.EpochBars)
            rows = panels.epoch_rows(model, bars.epochs)
            if rows is not bars.epochs:
                bars.epochs = rows
                bars.border_title = f"{analysis.units_text(analysis.unit(rows.rows))}: time per phase"
        self._new_lines += model.take_logs()
        self._write_log(force or not self.source.running)
        state = model.workload_state()
        if not self.source.running:
            self._stop_typing()
        if state != self._workload_state:
            self._workload_state = state
            self._find("#log", Widget).border_title = "workload output" + (f" · {state}" if state else "")

    def _write_log(self, force: bool) -> None:
        """Append the waiting log lines (and show the line not yet ended as it stands), at most
        every ``LOG_EVERY`` seconds while live: each write scrolls the panel, which repaints all of it."""
        now = time.monotonic()
        open_line = self.model.open_line() if self.model is not None else None
        if (self._new_lines or open_line != self._open_line) and (force or now - self._log_written >= LOG_EVERY):
            self._find("#log", OutputLog).write_lines(self._new_lines, open_line)
            self._new_lines = []
            self._open_line = open_line
            self._log_written = now

    def _draw_gpus(self, model: RunModel, view: View, palette: Palette, overlay: Overlay) -> None:
        reason = model.gpu_reason if not model.gpus else None
        # Without GPU data the GPU half gives its space to the CPU panel (which then carries the
        # phase lanes) and one line says why; while a live run waits for its first GPU sample
        # the GPU panel stays and says so.
        no_gpu = not model.gpus and (reason is not None or model.run.finished or not self.source.live)
        if not model.gpus and (no_gpu, reason) == self._gpu_half_of:
            return   # no GPU yet, and nothing of what the GPU half shows changed since the last tick
        self._gpu_half_of = (no_gpu, reason) if not model.gpus else None
        if (no_gpu, reason) != self._half_shown:   # the displays below change: the layout table's applied whole again
            self._half_shown, self._applied = (no_gpu, reason), None
        self.set_class(no_gpu, "-no-gpu")
        self._find("#no-gpu", Widget).display = no_gpu
        self._find("#gpu-panel", Widget).display = not no_gpu
        self._find("#cpu-lanes", Widget).display = no_gpu
        if no_gpu:
            self._set("no-gpu", Text.assemble(("no GPU data: ", "bold"), reason or "this run has no GPU samples",
                                              ("  (GPU recordings replay anywhere)", "grey50")))
        if not model.gpus and not no_gpu:
            self._set("gpu-reason", Text.assemble(("No GPU data yet: ", "bold"), "waiting for the first GPU sample"))
        self._find("#gpu-reason", Widget).display = not model.gpus and not no_gpu
        container = self._find("#gpu-utils", KeptVertical)
        container.display = bool(model.gpus)
        while len(self.gpu_charts) < len(model.gpus):
            chart = AreaChart(classes="gpu-util")
            self.gpu_charts.append(chart)
            container.mount(chart)
        if not model.gpus:
            return
        periods = analysis.driver_sample_periods(model.machine)
        sm = self._sm_active(model)
        rates = [analysis.driver_rate_text(periods[g] if g < len(periods) else None) for g in range(len(model.gpus))]
        _title(self._find("#gpu-panel", Widget), "GPU · " + (rates[0] if len(set(rates)) == 1 else "; ".join(
            f"GPU {g}: {rate.removeprefix('GPU utilization: ')}" for g, rate in enumerate(rates))))
        for extra in self.gpu_charts[len(model.gpus):] + self.sm_charts[len(model.gpus):]:
            extra.display = False  # another node of a merged run had more GPUs
        for g, (chart, track) in enumerate(zip(self.gpu_charts, model.gpus)):
            chart.display = True
            _title(chart, f"GPU {g} {track.name}: utilization %, phases shaded")
            chart.data = AreaInput(view, model.samples_version, palette, track.util_t.values, track.util.values,
                                   100.0, "%", overlay)
            while len(self.sm_charts) <= g:
                line = LineChart(classes="gpu-sm")
                line.border_title = f"GPU {len(self.sm_charts)} SM active % (GPM: share of SMs busy)"
                self.sm_charts.append(line)
                container.mount(line, after=chart)
            line = self.sm_charts[g]
            line.display = bool(sm[g][0].size)
            if line.display:
                line.data = LinesInput(view, model.samples_version, palette, (sm[g],), 100.0, "%")
        if self._visible("gpu-mem-power"):
            mem = tuple((g.t.values, g.mem_used.values / 2**30) for g in model.gpus)
            totals = [g.mem_total / 2**30 for g in model.gpus if math.isfinite(g.mem_total)]
            mem_top = max(totals) if totals and self.fixed_y else _nice_top(max(_visible_max(t, v, view) for t, v in mem), 1)
            self._find("#gpu-mem", LineChart).data = LinesInput(view, model.samples_version, palette, mem,
                                                                mem_top, "G")
            power = tuple((g.t.values, g.power.values) for g in model.gpus)
            power_top = _nice_top(max(_visible_max(t, v, view) for t, v in power), 50)
            self._find("#gpu-power", LineChart).data = LinesInput(view, model.samples_version, palette, power,
                                                                  power_top, "W")

    @staticmethod
    def _sm_active(model: RunModel) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each GPU's GPM ``sm_active`` series from the model: only the samples that carry it."""
        series = []
        for track in model.gpus:
            t, values = track.t.values, track.sm_active.values
            present = ~np.isnan(values)
            series.append((t[present], values[present]))
        return series

    def _status(self, model: RunModel, view: View) -> Text:
        source = self.source
        if source.error:
            state, style = "ERROR", "bold white on red"
        elif model.run.finished:
            status = model.run.end.status if model.run.end else "?"
            state = {"ok": "FINISHED", "trial": "TRIAL OVER", "cancelled": "CANCELLED",
                     "failed": "FAILED", "error": "FAILED TO START"}.get(status, status.upper())
            style = "bold black on green" if status in ("ok", "trial") else "bold white on red" if status != "cancelled" \
                else "bold black on yellow"
        elif source.live:
            state, style = ("STOPPING" if source.stop_requested else "LIVE"), "bold black on cyan"
        else:
            state, style = "REPLAY (unfinished file)", "bold black on magenta"
        window = "whole run" if self.window is None else format_seconds(self.window)
        if self.pan_offset:
            window += f" ending {format_seconds(view.t1)}"
        label = f"recording {source.path}" if source.live else f"replay {source.path}"
        return panels.status_text(model, label, state, style, window, "0-100%" if self.fixed_y else "auto",
                                  self.paused)

    def _note_error(self) -> None:
        if not self._error_noted and self.source.error:
            self._error_noted = True
            self.notify(self.source.error, title="recorder", severity="error", timeout=30)

    def _find(self, selector: str, kind: type[WidgetT]) -> WidgetT:
        """``query_one``, remembered: a tick looks up some twenty widgets, and a query walks the
        screen's widgets each time (the screen's widgets stay while it lives)."""
        found = self._found.get(selector)
        if found is None or not found.is_attached:
            found = self._found[selector] = self.query_one(selector, kind)
        assert isinstance(found, kind)
        return found

    def _set(self, widget_id: str, content: Text) -> None:
        """Show ``content`` in a text panel; the panel repaints only the lines that changed (and
        lays the screen out again only when its height follows its text and that changed)."""
        self._find(f"#{widget_id}", panels.TextPanel).update(content)

    def _visible(self, widget_id: str) -> bool:
        node: Widget | None = self._find(f"#{widget_id}", Widget)
        while node is not None and node is not self:
            if not node.display:
                return False
            node = node.parent  # type: ignore[assignment]  # a widget's parent is a DOMNode; the walk stops at the screen
        return True

    # -- actions -----------------------------------------------------------------------------

    def action_stop(self) -> None:
        if isinstance(self.source, LiveSource) and self.source.running:
            self.source.stop()
            self.notify("stopping: the recorder cancels the workload and finishes the file")
            self._redraw_soon()
        else:
            self.notify("no run to stop")

    def action_type_into(self) -> None:
        """The output panel becomes the workload's terminal: keys go to the workload until Escape."""
        log = self._find("#log", OutputLog)
        log.typing = True
        log.border_subtitle = "typing into the workload · Esc to stop"
        log.focus()

    def _stop_typing(self) -> None:
        log = self._find("#log", OutputLog)
        if log.typing:
            log.typing = False
            log.border_subtitle = ""

    def on_output_log_typed(self, message: OutputLog.Typed) -> None:
        if not (isinstance(self.source, LiveSource) and self.source.send_input(message.text)):
            self.notify("the workload is not running: nothing was typed into it", severity="warning")

    def on_output_log_sized(self, message: OutputLog.Sized) -> None:
        if isinstance(self.source, LiveSource):
            self.source.resize(message.rows, message.columns)

    def action_marker(self) -> None:
        if self.model is None:
            return
        label = f"mark {len(self.model.local_markers) + 1}"
        at = self.model.add_marker(label)
        sent = isinstance(self.source, LiveSource) and self.source.send_marker(label)
        if sent:
            self.notify(f"{label} at {format_seconds(at)}, written to the recording")
        else:
            why = "replays are not changed" if not self.source.live else "the recorder is not running"
            self.notify(f"{label} at {format_seconds(at)}, shown here only: {why}")
        self._redraw_soon()

    def action_pause(self) -> None:
        self.paused = not self.paused

    def action_zoom_in(self) -> None:
        index = WINDOWS.index(self.window)
        if self.window is None and self.model is not None:  # from the whole run, to the next window below it
            index = next((i for i, w in enumerate(WINDOWS) if w is not None and w >= self.model.latest),
                         len(WINDOWS) - 1)
        self.window = WINDOWS[max(index - 1, 0)]

    def action_zoom_out(self) -> None:
        self.window = WINDOWS[min(WINDOWS.index(self.window) + 1, len(WINDOWS) - 1)]

    def action_zoom_all(self) -> None:
        self.window, self.pan_offset = None, 0.0

    def action_pan(self, direction: int) -> None:
        if self.window is None or self.model is None:
            return
        self.pan_offset = min(max(self.pan_offset - direction * self.window / 2, 0.0),
                              max(self.model.latest - self.window, 0.0))

    def action_follow(self) -> None:
        self.pan_offset = 0.0

    def action_yscale(self) -> None:
        self.fixed_y = not self.fixed_y

    def action_core_clock(self) -> None:
        self.core_clock = not self.core_clock

    def action_next_host(self) -> None:
        """Charts and verdict of the merged run's next node (each node's samples are its own machine's)."""
        if self.model is None or not self.model.run.host_labels:
            return
        hosts = self.model.run.host_labels
        following = hosts[(hosts.index(self.model.host) + 1) % len(hosts)] if self.model.host in hosts else hosts[0]
        self.model = RunModel(self.model.run, host=following)
        self.model.take_logs()  # the log panel already holds every line
        self._redraw_soon()

    def action_try_advice(self) -> None:
        """Ask the app to try the advice on the run's command (after the run: two workloads at
        once would share the cores and each would measure the other)."""
        tryable = self._tryable()
        if tryable is None:
            self.notify("nothing to try: the advice names no knob, or this is no run of a command", severity="warning")
            return
        if self.source.running:
            self.notify("the run is still recording: try its advice when it has finished", severity="warning")
            return
        self.post_message(self.TryWanted(self, *tryable))

    def action_toggle_log(self) -> None:
        self._log_closed = not self._log_closed
        self._fit_layout()

    def action_back(self) -> None:
        if self.source.running:
            self.notify("the run is still recording: stop it (s) first, or quit (q)")
            return
        if len(self.app.screen_stack) > 2:
            self.source.close()
            self.app.pop_screen()
        else:
            self.post_message(self.HomeWanted(self))
