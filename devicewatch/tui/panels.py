"""Text panels of the run screen: status line, epoch progress and verdict, epoch bars and watching
cost (the workload's output is ``output_panel``).

Each is a pure function from the model (or part of it) to a ``rich.text.Text``; the screen
compares the result with what is shown and touches the widget only when it changed. The epoch
bars fit their panel's size, so their widget (``EpochBars``) owns its rows and draws them again
when it is resized.
"""

from __future__ import annotations

import math
import textwrap
from functools import cached_property
from dataclasses import dataclass, field, replace
from collections.abc import Hashable

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.content import Content
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual

from .drawing import format_seconds
from .kept_lines import KeptLines, KeptRows
from .. import analysis
from ..render.fit import Column, fit
from ..analysis import advice, wording
from ..live.model import RunModel
from ..phase_kinds import kind_of
from ..render.palette import Palette
from ..safe_text import inert, inert_table

BAR_FULL = "█"
PARTIAL = "partial"   # an epoch row the run ended inside
BAR_EMPTY = "░"


def _last(values: np.ndarray) -> float:
    valid = values[~np.isnan(values)] if values.size else values
    return float(valid[-1]) if valid.size else math.nan


def _recent_mean(values: np.ndarray, count: int = 20) -> float:
    """Mean of the last ``count`` samples: a per-sample CPU reading is too jumpy to read."""
    part = values[-count:]
    part = part[~np.isnan(part)]
    return float(part.mean()) if part.size else math.nan


TITLE_MAX = 60  # characters of the run's title in the status line
SEGMENT_STYLES_KEPT = 4096  # a text panel's pieces' styles kept (``TextPanel._left_aligned``)


def hosts_text(model: RunModel) -> str:
    """A merged run's nodes and their host names (header ``hosts``), the node the charts show
    first: ``charts node 1=beta (h: next) · hosts node 0=alpha, node 1=beta``; "" for one host."""
    nodes = model.run.header.nodes
    if len(nodes) < 2:
        return ""
    names = {node.label: f"{node.label}={node.host.hostname or '?'}" for node in nodes}
    shown = model.host
    charts = f"charts {inert(names[shown])} (h: next) · " if shown in names else ""
    return charts + "hosts " + ", ".join(inert(n) for n in names.values())


def core_clock(model: RunModel, palette: Palette) -> tuple[np.ndarray | None, Text]:
    """The per-core panel's clock view: each core's clock as a share of the highest reading of
    the run (the heat scale's 0-100), and its legend; None and a legend saying why where the
    run has no clock (the kernel offered neither cpufreq nor /proc/cpuinfo's ``cpu MHz``)."""
    mhz = model.cpu_mhz.values if model.cpu_mhz is not None else None
    top = float(np.nanmax(mhz)) if mhz is not None and mhz.size and not np.isnan(mhz).all() else 0.0
    if mhz is None or top <= 0:
        return None, Text("per-core clock: not recorded in this run (the kernel offered neither cpufreq nor "
                          "cpu MHz); showing % busy   f: back", style="grey50")
    blocks = [(BLOCK, Style(color=colour)) for colour in palette.heat]
    legend = Text.assemble("clock: 0 ", *blocks, f" {top:.0f} MHz (the run's highest)   f: % busy")
    return mhz * (100.0 / top), legend


BLOCK = "█"


def progress_text(model: RunModel, width: int = 30) -> Text:
    """``epoch 2/5 ██████░░░░ 40%  now: train``: from run_info ``epochs`` and finished epochs;
    ``segment 3 · 2 done`` for step-based training, whose segments have no total (and
    ``epoch 3 · 2 done`` for a run that does not say how many epochs it runs)."""
    text = Text()
    total = model.epochs_total
    done = model.epochs_done
    segments = bool(model.epoch_rows) and analysis.unit(model.epoch_rows) == analysis.SEGMENT_UNIT
    if total and not segments:
        filled = round(width * min(done, total) / total)
        text.append(f"epoch {min(done + (0 if model.run.finished else 1), total)}/{total} ", style="bold")
        text.append(BAR_FULL * filled, style="green")
        text.append(BAR_EMPTY * (width - filled), style="grey37")
        text.append(f" {done}/{total} done ")
    elif model.epoch_rows:  # segments (step-based training), or epochs of a run that does not say how many
        text.append(f"{analysis.unit(model.epoch_rows)} {model.epoch_rows[-1].epoch} ", style="bold")
        text.append(f"· {done} done ")
    else:
        text.append("no epochs reported ", style="grey50")
    if model.current_phase and not model.run.finished:
        text.append(" now: ")
        text.append(inert(model.current_phase), style="bold reverse")
    return text


FAILURE_STYLE = "bold white on red"


def failure_line(found: wording.Failure) -> Text:
    """Why the run failed, as the verdict panel's first line (``wording.Failure.text``)."""
    text = Text(" FAILED ", style=FAILURE_STYLE) if found.source != "start" else \
        Text(" FAILED TO START ", style=FAILURE_STYLE)
    text.append(" " + inert(found.text), style="bold")
    return text


def verdict_text(model: RunModel, try_key: bool = False, failure: wording.Failure | None = None) -> Text:
    """The verdict, then one line per advice the model worked out with it (``advice.text``:
    the knob, the figure it rests on, the predicted gain); ``try_key`` says that ``t`` tries it.
    A run that failed says why first (``failure``, ``wording.failure`` of the run), and its
    verdict only where it judged something (``wording.verdict_beside``)."""
    if failure is not None:
        first = failure_line(failure)
        if model.verdict is None or not wording.verdict_beside(failure, model.verdict.label):
            return first
        return first.append("\n").append(verdict_text(model, try_key))
    host = model.host
    text = Text(f"verdict {inert(host)}: " if host else "verdict: ", style="bold")
    if model.verdict is None:
        text.append("waiting for samples…", style="grey50")
        return text
    text.append(inert(model.verdict.text))
    if not model.run.finished:
        text.append("  (so far)", style="grey50")
    later = advice.NEXT_START if advice.attached_run(model.run) else ""   # a job attached to runs on as started
    for item in model.advice:
        text.append("\nadvice: ", style="bold")
        text.append(later + inert(advice.text(item)), style="not bold")
    if try_key:
        text.append("  (t: try it)", style="grey50 not bold")
    return text


def status_text(model: RunModel, source_label: str, state: str, state_style: str, window: str,
                yscale: str, paused: bool) -> Text:
    text = Text()
    text.append(f" {state} ", style=state_style)
    title = inert(model.run.title)
    if len(title) > TITLE_MAX:  # a long command line would push the rest of the line off screen
        title = title[:TITLE_MAX - 1] + "…"
    hosts = hosts_text(model)
    if hosts:  # before the title: which machine the charts show must not be cut off
        text.append(f" {hosts} ·", style="bold")
    text.append(f" {title} ", style="bold")
    text.append(f"· {format_seconds(model.latest)} · {model.run.samples.total} samples · {source_label}")
    text.append(f" · window {window} · y {yscale}", style="grey70")
    if paused:
        text.append("  PAUSED ", style="bold black on yellow")
    return text


PHASE_BAR = {"train": "green", "validate": "yellow", "data": "dodger_blue1", "copy": "magenta"}  # palette hues
NO_PHASE = "grey37"


def _wait_text(row: analysis.EpochRow) -> str:
    """``  data wait 2.16s 98%``: the loop's data wait and its share of the loop (the row's one
    data figure), so that a loop that mostly waited never reads as no training."""
    wait = wording.data_wait_text(row.data_wait, row.loop_wait_share)
    return f"  {wording.DATA_WAIT} {wait:>9}"


def _parts(row: analysis.EpochRow, figured: list[str], loop: bool) -> list[float]:
    """The seconds an epoch row adds up to its total: its training loop (its data wait inside)
    where LOOP, then each phase of FIGURED, then the time in no phase."""
    return [*([row.train_loop] if loop else []), *(row.phases.get(n, 0.0) for n in figured), row.untracked]


def _adds_up(row: analysis.EpochRow, parts: list[float]) -> bool:
    """Whether the figures shown, each rounded to a tenth, are the row's total: phases of lanes
    side by side count their own time each, and then they are more."""
    return abs(sum(round(p, 1) for p in parts) - round(row.total, 1)) <= 0.05 * len(parts) + 1e-9


@dataclass(frozen=True)
class EpochLook:
    """What every line of ``epoch_bars`` takes from all the rows, not only those shown: the
    phases named (and the legend), whether there is a data wait, the steps' width and the
    longest epoch the bars are scaled to. Worked out once per set of rows (``EpochRows.look``):
    the panel fits its rows and the layout measures them, several ``epoch_bars`` a set."""

    names: list[str]
    waits: bool
    steps_width: int
    steps_word: str   # "steps (sampled)" where counted from stack samples: a lower bound
    longest: float


def _steps_text(row: analysis.EpochRow) -> str | None:
    """An epoch's steps as shown: ``≥12`` where counted from stack samples (an attached run's)."""
    return None if row.metrics.figures is None else row.metrics.figures.steps_text()


def epoch_look(rows: list[analysis.EpochRow]) -> EpochLook:
    sampled = any(r.metrics.figures is not None and r.metrics.figures.steps_sampled for r in rows)
    return EpochLook(analysis.phase_names(rows), any(r.data_wait is not None for r in rows),
                     max((len(n) for n in map(_steps_text, rows) if n is not None), default=0),
                     "steps (sampled)" if sampled else "steps",
                     max((max(r.total, sum(r.phases.values())) for r in rows), default=0.0) or 1.0)


def epoch_bars(rows: list[analysis.EpochRow], width: int, max_rows: int = 40,
               unmeasured: str | None = None, look: EpochLook | None = None) -> Text:
    """One bar per epoch (or segment) with a segment per named phase (data, train, copy,
    validate, …, lanes merged) and the time in no phase, scaled to the longest; the newest
    ``max_rows`` of them. Each row's figures add up to its total (``=``; ``:`` only where lanes
    side by side count the same seconds twice). Where the run says how long its loop waited on
    data (``data_wait_s``, or ``data`` phases), the first figure is the training loop, its data
    wait inside (so the data phases are not figures of their own), and the row ends with the data
    wait, seconds and share (``2.5s = 2.3 + 0.2 + 0.0  data wait 2.16s 96%``: one data figure a
    row, the verdict's share); where it has them, its ``steps``; an epoch the run ended inside,
    ``partial``.
    ``unmeasured`` (``analysis.Unmeasured.text``) says once, last, why a data wait is missing.
    LOOK: ``epoch_look(rows)``, where the caller has it already."""
    text = Text()
    if not rows:
        text.append("no epochs yet", style="grey50")
        return text
    look = look or epoch_look(rows)
    names, waits, steps_w, steps_word = look.names, look.waits, look.steps_width, look.steps_word
    for i, name in enumerate(names):
        text.append(("  " if i else "") + "█ " + inert(name), style=PHASE_BAR.get(name, "cyan"))
    text.append("  █ no phase", style=NO_PHASE)
    # With a data wait the loop stands for its train and data phases: one data figure a row.
    figured = [n for n in names if kind_of(n) not in ("train", "data")] if waits else list(names)
    summed = [wording.LOOP] * waits + [inert(n) for n in figured] + ["no phase"]
    text.append("   (seconds" + (f": {' + '.join(summed)}; {wording.DATA_WAIT_LEGEND})\n" if waits else ")\n"),
                style="grey50")
    longest = look.longest
    # The legend and the note wrap in a narrow panel: the lines they take beyond the legend's
    # first come out of the rows shown, so the newest rows stay on screen.
    extra = -(-(text.cell_len - 1) // width) - 1 + (len(textwrap.wrap(unmeasured, width)) if unmeasured else 0)
    shown = max(1, max_rows - extra)
    # The figures of the rows shown only (a long run has thousands of rows), the bars as wide
    # as those figures leave.
    rows = rows[-shown:]
    steps = [_steps_text(r) for r in rows]
    parts = [_parts(r, figured, waits) for r in rows]
    numbers = [(" = " if _adds_up(r, p) else ": ") + " + ".join(f"{x:.1f}" for x in p)
               + (_wait_text(r) if waits else "")
               + (f"  {inert(n) if n is not None else '-':>{steps_w}} {steps_word}" if steps_w else "")
               + (f"  {PARTIAL}" if r.partial else "")
               for r, p, n in zip(rows, parts, steps)]
    bar_w = max(8, width - 12 - max(len(n) for n in numbers))
    for row, figures in zip(rows, numbers):
        scale = bar_w / longest
        used = 0
        text.append(f"{row.epoch:>4} ")
        for name in names:
            cells = round(row.phases.get(name, 0.0) * scale)
            text.append("█" * cells, style=PHASE_BAR.get(name, "cyan"))
            used += cells
        rest = min(max(0, round(row.untracked * scale)), max(0, bar_w - used))
        text.append("█" * rest, style=NO_PHASE)
        text.append(" " * max(0, bar_w - used - rest))
        text.append(f" {row.total:4.1f}s{figures}\n")
    if unmeasured:
        text.append(inert(unmeasured) + "\n", style="grey50")
    return text


def epoch_bars_width(rows: list[analysis.EpochRow]) -> int:
    """The narrowest width at which ``epoch_bars`` draws the newest row on one line, its bar
    at its shortest: what the epochs panel asks of the layout so that an epoch is one line."""
    text = epoch_bars(rows[-1:], 1, 1)
    return max((cell_len(line) for line in text.plain.split("\n") if line[:5].strip().isdigit()), default=0)


def cost_text(model: RunModel) -> Text:
    """The workload tree's CPU and memory now, and what watching it costs (% of one core)."""
    text = Text()
    cpu, rss, count = _last(model.proc_cpu.values), _last(model.proc_rss.values), _last(model.proc_count.values)
    text.append("workload ", style="bold")
    text.append("-" if math.isnan(cpu) else f"{cpu:.0f}% CPU")
    if not math.isnan(rss):
        text.append(f", {rss / 2**20:.0f} MiB RSS")
    if not math.isnan(count):
        text.append(f", {count:.0f} proc")
    text.append("\nwatching ", style="bold")
    rec, watch = _recent_mean(model.recorder_cpu.values), _recent_mean(model.watcher_cpu.values)
    text.append("recorder " + ("-" if math.isnan(rec) else f"{rec:.1f}%"))
    text.append(" · dashboard " + ("-" if math.isnan(watch) else f"{watch:.1f}%"))
    text.append(" of one core (last 20 samples)", style="grey50")
    return text


@dataclass(frozen=True, eq=False)
class EpochRows:
    """The epochs a panel shows, and why a data wait is missing (``analysis.Unmeasured.text``);
    equal when their ``version`` is (the rows are not compared)."""

    rows: list[analysis.EpochRow] = field(default_factory=list)
    version: Hashable = None
    unmeasured: str | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EpochRows) and self.version == other.version

    @cached_property
    def look(self) -> EpochLook:
        return epoch_look(self.rows)

    __hash__ = None  # type: ignore[assignment]  # mutable inputs compared by value are not hashable


def epoch_rows(model: RunModel, shown: EpochRows | None = None) -> EpochRows:
    """The model's epochs for the epochs panel (SHOWN itself where nothing changed), versioned
    by the rows and by whether the run has ended (its end record says whether the zero-code
    instrumentation was active): why a data wait is missing is worked out once per change."""
    version = (model.epochs_version, model.run.finished)
    if shown is not None and shown.version == version:
        return shown
    found = analysis.data_wait_unmeasured(model.run, model.epoch_rows, model.phases)
    return EpochRows(_partial_marked(model), version, found.text if found else None)


def _partial_marked(model: RunModel) -> list[analysis.EpochRow]:
    """The model's rows, those the run ended inside marked partial once it has ended
    (``analysis.cut_by_end``); while it records, the epoch now is open but not cut short."""
    rows = model.epoch_rows
    if model.run.finished:
        return analysis.cut_by_end(model.run, rows)
    return [replace(row, partial=False) if row.partial else row for row in rows]


class TextPanel(KeptLines, KeptRows):
    """Text drawn as strips, each line built once and repainted only when it changes.

    A Static renders and repaints every line of its text on each update, which on a live run (a
    status line each second, the epochs panel at each epoch) costs more than all the charts'
    new columns. Here the text is wrapped as a Static wraps it (Textual's own ``Content``), each
    line keeps its strip until it changes, and an update repaints only the lines that did.
    """

    DEFAULT_CSS = "TextPanel { height: auto; }"

    text: reactive[Text] = reactive(Text, repaint=False, init=False)

    def __init__(self, text: Text | str = "", *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.set_reactive(TextPanel.text, Text(text) if isinstance(text, str) else text)
        self._lines: list[Content] = []
        self._strips: list[Strip] = []
        self._cache: dict[tuple[object, ...], Strip] = {}
        self._wraps: dict[tuple[object, ...], list[Content]] = {}   # by source line and width
        self._measured_wraps: dict[tuple[object, ...], list[Content]] = {}   # the same, of the text last measured only
        self._last_wrap: tuple[Text, tuple[int, int, int], list[Content]] | None = None   # text, (width, length, spans), lines
        self._segment_styles: dict[tuple[VisualStyle, VisualStyle, int], tuple[Style, bool]] = {}   # ``_left_aligned``'s
        self._lines_of: Text | None = None   # the text ``_lines`` were wrapped from

    def update(self, text: Text | str) -> None:
        self.text = Text(text) if isinstance(text, str) else text

    def watch_text(self) -> None:
        self._lay_out()

    def on_resize(self) -> None:
        self._lay_out()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._wraps.clear()
        self._measured_wraps.clear()
        self._segment_styles.clear()
        self._last_wrap = None
        self._lines, self._lines_of = [], None
        if self.is_mounted:
            self._lay_out()

    def _wrapped(self, width: int) -> list[Content]:
        return self._wrap(self.text, width)

    def _wrap(self, text: Text, width: int, keep: bool = True) -> list[Content]:
        # Wrapped line by line (what wrapping the whole text gives), each line's wrap kept while
        # it is shown: an update re-wraps only the lines that changed (the epochs panel gains a
        # row, or changes its newest, on a text of forty). The same text at the same width is
        # asked for again (the epochs panel measures what it sets, a layout its height): its
        # lines as given before, unless it grew since. Not KEEP: a text measured, not shown
        # (what the layout asks of the epochs panel), leaves the shown text's wraps kept.
        width = max(width, 1)
        last = self._last_wrap
        if last is not None and last[0] is text and last[1] == (width, len(text), len(text.spans)):
            return last[2]
        wrapped: list[Content] = []
        kept: dict[tuple[object, ...], list[Content]] = {}
        for line in text.split("\n", allow_blank=True) if "\n" in text.plain else [text]:
            key = (line.plain, tuple(line.spans), line.style, line.justify, line.overflow, line.no_wrap, width)
            found = kept.get(key) or self._wraps.get(key) or (None if keep else self._measured_wraps.get(key))
            if found is None:
                content = Content.from_rich_text(line, self.app.console)
                # A line that fits is its own wrap (Textual would look for breaks and find none).
                fits = content.cell_length <= width and "\t" not in content.plain
                found = [content] if fits else content.wrap(width)
            kept[key] = found
            wrapped += found
        if keep:
            self._wraps = kept
            self._last_wrap = (text, (width, len(text), len(text.spans)), wrapped)
        else:
            self._measured_wraps = kept
        return wrapped

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._wrapped(width))

    def rows_key(self) -> tuple[object, ...]:
        """What the rows the panel's text takes follow, read without wrapping it: its outer size
        and the number of lines it was last laid out in, or its text where that was not laid out
        (a panel hidden, or not yet drawn). A layout that measured the panel at a key need not
        measure it again while the key is equal."""
        text = self.text
        return (self.outer_size, len(self._lines) if self._lines_of is text else text)

    def _lay_out(self) -> None:
        width = self.size.width
        if width <= 0 or not self.is_mounted:
            return
        lines = self._wrapped(width)
        style = self.visual_style
        strips = []
        for line in lines:
            key = (line, width, style)
            strip = self._cache.get(key)
            if strip is None:
                strip = self._cache[key] = self._line_strip(line, width, style)
            strips.append(strip)
        if len(self._cache) > 4 * len(lines) + 64:  # epochs scroll through: keep only what is shown
            self._cache = {(line, width, style): strip for line, strip in zip(lines, strips)}
        before, self._lines, self._strips = self._lines, lines, strips
        self._lines_of = self.text
        if len(before) != len(lines):
            self.refresh(layout=self.styles.height is None or self.styles.height.is_auto)
            return
        # A changed line is repainted across the panel's outer width, padding and border included:
        # the compositor writes a line from the panel's first column whatever the region, and a
        # region inside the padding made it crop the line first.
        left, outer = self.content_offset.x, self.outer_size.width
        changed = [Region(-left, y, outer, 1) for y, (a, b) in enumerate(zip(before, lines)) if not a.is_same(b)]
        if changed:
            self.refresh(*changed)

    def _line_strip(self, line: Content, width: int, style: VisualStyle) -> Strip:
        """A wrapped line drawn as Textual's ``Visual.to_strips`` draws it. Asked for one line,
        that wraps it again and works out the panel's selection, link style and alignment each
        time (four times what drawing the line costs); where the panel has none of them (left
        aligned, no line padding, nothing selected, no clickable text), the line is drawn as the
        step it ends in draws it (``_left_aligned``; a test compares the two)."""
        styles = self.styles
        if self.text_selection is None \
                and styles.get_rule("text_align", "left") in ("left", "start") \
                and not styles.get_rule("line_pad", 0) and styles.content_align == ("left", "top"):
            drawn = self._left_aligned(line, style)
            if drawn is not None:
                return Strip(drawn, line.cell_length)
        return Visual.to_strips(self, line, width, 1, style)[0]

    def _left_aligned(self, line: Content, style: VisualStyle) -> list[Segment] | None:
        """The segments ``_FormattedLine.to_strip`` makes of a left-aligned line (each piece in
        the panel's style under its own, with its offset for the mouse); None where a piece is
        clickable. Each piece's style is worked out once for its style and column and kept: a
        status line drawn again each second has the same pieces where they were."""
        kept = self._segment_styles
        if len(kept) > SEGMENT_STYLES_KEPT:
            kept.clear()
        segments = []
        x = 0
        for text, text_style in line.render(style, end="", parse_style=self._get_style):
            key = (style, text_style, x)
            found = kept.get(key)
            if found is None:
                rich = (style + text_style).rich_style_with_offset(x, 0)
                found = kept[key] = (rich, rich._meta is not None and "@click" in rich.meta)
            if found[1]:
                return None
            segments.append(Segment(text, found[0]))
            x += len(text)
        return segments

    def render(self) -> Text:
        """The text (drawing goes through ``render_line``)."""
        return self.text

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)


class LinesPanel(TextPanel):
    """A ``TextPanel`` whose lines wrap at words onto at most ``MAX_ROWS`` rows each: the verdict
    and a line per advice cost a bounded number of the charts' rows at any width (a verdict and
    its advice wrapped whole once took half a 100-column screen). A line longer still ends its
    last row after a whole word with " …": a figure is shown whole or not at all, never cut."""

    MAX_ROWS = 3

    def _wrapped(self, width: int) -> list[Content]:
        # The same text at the same width is asked for again (its layout, the screen's fit
        # each second): wrapped once.
        width = max(width, 1)
        last = self._last_wrap
        if last is not None and last[0] is self.text and last[1] == (width, len(self.text), len(self.text.spans)):
            return last[2]
        out = self._wrap_rows(width)
        self._last_wrap = (self.text, (width, len(self.text), len(self.text.spans)), out)
        return out

    def _wrap_rows(self, width: int) -> list[Content]:
        content = Content.from_rich_text(self.text, self.app.console)
        out: list[Content] = []
        for line in content.split("\n", allow_blank=True):
            rows = line.wrap(width)
            if len(rows) > self.MAX_ROWS:
                last = rows[self.MAX_ROWS - 1]
                plain = last.plain
                # The last whole word that leaves room for " …": the space says no word was cut.
                cut = plain.rstrip().rfind(" ", 0, max(width - 2, 1))
                rows = [*rows[:self.MAX_ROWS - 1], last[:cut if cut > 0 else width - 2] + " …"]
            out.extend(rows)
        return out


NATURAL_WIDTH = 10_000   # wider than any table: a table measured at it is measured as it wants


class FittedTable:
    """A table drawn at the width it is given: whole where it fits, else as ``render.fit`` lays
    it out for the text (the columns that do not fit go on in a further table, the first
    column repeated), so no figure or name is cut to "+0.6…" or "num_work…" (rich squeezes a
    table too wide for its width into ellipses); its caption after. The cells keep their text,
    not their colours, once split."""

    def __init__(self, table: Table):
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.table
        # Measured unbounded: a measurement at the width is clamped to it.
        if Measurement.get(console, options.update_width(NATURAL_WIDTH), table).maximum <= options.max_width:
            yield table
            return
        columns = [Column(Text(str(c.header)).plain, [Text(str(cell)).plain for cell in c.cells], c.justify)
                   for c in table.columns]
        for part in fit(Text(str(table.title or "")).plain, columns[:1], columns[1:], options.max_width):
            part.caption = None
            if not table.title:   # an untitled table's parts go untitled (no bare ", continued")
                part.title = None
            yield inert_table(part)
        if table.caption:
            yield table.caption


class RenderedTable(KeptLines):
    """A Rich table drawn as strips, rendered once per width.

    A Static measures a table's height by rendering it whole, and does so again for each
    layout pass: a comparison of two day-long runs (hundreds of epoch rows) spent seconds there.
    Here the rendering at a width is kept until the width or the table changes.
    """

    DEFAULT_CSS = "RenderedTable { height: auto; }"

    def __init__(self, table: RenderableType, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self._table = table
        self._by_width: dict[int, list[Strip]] = {}  # a layout asks at a few widths (scrollbar or not)

    def update(self, table: RenderableType) -> None:
        self._table, self._by_width = table, {}
        self.refresh(layout=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._by_width = {}

    def _lay_out(self, width: int) -> list[Strip]:
        strips = self._by_width.get(width)
        if strips is None:
            options = self.app.console_options.update_width(max(width, 1)).update(highlight=False)
            lines = self.app.console.render_lines(self._table, options, pad=False)
            style = self.rich_style  # the panel's colours under the table's own, as a Static draws it
            strips = self._by_width[width] = [Strip(line).apply_style(style) for line in lines]
            if len(self._by_width) > 4:
                del self._by_width[next(iter(self._by_width))]
        return strips

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lay_out(width))

    def render_line(self, y: int) -> Strip:
        strips = self._lay_out(self.size.width)
        if y < len(strips):
            return strips[y].extend_cell_length(self.size.width, self.rich_style)
        return Strip.blank(self.size.width, self.rich_style)


class EpochBars(TextPanel):
    """The epochs panel: ``epoch_bars`` of its rows at its own size."""

    epochs: reactive[EpochRows] = reactive(EpochRows, repaint=False, init=False)

    def watch_epochs(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()
        self._lay_out()  # a new width with the same text

    _fitted: tuple[tuple[int, int], int] | None = None   # the size, and the lines given the rows that fitted it

    def _fit(self) -> None:
        width, height = self.size
        if height <= 0:
            return
        epochs, most = self.epochs, max(1, height - 1)
        # ``epoch_bars`` is given the lines its rows (and its legend's wrapped lines) may take.
        # A row whose figures are wider than the panel wraps onto two lines or more: fewer lines
        # given then, as the panel wraps them, so that the newest rows stay in sight below the
        # legend. From what fitted last at this size: an update adds a row or changes the newest.
        fitted = self._fitted
        given = fitted[1] if fitted is not None and fitted[0] == (width, height) else most

        def bars(lines_given: int) -> tuple[Text, int]:
            text = epoch_bars(epochs.rows, max(30, width), lines_given, epochs.unmeasured, epochs.look)
            return text, self._shown_lines(text, width)

        def per_row(lines: int) -> int:   # lines a row takes, the legend's shared out among them
            return max(1, -(-(lines - 1) // max(1, min(given, len(epochs.rows)))))

        text, lines = bars(given)
        while given > 1 and lines > height:
            given = max(1, min(given - 1, given - -(-(lines - height) // per_row(lines))))
            text, lines = bars(given)
        # Room for another row as wide as those shown (what fitted before was wider)?
        while given < most and height - lines >= per_row(lines):
            wider, wider_lines = bars(given + 1)
            if wider_lines > height or wider.plain == text.plain:   # too tall, or every row shown
                break
            given, text, lines = given + 1, wider, wider_lines
        self._fitted = ((width, height), given)
        self.text = text

    def _shown_lines(self, text: Text, width: int, keep: bool = True) -> int:
        """The lines ``text`` takes in the panel at ``width``, the blank ones after it left out
        (not KEEP: a text measured only, whose wraps are not kept)."""
        lines = self._wrap(text, width, keep)
        count = len(lines)
        while count and not lines[count - 1].plain.strip():
            count -= 1
        return count
