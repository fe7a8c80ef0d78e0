"""Every command's ``--help`` fits the terminal it is printed in, with no word broken."""

from __future__ import annotations

import pytest

from devicewatch import cli
from devicewatch.commands import SUBCOMMANDS


def help_at(columns: int, command: str | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``devicewatch [COMMAND] --help`` prints in a terminal COLUMNS wide."""
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"] if command else ["--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("command", [None, *SUBCOMMANDS])
def test_help_fits_the_terminal_and_breaks_no_word(columns, command, monkeypatch, capsys):
    text = help_at(columns, command, monkeypatch, capsys)
    unwrapped = help_at(100_000, command, monkeypatch, capsys)
    widest = max(text.splitlines(), key=len)
    assert len(widest) <= columns, widest
    # A word split across lines ("zero-" / "code") would be two words here that are one there;
    # wrapping may only move words to the next line, never lose, add or reorder one.
    assert text.split() == unwrapped.split()


def test_the_command_table_side_by_side_where_it_fits_stacked_where_not():
    wide = cli.usage_lines()
    assert max(map(len, wide)) > 78  # else the stacked form below is never taken
    narrow = cli.usage_lines(78)
    assert max(map(len, narrow)) <= 78
    assert " ".join(narrow).split() == " ".join(wide).split()
    # each synopsis starts a line, what it does is indented under it
    assert narrow[:2] == ["devicewatch", "      dashboard; pick a workload and run it"]
