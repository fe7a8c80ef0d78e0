"""The dashboard application and ``launch``, the one entry point the command line calls.

Everything the app needs comes in through its constructor (the invocation and where the run
comes from), so tests and the screenshot script build it the same way the command line does.
Bad input (a missing or foreign replay file, an unusable runs folder) is refused in ``launch``,
before the terminal is taken over, with a one-line error.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from ..runfile import Run, RunFileError
from ..safe_text import markup
from .compare import CompareScreen, open_compare, previous_run
from .dialogs import QuitDuringRun
from .home_screen import HomeScreen
from .run_screen import TICK, RunScreen
from .source import LiveSource, ReplaySource, Source, open_replay


class DashboardApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "devicewatch"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys", key_display="?"),
        Binding("p", "presenter", "Presenter"),
        Binding("c", "compare_previous", "Compare with previous run"),
    ]

    def __init__(self, inv: Any, start: Source | None = None, tick: float = TICK,
                 compare: tuple[Run, Run] | None = None):
        super().__init__()
        self.inv = inv
        self.start_source = start
        self.start_compare = compare
        self.tick = tick
        self.presenter = bool(getattr(inv, "presenter", False))

    def on_mount(self) -> None:
        self.set_class(self.presenter, "-presenter")
        if self.start_compare is not None:  # devicewatch compare A B: the comparison alone
            self.push_screen(CompareScreen(*self.start_compare))
            return
        self.push_screen(HomeScreen(self.inv.runs_dir))
        if self.start_source is not None:
            self.push_screen(RunScreen(self.start_source, self.tick))

    # -- starting runs -----------------------------------------------------------------------

    def start_live(self, workload: str | None, args: list[str], command: list[str]) -> None:
        try:
            source = LiveSource(self.inv.runs_dir, workload, args, command, self.inv.interval, self.inv.gpu)
        except OSError as exc:
            self.notify(f"cannot create {self.inv.runs_dir}: {exc.strerror}", severity="error")
            return
        self.push_screen(RunScreen(source, self.tick))

    def start_replay(self, path: str) -> None:
        try:
            source = open_replay(path)
        except RunFileError as exc:
            self.notify(str(exc), severity="error")
            return
        self.push_screen(RunScreen(source, self.tick))

    def compare_files(self, path_a: str | Path, path_b: str | Path) -> None:
        open_compare(self, path_a, path_b)

    def run_screen(self) -> RunScreen | None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, RunScreen):
                return screen
        return None

    # -- actions -----------------------------------------------------------------------------

    async def action_quit(self) -> None:
        screen = self.run_screen()
        if screen is not None:
            screen.poll_now()  # the end record may have arrived since the last tick
        if screen is None or not screen.source.running:
            self._close_sources()
            self.exit(self.exit_code_for(screen.source if screen else None))
            return

        def chosen(choice: str | None) -> None:
            if choice == "stop":
                assert isinstance(screen.source, LiveSource)
                screen.source.stop()
                screen.quit_when_done = True
                self.notify("stopping the run; the dashboard closes when the file is finished")
            elif choice == "leave":
                self._close_sources()
                self.exit(0)

        self.push_screen(QuitDuringRun(), chosen)

    def _close_sources(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, RunScreen):
                screen.source.close()

    def exit_code_for(self, source: Source | None) -> int:
        """The workload's exit status for a live run (0 for replays); 1 if the recorder failed."""
        if source is None or not source.live:
            return 0
        if source.error:
            return 1
        end = source.run.end if source.run else None
        code = (end or {}).get("exit_code")
        return code if isinstance(code, int) else 0

    def action_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_presenter(self) -> None:
        self.presenter = not self.presenter
        self.set_class(self.presenter, "-presenter")
        for screen in {self.run_screen(), self.screen}:
            if hasattr(screen, "redraw_all"):
                self.call_after_refresh(screen.redraw_all)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "compare_previous":  # offered on the run screen only
            return isinstance(self.screen, RunScreen)
        return super().check_action(action, parameters)

    def action_compare_previous(self) -> None:
        """Compare the run on screen (B) with the newest earlier run of the same workload (A)."""
        screen = self.screen
        if not isinstance(screen, RunScreen):
            return
        screen.poll_now()
        if screen.source.running or screen.source.run is None:
            self.notify("the run is still recording: compare it when it has finished", severity="warning")
            return
        previous = previous_run(screen.source.path)
        if previous is None:
            self.notify(markup(f"no earlier run of {screen.source.run.title} in {screen.source.path.parent}"),
                        severity="warning")
            return
        self.compare_files(previous, screen.source.path)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The command palette lists every key binding of the app and the current screen."""
        yield from super().get_system_commands(screen)
        seen = {"quit"}
        for owner in (screen, self):
            for binding in owner.BINDINGS:
                if not isinstance(binding, Binding) or binding.action in seen:
                    continue
                seen.add(binding.action)
                key = binding.key_display or binding.key.split(",")[0]
                yield SystemCommand(binding.description, f"key: {key}",
                                    partial(self.call_later, self.run_action, binding.action, owner))


def launch(inv: Any, command: list[str] | None) -> int:
    """Run the dashboard for ``devicewatch``, ``devicewatch run …`` or ``devicewatch replay FILE``."""
    from ..cli import UsageError

    start: Source | None = None
    if inv.command == "replay":
        if len(inv.rest) != 1:
            raise UsageError("replay needs exactly one FILE (a run file, e.g. runs/….jsonl)")
        start = open_replay(inv.rest[0])
    elif inv.command == "run":
        if not command:
            raise UsageError("name a workload (see devicewatch workloads) or give -- COMMAND")
        try:
            Path(inv.runs_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the runs folder {inv.runs_dir}: {exc.strerror}") from None
        start = LiveSource(inv.runs_dir, inv.workload, inv.rest if inv.workload else [], command,
                           inv.interval, inv.gpu)
    app = DashboardApp(inv, start)
    code = app.run()
    if isinstance(start, (LiveSource, ReplaySource)):
        start.close()
    return code if isinstance(code, int) else 0
