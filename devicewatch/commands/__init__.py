"""One module per subcommand, each with the same small interface:

    NAME = "report"                        the subcommand's name
    HELP = "one line for `devicewatch --help`"
    def add_arguments(parser: argparse.ArgumentParser) -> None
    def run(args: argparse.Namespace) -> int

`cli.py` builds the argparse subparsers from `COMMANDS`, so usage and `--help` come from the
parsers themselves. A command raises `devicewatch.errors.UsageError` (or another
`DevicewatchError`) for bad input; `cli.main` prints it as one line. Nothing imports `cli`.
"""
