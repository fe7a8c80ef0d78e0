"""The comparison view: two recorded runs side by side, on one time axis or epoch by epoch.

The figures (headline, epoch deltas, totals and speedup, utilization per phase, idle time,
verdicts, notes) all come from ``devicewatch.compare.comparison``, so the view, ``compare --text``
and ``compare --json`` never disagree; the charts are the run screen's own widgets over the run
screen's own model. Two alignments (``e`` toggles): *time* draws both runs from their start on
the same span; *epoch* shifts each run so that epoch k (``[`` / ``]`` choose k) starts at the
same column in both panels.

The charts come first: the figures of two day-long runs take seconds to work out, so they are
computed in a thread after the screen opens, and the headline, verdicts and tables fill in when
they are ready (``CompareScreen.Compared``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.widgets import Static

from .. import analysis, compare
from ..analysis import status_text
from ..beside import Beside
from ..live.model import RunModel
from ..render import compare_text
from ..render.palette import NORMAL, PRESENTER, Palette
from ..runformat.runfile import Run, RunFileError, load
from ..safe_text import inert, markup
from . import layout
from .charts import AreaChart, HeatStrip, PhaseLanes
from .drawing import AreaInput, HeatInput, View
from .kept_lines import KeptFooter
from .panels import FittedTable, LinesPanel, RenderedTable, TextPanel
from .redraw import RedrawOnce
from .model_inputs import lanes_input, overlay_of

# The sections of ``render.compare_text`` in the order the view shows them; presenter mode keeps
# only the epochs (their data wait included) and the idle time.
TABLE_ORDER = ("epochs", "idle", "utilization", "runs", "metrics", "results")
PRESENTER_TABLES = ("epochs", "idle")


def _side_panel_titles(label: str, run: Run) -> list[str]:
    """The panel's titles, longest first: the command, the file and the status; the file and
    the status; the status alone (a title cut by its border cut "--epochs 10" to "--epochs 1…")."""
    status = status_text(run)
    return [f"{label}: {compare.command_of(run)} · {Path(run.path).name} · {status}",
            f"{label}: {Path(run.path).name} · {status}", f"{label}: {status}"]


class ComparePanel(Vertical):
    """One run's charts: verdict, every core, GPU utilization (or total CPU), phase lanes."""

    def __init__(self, label: str, run: Run, model: RunModel, lane_rows: int = 1):
        super().__init__(id=f"cmp-{label.lower()}", classes="panel cmp-side")
        self.label = label
        self.run = run
        self.model = model
        self.lane_rows = lane_rows  # the same on both sides, so their charts line up

    def compose(self) -> ComposeResult:
        label = self.label.lower()
        yield LinesPanel(Text(f"verdict {self.label}: judging…", style="grey50"), id=f"cmp-verdict-{label}",
                         classes="cmp-verdict")
        yield HeatStrip(id=f"cmp-cores-{label}", classes="cmp-cores")
        if self.model.gpus:
            for g, track in enumerate(self.model.gpus):
                chart = AreaChart(classes="cmp-util")
                chart.border_title = f"GPU {g} {track.name}: utilization %, phases shaded"
                yield chart
        else:
            chart = AreaChart(classes="cmp-util")
            chart.border_title = "no GPU in this run: all cores %, phases shaded"
            yield chart
        yield PhaseLanes(id=f"cmp-lanes-{label}", classes="cmp-lanes")

    def on_mount(self) -> None:
        self.query_one(".cmp-lanes").styles.height = max(1, self.lane_rows)

    def titles(self) -> list[str]:
        host = f" · charts {self.model.host}" if self.model.host else ""   # a merged run: one node's machine
        return [title + host for title in _side_panel_titles(self.label, self.run)]

    def show_title(self, title: str) -> None:
        title = markup(title)   # a border title reads markup
        if self.border_title != title:
            self.border_title = title

    def show_verdict(self, side: compare.Side) -> None:
        verdict = Text(f"verdict {self.label}: ", style="bold")
        verdict.append(inert(side.verdict.text))
        self.query_one(".cmp-verdict", LinesPanel).update(verdict)

    def draw(self, view: View, palette: Palette) -> None:
        """Give each chart its input; a chart whose input is unchanged draws nothing."""
        model = self.model
        overlay = overlay_of(model)
        version = model.samples_version
        t = model.t.values
        if model.cpu is not None:
            self.query_one(".cmp-cores", HeatStrip).data = HeatInput(view, version, palette, t, model.cpu.values)
        charts = list(self.query(".cmp-util").results(AreaChart))
        if model.gpus:
            for chart, track in zip(charts, model.gpus):
                chart.data = AreaInput(view, version, palette, track.util_t.values, track.util.values, 100.0, "%",
                                       overlay)
        else:
            charts[0].data = AreaInput(view, version, palette, t, model.cpu_total.values, 100.0, "%", overlay)
        self.query_one(".cmp-lanes", PhaseLanes).data = lanes_input(model, view, palette, overlay)


def _chart_model(run: Run) -> RunModel:
    model = RunModel(run)
    model.refresh_phases()
    return model


class CompareScreen(RedrawOnce):
    BINDINGS = [
        # Quit first: the footer shows a screen's keys before the app's, and leaves out the
        # keys that do not fit.
        Binding("q", "app.quit", "Quit"),
        Binding("e", "toggle_align", "Time/epoch align"),
        Binding("right_square_bracket", "epoch(1)", "Next epoch", key_display="]"),
        Binding("left_square_bracket", "epoch(-1)", "Previous epoch", key_display="["),
        Binding("escape", "back", "Back"),
    ]

    align: var[str] = var("time", init=False)    # or "epoch"
    epoch: var[int] = var(1, init=False)         # the epoch that starts at the same x in epoch alignment
    presenter: var[bool] = var(False, init=False)

    class Compared(Message):
        """The figures, from the thread that worked them out: the screen shows them, then the
        message goes on to the app (its story keeps the headline)."""

        def __init__(self, comparison: compare.Comparison):
            super().__init__()
            self.comparison = comparison

    class Failed(Message, bubble=False):
        """Working the figures out raised ``error``: said on the screen, not a traceback over it."""

        def __init__(self, error: Exception):
            super().__init__()
            self.error = error

    def __init__(self, run_a: Run, run_b: Run):
        super().__init__()
        self.runs = {"A": run_a, "B": run_b}
        self.comparison: compare.Comparison | None = None  # worked out after the charts are drawn
        pending_b = Beside(_chart_model, run_b, name="devicewatch-model")  # B's beside A's
        self.models = {"A": _chart_model(run_a), "B": pending_b.result()}

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TextPanel(Text("comparing A with B: the figures follow the charts…", style="grey50"), id="cmp-headline")
        yield TextPanel(id="cmp-notes")
        yield TextPanel(id="cmp-align")
        with Horizontal(id="cmp-charts"):
            lane_rows = max(len(m.lanes) for m in self.models.values())
            for label, run in self.runs.items():
                yield ComparePanel(label, run, self.models[label], lane_rows)
        with VerticalScroll(id="cmp-tables", classes="panel"):
            yield Static(Text("working out the figures…", style="grey50"), id="cmp-pending")
        yield KeptFooter()

    def _start_comparing(self) -> None:
        Beside(self._compare, name="devicewatch-comparison")  # a daemon: quitting does not wait for it

    def _compare(self) -> None:
        """In the thread: work the figures out and post them, or what went wrong, to the screen
        (``post_message`` is thread-safe; a screen closed meanwhile takes nothing)."""
        try:
            c = compare.comparison(self.runs["A"], self.runs["B"])
        except Exception as exc:
            self.post_message(self.Failed(exc))
        else:
            self.post_message(self.Compared(c))

    def on_compare_screen_failed(self, message: Failed) -> None:
        error = message.error
        self.query_one("#cmp-headline", TextPanel).update(
            Text(f"the figures could not be worked out: {type(error).__name__}: {error}", style="bold red"))
        self.query_one("#cmp-pending", Static).update("")

    def on_compare_screen_compared(self, message: Compared) -> None:
        """Headline, notes, both verdicts and the tables, once the thread has worked them out."""
        c = self.comparison = message.comparison
        self.query_one("#cmp-headline", TextPanel).update(self._headline_text(c))
        self.query_one("#cmp-notes", TextPanel).update(self._notes_text(c))
        for panel, s in zip(self.query(ComparePanel), (c.a, c.b)):
            panel.show_verdict(s)
        tables = self.query_one("#cmp-tables", VerticalScroll)
        self.query_one("#cmp-pending").remove()
        tables.mount_all([RenderedTable(FittedTable(table), classes="cmp-table" + ("" if name in PRESENTER_TABLES
                                                                                      else " cmp-detail"))
                          for name, table in self._tables(c)])
        self.call_after_refresh(self._fit_layout)

    @staticmethod
    def _headline_text(c: compare.Comparison) -> Text:
        """The headline, then what explains it (``Comparison.explains``: why a table's epochs
        read otherwise) and what was taking the cores (``compare.load_lines``): a part that
        never gives way, so that every size and presenter mode show the headline with its why."""
        text = Text(inert(c.headline, newlines=True), style="bold")
        for kind, line in [("why: ", note) for note in c.explains] + [("load: ", line) for line in compare.load_lines(c)]:
            text.append("\n" + kind, style="bold")
            text.append(inert(line))
        return text

    @staticmethod
    def _notes_text(c: compare.Comparison) -> Text:
        """compare's other notes: what is not comparable between the runs, said rather than
        hidden (those that explain the headline are beside it)."""
        notes = [("note: ", note) for note in c.notes if note not in c.explains]
        if not notes:
            return Text("comparable: same workload, machine, cores, GPUs, epoch count and sampling interval",
                        style="grey50")
        text = Text()
        for i, (kind, note) in enumerate(notes):
            text.append(("\n" if i else "") + kind, style="bold")
            text.append(inert(note))
        return text

    @staticmethod
    def _tables(c: compare.Comparison) -> list[tuple[str, Table]]:
        """The comparison's tables in the order of TABLE_ORDER (its verdicts, notes and headline
        are shown above the charts instead)."""
        tables = compare_text.sections(c)
        return [(name, tables[name]) for name in TABLE_ORDER if name in tables]

    def on_mount(self) -> None:
        self.query_one("#cmp-tables").border_title = "figures (Δ = B − A; speedup = A time / B time)"
        self.query_one("#cmp-tables").focus()
        self.watch(self.app, "presenter", self._follow_presenter)
        self.redraw()
        # After the charts' first frame: the thread then takes the GIL only from a drawn screen.
        self.call_after_refresh(self._start_comparing)

    def watch_align(self) -> None:
        self._redraw_soon()

    def watch_epoch(self) -> None:
        self._redraw_soon()

    def watch_presenter(self) -> None:
        self.call_after_refresh(self._fit_layout)
        self._redraw_soon()

    def redraw_all(self) -> None:
        self.redraw()

    # -- drawing -----------------------------------------------------------------------------

    def epoch_start(self, label: str, epoch: int) -> float | None:
        for row in self.models[label].epoch_rows:
            if row.epoch == epoch:
                return row.start
        return None

    def common_epochs(self) -> list[int]:
        a = {r.epoch for r in self.models["A"].epoch_rows}
        return sorted(a & {r.epoch for r in self.models["B"].epoch_rows})

    def views(self) -> dict[str, View]:
        """Each run's time window: both from 0 on one span, or shifted so epoch k starts together."""
        durations = {label: max(m.latest, 1e-3) for label, m in self.models.items()}
        if self.align == "epoch":
            starts = {label: self.epoch_start(label, self.epoch) for label in self.models}
            if all(s is not None for s in starts.values()):
                lead = max(starts.values())  # type: ignore[type-var]  # no None left: epoch_start of every run was checked above
                span = max(lead + durations[k] - starts[k] for k in starts)  # type: ignore[operator]  # as above
                return {k: View(starts[k] - lead, starts[k] - lead + span)  # type: ignore[operator]  # as above
                        for k in starts}
        span = max(durations.values())
        return {label: View(0.0, span) for label in self.models}

    def units(self) -> tuple[str, str]:
        """What A's and B's epoch rows count: ``epoch``, or ``segment`` for step-based training."""
        return analysis.unit(self.models["A"].epoch_rows), analysis.unit(self.models["B"].epoch_rows)

    def _align_text(self) -> Text:
        text = Text("x axis: ", style="bold")
        if self.align == "epoch":
            a, b = self.units()
            which = (f"{a} {self.epoch} starts at the same x in both panels" if a == b else
                     f"{a} {self.epoch} of A and {b} {self.epoch} of B start at the same x (not the same work)")
            text.append(which, style="bold reverse")
            text.append("; each axis counts its own run's seconds", style="grey50")
        else:
            text.append("shared time axis, both runs from their start", style="bold reverse")
        a, b = self.units()
        text.append(f"   (e: toggle, [ ]: which {a if a == b else f'{a}/{b}'})", style="grey50")
        return text

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_layout)

    def _fit_layout(self) -> None:
        """Show what the terminal holds whole (``layout.COMPARE``): the text lines' rows as they
        wrap, each side's charts, the figures panel with its first table's header and rows."""
        width, height = self.size
        if not width or not height or not self.is_mounted:
            return

        def rows(widget_id: str, at: int) -> int:
            panel = self.query_one(f"#{widget_id}", TextPanel)
            return len(panel._wrapped(max(1, at - panel.styles.gutter.width)))

        side = max(1, (width - 4) // 2)
        measured: dict[str, int | tuple[int | None, int | None]] = {
            name: rows(name, width) for name in ("cmp-headline", "cmp-notes", "cmp-align")}
        lanes = max(1, max(len(m.lanes) for m in self.models.values()))
        for label, model in self.models.items():
            key = label.lower()
            measured[f"cmp-verdict-{key}"] = rows(f"cmp-verdict-{key}", side)
            measured[f"cmp-utils-{key}"] = 4 * max(1, len(model.gpus))
            measured[f"cmp-lanes-{key}"] = lanes
        measured["cmp-tables"] = (2 + self._first_rows(width - 2), None)   # a least height, not its text's
        sides = list(self.query(ComparePanel))
        # Both sides' titles in the same form, the longest that fits each panel's border.
        form = max((next((i for i, title in enumerate(panel.titles()) if len(title) <= panel.size.width - 6), 2)
                    for panel in sides), default=0)
        for panel in sides:
            panel.show_title(panel.titles()[form])
        hidden = layout.fit(layout.COMPARE, width, height, self.presenter, measured)
        pair = {"cmp-cores-a", "cmp-cores-b"}
        if hidden & pair:   # both sides or neither: their charts line up
            hidden |= pair
        layout.apply(self, layout.COMPARE, hidden, measured)

    def _first_rows(self, width: int, rows: int = 3) -> int:
        """The lines the first table shown takes down to its ROWS-th row (its title and header
        included), at WIDTH: what the figures panel keeps on any terminal."""
        tables = [t for t in self.query(RenderedTable) if t.display]
        if not tables:
            return 3
        lines = [strip.text for strip in tables[0]._lay_out(max(1, width))]
        rule = next((i for i, line in enumerate(lines) if line.lstrip().startswith("┡")), None)
        return len(lines) if rule is None else min(len(lines), rule + 1 + rows)

    def redraw(self) -> None:
        self.query_one("#cmp-align", TextPanel).update(self._align_text())
        views = self.views()
        palette = PRESENTER if self.presenter else NORMAL
        for panel in self.query(ComparePanel):
            panel.draw(views[panel.label], palette)

    # -- actions -----------------------------------------------------------------------------

    def action_toggle_align(self) -> None:
        if self.align == "time":
            epochs = self.common_epochs()
            if not epochs:
                self.notify("epoch alignment needs an epoch number both runs have", severity="warning")
                return
            if self.epoch not in epochs:
                self.epoch = epochs[0]
            self.align = "epoch"
        else:
            self.align = "time"

    def action_epoch(self, step: int) -> None:
        epochs = self.common_epochs()
        if not epochs:
            self.notify("no epoch number is in both runs", severity="warning")
            return
        index = epochs.index(self.epoch) if self.epoch in epochs else 0
        self.epoch = epochs[max(0, min(len(epochs) - 1, index + step))]
        self.align = "epoch"

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()


def open_compare(app: Any, path_a: str | Path, path_b: str | Path) -> bool:
    """Push the comparison of two files onto ``app``; a bad file is a notification, not a crash."""
    try:
        run_a, run_b = load(path_a), load(path_b)
    except (OSError, RunFileError) as exc:
        app.notify(str(exc), severity="error")
        return False
    app.push_screen(CompareScreen(run_a, run_b))
    return True
