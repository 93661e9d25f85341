"""`lstmgraph bench`: speed of the compiled executor (docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from lstmgraph.errors import SpecError
from lstmgraph.files import BUNDLED_SPECS

from .common import report_spec_error


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--quick", is_flag=True, help="A tenth of the steps: a rough figure in about a minute (quiet machine, kernels cached).")
@click.option("--specs", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=BUNDLED_SPECS, show_default=True, help="Folder holding the bundled specs.")
def bench(as_json: bool, quick: bool, specs: Path) -> None:
    """Online truncated-RTRL speed: CERG and timing nets (1, 10, 100 trials), time per step
    against W for truncated and exact RTRL with fitted exponents, peak memory, PyTorch ratio.
    The first run of an installation compiles the interpreter once; later runs reuse it."""
    from lstmgraph.benchmark import run_benchmarks  # the compiled executor: not for other commands

    progress = (lambda message: None) if as_json else (lambda message: click.echo(f"... {message}", err=True))
    try:
        results = run_benchmarks(specs, quick=quick, progress=progress)
    except SpecError as error:
        report_spec_error(error.source.filename if error.source else specs, error)
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    click.echo(f"first lstmgraph train of a spec never seen (1,000 steps, start-up included): "
               f"{results['first_train_seconds']:.1f} s")
    click.echo(f"CERG net ({results['cerg_weights']} weights), online truncated RTRL, float64:")
    click.echo(f"  1 trial       {results['cerg_steps_per_s']:>14,.0f} steps/s "
               f"(forward pass and loss alone: {results['cerg_forward_only_steps_per_s']:,.0f})")
    click.echo(f"  10 trials     {results['cerg_population10_trial_steps_per_s']:>14,.0f} trial-steps/s")
    click.echo(f"  100 trials    {results['cerg_population100_trial_steps_per_s']:>14,.0f} trial-steps/s")
    click.echo("timing net (17 weights):")
    click.echo(f"  1 trial       {results['timing_steps_per_s']:>14,.0f} steps/s")
    click.echo(f"  10 trials     {results['timing_population10_trial_steps_per_s']:>14,.0f} trial-steps/s")
    click.echo(f"  100 trials    {results['timing_population100_trial_steps_per_s']:>14,.0f} trial-steps/s")
    for rule in ("truncated_rtrl", "rtrl"):
        click.echo(f"{rule}: time per step against W (fitted exponent {results[rule + '_exponent']:.2f})")
        for row in results[rule + "_scaling"]:
            click.echo(f"  {row['blocks']:>3} blocks  W = {row['weights']:>6}  {row['seconds_per_step'] * 1e6:>12.2f} us/step")
    click.echo(f"peak memory: {results['peak_memory_mib']:.0f} MiB")
    if results["torch_ratio"] is None:
        click.echo("PyTorch: not installed (pip install torch==2.13.0 to compare)")
    else:
        click.echo(f"PyTorch per-step loop: {results['torch_cerg_steps_per_s']:,.0f} steps/s; "
                   f"lstmgraph is {results['torch_ratio']:.0f} times faster")
