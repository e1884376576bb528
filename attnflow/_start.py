"""The first code of the `attnflow` command: it imports the command line, so that a Ctrl-C while
Python imports it ends the command with one line and status 130, as one at any later moment does
(`attnflow.cli.main`)."""

import sys


def main() -> int:
    """Import [`attnflow.cli`][] and run its `main`; exit status 130 where Ctrl-C comes first."""
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        print("attnflow: interrupted while starting; nothing was done", file=sys.stderr)
        return 130
    return run()
