"""The trials view: every variant of ``devicewatch try`` side by side, saved or running now.

On top the headline of the set (``trials.headline``: the winner against the script as written,
predicted beside measured); then the variants as ``try`` prints them (steps/s, predicted, data
wait, cores busy, GPU busy, verdict), what was varied or not applied and why a trial was not
measured; then each variant's CPU over time, one chart per variant on one shared time axis,
drawn by the run screen's chart widget from the run screen's model of that trial's run file.

A set running now (``t`` on the run screen) is run by ``TrialsRun``: the trials one after
another in a thread of their own, which posts what happens (a trial started, measured, the set
ended) to the screen; the screen follows the running trial's file as the run screen follows a
run. Escape or Ctrl-C stops the trials: the trial running now is cancelled, what was measured
is kept and saved, as Ctrl-C does to ``devicewatch try``.
"""

from __future__ import annotations

import io
import os
import threading
import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import var

from ..analysis import advice as advice_
from .. import trials
from ..errors import RecorderError, RunFileError
from ..live.model import RunModel
from ..live.source import ReplaySource, open_replay
from ..render.palette import NORMAL, PRESENTER
from ..runformat.runfile import Run, load
from ..safe_text import inert, markup
from .charts import AreaChart
from .drawing import AreaInput, View, format_seconds
from . import layout
from .kept_lines import KeptFooter
from .panels import FittedTable, RenderedTable, TextPanel
from .redraw import RedrawOnce
from .model_inputs import overlay_of

TRY_SECONDS = 10.0   # the measured window of a trial started from the dashboard
TRY_WARMUP = 10      # optimizer steps before it
STOPPED = "stopped from the dashboard"
FOLLOW_EVERY = 0.5   # seconds between reads of the running trial's file

# A trial's runner: (command, variant, budget, path, started) -> the trial's run, ``started``
# called with the recorder (its ``cancel(reason)`` stops the trial). Tests give their own.
Runner = Callable[[list[str], trials.Variant, dict[str, Any], str, Callable[[Any], None]], Run]


def run_trial_beside(command: list[str], variant: trials.Variant, budget: dict[str, Any], path: str,
                     started: Callable[[Any], None] | None = None, interval: float = 0.1,
                     gpu: bool = True) -> Run:
    """``trials.run_trial`` for a thread beside the dashboard's: nothing written to the terminal
    (the recorder's notices go to a buffer; the signals stay the dashboard's)."""
    return trials.run_trial(command, variant, budget, path, started, interval=interval, gpu=gpu,
                            terminal=io.StringIO())


@dataclass(frozen=True)
class Note:
    """One note under the trials' table, whole, and how much it tells: 0 a failure, 1 a trial
    measured short or not at all, 2 the rest (what a variant changed, the advice as written)."""

    text: Text
    rank: int = 2


def joined(notes: list[Note]) -> Text:
    return Text("\n").join(note.text for note in notes)


def kept_notes(notes: list[Note], room: int, rows: Callable[[Text], int]) -> Text:
    """NOTES in at most ROOM rows (each note's ROWS as wrapped): all where they fit; else the
    most telling whole notes, in their own order, and a last line for the rest."""
    if not notes or sum(rows(note.text) for note in notes) <= room:
        return joined(notes)
    kept: set[int] = set()
    used = 1    # the line that counts the notes left out
    for i in sorted(range(len(notes)), key=lambda i: (notes[i].rank, i)):
        need = rows(notes[i].text)
        if used + need <= room:
            kept.add(i)
            used += need
    left = len(notes) - len(kept)
    more = Text(f"{left} more note{'s' if left != 1 else ''}: a taller terminal shows {'them' if left != 1 else 'it'}",
                style="grey50")
    return joined([notes[i] for i in sorted(kept)] + [Note(more)])


def rows_of_text(panel: TextPanel, text: Text, width: int) -> int:
    """The rows TEXT takes in PANEL at a screen WIDTH, wrapped as the panel wraps it, leaving
    the panel's wraps of its own text in place (a wrap keeps only the lines it was last asked)."""
    kept = panel._wraps, panel._last_wrap
    try:
        return len(panel._wrap(text, max(1, width - panel.styles.gutter.width)))
    finally:
        panel._wraps, panel._last_wrap = kept


# -- trials running now ----------------------------------------------------------------------

class TrialsRun:
    """The trials of one set, one after another in a daemon thread, as ``devicewatch try`` runs
    them: the script as written first; each variant predicted from its figures (``advice.predict``)
    before it runs, measured after. Everything that happens is posted to ``screen`` as a message
    (posting is thread-safe; no widget is touched from here). The set is saved as trials.json in
    ``folder`` when the trials end, however they end."""

    def __init__(self, screen: TrialsScreen, command: list[str], variants: list[trials.Variant],
                 budget: dict[str, Any], folder: str, runner: Runner):
        self.screen = screen
        self.command, self.variants, self.budget, self.folder = command, variants, budget, folder
        self.runner = runner
        self.trial_set = trials.TrialSet(command, budget)
        self._stop: str | None = None
        self._recorder: Any = None
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._work, name="devicewatch-trials", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, reason: str = STOPPED) -> None:
        """No further trial; the one running now is cancelled (its file is finished as cancelled)."""
        with self._lock:
            self._stop = self._stop or reason
            recorder = self._recorder
        if recorder is not None:
            recorder.cancel(reason)

    def _started(self, recorder: Any) -> None:
        with self._lock:
            self._recorder = recorder
            stop = self._stop
        if stop:  # stopped while the recorder was being built
            recorder.cancel(stop)

    def _work(self) -> None:
        post = self.screen.post_message
        try:
            trials.run_set(
                self.command, self.variants, self.budget, self.folder, into=self.trial_set,
                runner=lambda command, variant, budget, path: self._one(command, variant, budget, path),
                stop=lambda: self._stop,
                on_trial=lambda index, of, variant, predicted, path: post(TrialsScreen.TrialStarted(index, predicted, path)),
                on_result=lambda index, result, run, so_far: post(TrialsScreen.TrialMeasured(index, result, run)))
        except Exception as exc:
            self.trial_set.stopped = f"the trials stopped: {type(exc).__name__}: {exc}"
            post(TrialsScreen.TrialsFailed(exc))
            try:
                trials.save(self.trial_set, self.folder)
            except OSError as error:
                post(TrialsScreen.TrialsFailed(RecorderError(f"cannot save {self.folder}/{trials.TRIALS_FILE}: "
                                                             f"{error.strerror}")))
        post(TrialsScreen.TrialsEnded(self.trial_set))

    def _one(self, command: list[str], variant: trials.Variant, budget: dict[str, Any], path: str) -> Run:
        try:
            return self.runner(command, variant, budget, path, self._started)
        finally:
            with self._lock:
                self._recorder = None


# -- the view --------------------------------------------------------------------------------

@dataclass
class Row:
    """One variant as the view shows it: waiting, running, done or not run."""

    variant: trials.Variant
    state: str = "waiting"
    predicted: float | None = None
    result: trials.TrialResult | None = None
    path: str | None = None
    model: RunModel | None = None
    source: ReplaySource | None = None     # the running trial's file, followed as it grows
    started: float | None = None           # monotonic, when it started
    missing: str | None = None             # why a saved variant's run file could not be read


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _chart_model(run: Run) -> RunModel:
    model = RunModel(run)
    model.refresh_phases()
    return model


class TrialsScreen(RedrawOnce):
    BINDINGS = [
        Binding("escape", "stop", "Stop the trials"),
        Binding("escape", "back", "Back"),
        Binding("ctrl+c", "stop", "Stop the trials", show=False, priority=True),
    ]

    presenter: var[bool] = var(False, init=False)

    class TrialStarted(Message, bubble=False):
        def __init__(self, index: int, predicted: float | None, path: str):
            super().__init__()
            self.index, self.predicted, self.path = index, predicted, path

    class TrialMeasured(Message, bubble=False):
        def __init__(self, index: int, result: trials.TrialResult, run: Run):
            super().__init__()
            self.index, self.result, self.run = index, result, run

    class TrialsFailed(Message, bubble=False):
        def __init__(self, error: Exception):
            super().__init__()
            self.error = error

    class TrialsEnded(Message):
        """The set is over and saved (``trial_set.stopped`` says why it ended early)."""

        def __init__(self, trial_set: trials.TrialSet):
            super().__init__()
            self.trial_set = trial_set

    def __init__(self, trial_set: trials.TrialSet, folder: str, rows: list[Row],
                 run: Callable[[TrialsScreen], TrialsRun] | None = None):
        super().__init__()
        self.trial_set = trial_set
        self.folder = folder
        self.rows = rows
        self._make_run = run
        self.trials_run: TrialsRun | None = None
        self.error: str | None = None
        self.quit_when_ended = False
        self.ended = False          # the trials' thread said the set is over
        self._follower: Any = None  # the timer that reads the running trial's file
        self._all_notes: list[Note] = []

    @classmethod
    def saved(cls, trial_set: trials.TrialSet, folder: str) -> TrialsScreen:
        """A set ``devicewatch try`` saved: each variant's chart from its run file."""
        rows = []
        for result in trial_set.results:
            row = Row(result.variant, "done", result.predicted_steps_per_s, result, result.path)
            try:
                row.model = _chart_model(load(result.path))
            except (OSError, RunFileError) as exc:
                row.missing = str(exc)
            rows.append(row)
        return cls(trial_set, folder, rows)

    @classmethod
    def running(cls, command: list[str], variants: list[trials.Variant], budget: dict[str, Any], folder: str,
                runner: Runner) -> TrialsScreen:
        """Trials to run now, one after another; the view follows them."""
        return cls(trials.TrialSet(command, budget), folder, [Row(v) for v in variants],
                   lambda screen: TrialsRun(screen, command, variants, budget, folder, runner))

    @property
    def trials_running(self) -> bool:
        return self.trials_run is not None and not self.ended

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TextPanel(id="trials-headline")
        yield TextPanel(id="trials-plan")
        yield RenderedTable(Text(""), id="trials-table", classes="panel")
        yield TextPanel(id="trials-notes")
        with VerticalScroll(id="trials-charts", classes="panel"):
            for i, _row in enumerate(self.rows):
                yield AreaChart(id=f"trial-cpu-{i}", classes="trial-cpu")
        yield KeptFooter()

    def on_mount(self) -> None:
        self.query_one("#trials-table").border_title = "variants"
        self.query_one("#trials-charts").border_title = "the workload's CPU, % of all cores, phases shaded (one time axis)"
        self.watch(self.app, "presenter", self._follow_presenter)
        if self._make_run is not None:
            self.trials_run = self._make_run(self)
            self.trials_run.start()
            self._follower = self.set_interval(FOLLOW_EVERY, self._follow)
        self.redraw_all()

    def watch_presenter(self) -> None:
        self._redraw_soon()

    # -- what the trials' thread says ---------------------------------------------------------

    def on_trials_screen_trial_started(self, message: TrialStarted) -> None:
        row = self.rows[message.index]
        row.state, row.predicted, row.path, row.started = "running", message.predicted, message.path, time.monotonic()
        self._redraw_soon()

    def on_trials_screen_trial_measured(self, message: TrialMeasured) -> None:
        row = self.rows[message.index]
        if row.source is not None:
            row.source.close()
            row.source = None
        row.state, row.result = "done", message.result
        row.model = _chart_model(message.run)
        self._redraw_soon()

    def on_trials_screen_trials_failed(self, message: TrialsFailed) -> None:
        self.error = f"{type(message.error).__name__}: {message.error}"
        self._redraw_soon()

    def on_trials_screen_trials_ended(self, message: TrialsEnded) -> None:
        self.trial_set = message.trial_set
        self.ended = True
        if self._follower is not None:
            self._follower.stop()
        for row in self.rows:
            if row.state in ("waiting", "running"):
                row.state = "not run"
            if row.source is not None:
                row.source.close()
                row.source = None
        self.refresh_bindings()
        self.redraw_all()
        self.notify(markup(f"trials saved in {self.folder}/{trials.TRIALS_FILE}"), timeout=8)
        if self.quit_when_ended:
            self.app.exit(0)

    def _follow(self) -> None:
        """Read the running trial's file as it grows, and draw it (on the UI thread)."""
        row = next((r for r in self.rows if r.state == "running"), None)
        if row is None or row.path is None:
            return
        if row.source is None:
            if not os.path.exists(row.path) or os.path.getsize(row.path) == 0:
                self.redraw_all()  # the elapsed time
                return
            try:
                row.source = open_replay(row.path)
            except RunFileError:  # the header not written whole yet
                return
        try:
            records = row.source.poll()
        except RunFileError:
            records = []
        run = row.source.run
        if run is not None:
            if row.model is None:
                row.model = RunModel(run)
            else:
                row.model.ingest(records)   # new samples come in the run's columns, not as records
            row.model.refresh_phases()
        self.redraw_all()

    # -- drawing -----------------------------------------------------------------------------

    def redraw_all(self) -> None:
        self.query_one("#trials-headline", TextPanel).update(self._headline())
        self.query_one("#trials-plan", TextPanel).update(self._plan())
        self.query_one("#trials-table", RenderedTable).update(FittedTable(self._table()))
        self._all_notes = self._notes()
        self.query_one("#trials-notes", TextPanel).update(joined(self._all_notes))
        self._draw_charts()
        self.call_after_refresh(self._fit_layout)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_layout)

    def _fit_layout(self) -> None:
        """Show what the terminal holds whole (``layout.TRIALS``): the variants' table whole, the
        notes and the charts where there is room for them."""
        width, height = self.size
        if not width or not height or not self.is_mounted:
            return
        measured: dict[str, int | tuple[int | None, int | None]] = {}

        def rows_of(panel: TextPanel) -> int:
            return len(panel._wrapped(max(1, width - panel.styles.gutter.width))) if panel.text.plain else 0

        for name in ("trials-headline", "trials-plan"):
            measured[name] = rows_of(self.query_one(f"#{name}", TextPanel))
        table = self.query_one("#trials-table", RenderedTable)
        measured["trials-table"] = (2 + len(table._lay_out(max(1, width - 4))), None)
        # The notes get the rows the rest leaves them; where all do not fit, the most telling
        # do, whole (a failed script's last lines first), and a line says how many are left out.
        notes_panel = self.query_one("#trials-notes", TextPanel)
        room = height - 1 - sum(r if isinstance(r, int) else (r[0] or 0) for r in measured.values())
        shown = kept_notes(self._all_notes, room, lambda text: rows_of_text(notes_panel, text, width))
        if shown.plain != notes_panel.text.plain:
            notes_panel.update(shown)
        measured["trials-notes"] = rows_of(notes_panel)
        absent = set() if measured["trials-notes"] else {"trials-notes"}
        layout.apply(self, layout.TRIALS, layout.fit(layout.TRIALS, width, height, self.presenter, measured, absent),
                     measured)

    def _headline(self) -> Text:
        if self.error:
            return Text(f"the trials stopped: {inert(self.error)}", style="bold red")
        running = next(((i, r) for i, r in enumerate(self.rows) if r.state == "running"), None)
        if running is not None:
            i, row = running
            elapsed = format_seconds(time.monotonic() - row.started) if row.started else "0s"
            text = Text(f"trial {i + 1}/{len(self.rows)}: {inert(row.variant.label)} running, {elapsed}", style="bold")
            if row.predicted:
                text.append(f" (predicted {row.predicted:.1f} steps/s)")
            text.append("   escape or ctrl+c stops the trials, keeping what was measured", style="grey50")
            return text
        if self.trials_running:
            return Text("starting the trials…", style="bold")
        if self._stopped_before_a_variant():  # "nothing to try" would be untrue: none was run
            return Text(inert(self.trial_set.stopped or ""), style="bold")
        return Text(inert(self.trial_set.headline()), style="bold")

    def _stopped_before_a_variant(self) -> bool:
        return bool(self.trial_set.stopped) and len(self.trial_set.results) == 1 and len(self.rows) > 1

    def _plan(self) -> Text:
        budget = self.trial_set.budget
        window = f"{budget.get('steps')} steps" if budget.get("steps") else f"{budget.get('seconds', 0):g} s"
        text = Text("try ", style="bold")
        text.append(inert(" ".join(self.trial_set.command)))
        text.append(f" · warm-up {budget.get('warmup')} steps, then {window} measured · {inert(self.folder)}/",
                    style="grey50")
        return text

    def _table(self) -> Table:
        table = Table(box=None, pad_edge=False, padding=(0, 1), expand=False, header_style="bold")
        table.add_column("variant", no_wrap=True)
        for name in ("steps/s", "predicted", "data wait", "cores busy", "others", "GPU busy"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_column("verdict")
        moved = {id(r) for r in trials.load_moved([row.result for row in self.rows if row.result is not None])}
        for row in self.rows:
            r = row.result
            mark = "*" if r is not None and id(r) in moved else ""
            label = Text(inert(row.variant.label), style="bold" if row.state == "running" else "")
            predicted = "-" if not row.variant.knob else r.predicted_text if r is not None else _number(row.predicted)
            if r is None:
                state = {"running": "running…", "waiting": "waiting", "not run": "not run"}.get(row.state, row.state)
                table.add_row(label, Text(state, style="grey50"), predicted, "", "", "", "", "")
                continue
            table.add_row(label, _number(r.steps_per_s) + mark if r.steps_per_s else Text("not measured", style="red"),
                          predicted,
                          f"{r.data_wait_share:.0%}" if r.data_wait_share is not None else "not measured",
                          _number(r.cores_busy), _number(r.others_cores),
                          f"{r.gpu_busy:.0f}%" if r.gpu_busy is not None else "-",
                          Text(f"failed ({r.failed})", style="red") if r.failed else inert(r.verdict or "-"))
        return table

    def _notes(self) -> list[Note]:
        """What each variant changed, what was not applied, why a trial was not measured, a
        window its script cut short, a failed script's last lines on stderr, the advice of the
        script as written, and why the set stopped early: each a note, with how much it tells
        (``Note.rank``: a failure first) for a terminal too short for all of them."""
        notes: list[Note] = []

        def line(head: str, body: str, style: str = "", rank: int = 2) -> None:
            text = Text()
            text.append(head, style="bold")
            text.append(inert(body), style=style)
            notes.append(Note(text, rank))

        for row in self.rows:
            r, label = row.result, row.variant.label
            if r is not None:
                for varied in r.varied:
                    line(f"{label}: ", varied)
                for skipped in r.not_applied:
                    line(f"{label}: not applied: ", skipped, "yellow")
                if r.note and not r.steps_per_s and not r.failed:
                    line(f"{label}: not measured: ", r.note, "yellow", rank=1)
                if r.predicted_measured:
                    line(f"{label}: predicted ", "by timing its own steps in the first trial, after its window (m)")
                elif r.predicted_range is not None:
                    line(f"{label}: predicted as a range: ", r.predicted_why or "")
                window = r.window_text(self.trial_set.budget)
                if window:
                    line(f"{label}: ", window, "yellow", rank=1)
                for i, failure in enumerate(trials.failure_lines(r)):
                    line("" if i else f"{label}: ", failure.removeprefix(f"{label}: ") if not i else failure, "red", rank=0)
            if row.missing:
                line(f"{label}: no chart: ", row.missing, "yellow")
        moved = trials.load_moved_text([row.result for row in self.rows if row.result is not None])
        if moved:
            line("", moved, "yellow")
        if not self.trials_running:
            for item in self.trial_set.advice:
                if item.knob is None:
                    line("as written: ", advice_.text(item))
            if self.trial_set.stopped and not self._stopped_before_a_variant():
                line("", self.trial_set.stopped, "yellow", rank=1)
        return notes

    def _draw_charts(self) -> None:
        palette = PRESENTER if self.presenter else NORMAL
        models = [row.model for row in self.rows if row.model is not None]
        span = max([m.latest for m in models] + [1.0])
        view = View(0.0, span)
        for i, row in enumerate(self.rows):
            chart = self.query_one(f"#trial-cpu-{i}", AreaChart)
            title = markup(self._chart_title(row))
            if chart.border_title != title:  # setting a title repaints the whole chart
                chart.border_title = title
            model = row.model
            if model is None:
                continue
            # The workload's own CPU (its process tree), as a share of every core: what a variant
            # changes, where the machine's total also counts whatever else runs beside the trial.
            share = model.proc_cpu.values / max(model.cores, 1)
            chart.data = AreaInput(view, model.samples_version, palette, model.t.values, share, 100.0, "%",
                                   overlay_of(model))

    @staticmethod
    def _chart_title(row: Row) -> str:
        r = row.result
        if r is not None:
            figure = f"{_number(r.steps_per_s)} steps/s" if r.steps_per_s else "not measured"
        else:
            figure = {"running": "running…", "waiting": "waiting", "not run": "not run"}.get(row.state, row.state)
        name = f" · {os.path.basename(row.path)}" if row.path else ""
        return f"{row.variant.label}: {figure}{name}"

    # -- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            return self.trials_running
        if action == "back":  # to the run screen the trials were started from
            return not self.trials_running and len(self.app.screen_stack) > 2
        return True

    def stop(self, quit_after: bool = False) -> None:
        """Stop the trials (the running one is cancelled; what was measured is kept and saved)."""
        self.quit_when_ended = self.quit_when_ended or quit_after
        if self.trials_run is not None and self.trials_running:
            self.trials_run.stop()
            self.notify("stopping the trials: the running trial is cancelled; what was measured is kept")

    def action_stop(self) -> None:
        self.stop()

    def action_back(self) -> None:
        if not self.trials_running and len(self.app.screen_stack) > 2:
            self.app.pop_screen()
