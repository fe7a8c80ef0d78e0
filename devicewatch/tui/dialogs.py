"""Questions the dashboard asks before doing something that cannot be undone."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class QuitDuringRun(ModalScreen[str]):
    """Quit while recording: stop the run, or leave the recorder to finish it alone.

    Either way the run file is finished by the recorder; the dialog only decides whether the
    workload goes on. A process devicewatch attached to always goes on (``attached``): the
    choice is whether the recording ends now (a detach) or when the process ends.
    """

    BINDINGS = [Binding("escape", "choose('cancel')", "Keep watching"),
                Binding("s", "choose('stop')", "Stop and quit"),
                Binding("k", "choose('leave')", "Quit, keep recording")]

    def __init__(self, attached: bool = False):
        super().__init__()
        self.attached = attached

    def compose(self) -> ComposeResult:
        # An attached process is only watched: the stop is a detach, and it ends on its own.
        ended, stop_word = ("the process", "detach") if self.attached else ("the workload", "stop")
        with Vertical(id="dialog"):
            if self.attached:
                yield Static("The attached process is still being recorded. Quit the dashboard?", id="question")
                stop_line = "[b]Detach and quit[/b]: the recording ends now; the process runs on, untouched."
                stop = "Detach and quit (s)"
            else:
                yield Static("A run is still recording. Quit the dashboard?", id="question")
                stop_line = "[b]Stop and quit[/b]: cancel the workload; the recorder finishes the file."
                stop = "Stop and quit (s)"
            yield Static(f"{stop_line}\n[b]Quit, keep recording[/b]: the recorder runs on without a window and "
                         f"finishes the file when {ended} ends; `devicewatch runs` (or the home "
                         f"screen) lists it, to follow or {stop_word}.", id="explain")
            with Horizontal(id="choices"):
                yield Button(stop, id="stop", variant="warning" if self.attached else "error")
                yield Button("Quit, keep recording (k)", id="leave", variant="warning")
                yield Button("Keep watching (esc)", id="cancel", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "cancel")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class ConfirmTrials(ModalScreen[bool]):
    """Before trials start: what will run, how many times, for how long, and where it is written
    (``trials.plan_text``). The script runs unchanged each time, whatever it writes included."""

    BINDINGS = [Binding("escape", "choose(False)", "Cancel"),
                Binding("y", "choose(True)", "Run the trials")]

    def __init__(self, plan: str):
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Try the advice on the script?", id="question")
            yield Static(Text(self.plan), id="explain")
            with Horizontal(id="choices"):
                yield Button("Run the trials (y)", id="trials-run", variant="warning")
                yield Button("Cancel (esc)", id="trials-cancel", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#trials-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "trials-run")

    def action_choose(self, choice: bool) -> None:
        self.dismiss(choice)
