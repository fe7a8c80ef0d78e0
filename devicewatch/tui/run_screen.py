"""The run screen: one live or recorded run on one time axis.

What the screen shows is a function of reactive state: the window (``window``, ``pan_offset``),
the y scale (``fixed_y``), the look (``presenter``, following the app's), whether the picture is
paused, and the model's data. A key changes state; a watch of it (``REDRAWN_BY``) asks for one
redraw after the handler, however many attributes it changed. One timer polls the run file
(reading only the bytes appended since the last poll) and redraws when records arrived. The
screen's widgets, their titles, the charts' inputs and the layout table are declared once
(``run_parts``); a redraw gives each chart shown its typed input from its declaration; a chart
whose input did not change draws nothing, and one whose input changed repaints only the cells
that differ. Polling and drawing both happen on the UI thread, so no widget is touched from
another thread. When the run ends, the screen posts ``RunScreen.Finished``.

Over 500 lines because it is one Textual screen: its reactive state, the actions of its keys
and its redraw belong to the class; what can be pure is elsewhere (``run_parts``, ``run_window``,
``panels``, ``model_inputs``, ``chart_cells``, ``output_panel``).
"""

from __future__ import annotations

import os
import shlex
import time
from typing import Any, TypeVar

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget

from .. import analysis
from ..analysis.advice import Advice
from ..live.model import RunModel
from ..live.source import AttachSource, LiveSource, Source
from ..render.palette import NORMAL, PRESENTER, Palette
from ..runformat.runfile import RunFileError
from ..safe_text import inert, markup
from . import layout, panels
from .charts import AreaChart, Chart, LineChart
from .chart_cells import heat_legend
from .drawing import AreaInput, LinesInput, View, format_seconds
from .model_inputs import overlay_of
from .output_panel import OutputLog
from .redraw import RedrawOnce
from .run_parts import (BOTTOM_CHARTS, CORES, COST, CPU_LANES, CPU_PANEL, DECLARED, EPOCHS, GOVERNED, GPU_MEM_POWER,
                        GPU_PANEL, GPU_REASON, GPU_UTILS, HEAT_LEGEND, LANES, LAYOUT, LOG, NO_GPU, PARENT, PARTS,
                        PROC_PANEL, PROGRESS, STATUS, TOP_CHARTS, VERDICT, WRAPPED, Frame, Piece)
from .run_window import panned, view_of, zoomed

WidgetT = TypeVar("WidgetT", bound=Widget)

TICK = 0.5  # seconds between poll-and-redraw ticks (2 Hz)
SLOW_EVERY = 1.0  # seconds between redraws of the status, progress and verdict lines while live
BOTTOM_EVERY = 2.0  # seconds between redraws of the bottom row (workload charts, cost, epochs) while live
# An attached process's output goes where it was sent when it started: devicewatch never takes it.
NOT_CAPTURED = "output of an attached process is not captured: it goes where the process sends it"
LOG_EVERY = 2.0  # seconds between appends to the workload-output panel while a run is live
# The state whose every change redraws the screen once.
REDRAWN_BY = ("window", "pan_offset", "fixed_y", "core_clock", "paused", "presenter")


def _title(widget: Widget, title: str) -> None:
    """Set a border title only when it changes: setting one repaints the whole widget."""
    if widget.border_title != title:
        widget.border_title = title


def tryable(model: RunModel | None) -> tuple[list[str], list[Advice]] | None:
    """The run's command and the advice that names a knob, when ``t`` can try them: a run of
    ``-- COMMAND`` (a registered workload is devicewatch's own, not the user's script)."""
    if model is None:
        return None
    workload = model.run.header.workload
    advised = [a for a in model.advice if a.knob is not None]
    if workload.name or not workload.command or not advised:
        return None
    return list(workload.command), advised


def attached_folder(model: RunModel | None) -> str | None:
    """The folder of the process an attached run recorded (its header's ``attached.cwd``), or None."""
    attached = model.run.header.raw.get("attached") if model is not None else None
    folder = attached.get("cwd") if isinstance(attached, dict) else None
    return folder if isinstance(folder, str) else None


class RunScreen(RedrawOnce):
    BINDINGS = [
        # Quit first: the footer shows a screen's keys before the app's, and cuts what does not
        # fit, so the way out stays on screen at 80 columns.
        Binding("q", "app.quit", "Quit"),
        Binding("s", "stop", "Stop run"),
        Binding("s", "detach", "Detach"),   # an attached process runs on: the recording ends
        Binding("m", "marker", "Marker"),
        Binding("space", "toggle('paused')", "Pause"),
        Binding("plus,equals_sign", "zoom(-1)", "Zoom in", key_display="+"),
        Binding("minus", "zoom(1)", "Zoom out", key_display="-"),
        Binding("0", "zoom(0)", "Whole run"),
        Binding("left", "pan(-1)", "Earlier", show=False),
        Binding("right", "pan(1)", "Later", show=False),
        Binding("end", "pan(0)", "Follow the end", show=False),
        Binding("y", "toggle('fixed_y')", "Y 0-100/auto"),
        Binding("f", "toggle('core_clock')", "Core clock", show=False),
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
        self._output_said = False   # an attached run's output panel has said why it stays empty
        self._notices_said = 0      # ... and the recorder's notices it has shown there (why no phases)
        self._found: dict[str, Widget] = {}
        self._legend_of: tuple[Palette, str] | None = None   # what the heat legend shows was made for
        self._gpu_half_of: tuple[bool, str | None] | None = None   # what the GPU half shows without GPUs
        self._laid_out: tuple[object, ...] | None = None   # what the layout table was last fitted to
        self._applied: layout.Plan | None = None   # and what it gave the widgets then
        self._half_shown: tuple[bool, str | None] | None = None   # the GPU half's displays as last set
        self._epochs_columns = 0
        self._epochs_sized: tuple[tuple[object, ...], tuple[int, int]] | None = None   # what ``_epochs_size`` gave last, for what
        self._log_closed = False   # ``l`` closed the output panel
        self._widths: dict[str, int] = {}   # each text panel's width when last shown
        self._rows_measured: dict[str, tuple[tuple[object, ...], int]] = {}   # ``_text_rows_kept``'s
        self._fitted_to: tuple[object, ...] | None = None   # what the parts' sizes followed at the last fit
        self._announcement = ""   # what the app says of this run's next step (``announce``)
        self._failure: analysis.Failure | None = None   # why the run failed, once its end is read

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        for piece in PARTS:
            yield piece.build()

    def on_mount(self) -> None:
        for piece in DECLARED:
            if piece.title is not None:
                self._find(piece).border_title = piece.title
        if isinstance(self.source, LiveSource) and self.source.process is None:
            try:
                self.source.start()
            except OSError as exc:
                self.source.error = f"cannot start the recorder: {exc.strerror or exc}"
        self.watch(self.app, "presenter", self._follow_presenter)
        for name in REDRAWN_BY:
            self.watch(self, name, self._redraw_soon, init=False)
        self._poll()
        self.refresh_bindings()
        self._redraw(force=True)
        self.set_interval(self.tick, self._on_tick)

    def on_resize(self) -> None:
        self._fit_layout()

    def _fit_layout(self) -> None:
        """Show what the terminal holds whole (``run_parts.LAYOUT``): the text lines' rows as they wrap
        at this width, the GPUs' charts this run has, the epochs panel as wide as its rows."""
        size = self.size
        width, height = size
        if not width or not height:
            return
        no_gpu = self.has_class("-no-gpu")
        gpus = [c for c in self.gpu_charts if c.display]
        lanes = max(1, len(self.model.lanes)) if self.model is not None else 1
        # What the parts' sizes follow, read without measuring them: the same as at the last
        # fit, nothing can have changed size (a fit each second finds so nearly always).
        bars = self._find(EPOCHS)
        rows_keys = [self._find(piece).rows_key() for piece in WRAPPED]
        inputs = (size, self.presenter, no_gpu, len(gpus), sum(c.display for c in self.sm_charts), lanes,
                  self._log_closed, self._applied is None, bars.epochs.version, bars.outer_size, *rows_keys)
        if inputs == self._fitted_to:
            return
        self._fitted_to = inputs
        measured: dict[str, int | tuple[int | None, int | None]] = {
            piece.id: self._text_rows_kept(piece, key, size) for piece, key in zip(WRAPPED, rows_keys)}
        measured.update({GPU_UTILS.id: 4 * len(gpus) + 5 * sum(c.display for c in self.sm_charts),
                         LANES.id: lanes, CPU_LANES.id: lanes})
        epochs = self._epochs_size(bars)
        if epochs is not None:
            measured[EPOCHS.id] = epochs
        absent = {GPU_PANEL.id, LANES.id} if no_gpu else {NO_GPU.id, CPU_LANES.id}
        if not self.gpu_charts:
            absent.add(GPU_MEM_POWER.id)
        if self._log_closed:
            absent.add(LOG.id)
        key = (width, height, self.presenter, tuple(sorted(measured.items())), tuple(sorted(absent)))
        if key == self._laid_out:
            return
        self._laid_out = key
        hidden = layout.fit(LAYOUT, width, height, self.presenter, measured, absent)
        before = self._applied
        self._applied = layout.apply(self, LAYOUT, hidden, measured, governed=GOVERNED, applied=before)
        if before is not None and any(shown and not before.get(key, (True,))[0]
                                      for key, (shown, _rows, _columns) in self._applied.items()):
            # A panel shown again (a larger terminal) is drawn now: a finished run has no next
            # tick to fill it, and its epochs would read "no epochs yet".
            self._redraw_soon()
        if self._applied != before:
            # Once laid out, the panels' text is measured again at the widths they got: a panel
            # shown or hidden changes its neighbours' widths, and with them how their text wraps.
            self.call_after_refresh(self._fit_layout)

    def _epochs_size(self, bars: panels.EpochBars) -> tuple[int, int] | None:
        """The rows and columns the epochs panel asks of the layout: one epoch a line, and room
        for the legend, the newest and its note; as wide as the widest epoch so far (a width that
        moved with each epoch's figures laid the bottom row out again at every epoch). Worked out
        again only when its rows or its width change, not at each second's fit."""
        if not bars.epochs.rows:
            return None
        width = bars.size.width
        key = (bars.epochs.version, width, self._epochs_columns)
        if self._epochs_sized is not None and self._epochs_sized[0] == key:
            return self._epochs_sized[1]
        columns = self._epochs_columns = max(self._epochs_columns, panels.epoch_bars_width(bars.epochs.rows))
        least = panels.epoch_bars(bars.epochs.rows, columns, 1, bars.epochs.unmeasured, bars.epochs.look)
        size = (2 + bars._shown_lines(least, width - 2 if width > 2 else columns, keep=False), columns + 4)
        self._epochs_sized = ((bars.epochs.version, width, columns), size)
        return size

    def _text_rows_kept(self, piece: Piece[panels.TextPanel], rows_key: tuple[object, ...], size: Size) -> int:
        """``_text_rows``, measured again only when what they follow changed (the panel's
        ``rows_key``, the screen's size): the status and progress lines change their text every
        second but seldom their rows."""
        key = (rows_key, size)
        kept = self._rows_measured.get(piece.id)
        if kept is not None and kept[0] == key:
            return kept[1]
        rows = self._text_rows(piece)
        self._rows_measured[piece.id] = (key, rows)
        return rows

    def _text_rows(self, piece: Piece[panels.TextPanel]) -> int:
        """The rows a text panel of the screen takes at its width: the width it has, or had when
        last shown (a hidden panel measured at its own width, the layout would show it again),
        or its share of the screen before it was ever laid out."""
        panel = self._find(piece)
        shown = panel.size.width
        width = shown or self._widths.get(piece.id) or \
            (self.size.width * 2 // 7 if piece is COST else self.size.width) - panel.styles.gutter.width
        if shown:
            self._widths[piece.id] = shown
        return len(panel._wrapped(max(1, width)))

    # -- state: every change (``REDRAWN_BY``) redraws once ------------------------------------

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
        if action in ("stop", "detach", "type_into"):  # only a run still recording can be stopped, or typed into
            # An attached process is detached from, never stopped, and its input is not ours.
            return isinstance(self.source, LiveSource) and self.source.running and \
                self.attached == (action == "detach")
        if action == "next_host":  # a merged run's charts show one node at a time
            return self.model is not None and len(self.model.run.host_labels) > 1
        if action == "try_advice":  # a run of a command whose advice names a knob
            return self._try_offered
        return True

    # -- drawing -----------------------------------------------------------------------------

    @property
    def palette(self) -> Palette:
        return PRESENTER if self.presenter else NORMAL

    def _redraw(self, force: bool = False) -> None:
        model = self.model
        if model is None:
            self._set(STATUS, Text(" starting the recorder… ", style="bold black on cyan") if not self.source.error
                      else Text(f" error: {self.source.error} ", style="bold white on red"))
            return
        if self.source.error and not self._error_noted:
            self._error_noted = True
            self.notify(self.source.error, title="recorder", severity="error", timeout=30)
        model.refresh_phases()
        if model.refresh_verdict(force=force or model.run.finished):
            offered = tryable(model) is not None
            if offered != self._try_offered:
                self._try_offered = offered
                self.refresh_bindings()
        view = view_of(model.latest, self.window, self.pan_offset, self.source.live and not model.run.finished)
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
            self._set(STATUS, self._status(model, view))
            progress = panels.progress_text(model, 40 if self.presenter else 30)
            if self._announcement:
                progress.append(f"   {self._announcement}", style="bold")
            self._set(PROGRESS, progress)
            self._set(VERDICT, panels.verdict_text(model, try_key=self._try_offered, failure=self._failure))
        clock, clock_legend = panels.core_clock(model, palette) if self.core_clock and model.cpu is not None \
            else (None, None)
        if model.cpu is not None and 0 < model.cores <= 8:  # a few cores: up to three rows each and the time axis, no blank rows
            self._find(CORES).styles.max_height = 3 * model.cores + 1
        _title(self._find(CPU_PANEL), "CPU: every core, clock" if clock is not None else CPU_PANEL.title or "")
        if clock_legend is not None:
            self._set(HEAT_LEGEND, clock_legend)
            self._legend_of = None
        elif self._legend_of != (palette, cores := model.cores_text()):   # the same legend: not made again each tick
            self._legend_of = (palette, cores)
            self._set(HEAT_LEGEND, Text.assemble(
                "colour: ", *[(s.text, s.style or "") for s in heat_legend(palette)], f"   {cores}"))
        frame = Frame(model, view, palette, overlay_of(model), self.fixed_y, clock)
        self._draw_gpus(frame)
        self._draw_charts(TOP_CHARTS, frame)
        if everything or (slow and now - self._bottom_at >= BOTTOM_EVERY - TICK / 4):
            self._bottom_at = now
            self._redraw_bottom(frame, force)
        if slow:
            self._fit_layout()

    def _draw_charts(self, charts: tuple[Piece[Chart[Any]], ...], frame: Frame) -> None:
        """Give each chart shown its input (a chart whose input is unchanged draws nothing)."""
        known: dict[str, bool] = {}   # the pieces whose display this walk has read
        for piece in charts:
            if piece.draws is not None and self._visible(piece, known):
                data = piece.draws(frame)
                if data is not None:
                    self._find(piece).data = data

    def _redraw_bottom(self, frame: Frame, force: bool) -> None:
        model = frame.model
        self._draw_charts(BOTTOM_CHARTS, frame)
        if self._visible(PROC_PANEL):
            self._set(COST, panels.cost_text(model))
        if self._visible(EPOCHS):
            bars = self._find(EPOCHS)
            rows = panels.epoch_rows(model, bars.epochs)
            if rows is not bars.epochs:
                bars.epochs = rows
                bars.border_title = f"{analysis.units_text(analysis.unit(rows.rows))}: time per phase"
        log = self._find(LOG)
        if self.attached and not self._output_said:   # nothing will come: say why once
            self._output_said = True
            log.write_lines([NOT_CAPTURED], None)
        if self.attached and len(model.run.notices) > self._notices_said:
            # The panel the process's output would fill says what the recorder found: why no
            # phases come (a refusal, a process that is not Python), else said nowhere on screen.
            said = [f"devicewatch: {inert(n.message)}" for n in model.run.notices[self._notices_said:]
                    if n.level != "info" and n.state is None]
            self._notices_said = len(model.run.notices)
            if said:
                log.write_lines(said, None)
        self._new_lines += model.take_logs()
        now = time.monotonic()
        open_line = model.open_line()
        # At most every LOG_EVERY seconds while live: each write scrolls the panel, which repaints all of it.
        if (self._new_lines or open_line != self._open_line) and \
                (force or not self.source.running or now - self._log_written >= LOG_EVERY):
            log.write_lines(self._new_lines, open_line)
            self._new_lines, self._open_line, self._log_written = [], open_line, now
        if not self.source.running:
            log.stop_typing()
        state = model.workload_state()
        if state != self._workload_state:
            self._workload_state = state
            log.border_title = (LOG.title or "") + (f" · {state}" if state else "")

    def _draw_gpus(self, frame: Frame) -> None:
        model = frame.model
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
        self._find(NO_GPU).display = no_gpu
        self._find(GPU_PANEL).display = not no_gpu
        self._find(CPU_LANES).display = no_gpu
        if no_gpu:
            self._set(NO_GPU, Text.assemble(("no GPU data: ", "bold"), reason or "this run has no GPU samples",
                                            ("  (GPU recordings replay anywhere)", "grey50")))
        if not model.gpus and not no_gpu:
            self._set(GPU_REASON, Text.assemble(("No GPU data yet: ", "bold"), "waiting for the first GPU sample"))
        self._find(GPU_REASON).display = not model.gpus and not no_gpu
        container = self._find(GPU_UTILS)
        container.display = bool(model.gpus)
        while len(self.gpu_charts) < len(model.gpus):
            chart = AreaChart(classes="gpu-util")
            self.gpu_charts.append(chart)
            container.mount(chart)
        if not model.gpus:
            return
        periods = analysis.driver_sample_periods(model.machine)
        rates = [analysis.driver_rate_text(periods[g] if g < len(periods) else None) for g in range(len(model.gpus))]
        _title(self._find(GPU_PANEL), "GPU · " + (rates[0] if len(set(rates)) == 1 else "; ".join(
            f"GPU {g}: {rate.removeprefix('GPU utilization: ')}" for g, rate in enumerate(rates))))
        for extra in self.gpu_charts[len(model.gpus):] + self.sm_charts[len(model.gpus):]:
            extra.display = False  # another node of a merged run had more GPUs
        for g, (chart, track) in enumerate(zip(self.gpu_charts, model.gpus)):
            chart.display = True
            _title(chart, f"GPU {g} {track.name}: utilization %, phases shaded")
            chart.data = AreaInput(frame.view, model.samples_version, frame.palette, track.util_t.values,
                                   track.util.values, 100.0, "%", frame.overlay)
            while len(self.sm_charts) <= g:
                line = LineChart(classes="gpu-sm")
                line.border_title = f"GPU {len(self.sm_charts)} SM active % (GPM: share of SMs busy)"
                self.sm_charts.append(line)
                container.mount(line, after=chart)
            line = self.sm_charts[g]
            present = ~np.isnan(track.sm_active.values)   # GPM's ``sm_active``: only the samples that carry it
            line.display = bool(present.any())
            if line.display:
                sm = (track.t.values[present], track.sm_active.values[present])
                line.data = LinesInput(frame.view, model.samples_version, frame.palette, (sm,), 100.0, "%")

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

    def _find(self, piece: Piece[WidgetT]) -> WidgetT:
        """The declared widget, remembered: a tick looks up some twenty widgets, and a query
        walks the screen's widgets each time (the declared widgets are composed once and stay
        while the screen lives)."""
        found = self._found.get(piece.id)
        if found is None:
            found = self._found[piece.id] = self.query_one(f"#{piece.id}", piece.widget)
        return found  # type: ignore[return-value]  # found by its declared class

    def _set(self, piece: Piece[panels.TextPanel], content: Text) -> None:
        """Show ``content`` in a text panel; the panel repaints only the lines that changed (and
        lays the screen out again only when its height follows its text and that changed)."""
        self._find(piece).update(content)

    def _visible(self, piece: Piece[Any], known: dict[str, bool] | None = None) -> bool:
        """Whether PIECE is shown: it and every piece it is in (KNOWN: those read already)."""
        known = {} if known is None else known
        shown = known.get(piece.id)
        if shown is None:
            parent = PARENT.get(piece.id)
            shown = known[piece.id] = bool(self._find(piece).display) and (parent is None or self._visible(parent, known))
        return shown

    # -- actions -----------------------------------------------------------------------------

    @property
    def attached(self) -> bool:
        """Whether the run is of a process devicewatch attached to (now, or in a replay): it is
        watched, never stopped, and its output is its own."""
        return isinstance(self.source, AttachSource) or \
            (self.model is not None and analysis.advice.attached_run(self.model.run))

    def action_stop(self) -> None:
        if isinstance(self.source, LiveSource) and self.source.running:
            self.source.stop()
            self.notify("detaching: the recording ends; the process runs on, untouched" if self.attached
                        else "stopping: the recorder cancels the workload and finishes the file")
            self._redraw_soon()
        else:
            self.notify("no run to stop")

    def action_detach(self) -> None:
        self.action_stop()

    def action_type_into(self) -> None:
        """The output panel becomes the workload's terminal: keys go to the workload until Escape."""
        self._find(LOG).start_typing()

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

    def action_zoom(self, step: int) -> None:
        """``step`` -1: a narrower window, 1: a wider one, 0: the whole run (``run_window.zoomed``)."""
        self.window = zoomed(self.window, step, self.model.latest if self.model is not None else None)
        if step == 0:
            self.pan_offset = 0.0

    def action_pan(self, direction: int) -> None:
        """``direction`` -1: half a window earlier, 1: later, 0: follow the end again."""
        if direction == 0:
            self.pan_offset = 0.0
        elif self.window is not None and self.model is not None:
            self.pan_offset = panned(self.window, self.pan_offset, direction, self.model.latest)

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
        wanted = tryable(self.model)
        if wanted is None:
            self.notify("nothing to try: the advice names no knob, or this is no run of a command", severity="warning")
            return
        if self.source.running:
            self.notify("the run is still recording: try its advice when it has finished", severity="warning")
            return
        folder = attached_folder(self.model)
        if folder is not None and folder != os.getcwd():
            # The trials run here, and the attached process's command line is relative to its own folder.
            command = " ".join(shlex.quote(part) for part in wanted[0])
            self.notify(markup(f"the attached process ran in {folder}, the trials would run here: "
                               f"cd {shlex.quote(folder)} && devicewatch try -- {command}"), severity="warning",
                        timeout=20)
            return
        self.post_message(self.TryWanted(self, *wanted))

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
