"""Snapshots of the run screen at a fixed size on fixed data (the committed fixture runs).

Update after an intended change of look with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and inspect the SVGs under tests/tui/__snapshots__/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from devicewatch.live.source import open_replay  # noqa: E402
from tests.conftest import settle  # noqa: E402

FIXTURES = Path("tests") / "fixtures"  # relative: the path shown in the status line is fixed


def replay(name: str, presenter: bool = False) -> DashboardApp:
    path = str(FIXTURES / name)
    return DashboardApp(DashboardSettings(presenter=presenter), open_replay(path))


@pytest.fixture(autouse=True)
def at_repository_root(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])


def test_cpu_replay(snap_compare):
    assert snap_compare(replay("demo-cpu.jsonl"), terminal_size=(160, 45), run_before=settle)


def test_gpu_replay(snap_compare):
    assert snap_compare(replay("gpu-synthetic.jsonl"), terminal_size=(160, 45), run_before=settle)


def test_gpu_replay_presenter(snap_compare):
    assert snap_compare(replay("gpu-synthetic.jsonl", presenter=True), terminal_size=(120, 36), run_before=settle)


def test_gpm_replay_shows_sm_activity(snap_compare):
    """GPU 0 (GPM) has its SM-active line under its utilization; GPU 1 (no GPM) has none."""
    assert snap_compare(replay("gpu-gpm.jsonl"), terminal_size=(160, 45), run_before=settle)
