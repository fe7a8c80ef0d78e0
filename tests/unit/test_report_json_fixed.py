"""``report --json`` is a format others read: on every run file in tests/fixtures it prints,
byte for byte, what devicewatch printed before its figures were gathered into one value
(tests/fixtures/report-json/NAME.json, written once from that code and never from this)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, devicewatch

FIXTURES = ROOT / "tests" / "fixtures"
RUNS = sorted(FIXTURES.glob("*.jsonl"))


def test_every_fixture_has_its_expected_json() -> None:
    """A fixture added without its expected JSON would be compared against nothing."""
    expected = {p.stem for p in (FIXTURES / "report-json").glob("*.json")}
    assert {p.stem for p in RUNS} == expected
    assert "job-stragglers" in expected   # a merged job: the stragglers and per-host verdicts


@pytest.mark.parametrize("run", RUNS, ids=[p.stem for p in RUNS])
def test_report_json_is_unchanged(run: Path) -> None:
    done = devicewatch("report", "--json", str(run.relative_to(ROOT)))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (FIXTURES / "report-json" / f"{run.stem}.json").read_text()
