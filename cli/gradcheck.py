"""`lstmgraph gradcheck`: the learning rules against independent computations."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from lstmgraph.limits import MAX_GRADCHECK_DRAWS, MAX_GRADCHECK_STEPS, MAX_SEED, LimitError
from lstmgraph.plan import Plan

from .common import SPEC_ARGUMENT, compile_or_exit, fail


@click.command(short_help="Check SPEC's gradients: RTRL, BPTT, finite differences.")
@SPEC_ARGUMENT
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a line each with --draws).")
@click.option("--seed", metavar="N", type=click.IntRange(min=0, max=MAX_SEED), default=0, show_default=True,
              help="Seed of the random weights, inputs and targets.")
@click.option("--steps", metavar="N", type=click.IntRange(min=1, max=MAX_GRADCHECK_STEPS), default=8,
              show_default=True, help="Sequence length.")
@click.option("--draws", metavar="K", type=click.IntRange(min=1, max=MAX_GRADCHECK_DRAWS), default=1,
              show_default=True, help="Check K random draws, seeds N to N+K-1.")
def gradcheck(spec: Path, as_json: bool, seed: int, steps: int, draws: int) -> None:
    """Check SPEC's gradients: truncated RTRL = BPTT with the same cuts; RTRL = BPTT = finite
    differences with every edge carrying. Exit code 1 when a check exceeds its tolerance.

    Finite differences have rounding and truncation errors of their own: that check reports, per
    weight matrix, the error beyond their bound (relative to the matrix's largest gradient), the
    raw error, and the bound (docs/training.md in the lstmgraph source).
    """
    from lstmgraph.engine.gradcheck import gradient_checks  # the engine: not for other commands

    plan = compile_or_exit(spec, data_files=False)  # (random inputs: no data read); a spec error: on stderr only
    if seed + draws - 1 > MAX_SEED:
        fail(f"--seed {seed} --draws {draws} would reach seed {seed + draws - 1}, over the largest seed {MAX_SEED}; "
             "give a smaller --seed")
    reports = gradient_checks(plan, range(seed, seed + draws), steps)
    failed = []
    try:
        for index, report in enumerate(reports):
            if index and not as_json:
                click.echo("")
            _show(plan, report, as_json, indent=2 if draws == 1 else None)
            if not report["passed"]:
                failed.append(report["seed"])
    except LimitError as error:  # a net too large for exact RTRL's program
        fail(str(error))
    if draws > 1 and not as_json:
        click.echo(f"\n{len(failed)} of {draws} draws failed" + (f" (seeds {', '.join(map(str, failed))})" if failed
                                                                  else ""))
    sys.exit(1 if failed else 0)


def _show(plan: Plan, report: dict[str, Any], as_json: bool, indent: int | None) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=indent))
    else:
        click.echo(f"{plan.name}: {plan.n_parameters} parameters, random weights (seed {report['seed']}), "
                   f"{report['steps']} steps, loss {report['loss']}")
        for check in report["checks"]:
            verdict = "ok" if check["passed"] else "FAILED"
            if "raw_per_connection" not in check:
                click.echo(f"\n{check['name']}: largest relative error {check['max_rel_error']:.2e} "
                           f"(tolerance {check['tolerance']:.0e}) {verdict}")
                for name, error in check["per_connection"].items():
                    click.echo(f"  {name:<52} {error:.2e}")
                continue
            click.echo(f"\n{check['name']}: largest relative error beyond the finite differences' own "
                       f"error {check['max_rel_error']:.2e} (tolerance {check['tolerance']:.0e}) {verdict}")
            click.echo(f"  {'weight matrix':<52} {'beyond':>8}  {'error':>8}  {'FD bound':>8}")
            bounds = check["finite_difference_error_bound"]
            for name, error in check["per_connection"].items():
                click.echo(f"  {name:<52} {error:.2e}  {check['raw_per_connection'][name]:.2e}  {bounds[name]:.2e}")
        if "note" in report:
            click.echo(f"\nnote: {report['note']}")
