"""The `lstmgraph` command: click front end over the library (which never imports click).

Exit codes: 0 success, 1 a command ran but could not finish its job (e.g. no graphviz to draw
with), 2 a usage or spec error, 130 stopped by Ctrl-C. Spec errors print located messages, never a
traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

import lstmgraph
from lstmgraph.operations import FORMULAS
from lstmgraph.plan.summary import summarize, unlearned_note
from lstmgraph.render import RenderError, render_plan
from lstmgraph.render.dot import FORMATS
from lstmgraph.spec import json_schema

from .common import SPEC_ARGUMENT, Commands, compile_or_exit
from .bench import bench
from .evaluate import evaluate
from .gradcheck import gradcheck
from .reproduce import reproduce
from .results import results
from .plot import plot
from .specs import specs
from .sweep import sweep
from .train import run, train

@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(lstmgraph.__version__, prog_name="lstmgraph")
def main() -> None:
    """Declarative LSTM-family networks: validate, draw, train and run spec files.

    SPEC is a spec file or a bundled spec's name ('lstmgraph specs' lists them)."""


@main.command(short_help="Check SPEC and summarise it: groups, order, parameters.")
@SPEC_ARGUMENT
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def validate(spec: Path, as_json: bool) -> None:
    """Check SPEC and summarise it: groups, step order, gradient flags, parameter counts."""
    plan = compile_or_exit(spec, as_json)
    summary = summarize(plan)
    if as_json:
        click.echo(json.dumps({"valid": True, **summary}, indent=2))
        return
    click.echo(f"{summary['name']}: valid ({spec})")
    click.echo("\nunit groups")
    for unit in plan.units:
        click.echo(f"  {unit.name:<32} {unit.role:<15} {unit.size:>5}  {FORMULAS[unit.activation]}")
    click.echo("\nexecution order within a step (inputs and bias given)")
    click.echo("  " + " -> ".join(plan.execution_order))
    click.echo("\nconnections")
    header = f"  {'name':<48} {'pattern':<10} {'delay':>5}  {'gradient':<9} {'gated by':<22} {'shape':>7} {'params':>7}"
    click.echo(header)
    for row in summary["connections"]:
        shape = "x".join(map(str, row["shape"]))
        gate = ("1-" if row["gate_complement"] else "") + (row["gated_by"] or "-") \
            + (" (target)" if row["gated_by"] and row["gate_side"] == "target" else "")
        flag = "carries" if row["gradient"] else "truncated"
        params = str(row["parameters"]) if row["trainable"] else "fixed"
        click.echo(f"  {row['name']:<48} {row['pattern']:<10} {row['delay']:>5}  {flag:<9} "
                   f"{gate:<22} {shape:>7} {params:>7}")
    click.echo(f"\nparameters: {summary['parameters']}")
    if note := unlearned_note(plan):
        click.echo(f"note: {note}")


@main.command(short_help="Draw SPEC to an .svg, .png, .pdf or .dot file.")
@SPEC_ARGUMENT
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="File to write; its extension picks the format: .svg, .png, .pdf or .dot.")
@click.option("--rankdir", type=click.Choice(["LR", "TB", "BT", "RL"]), default="LR",
              show_default=True, help="Direction of the layout.")
def render(spec: Path, output: Path, rankdir: str) -> None:
    """Draw SPEC: a cluster per memory block, gates, CEC, gradient and delay styles, legend."""
    if output.suffix.lower().lstrip(".") not in FORMATS:
        raise click.BadParameter(f"'{output}' has no known extension; use "
                                 + ", ".join(f".{name}" for name in FORMATS), param_hint="'-o'")
    plan = compile_or_exit(spec, data_files=False)  # (a drawing needs no data)
    try:
        written = render_plan(plan, output, rankdir)
    except RenderError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    click.echo(f"wrote {written}")


@main.command(short_help="Print the spec's JSON Schema.")
def schema() -> None:
    """Print the spec's JSON Schema (for editor completion and validation)."""
    click.echo(json.dumps(json_schema(), indent=2))


main.add_command(train)
main.add_command(run)
main.add_command(gradcheck)
main.add_command(bench)
main.add_command(reproduce)
main.add_command(results)
main.add_command(plot)
main.add_command(evaluate)
main.add_command(specs)
main.add_command(sweep)

if __name__ == "__main__":
    main()
