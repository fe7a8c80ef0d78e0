"""A snapshot of the comparison view at a fixed size on the committed fixture runs.

Update after an intended change of look with
``pytest tests/tui/test_tui_compare_snapshot.py --snapshot-update`` and inspect the SVG under
tests/tui/__snapshots__/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from devicewatch.runformat import runfile  # noqa: E402
from devicewatch.tui.app import DashboardApp, DashboardSettings  # noqa: E402
from tests.conftest import settle  # noqa: E402

FIXTURES = Path("tests") / "fixtures"  # relative: the file names shown are fixed


@pytest.fixture(autouse=True)
def at_repository_root(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])


def test_compare_cpu_with_gpu_fixture(snap_compare):
    a, b = FIXTURES / "demo-cpu.jsonl", FIXTURES / "gpu-synthetic.jsonl"
    app = DashboardApp(DashboardSettings(),
                       compare=(runfile.load(a), runfile.load(b)))
    assert snap_compare(app, terminal_size=(160, 45), run_before=settle)
