"""`lstmgraph plot`: learning curves and internal-state traces of training runs."""

from __future__ import annotations

from pathlib import Path

import click

from lstmgraph.errors import SpecError
from lstmgraph import limits

from .common import fail, report_spec_error_from


@click.command(short_help="Draw runs' learning curves and cell states, gates, outputs.")
@click.argument("run_dirs", nargs=-1, required=True, metavar="RUN_DIR...", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="File to write: .png, .svg or .pdf (default: RUN_DIR/plots.png of the first run).")
@click.option("--steps", metavar="N",
              type=click.IntRange(min=1, max=limits.MAX_TRACE_STEPS), default=200, show_default=True,
              help="Fresh steps of the run's task to trace.")
@click.option("--seed", metavar="N", type=click.IntRange(min=0, max=limits.MAX_SEED), default=0, show_default=True,
              help="Seed of the traced data.")
@click.option("--units", metavar="PANEL[,PANEL...]",
              help="Trace panels, top to bottom: cell_state, input_gate, forget_gate, output_gate, "
                   "cell_input, squashed_state, cell_output, gate, hidden, input, output, or unit "
                   "group names (default: the cells' states and gates, gate and hidden groups, outputs).")
@click.option("--data", type=click.Path(dir_okay=False, path_type=Path),
              help="Trace the sequences of this .npz file (held-out data in the training data format: "
                   "inputs, targets, optional starts) instead of the run's task or training data.")
@click.option("--trial", metavar="N",
              type=click.IntRange(min=0, max=limits.MAX_TRIALS - 1), default=0, show_default=True,
              help="Which network of a population to trace.")
@click.option("--x", "curve_x", type=click.Choice(["step", "sequence"]), default="step", show_default=True,
              help="The learning curve's x axis.")
@click.option("--loss", type=click.Choice(["per_step", "per_sequence"]), default="per_step",
              show_default=True,
              help="The learning curve's y axis: mean loss per step, or summed per sequence.")
@click.option("--dpi", metavar="N", type=click.IntRange(min=20, max=600), default=100, show_default=True,
              help="Resolution of a .png.")
@click.option("--quiet", is_flag=True, help="Print nothing but errors.")
def plot(run_dirs: tuple[Path, ...], output: Path | None, steps: int, seed: int, units: str | None,
         data: Path | None, trial: int, curve_x: str, loss: str, dpi: int, quiet: bool) -> None:
    """Draw runs' learning curves and, on fresh steps of their task (or held-out data, --data),
    cell states, gates and outputs, one panel per gate or hidden group.

    Several RUN_DIRS are drawn side by side, one column each.
    """
    from lstmgraph.render.plots import plot_runs  # the engine and training
    from lstmgraph.training import RunDirectory
    from lstmgraph.training.trained import TrainedRunError

    panels = [name.strip() for name in units.split(",") if name.strip()] if units is not None else None
    if panels is not None and not panels:
        raise click.BadParameter("name at least one panel", param_hint="'--units'")
    try:
        written, lines = plot_runs(run_dirs, output, steps, seed, panels, trial, curve_x,
                                   loss == "per_step", dpi, data)
    except TrainedRunError as error:  # a PlotError too
        fail(str(error))
    except SpecError as error:
        report_spec_error_from(error, run_dirs[0] / RunDirectory.SPEC)
    except ImportError as error:
        fail(f"cannot draw without matplotlib ({error}); install it: pip install matplotlib", code=1)
    # A figure that cannot be written is an `OutputError`: exit 2 naming the file, as for every command.
    if not quiet:
        for line in lines:
            click.echo(line)
        click.echo(f"wrote {written}")

