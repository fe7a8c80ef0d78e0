"""The job screen: every node of a multi-node job on one screen while it trains.

Drawn from a ``live.job.JobModel`` (a job's folder, or its nodes' files, followed): one row per
node with its machine (a cell per core, a cell per GPU, shaded by their latest reading), its
ranks and how it is (running, ended, joined late, silent since when); one lane per rank with
its phases on the job's one time axis; and each finished epoch's straggler with the phase it
lost its time in. Enter opens the chosen node's own run in the run screen.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from ..analysis.stragglers import tally
from ..live.job import JobModel, NodeFeed
from ..phase_kinds import KINDS, kind_of
from ..render.palette import NORMAL, PRINT
from ..safe_text import inert
from . import layout
from .kept_lines import KeptFooter

TICK = 1.0                      # seconds between polls of the nodes' files: a job's view needs no more
WINDOWS = (None, 600.0, 60.0, 10.0)   # the lanes' time window: the whole job, then the last N s
PHASE_GLYPH = {"train": "█", "validate": "▓", "data": "░", "copy": "▒", "other": "▪"}
LABEL = 18                      # columns of a lane's label
SLOTS = 2048                    # a lane's time slots, whatever the width: each cell shows the phase holding most of its slots


def clock(unix: float) -> str:
    return datetime.fromtimestamp(unix).strftime("%H:%M:%S")


def span(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{s:02d}s"


def _runs(text: Text, glyphs: list[str], styles: list[str]) -> None:
    """Append cells, each run of equal cells as one segment: a lane of 180 cells is a few
    segments, not 180, and a job of 128 lanes redraws in a few milliseconds."""
    start = 0
    for i in range(1, len(glyphs) + 1):
        if i == len(glyphs) or glyphs[i] != glyphs[start] or styles[i] != styles[start]:
            text.append(glyphs[start] * (i - start), style=styles[start] or None)
            start = i


def cells(values: np.ndarray, width: int) -> Text:
    """One cell per value (a core, a GPU), shaded by it; folded (the busiest of each group) to WIDTH."""
    text = Text()
    if not len(values) or width <= 0:
        return text
    if len(values) > width:
        groups = np.array_split(np.nan_to_num(values, nan=-1.0), width)
        values = np.array([g.max() for g in groups])
    shade = np.where(np.isfinite(values) & (values >= 0),
                     np.clip(np.nan_to_num(values, nan=0.0) // 10, 0, len(NORMAL.heat) - 1), -1).astype(int)
    _runs(text, ["█" if s >= 0 else "·" for s in shade.tolist()],
          [NORMAL.heat[s] if s >= 0 else NORMAL.axis for s in shade.tolist()])
    return text


def majority(grid: np.ndarray, columns: int, kinds: int) -> np.ndarray:
    """Each of COLUMNS cells: the kind (0…KINDS-1) that holds the most of its slots of GRID
    (-1 where none does). The grid is the lane at a fixed number of slots whatever the width,
    so every size of the screen shows, for each stretch of time, the phase that held most of
    it: a short wait does not paint a whole cell of a narrow terminal."""
    edges = (np.arange(columns) * len(grid)) // columns
    counts = np.stack([np.add.reduceat((grid == k).astype(np.int64), edges) for k in range(kinds)])
    return np.where(counts.max(axis=0) > 0, counts.argmax(axis=0), -1)


def node_state(node: NodeFeed, origin: float | None, now: float) -> Text:
    if node.error:
        return Text(inert(node.error), style="bold red")
    if node.silent(now) and node.grown_at is not None:
        return Text(f"silent since {clock(node.grown_at)}", style="bold red")
    parts = Text()
    if node.finished:
        status = node.status or "?"
        parts.append(f"ended {status}", style="green" if status == "ok" else "yellow")
    elif node.run is None:
        parts.append("waiting for its recorder", style=NORMAL.axis)
    else:
        parts.append("running", style="green")
    start = node.start_unix
    if origin is not None and start is not None and start - origin >= 1.0:
        parts.append(f" · joined {clock(start)} (+{span(start - origin)})", style="cyan")
    return parts


class JobScreen(Screen[None]):
    """A job's nodes live; ``enter`` opens one node (the app acts on ``NodeWanted``)."""

    DEFAULT_CSS = """
    JobScreen #job-title { height: 1; background: $boost; text-style: bold; padding: 0 1; }
    JobScreen #job-nodes-box { height: auto; max-height: 45%; }
    JobScreen VerticalScroll { scrollbar-gutter: stable; overflow-x: hidden; scrollbar-size-horizontal: 0; }
    JobScreen #job-nodes { height: auto; padding: 0 1; }
    JobScreen #job-epochs { height: auto; max-height: 9; padding: 0 1; border-top: dashed $primary 40%; }
    JobScreen #job-lanes-box { height: 1fr; border-top: dashed $primary 40%; }
    JobScreen #job-lanes { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("q", "app.quit", "Quit"),
        Binding("down,j", "cursor(1)", "Next node"),
        Binding("up,k", "cursor(-1)", "Previous node"),
        Binding("enter", "open_node", "Open node"),
        Binding("w", "window", "Window"),
    ]

    class NodeWanted(Message):
        """The user asked for one node's own run (its file)."""

        def __init__(self, path: Path):
            super().__init__()
            self.path = path

    def __init__(self, model: JobModel, tick: float = TICK):
        super().__init__()
        self.model = model
        self.tick_seconds = tick
        self.cursor = 0
        self.window_index = 0
        self._drawn: tuple[object, ...] | None = None
        self._laid_out: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="job-title")
        with VerticalScroll(id="job-nodes-box"):
            yield Static(id="job-nodes")
        yield Static(id="job-epochs")
        with VerticalScroll(id="job-lanes-box"):
            yield Static(id="job-lanes")
        yield KeptFooter()

    def on_mount(self) -> None:
        self.draw()
        self.set_interval(self.tick_seconds, self.tick)

    def on_resize(self) -> None:
        self._drawn = None
        self.draw()

    def tick(self) -> None:
        self.model.poll()
        self.draw()

    # -- keys -------------------------------------------------------------------------------

    def action_cursor(self, step: int) -> None:
        nodes = len(self.model.nodes)
        if nodes:
            self.cursor = (self.cursor + step) % nodes
            self._drawn = None
            self.draw()
            box = self.query_one("#job-nodes-box", VerticalScroll)
            seen = box.scrollable_content_region.height
            if seen and not box.scroll_y <= self.cursor < box.scroll_y + seen:   # keep the chosen node in sight
                box.scroll_to(y=max(0, self.cursor - seen + 1) if self.cursor >= box.scroll_y else self.cursor,
                              animate=False)

    def action_open_node(self) -> None:
        nodes = self.model.ordered()
        if nodes:
            self.post_message(self.NodeWanted(nodes[min(self.cursor, len(nodes) - 1)].path))

    def action_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(WINDOWS)
        self._drawn = None
        self.draw()

    # -- drawing ----------------------------------------------------------------------------

    def draw(self) -> None:
        """Redraw when the files gained records, a node's state moved (silent, ended), or the
        terminal, the chosen node or the window changed; a quiet job costs nothing to watch."""
        now = time.time()
        model = self.model
        nodes = model.ordered()
        states = tuple((n.silent(now), n.finished, n.error) for n in nodes)
        key = (model.version, states, self.size, self.cursor, self.window_index)
        if key == self._drawn:
            return
        self._drawn = key
        width = max(20, self.size.width - 2)
        # the scrolling panels' own width: the screen's less their scrollbar's gutter and padding
        inner = self.query_one("#job-lanes-box", VerticalScroll).scrollable_content_region.width - 2
        boxed = max(20, inner if inner > 0 else width - 2)
        title = self.title_text(nodes)
        title.truncate(width)
        self.query_one("#job-title", Static).update(title)
        self.query_one("#job-nodes", Static).update(self.nodes_text(nodes, boxed, now))
        epochs = self.epochs_text(width)
        self.query_one("#job-epochs", Static).update(epochs)
        self.query_one("#job-lanes", Static).update(self.lanes_text(boxed))
        shape = (self.size, len(nodes), epochs.plain.count("\n"))   # what the layout depends on
        if shape != self._laid_out:
            self._laid_out = shape
            self._fit_layout(len(nodes), epochs.plain.count("\n") + 1)

    def _fit_layout(self, nodes: int, epoch_lines: int) -> None:
        """Show what the terminal holds (``layout.JOB``): the stragglers' lines, then the rank
        lanes, give way on a short terminal before the nodes' rows."""
        measured: dict[str, int | tuple[int | None, int | None]] = {
            "job-nodes-box": min(nodes, max(1, int(self.size.height * 0.45))), "job-epochs": 1 + min(epoch_lines, 8)}
        hidden = layout.fit(layout.JOB, self.size.width, self.size.height, measured=measured)
        layout.apply(self, layout.JOB, hidden, measured)

    def title_text(self, nodes: list[NodeFeed]) -> Text:
        model = self.model
        ranks = len(model.ranks())
        world = model.world_size
        origin = model.origin
        text = Text(f"job {model.job or '(no id in its headers)'}", style="bold")
        text.append(f" · {inert(model.source_name)} · {len(nodes)} node{'s' * (len(nodes) != 1)} · "
                    f"{ranks}{f'/{world}' if world else ''} ranks")
        if origin is not None:
            text.append(f" · {clock(origin)} +{span(model.now_unix() - origin)}")
        text.append(f" · {model.alignment_text()}")
        if model.left_out:
            text.append(f" · {len(model.left_out)} other file(s) left out", style="yellow")
        return text

    def nodes_text(self, nodes: list[NodeFeed], width: int, now: float) -> Text:
        text = Text()
        if not nodes:
            return Text("no node has written its file yet", style=NORMAL.axis)
        origin = self.model.origin
        host_width = min(16, max(len(n.hostname) for n in nodes))
        label_width = min(16, max(len(n.label) for n in nodes))
        fixed = 2 + label_width + 1 + host_width + 1 + 12 + 1 + 10 + 1
        state_width = 34
        room = max(8, width - fixed - state_width)
        gpu_room = min(16, max((n.gpus for n in nodes), default=0))
        core_room = max(4, room - gpu_room - 8)
        for i, node in enumerate(nodes):
            mark = "▸ " if i == self.cursor else "  "
            text.append(mark, style="bold")
            text.append(f"{inert(node.label)[:label_width]:<{label_width}} ", style="bold" if i == self.cursor else "")
            text.append(f"{inert(node.hostname)[:host_width]:<{host_width}} ", style=NORMAL.axis)
            cpu = float(np.nanmean(node.cpu)) if len(node.cpu) and not np.isnan(node.cpu).all() else None
            text.append(f"{node.cores:>3}c {'—' if cpu is None else f'{cpu:3.0f}%':>4}  ")
            text.append_text(cells(node.cpu, min(core_room, max(node.cores, len(node.cpu)))))
            if node.gpus:
                text.append("  GPU ")
                text.append_text(cells(node.gpu, gpu_room))
            ranks = ",".join(map(str, sorted(node.ranks)))
            text.append(f"  rank {ranks or '—'}  ")
            text.append_text(node_state(node, origin, now))
            text.append("\n")
        text.rstrip()
        return text

    def epochs_text(self, width: int) -> Text:
        """A line for the whole job (which rank was the straggler how often, and where it lost
        the time), then the latest epochs, one line each: the figures ``report`` prints, by its
        rule (``analysis.stragglers``)."""
        rows = sorted(self.model.stragglers.values(), key=lambda row: row.epoch)
        if not rows:
            return Text("stragglers: each epoch's slowest rank, once every rank has left the epoch", style=NORMAL.axis)
        head = Text("stragglers: ", style="bold")
        head.append(tally(rows), style="bold yellow" if any(r.finding for r in rows) else "")
        head.truncate(width - 2)
        text = Text()
        text.append_text(head)
        for row in rows[-6:]:
            line = Text(f"\nepoch {row.epoch:>3}  ")
            if not row.finding:
                line.append(f"no straggler: within {row.max_wait:.2f} s (noise floor {row.noise_floor:.2f} s)",
                            style=NORMAL.axis)
            else:
                line.append(f"rank {row.last_rank} ({self.model.node_of(row.last_rank)}) last", style="yellow")
                line.append(f" by {row.max_wait:.2f} s")
                if row.lost_in is not None:
                    line.append(f" · {row.lost_in} +{row.phase_excess:.2f} s on the other ranks' median")
                else:
                    line.append(" · no phase of it longer than the others'")
            line.truncate(width - 1)   # its newline, then what the panel's padding leaves
            text.append_text(line)
        return text

    def lanes_text(self, width: int) -> Text:
        model = self.model
        ranks = model.ranks()
        origin = model.origin
        if origin is None or not ranks:
            return Text("rank lanes: when the ranks say their phases (devicewatch.events, or zero code)",
                        style=NORMAL.axis)
        end = model.now_unix()
        window = WINDOWS[self.window_index]
        start = origin if window is None else max(origin, end - window)
        columns = max(10, width - LABEL - 1)
        slots = max(SLOTS, columns)
        per_slot = max((end - start) / slots, 1e-9)
        text = Text()
        axis = Text(" " * LABEL + "│")
        axis.append(f"{clock(start)} (+{span(start - origin)})", style=NORMAL.axis)
        label = f"{clock(end)} (+{span(end - origin)}) · w: window"
        axis.append(" " * max(1, columns - len(axis.plain) + LABEL + 1 - len(label)) + label, style=NORMAL.axis)
        text.append_text(axis)
        text.append("\n")
        kinds = {kind: i for i, kind in enumerate(KINDS)}
        for rank in ranks:
            grid = np.full(slots, -1)
            node = rank.node
            for phase in rank.phases:   # in begin order: a phase nested in another paints over it
                begin = node.unix(phase.begin)
                # an open phase lasts to its node's latest reading (a silent node's stops there)
                finish = node.unix(phase.end if phase.end is not None else node.last_seen)
                if finish < start:
                    continue
                a = round((begin - start) / per_slot)   # to the nearest slot: a short phase gains none
                b = max(a + 1, round((finish - start) / per_slot))
                grid[max(0, a):max(0, min(slots, b))] = kinds[kind_of(phase.name)]
            lane = majority(grid, columns, len(KINDS))
            silent = node.silent(time.time())
            name = f"rank {rank.rank} {node.label}"
            text.append(f"{name[:LABEL]:<{LABEL}}│", style="bold red" if silent else "")
            values = lane.tolist()
            _runs(text, [PHASE_GLYPH[KINDS[v]] if v >= 0 else " " for v in values],
                  [PRINT.phase[KINDS[v]] if v >= 0 else "" for v in values])
            text.append("\n")
        legend = Text(" " * LABEL + " ")
        for kind in KINDS:
            legend.append(PHASE_GLYPH[kind], style=PRINT.phase[kind])
            legend.append(f" {kind}  ", style=NORMAL.axis)
        text.append_text(legend)
        return text
