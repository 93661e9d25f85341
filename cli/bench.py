"""`lstmgraph bench`: speed of the compiled executor (docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from lstmgraph.engine.devices import DEVICES
from lstmgraph.errors import SpecError
from lstmgraph.files import BUNDLED_SPECS

from .common import fail, report_spec_error_from


@click.command(short_help="Measure training speed: CERG and timing nets, RTRL against W.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--quick", is_flag=True, help="A tenth of the steps: a rough figure in about a minute (quiet machine, kernels cached).")
@click.option("--specs", metavar="DIR", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=BUNDLED_SPECS, show_default=True, help="Folder holding the bundled specs.")
@click.option("--device", type=click.Choice(DEVICES), default="cpu", show_default=True,
              help="cuda: the GPU population's figures instead (docs/gpu.md in the lstmgraph source); "
                   "needs an NVIDIA GPU and lstmgraph[gpu].")
def bench(as_json: bool, quick: bool, specs: Path, device: str) -> None:
    """Online truncated-RTRL speed: CERG and timing nets (1, 10, 100 trials) with the specialised
    kernel and with the interpreter, time per step against W for truncated and exact RTRL with
    fitted exponents, peak memory, PyTorch ratio. The first run of an installation compiles the
    interpreter and the two nets' specialised kernels; later runs reuse them."""
    from lstmgraph.benchmark import run_benchmarks  # the compiled executor: not for other commands

    progress = (lambda report: None) if as_json else (lambda report: click.echo(f"... {report.describe()}", err=True))
    if device == "cuda":
        bench_gpu(specs, quick, as_json, progress)
        return
    try:
        results = run_benchmarks(specs, quick=quick, progress=progress)
    except SpecError as error:
        report_spec_error_from(error, specs)
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    click.echo(f"first lstmgraph train of a spec never seen (1,000 steps, start-up included): "
               f"{results['first_train_seconds']:.1f} s")
    click.echo(f"CERG net ({results['cerg_weights']} weights), online truncated RTRL, float64 "
               f"(specialised kernel / interpreter):")

    def row(label: str, key: str, unit: str) -> None:
        click.echo(f"  {label:<12}{results[key]:>14,.0f} / {results[key + '_interpreter']:>12,.0f} {unit}")

    row("1 trial", "cerg_steps_per_s", "steps/s")
    row("  forward", "cerg_forward_only_steps_per_s", "steps/s (forward pass and loss alone)")
    row("10 trials", "cerg_population10_trial_steps_per_s", "trial-steps/s")
    row("100 trials", "cerg_population100_trial_steps_per_s", "trial-steps/s")
    click.echo("timing net (17 weights):")
    row("1 trial", "timing_steps_per_s", "steps/s")
    row("10 trials", "timing_population10_trial_steps_per_s", "trial-steps/s")
    row("100 trials", "timing_population100_trial_steps_per_s", "trial-steps/s")
    click.echo(f"specialised kernels loaded (compiled the first time): CERG net "
               f"{results['cerg_specialised_load_seconds']:.1f} s (one trial), "
               f"{results['cerg_specialised_lanes_load_seconds']:.1f} s (trials side by side); timing net "
               f"{results['timing_specialised_load_seconds']:.1f} s, {results['timing_specialised_lanes_load_seconds']:.1f} s")
    for rule in ("truncated_rtrl", "rtrl"):
        click.echo(f"{rule}: time per step against W (fitted exponent {results[rule + '_exponent']:.2f})")
        for point in results[rule + "_scaling"]:
            click.echo(f"  {point['blocks']:>3} blocks  W = {point['weights']:>6}  "
                       f"{point['seconds_per_step'] * 1e6:>12.2f} us/step")
    click.echo(f"peak memory: {results['peak_memory_mib']:.0f} MiB")
    if results["torch_ratio"] is None:
        click.echo("PyTorch: not installed (pip install torch==2.13.0 to compare)")
    else:
        click.echo(f"PyTorch per-step loop: {results['torch_cerg_steps_per_s']:,.0f} steps/s; "
                   f"lstmgraph is {results['torch_ratio']:.0f} times faster")


def bench_gpu(specs: Path, quick: bool, as_json: bool, progress) -> None:
    """`bench --device cuda`: the GPU figures, or exit 2 where no GPU is present."""
    from lstmgraph.benchmark_gpu import FIGURES, run_gpu_benchmarks
    from lstmgraph.engine.gpu import GpuUnavailable

    try:
        results = run_gpu_benchmarks(specs, quick=quick, progress=progress)
    except GpuUnavailable as error:
        fail(f"bench --device cuda: {error}")
    except SpecError as error:
        report_spec_error_from(error, specs)
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    click.echo(f"{results['device']}, float64, online truncated RTRL, trial-steps/s (a warp / a thread a trial):")
    for net, trials, _ in FIGURES:
        fused = results.get(f"{net}_{trials}_warp_fused")
        click.echo(f"  {net:<7}{trials:>10,} trials  {results[f'{net}_{trials}_warp']:>16,.0f} / "
                   f"{results[f'{net}_{trials}_thread']:>16,.0f}"
                   + (f"  (a warp with fused multiply-adds: {fused:,.0f})" if fused else ""))
