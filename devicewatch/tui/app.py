"""The dashboard application and ``launch``/``launch_compare``/``launch_trials``, what the commands call.

Everything the app needs comes in through its constructor (its settings and where the run
comes from), so tests and the screenshot script build it the same way the commands do. Bad
input (a missing or foreign replay file, an unusable runs folder) is refused by the commands
before the terminal is taken over, with a one-line error.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.driver import Driver
from textual.reactive import var
from textual.screen import Screen

from .. import trials
from ..errors import UsageError
from ..live.job import JobModel
from ..live.source import AttachSource, LiveSource, Source, open_replay, previous_run
from ..recorder.recorder import OUTSIDE_GRACE
from ..registry import Target
from ..runformat.runfile import Run, RunFileError, load
from ..safe_text import markup
from .compare import CompareScreen, open_compare
from .dialogs import ConfirmTrials, QuitDuringRun
from .home_screen import HomeScreen
from .job_screen import JobScreen
from .run_screen import TICK, RunScreen
from . import chops, outside_signals
from .strips import mend_strip_cycles
from .trials_screen import TRY_SECONDS, TRY_WARMUP, Runner, TrialsScreen, run_trial_beside

STORY_PAUSE = 4.0  # seconds a finished run of a story stays on screen before the next step
# Seconds a run an ending signal was passed to may take to end after the dashboard closed: the
# workload's grace after a signal from outside, and its recorder's last steps.
RUN_ENDING_WAIT = OUTSIDE_GRACE + 5.0


@dataclass
class DashboardSettings:
    """What the dashboard needs from the command line."""

    runs_dir: str = "runs"      # where live runs are recorded
    interval: float = 0.1       # their sampling period
    gpu: bool = True            # sample GPUs in live runs
    presenter: bool = False     # start in presenter mode


# Objects made and not yet freed that start a pass of the cyclic collector (Python's default:
# 700). A frame makes thousands of short-lived Segments and strips that reference counting frees
# (none is in a cycle: ``strips.mend_strip_cycles``); at 700 the collector walked the survivors
# of every few hundred of them, 65 passes a minute of ``bench_frames``, 57 ms; at 7,000, 2 passes,
# 9 ms.
YOUNG_OBJECTS_PER_COLLECTION = 7000


def settle_collector() -> None:
    """After the first frame: what exists then (the modules, the styles, a replay's run) lives
    as long as the app, frozen out of the collector, whose full passes then walk only what was
    made since; and the young generation collected less often (``YOUNG_OBJECTS_PER_COLLECTION``)."""
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, *gc.get_threshold()[1:])


class DashboardApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "devicewatch"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys", key_display="?"),
        Binding("p", "presenter", "Presenter"),
        Binding("c", "compare_previous", "Compare with previous run"),
    ]

    presenter: var[bool] = var(False)   # the projector look; screens follow it

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal; where that is its Linux driver, the same with an
        input thread that sleeps until a key comes (``driver.QuietLinuxDriver``)."""
        driver = super().get_driver_class()
        if driver.__module__ == "textual.drivers.linux_driver" and driver.__name__ == "LinuxDriver":
            try:   # imports termios, and Textual's private parser: where its Linux driver is used, as it stands
                from .driver import QuietLinuxDriver
            except ImportError:   # a Textual whose parser lives elsewhere: its own driver
                return driver
            return QuietLinuxDriver
        return driver

    def __init__(self, settings: DashboardSettings | None = None, start: Source | None = None,
                 tick: float = TICK, compare: tuple[Run, Run] | None = None,
                 story: Sequence[Target] = (), story_pause: float = STORY_PAUSE, story_notice: str | None = None,
                 trial_set: tuple[trials.TrialSet, str] | None = None, trial_runner: Runner | None = None,
                 job: JobModel | None = None):
        super().__init__()
        mend_strip_cycles()
        chops.install()
        self.settings = settings or DashboardSettings()
        self.start_source = start
        self.start_compare = compare
        self.start_trials = trial_set   # a saved set of devicewatch try and its folder
        self.start_job = job            # a job's nodes followed (devicewatch replay DIR)
        # How a trial started from the dashboard is recorded (tests give a runner of their own).
        self.trial_runner: Runner = trial_runner or partial(run_trial_beside, interval=self.settings.interval,
                                                            gpu=self.settings.gpu)
        self.tick = tick
        self.set_reactive(DashboardApp.presenter, self.settings.presenter)
        self.story = list(story)
        self.story_pause = story_pause
        self.story_files: list[Path] = []
        self.story_headline: str | None = None
        self.story_notice = story_notice   # said on the story's first run (the demo's load before it)
        self._quit_when_finished: RunScreen | None = None   # "stop and quit" was chosen on it
        self.left_recording: set[Path] = set()   # the runs "quit, keep recording" left behind
        self.signal_loop: asyncio.AbstractEventLoop | None = None   # where a signal sent to us is acted on
        self.ending_signal: signal.Signals | None = None   # the SIGTERM, SIGHUP or SIGQUIT that ended us
        self.signalled_runs: list[LiveSource] = []   # the live runs an ending signal was passed to

    def on_load(self) -> None:
        self.signal_loop = asyncio.get_running_loop()

    def signalled(self, sig: signal.Signals) -> None:
        """A signal sent to the dashboard (``outside_signals``), acted on in the loop: each live
        run's workload gets it as itself; SIGTERM, SIGHUP and SIGQUIT then end the dashboard as
        a quit does, the terminal given back (a trial running beside is stopped), while the
        workloads they were passed to have their grace."""
        live = [screen.source for screen in self.screen_stack
                if isinstance(screen, RunScreen) and isinstance(screen.source, LiveSource) and screen.source.running]
        for source in live:
            source.pass_signal(sig)
        if sig not in outside_signals.ENDING:
            return
        self.signalled_runs += [source for source in live if source not in self.signalled_runs]
        if self.ending_signal is None:
            self.ending_signal = sig
        trials_now = self.trials_screen()
        if trials_now is not None and trials_now.trials_run is not None:
            trials_now.trials_run.stop(f"{sig.name} sent to the dashboard")
        self._close_sources()
        self.exit(128 + sig)

    def give_back_now(self, sig: signal.Signals) -> None:
        """In the handler of a second ending signal, the first not yet acted on (the loop
        blocked): each live run told at once (``LiveSource.pass_signal_now``) and the terminal
        given back by the driver itself; the process then ends of the signal."""
        for screen in list(self.screen_stack):
            if isinstance(screen, RunScreen) and isinstance(screen.source, LiveSource):
                screen.source.pass_signal_now(sig)
        give_back = getattr(self._driver, "give_back_now", None)   # the dashboard's own driver
        if give_back is not None:
            give_back()

    def watch_presenter(self, presenter: bool) -> None:
        self.set_class(presenter, "-presenter")

    def on_mount(self) -> None:
        self.set_class(self.presenter, "-presenter")
        self.call_after_refresh(settle_collector)
        if self.start_compare is not None:  # devicewatch compare A B: the comparison alone
            self.push_screen(CompareScreen(*self.start_compare))
            return
        if self.start_trials is not None:  # devicewatch try, or compare DIR/trials.json: the set alone
            self.push_screen(TrialsScreen.saved(*self.start_trials))
            return
        if self.start_job is not None:  # devicewatch replay DIR: the job's nodes; enter opens one
            self.push_screen(JobScreen(self.start_job))
            return
        if self.start_source is not None:  # the run first; the home screen once escape asks for it
            self.push_screen(RunScreen(self.start_source, self.tick))
            return
        self.push_screen(HomeScreen(self.settings.runs_dir))
        if self.story:
            self._story_next()

    async def on_run_screen_home_wanted(self, message: RunScreen.HomeWanted) -> None:
        await self.switch_screen(HomeScreen(self.settings.runs_dir))
        message.screen.source.close()  # its screen gone: no tick reads it any more

    # -- a story: runs one after the other, live, then their comparison --------------------------

    def _story_next(self) -> None:
        target = self.story[len(self.story_files)]
        try:
            source = LiveSource(self.settings.runs_dir, target, self.settings.interval, self.settings.gpu)
        except OSError as exc:
            self.notify(f"cannot create {self.settings.runs_dir}: {exc.strerror}", severity="error")
            return
        self.story_files.append(source.path)
        screen = RunScreen(source, self.tick)
        self.push_screen(screen)
        if self.story_notice and len(self.story_files) == 1:
            screen.announce(self.story_notice)

    def on_run_screen_finished(self, message: RunScreen.Finished) -> None:
        """A run screen saw its run end: quit if the user chose to stop and quit; in a story, go
        on (after a pause to look at the whole run) with the next run, or with the comparison of
        them all once the last has ended."""
        screen = message.screen
        if screen is self._quit_when_finished:
            self._close_sources()
            self.exit(self.exit_code_for(screen.source))
            return
        if not self.story or screen.source.path not in self.story_files or screen.source.path != self.story_files[-1]:
            return
        if message.status != "ok":
            self.notify(f"the demo stops here: {screen.source.run.title if screen.source.run else 'the run'} "
                        f"ended {message.status or 'without finishing'}", severity="warning", timeout=30)
            return
        if len(self.story_files) < len(self.story):
            screen.announce(f"finished; the next run starts in {self.story_pause:.0f} s")
            self.set_timer(self.story_pause, self._story_next)
        else:
            self.set_timer(self.story_pause, self._story_compare)

    def _story_compare(self) -> None:
        try:
            run_a, run_b = load(self.story_files[0]), load(self.story_files[-1])
        except (OSError, RunFileError) as exc:
            self.notify(str(exc), severity="error")
            return
        self.push_screen(CompareScreen(run_a, run_b))

    def on_compare_screen_compared(self, message: CompareScreen.Compared) -> None:
        if self.story:  # the story's last word, printed when the dashboard closes
            self.story_headline = message.comparison.headline

    # -- trying the advice --------------------------------------------------------------------

    def on_run_screen_try_wanted(self, message: RunScreen.TryWanted) -> None:
        """``t`` on a run screen: the run's command as written and once per advised knob, each a
        trial of the default window, in a new folder of the runs folder; asked first."""
        variants = [trials.Variant()]
        for item in message.advised:
            variant = trials.Variant(item.knob, item.value)
            if variant not in variants:
                variants.append(variant)
        budget = trials.budget_of(None, TRY_SECONDS, TRY_WARMUP)
        folder = os.path.join(self.settings.runs_dir, time.strftime("try-%Y%m%d-%H%M%S"))
        plan = trials.plan_text(message.command, variants, budget, folder, more_from_advice=False)

        def chosen(run: bool | None) -> None:
            if not run:
                return
            try:
                made = trials.new_folder(folder)
            except (UsageError, OSError) as exc:
                self.notify(markup(str(exc)), severity="error")
                return
            self.push_screen(TrialsScreen.running(message.command, variants, budget, made, self.trial_runner))

        self.push_screen(ConfirmTrials(plan), chosen)

    def trials_screen(self) -> TrialsScreen | None:
        """The screen whose trials are running now, if any."""
        for screen in self.screen_stack:
            if isinstance(screen, TrialsScreen) and screen.trials_running:
                return screen
        return None

    # -- starting runs -----------------------------------------------------------------------

    def start_live(self, target: Target) -> None:
        try:
            source = LiveSource(self.settings.runs_dir, target, self.settings.interval, self.settings.gpu)
        except OSError as exc:
            self.notify(f"cannot create {self.settings.runs_dir}: {exc.strerror}", severity="error")
            return
        self.push_screen(RunScreen(source, self.tick))

    def on_job_screen_node_wanted(self, message: JobScreen.NodeWanted) -> None:
        self.start_replay(str(message.path))

    def on_home_screen_run_requested(self, message: HomeScreen.RunRequested) -> None:
        self.start_live(message.target)

    def on_home_screen_replay_requested(self, message: HomeScreen.ReplayRequested) -> None:
        self.start_replay(str(message.path))

    def on_home_screen_compare_requested(self, message: HomeScreen.CompareRequested) -> None:
        self.compare_files(message.path_a, message.path_b)

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
        running_trials = self.trials_screen()
        if running_trials is not None:  # the trial running now is cancelled and its file finished first
            running_trials.stop(quit_after=True)
            return
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
                self._quit_when_finished = screen
                self.notify("detaching: the process runs on; the dashboard closes when the file is finished"
                            if attached else "stopping the run; the dashboard closes when the file is finished")
            elif choice == "leave":
                if isinstance(screen.source, LiveSource):  # it is: only a live source runs
                    screen.source.detach()
                    self.left_recording.add(screen.source.path)
                self._close_sources()
                self.exit(0)

        attached = isinstance(screen.source, AttachSource)
        self.push_screen(QuitDuringRun(attached), chosen)

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
        return end.exit_code if end is not None and end.exit_code is not None else 0

    def action_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_presenter(self) -> None:
        self.presenter = not self.presenter

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


def launch(settings: DashboardSettings, start: Source | None) -> int:
    """Run the dashboard: the home screen, with ``start``'s run on top when given."""
    return launch_run(settings, start).code


@dataclass(frozen=True)
class Closed:
    """How the dashboard closed: its exit status, whether the user left the run it started
    recording, and the signal that ended it (None for a quit)."""

    code: int
    left_recording: bool = False
    ending_signal: signal.Signals | None = None


def run_app(app: DashboardApp) -> int:
    """``app.run()`` with the signals sent to it handed to its loop (``outside_signals``)."""
    with outside_signals.handed_to(lambda: app.signal_loop, app.signalled, app.give_back_now):
        code = app.run()
    return code if isinstance(code, int) else 0


def wait_for_signalled_runs(app: DashboardApp, timeout: float) -> None:
    """After an ending signal: the runs it was passed to, each given up to TIMEOUT (the
    workload's grace and a little) to end and finish its file, as a headless recorder waits for
    its workload. A second signal meanwhile takes its default action (the terminal is given
    back), and a Ctrl-C stops the wait (the runs end on their own)."""
    deadline = time.monotonic() + timeout
    running = [source for source in app.signalled_runs if source.process is not None and source.process.poll() is None]
    if running and app.ending_signal is not None and app.ending_signal != signal.SIGHUP:   # hung up: no one to tell
        try:
            print(f"devicewatch: {app.ending_signal.name} passed to the workload; waiting for it to end "
                  f"(at most {OUTSIDE_GRACE:g} s)", file=sys.stderr, flush=True)
        except OSError:
            pass
    for source in running:
        assert source.process is not None
        try:
            source.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            return


def launch_run(settings: DashboardSettings, start: Source | None) -> Closed:
    """``launch``; also whether the user left START recording when the dashboard closed
    (``devicewatch run`` then says so instead of its verdict), and the signal that ended it."""
    app = DashboardApp(settings, start)
    code = run_app(app)
    if start is not None:
        start.close()
    if app.ending_signal is not None:
        wait_for_signalled_runs(app, RUN_ENDING_WAIT)
    return Closed(code, start is not None and start.path in app.left_recording, app.ending_signal)


def launch_job(settings: DashboardSettings, job: JobModel) -> int:
    """``devicewatch replay DIR`` (or several files): the job's nodes live, one screen."""
    app = DashboardApp(settings, job=job)
    code = run_app(app)
    job.close()
    return code


def launch_story(settings: DashboardSettings, story: Sequence[Target],
                 pause: float | None = None, notice: str | None = None) -> tuple[int, str | None, list[Path]]:
    """``devicewatch demo``: each target live, one after the other, then A and B compared;
    NOTICE said on the first run's screen. Returns the exit status, the comparison's headline
    (None if the story did not get there) and the run files recorded."""
    app = DashboardApp(settings, story=story, story_pause=STORY_PAUSE if pause is None else pause,
                       story_notice=notice)
    code = run_app(app)
    if app.ending_signal is not None:
        wait_for_signalled_runs(app, RUN_ENDING_WAIT)
    return code, app.story_headline, app.story_files


def launch_trials(trial_set: trials.TrialSet, folder: str, presenter: bool = False) -> int:
    """``devicewatch try`` (at its end) and ``devicewatch compare DIR``: the trials view alone."""
    app = DashboardApp(DashboardSettings(presenter=presenter), trial_set=(trial_set, folder))
    return run_app(app)


def launch_compare(run_a: Run, run_b: Run, presenter: bool = False) -> int:
    """``devicewatch compare A B``: the comparison view alone (``q`` quits)."""
    app = DashboardApp(DashboardSettings(presenter=presenter), compare=(run_a, run_b))
    return run_app(app)
