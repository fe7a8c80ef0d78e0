"""The dashboard on a process devicewatch attached to speaks of a detach, never of stopping it:
the quit dialog, the advice (on the next start), the output panel (not captured) and ``t``
(the trials must run in the process's own folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.app import App

from devicewatch.live.source import open_replay
from devicewatch.runformat import runfile
from devicewatch.tui.app import DashboardApp, DashboardSettings
from devicewatch.tui.dialogs import QuitDuringRun
from devicewatch.tui.run_screen import NOT_CAPTURED
from tests.conftest import first_frame, until
from tests.unit.test_attach_steps import loader_run

SIZE = (160, 50)


@pytest.mark.asyncio
@pytest.mark.parametrize("attached", [False, True])
async def test_the_quit_dialog_detaches_from_an_attached_process(attached: bool) -> None:
    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(QuitDuringRun(attached))

    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app.screen.query("#stop")))
        said = " ".join(str(w.render()) for w in app.screen.query("Static, Button"))
    assert ("Detach and quit" in said) == attached
    assert ("Stop and quit" in said) == (not attached)
    assert ("the process runs on, untouched" in said) == attached


def attached_run(path: Path, folder: str) -> Path:
    """A finished recording of a process attached to in FOLDER, its loop waiting on a DataLoader
    without workers: its verdict input-bound, its advice num_workers."""
    run = loader_run(path, sampled=True)
    lines = path.read_text().splitlines(keepends=True)
    import json

    header = json.loads(lines[0])
    header["attached"] = {"pid": 4321, "when": "2026-01-01T00:00:00+00:00", "command": ["python", "loop.py"],
                          "cwd": folder, "uid": 0}
    header["workload"] = {"name": None, "args": [], "command": ["python", "loop.py"]}
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert run.header is not None
    return path


@pytest.mark.asyncio
async def test_a_replay_of_an_attached_run_says_how_it_differs(tmp_path: Path) -> None:
    path = attached_run(tmp_path / "a.jsonl", str(tmp_path / "elsewhere"))
    assert runfile.load(path).header.raw["attached"]["cwd"].endswith("elsewhere")
    app = DashboardApp(DashboardSettings(), open_replay(str(path)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and "advice" in str(app.screen.query_one("#verdict").render()))
        verdict = str(app.screen.query_one("#verdict").render())
        log = "\n".join(str(line) for line in app.screen.query_one("#log").lines)
        notes: list[str] = []
        app.notify = lambda message, **_kw: notes.append(str(message))   # type: ignore[method-assign]
        await pilot.press("t")
        await until(pilot, lambda: bool(notes))
    assert "advice: on the next start: try num_workers=" in verdict
    assert NOT_CAPTURED in " ".join(log.split())   # wrapped to the panel
    # The trials would run here, and the process's command line is relative to its own folder.
    assert notes and f"cd {tmp_path / 'elsewhere'} && devicewatch try -- python loop.py" in notes[0]


@pytest.mark.asyncio
async def test_why_an_attached_run_has_no_phases_is_said_in_its_output_panel(tmp_path: Path) -> None:
    path = attached_run(tmp_path / "a.jsonl", str(tmp_path))
    lines = path.read_text().splitlines(keepends=True)
    why = "cannot read the stacks of process 4321: it is bash, not Python; recording without phases"
    notices = [{"type": "notice", "t": 0.5, "level": "warning", "message": why},
               {"type": "notice", "t": 0.6, "level": "info", "message": "an aside"}]
    import json

    path.write_text("".join(lines[:-1]) + "".join(json.dumps(n) + "\n" for n in notices) + lines[-1])
    app = DashboardApp(DashboardSettings(), open_replay(str(path)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: first_frame(app) and "bash" in "".join(map(str, app.screen.query_one("#log").lines)))
        log = " ".join(" ".join(str(line) for line in app.screen.query_one("#log").lines).split())
    assert f"devicewatch: {why}" in log and "an aside" not in log
