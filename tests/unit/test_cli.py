"""The command line's parsing and help, in this process (no subprocess)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devicewatch import cli
from devicewatch.commands import SUBCOMMANDS
from devicewatch.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_command_table_is_the_help_command_table():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Commands\n\n```\n(.*?)```", readme, re.S)
    assert block, "README.md has no command table"
    assert block.group(1).rstrip("\n").split("\n") == cli.usage_lines()
    assert all(line.strip() in cli.help_text() for line in cli.usage_lines())


def test_every_subcommand_is_in_the_help():
    table = "\n".join(cli.usage_lines())
    for name in SUBCOMMANDS:
        assert f"devicewatch {name}" in table


def test_global_options_reach_the_command_and_the_command_may_override_them():
    module, args = cli.parse(["--interval", "0.5", "run", "--interval", "0.2", "demo", "--epochs", "2"])
    assert module.NAME == "run" and args.interval == 0.2 and args.target == ["demo", "--epochs", "2"]
    module, args = cli.parse(["--interval", "0.5", "--gpu", "off", "run", "demo"])
    assert args.interval == 0.5 and args.gpu is False and args.runs_dir == "runs"


def test_record_mode_takes_everything_after_the_workload_as_its_options():
    module, args = cli.parse(["--record", "x.jsonl", "demo", "--record", "y"])
    assert args.record == "x.jsonl" and args.target == ["demo", "--record", "y"]
    _, args = cli.parse(["--record", "x.jsonl", "--", "python", "-c", "pass"])
    assert args.target == ["--", "python", "-c", "pass"]


@pytest.mark.parametrize("argv, message", [
    (["--rec", "x.jsonl", "demo"], "unknown option --rec"),      # no abbreviations
    (["--interval", "abc", "report", "f"], "--interval needs a number"),
    (["report"], "report: the following arguments are required: file"),
    (["export", "f", "--format", "png", "-o", "x"], "export: argument --format: invalid choice"),
    (["--", "ls"], "devicewatch run -- COMMAND"),
])
def test_bad_input_is_one_usage_error(argv, message):
    with pytest.raises(UsageError, match=re.escape(message)) as info:
        cli.parse(argv)
    assert "\n" not in str(info.value)


def test_presenter_is_taken_before_the_command_or_after_it():
    from devicewatch import cli

    for command in (["compare", "a.jsonl", "b.jsonl"], ["replay", "runs/4711"], ["run", "demo"], ["demo"]):
        assert cli.parse(["--presenter", *command])[1].presenter is True
        assert cli.parse([*command[:1], "--presenter", *command[1:]])[1].presenter is True
        assert cli.parse(command)[1].presenter is False
