"""`lstmgraph evaluate`: a trained run judged on fresh sequences of its task, or on held-out data."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import click

from lstmgraph.errors import SpecError
from lstmgraph.success import FALLBACK_TEST, SUCCESS_TESTS, SuccessTest
from lstmgraph.experiments.evaluate import Evaluation, EvaluationError, evaluate_run
from lstmgraph.training import RunDirectory
from lstmgraph.training.trained import TrainedRunError, describe_data
from lstmgraph import limits

from .common import fail, report_spec_error


@click.command(short_help="Judge a trained run on fresh sequences or held-out data.")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--sequences", metavar="N", type=click.IntRange(min=1, max=limits.MAX_EVALUATION_SEQUENCES), default=1000,
              show_default=True,
              help="Fresh sequences of the run's task to judge (a data file: at most one pass).")
@click.option("--seed", metavar="N", type=click.IntRange(min=0, max=limits.MAX_SEED), default=0, show_default=True,
              help="Seed of the fresh sequences.")
@click.option("--data", type=click.Path(dir_okay=False, path_type=Path),
              help="Judge the sequences of this .npz file (held-out data in the training data format: "
                   "inputs, targets, optional starts) instead of the run's task or training data.")
@click.option("--tolerance", metavar="X", type=click.FloatRange(min=0, min_open=True, max=1e300),
              help="Judge every output within X of its target, instead of by the task's test "
                   "(data with no task behind it: within 0.49).")
@click.option("--success", "success_name", type=click.Choice(sorted(SUCCESS_TESTS)),
              help="Judge by this test instead of the task's: most_active for a classifier's one-hot targets "
                   "(its largest output the target's); tolerance with --tolerance X (0.49 without).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
def evaluate(run_dir: Path, sequences: int, seed: int, data: Path | None, tolerance: float | None,
             success_name: str | None, as_json: bool) -> None:
    """Judge a trained run (lstmgraph train, or a reproduce trial) on fresh sequences of its task,
    or on held-out data (--data).

    Prints, per network: sequences correct by the task's success test (a reproduce trial: its
    row's, as OUT/experiment.json records it), the mean squared error per output and over all,
    the loss per step and, for a continual task, the sequences and steps before the first error
    (the 2000/2002 papers' test-stream figure).
    """
    if success_name == "most_active" and tolerance is not None:
        fail("--tolerance is for --success tolerance, not most_active; give one of them")
    test = SuccessTest("most_active") if success_name == "most_active" else None
    if success_name == "tolerance" or tolerance is not None:
        try:
            test = SuccessTest("tolerance", FALLBACK_TEST.tolerance if tolerance is None else tolerance)
        except ValueError as error:  # (a tolerance of NaN passes click's range)
            fail(f"--tolerance: {error}")
    try:
        with click.progressbar(length=sequences, label="judging", file=sys.stderr,
                               show_pos=True) if sys.stderr.isatty() and not as_json else nullcontext() as bar:
            result = evaluate_run(run_dir, sequences, seed, data,
                                  None if bar is None else lambda report: bar.update(report.done - bar.pos), test)
    except (TrainedRunError, EvaluationError) as error:
        fail(str(error))
    except SpecError as error:
        report_spec_error(run_dir / RunDirectory.SPEC, error)
    click.echo(json.dumps(result.as_dict(), indent=2) if as_json else _table(result))


def _table(result: Evaluation) -> str:
    finished = result.weights_file == RunDirectory.WEIGHTS
    unfinished = "" if finished else f" (unfinished: weights of {result.weights_file})"
    lines = [f"{result.run}: {result.network}, {result.steps_trained} steps trained" + unfinished,
             describe_data(result.data, result.source, result.seed, result.sequences, "sequences")
             + f", {result.steps} steps, "
             + ("activations reset before each" if result.reset else "one stream from zero activations, no reset"),
             f"success test: {result.success_test.describe()}", ""]
    if result.data == "training data":
        lines.insert(2, "note: these are the sequences the run trained on; judge held-out data with --data FILE")
    continual = result.trials[0].sequences_before_error is not None
    header = ["trial", "correct", "wrong", "% correct", "mse", "loss/step"]
    header += ["sequences before error", "steps before error"] if continual else []
    rows = []
    for trial in result.trials:
        row = [str(trial.trial), str(trial.correct), str(trial.wrong), f"{100 * trial.fraction_correct:.1f}",
               f"{trial.mse:.4g}", f"{trial.loss_per_step:.4g}"]
        rows.append(row + ([str(trial.sequences_before_error), str(trial.steps_before_error)] if continual else []))
    lines += _aligned(header, rows) + ["", "mean squared error per output:"]
    outputs = list(result.trials[0].mse_per_output)
    lines += _aligned(["output", *(f"trial {t.trial}" for t in result.trials)],
                      [[name, *(f"{t.mse_per_output[name]:.4g}" for t in result.trials)] for name in outputs])
    return "\n".join(lines)


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    """Right-aligned columns (the first left-aligned), two spaces apart."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    return ["  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                      for i, (cell, width) in enumerate(zip(row, widths))) for row in [header, *rows]]
