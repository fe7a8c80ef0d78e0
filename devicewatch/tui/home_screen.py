"""The home screen: pick a workload, set its options, run it; or replay a recent recording;
or follow or stop a run still recording on this machine (from any terminal or dashboard).

The options form is built from the workload's own argparse parser, so a new option appears
here without any change to the dashboard, and the arguments are checked by that same parser
before anything is launched. What the user asks for leaves as a message (``RunRequested``,
``ReplayRequested``, ``CompareRequested``) that the app acts on; the screen knows nothing of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from .. import active_runs, registry
from .kept_lines import KeptFooter


class OptionError(Exception):
    pass


def form_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's options that a form can show (everything but --help)."""
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _flag(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))


def arguments_from(parser: argparse.ArgumentParser, values: dict[str, Any]) -> list[str]:
    """Command-line arguments for the values that differ from the parser's defaults, checked by it.

    ``values`` maps each action's ``dest`` to a string (text fields and choices) or a bool (flags).
    """
    args: list[str] = []
    for action in form_actions(parser):
        value = values.get(action.dest)
        if not action.option_strings:
            if value not in (None, ""):
                args.append(str(value))
            continue
        option = max(action.option_strings, key=len)
        if _flag(action):
            if bool(value) != bool(action.default):
                args.append(option)
        elif value not in (None, "") and str(value) != str(action.default):
            args += [option, str(value)]

    def refuse(message: str) -> NoReturn:
        raise OptionError(message)

    parser.error = refuse  # type: ignore[method-assign]  # argparse's own way to fail is replaced, not extended
    try:
        parser.parse_args(args)
    except SystemExit:
        raise OptionError("invalid options") from None
    return args


def example_recordings(folders: list[Path] | None = None) -> list[Path]:
    """Recordings shipped under ``recordings/`` (reference runs, GPU ones too), which replay on
    any machine: the one in the current folder and the one beside the package's source."""
    if folders is None:
        folders = [Path("recordings"), Path(__file__).resolve().parents[2] / "recordings"]
    found: dict[Path, Path] = {}
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.glob("*.jsonl")):
                if path.is_file():
                    found.setdefault(path.resolve(), path)
    return list(found.values())


class HomeScreen(Screen[None]):
    class RunRequested(Message):
        """Run this workload (checked by its parser) live."""

        def __init__(self, target: registry.Target) -> None:
            super().__init__()
            self.target = target

    class ReplayRequested(Message):
        """Replay this recording."""

        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class CompareRequested(Message):
        """Compare recording A with recording B."""

        def __init__(self, path_a: Path, path_b: Path) -> None:
            super().__init__()
            self.path_a, self.path_b = path_a, path_b

    BINDINGS = [
        # Quit first: the footer shows a screen's keys before the app's, and cuts what does not
        # fit, so the way out stays on screen at 80 columns.
        Binding("q", "app.quit", "Quit"),
        Binding("r", "run", "Run workload"),
        Binding("R", "replay", "Replay recording", key_display="shift+r"),
        Binding("f5", "rescan", "Rescan runs"),
        Binding("x", "mark", "Mark for comparison"),
        Binding("c", "compare", "Compare marked"),
        Binding("f", "follow", "Follow run"),
        Binding("s", "stop_run", "Stop run"),
    ]
    ACTIVE_SCAN_SECONDS = 2.0  # how often the runs recording now are looked for (a folder listing)

    def __init__(self, runs_dir: str):
        super().__init__()
        self.runs_dir = runs_dir
        self.names = registry.available()
        self.current: registry.WorkloadInfo | None = None
        self.recent: list[Path] = []
        self.examples: list[Path] = []
        self.marked: list[Path] = []  # at most two recordings: A, then B
        self.active: list[active_runs.ActiveRun] = []  # runs recording now, oldest first

    def compose(self) -> ComposeResult:
        yield Static("devicewatch: watch a workload's cores, GPUs and phases on one time axis", id="home-title")
        with Horizontal(id="home"):
            with Vertical(id="workloads-panel", classes="panel"):
                yield OptionList(*[Option(self._describe(n), id=n) for n in self.names], id="workloads")
            with Vertical(id="form-panel", classes="panel"):
                yield Static(id="workload-title")
                yield VerticalScroll(id="form")
                yield Button("Run ▶", id="run", variant="success")
            with Vertical(id="side"):
                with Vertical(id="active-panel", classes="panel"):
                    yield OptionList(id="active")
                with Vertical(id="recent-panel", classes="panel"):
                    yield OptionList(id="recent")
                    yield Button("Replay", id="replay", variant="primary")
        yield KeptFooter()

    def _describe(self, name: str) -> str:
        try:
            info = registry.get(name)
        except Exception as exc:  # a broken workload module must not take the home screen down
            return f"{name}: cannot be loaded ({exc})"
        return f"[b]{name}[/b]\n{info.title}" + (f"\n[dim]recreates {info.source}[/]" if info.source else "")

    async def on_mount(self) -> None:
        self.query_one("#workloads-panel").border_title = "workloads"
        self.query_one("#form-panel").border_title = "options"
        self.query_one("#recent-panel").border_title = f"recordings in {self.runs_dir}, then examples"
        active = self.query_one("#active-panel")
        active.border_title, active.border_subtitle = "recording now", "f follows · s stops"
        self.action_rescan()
        self.set_interval(self.ACTIVE_SCAN_SECONDS, self.scan_active)
        if self.names:
            self.query_one("#workloads", OptionList).highlighted = 0
            await self.show_form(self.names[0])

    def on_screen_resume(self) -> None:
        self.action_rescan()

    async def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "workloads" and event.option.id:
            await self.show_form(event.option.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "recent":
            self.action_replay()
        elif event.option_list.id == "active":
            self.action_follow()
        elif event.option_list.id == "workloads":
            options = self.query(".option")
            if options:
                options.first().focus()

    async def show_form(self, name: str) -> None:
        if self.current is not None and self.current.name == name:
            return
        try:
            info = registry.get(name)
        except Exception as exc:
            self.query_one("#workload-title", Static).update(f"{name}: cannot be loaded ({exc})")
            return
        self.current = info
        self.query_one("#workload-title", Static).update(
            f"[b]{info.name}[/b]: {info.title}" + (f"\n[dim]recreates {info.source}[/]" if info.source else ""))
        form = self.query_one("#form", VerticalScroll)
        await form.remove_children()
        widgets: list[Widget] = []
        for action in form_actions(info.parser):
            name_ = max(action.option_strings, key=len) if action.option_strings else action.dest
            help_text = (action.help or "").replace("%(default)s", str(action.default))
            if _flag(action):
                widgets.append(Checkbox(f"{name_}  {help_text}", value=bool(action.default),
                                        id=f"opt-{action.dest}", classes="option"))
                continue
            widgets.append(Label(f"{name_}  [dim]{help_text}[/]", classes="option-label"))
            if action.choices:
                choices = [(str(c), str(c)) for c in action.choices]
                widgets.append(Select(choices, value=str(action.default) if action.default is not None
                                      else Select.BLANK, id=f"opt-{action.dest}", classes="option"))
            else:
                widgets.append(Input(value="" if action.default is None else str(action.default),
                                     placeholder=str(action.metavar or action.dest),
                                     id=f"opt-{action.dest}", classes="option"))
        await form.mount(*widgets)

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for widget in self.query(".option"):
            dest = (widget.id or "")[4:]
            if isinstance(widget, Checkbox):
                out[dest] = widget.value
            elif isinstance(widget, Select):
                out[dest] = None if widget.value is Select.BLANK else widget.value
            elif isinstance(widget, Input):
                out[dest] = widget.value.strip()
        return out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run":
            self.action_run()
        elif event.button.id == "replay":
            self.action_replay()

    def action_run(self) -> None:
        if self.current is None:
            self.notify("no workload chosen", severity="warning")
            return
        try:
            args = arguments_from(self.current.parser, self.values())
        except OptionError as exc:
            self.notify(f"{self.current.name}: {exc}", severity="error")
            return
        self.post_message(self.RunRequested(registry.Target(self.current.name, args, self.current.command(args))))

    def action_replay(self) -> None:
        recent = self.query_one("#recent", OptionList)
        if recent.highlighted is None or recent.highlighted >= len(self.recent):
            self.notify("no recording chosen", severity="warning")
            return
        self.post_message(self.ReplayRequested(self.recent[recent.highlighted]))

    def _recent_prompt(self, path: Path) -> str:
        mark = f"[b reverse] {'AB'[self.marked.index(path)]} [/] " if path in self.marked else ""
        example = "[b]example[/] " if path in self.examples else ""
        try:
            size = f"{path.stat().st_size / 1024:.0f} KiB"
        except OSError:
            size = "gone"
        return f"{mark}{example}{escape(path.name)}  [dim]{size}[/]"

    def action_mark(self) -> None:
        """Mark the chosen recording as A (first mark) or B (second); marking it again unmarks it."""
        recent = self.query_one("#recent", OptionList)
        index = recent.highlighted
        if index is None or index >= len(self.recent):
            self.notify("no recording chosen", severity="warning")
            return
        path = self.recent[index]
        if path in self.marked:
            self.marked.remove(path)
        else:
            self.marked = (self.marked + [path])[-2:]
        for i, p in enumerate(self.recent):
            recent.replace_option_prompt_at_index(i, self._recent_prompt(p))
        if len(self.marked) == 2:
            self.notify(f"A: {self.marked[0].name}, B: {self.marked[1].name}; c compares them")

    def action_compare(self) -> None:
        """Compare the two marked recordings, or the one marked (A) with the chosen one (B)."""
        pair = list(self.marked)
        recent = self.query_one("#recent", OptionList)
        if len(pair) == 1 and recent.highlighted is not None and recent.highlighted < len(self.recent):
            if self.recent[recent.highlighted] != pair[0]:
                pair.append(self.recent[recent.highlighted])
        if len(pair) != 2:
            self.notify("mark two recordings with x (A, then B), then press c", severity="warning")
            return
        self.post_message(self.CompareRequested(*pair))

    def _chosen_active(self) -> active_runs.ActiveRun | None:
        index = self.query_one("#active", OptionList).highlighted
        if index is None or index >= len(self.active):
            self.notify("no run recording now is chosen", severity="warning")
            return None
        return self.active[index]

    def action_follow(self) -> None:
        """Follow the chosen run as it records (its file replayed as it grows)."""
        run = self._chosen_active()
        if run is not None:
            self.post_message(self.ReplayRequested(Path(run.path)))

    def action_stop_run(self) -> None:
        """Stop the chosen run: its recorder cancels the workload and finishes the file."""
        run = self._chosen_active()
        if run is None:
            return
        if active_runs.stop(run):
            self.notify(f"stopping {run.title} (recorder {run.pid}); its file is finished as it ends")
        else:
            self.notify(f"{run.title} had already ended", severity="warning")
        self.scan_active()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("follow", "stop_run"):
            return bool(self.active)  # the keys are shown only while something records
        return super().check_action(action, parameters)

    def _active_prompt(self, run: active_runs.ActiveRun) -> str:
        watcher = "watched" if run.watched else "[b]unwatched[/]"
        return (f"{escape(run.title)}  [dim]{active_runs.age_text(run.age)}, {watcher}, pid {run.pid}[/]\n"
                f"[dim]{escape(run.path)}[/]")

    def scan_active(self) -> None:
        """List the runs recording now; the panel shows only while there is one."""
        if self.app.screen is not self:
            return  # covered by a run or a comparison: looked at again when it is shown
        found = active_runs.active_runs()
        panel = self.query_one("#active-panel")
        panel.display = bool(found)
        listing = self.query_one("#active", OptionList)
        chosen = listing.highlighted
        previous = [r.pid for r in self.active]
        self.active = found
        if [r.pid for r in found] != previous:
            self.refresh_bindings()
            listing.clear_options()
            listing.add_options([Option(self._active_prompt(r)) for r in found])
            if found:
                listing.highlighted = min(chosen or 0, len(found) - 1)
        else:  # the same runs: only their ages move
            for i, r in enumerate(found):
                listing.replace_option_prompt_at_index(i, self._active_prompt(r))

    def action_rescan(self) -> None:
        from ..live.source import recent_runs

        self.scan_active()
        self.examples = example_recordings()
        self.recent = recent_runs(self.runs_dir) + self.examples
        self.marked = [p for p in self.marked if p in self.recent]
        recent = self.query_one("#recent", OptionList)
        recent.clear_options()
        if self.recent:
            recent.add_options([Option(self._recent_prompt(p)) for p in self.recent])
            recent.highlighted = 0
        else:
            recent.add_option(Option("no recordings yet: every run started here is recorded", disabled=True))
