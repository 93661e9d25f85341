"""`lstmgraph specs`: the bundled specs, which every SPEC argument takes by name."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from lstmgraph.bundled import bundled_spec, close_names
from lstmgraph.plan.summary import list_specs
from lstmgraph.errors import SpecError
from lstmgraph.files import BUNDLED_SPECS

from .common import fail, report_spec_error_from


@click.command(short_help="List the bundled specs (a SPEC argument takes a name); print one.")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list, an object per spec.")
def specs(name: str | None, as_json: bool) -> None:
    """List the bundled specs: name, parameters (counted by compiling each), task, paper and
    description. Any command that takes a SPEC takes a name, e.g. lstmgraph train gers2000_cerg.

    With NAME, print that spec's file as it is, to copy and change:
    lstmgraph specs gers2000_cerg > my_net.yaml"""
    if name is not None:
        if as_json:
            fail("--json lists the specs; give no NAME with it")
        found = bundled_spec(name)
        if found is None:
            close = close_names(name)
            fail(f"no bundled spec named {name!r}" + (f"; did you mean {', '.join(close)}?" if close else
                                                     "; lstmgraph specs lists them"))
        click.echo(found.read_text(encoding="utf-8"), nl=False)
        return
    try:
        listed = list_specs()
    except SpecError as error:
        report_spec_error_from(error, BUNDLED_SPECS)
    if as_json:
        click.echo(json.dumps([asdict(spec) for spec in listed], indent=2))
        return
    click.echo(f"{len(listed)} bundled specs in {BUNDLED_SPECS}; give a name as SPEC, "
               f"e.g. lstmgraph train {listed[0].name if listed else 'NAME'}\n")
    width = max([len("name"), *(len(spec.name) for spec in listed)])
    task_width = max([len("task"), *(len(spec.task or "-") for spec in listed)])
    click.echo(f"{'name':<{width}}  {'parameters':>10}  {'task':<{task_width}}  paper: description")
    for spec in listed:
        about = ": ".join(part for part in (spec.paper, spec.description) if part) or "-"
        click.echo(f"{spec.name:<{width}}  {spec.parameters:>10}  {spec.task or '-':<{task_width}}  {about}")
