"""`lstmgraph results`: the summary table of docs/results.md, its figure and README.md's tables of
the paper rows with their tally, from the results folders under docs/results
(`lstmgraph.experiments.results_table`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import error_text, fail


#: The folders left out of --folders' table that are named, one line each; the rest are counted.
LEFT_OUT_SHOWN = 10


@click.command(short_help="Print the summary table of the results under docs/results.")
@click.option("--write", "action", flag_value="write",
              help="Put the table into docs/results.md and the paper rows' tables into README.md, and draw the figure.")
@click.option("--check", "action", flag_value="check",
              help="Exit 1 if the table in docs/results.md, the figure docs/results/summary.png or README.md's "
                   "tables of the paper rows are not current.")
@click.option("--folders", metavar="DIR", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Print the table of the results folders under DIR instead (your own runs, e.g. runs).")
@click.option("--docs", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="The docs folder (holding results.md and results/); default: that of the checkout holding "
                   "the current folder.")
def results(action: str | None, docs: Path | None, folders: Path | None) -> None:
    """Print the summary table of every results folder under docs/results (one row per folder:
    trials run, our figures with their 95 % intervals, the published figures, the verdict).

    --folders DIR prints the same table of your own results folders (reproduce's and sweep's,
    anywhere under DIR, such as runs), with no checkout needed.

    --write and --check also cover README.md's tables of the paper rows (the catalogue's rows
    not marked "our extension", each judged by its folder docs/results/ROW) and their tally."""
    from lstmgraph.experiments.results_docs import regenerate
    from lstmgraph.experiments.results_table import ResultsTableError, find_docs, folders_table

    if folders is not None:
        if action is not None or docs is not None:
            fail("--folders prints a table of your own results folders; give it without --write, --check or --docs")
        try:
            table, left_out = folders_table(folders)
        except ResultsTableError as error:
            fail(str(error))
        sys.stdout.write(table)
        for line in left_out[:LEFT_OUT_SHOWN]:
            click.echo(f"note: {line}", err=True)
        if len(left_out) > LEFT_OUT_SHOWN:
            click.echo(f"note: and {len(left_out) - LEFT_OUT_SHOWN:,} more folders left out", err=True)
        return
    try:
        folder = docs if docs is not None else find_docs(Path.cwd())
        if docs is not None and not (docs / "results.md").is_file():
            fail(f"{docs}: no results.md there; give the docs folder that holds results.md and results/")
        state = regenerate(folder, write=action == "write")
    except ResultsTableError as error:
        fail(str(error))
    except BrokenPipeError:  # a reader closed stdout (| head): click exits 1, quietly
        raise
    except OSError as error:  # OutputError: a document or figure that cannot be written
        fail(error_text(error))
    if action is None:
        sys.stdout.write(state.table)
    elif action == "check":
        for what in state.stale:
            click.echo(f"{what} is not current; run lstmgraph results --write", err=True)
        if state.stale:
            sys.exit(1)
        click.echo(f"the summary table ({state.rows} rows) and the figure are current, and README.md's "
                   f"paper rows: {state.tally}")
    else:
        for what in state.stale:
            click.echo(f"wrote {what}")
        if not state.stale:
            click.echo("the summary table, the figure and README.md's paper rows were current already")
        click.echo(f"summary table: {state.rows} rows; README.md's paper rows: {state.tally}")
