"""The `lstmgraph` console script's entry point (and `python -m lstmgraph_cli`'s).

It imports only `sys`, then the command line inside a try: those imports (numpy, numba, networkx,
pydantic) take tenths of a second, and a Ctrl-C during them ends as one later does ("interrupted",
exit code 130), not with a traceback. The command group handles a Ctrl-C once a command runs.
"""

from __future__ import annotations

import sys

#: Exit code of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED = 130


def exit_interrupted() -> None:
    """End on a Ctrl-C as every command does: "interrupted" on standard error, exit code 130."""
    print("\ninterrupted", file=sys.stderr, flush=True)
    sys.exit(INTERRUPTED)


def main() -> None:
    """Import the command line (a Ctrl-C meanwhile: `exit_interrupted`) and run it."""
    try:
        from .main import main as command
    except KeyboardInterrupt:
        exit_interrupted()
    command()
