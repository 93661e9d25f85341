"""`lstmgraph train` and `lstmgraph run`."""

from __future__ import annotations

import json
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import click

from lstmgraph import Overrides
from lstmgraph.arrays import ArrayFileError, write_array
from lstmgraph.engine import WeightsError, load_weights
from lstmgraph.engine.forward import input_sequences, max_input_steps, run_forward
from lstmgraph.bundled import bundled_spec
from lstmgraph.engine.devices import DEVICES
from lstmgraph.experiments.stops import stopped_by_signals
from lstmgraph.errors import SpecError
from lstmgraph.files import OutputError, replaces, write_atomically
from lstmgraph.layouts import check_not_own_file
from lstmgraph.progress import Progress, ProgressReport
from lstmgraph.limits import MAX_EPOCHS, MAX_SEED, MAX_STEPS, MAX_TRIALS
from lstmgraph.spec.models import LEARNING_RULES
from lstmgraph.training import (ENGINES, DataError, EngineError, LimitError, RunDirectory, RunDirectoryError,
                                RunExists, TrainingDiverged, TrainingRun, resume_run, start_run)
from lstmgraph.training.trained import TrainedRunError, load_run

from .common import compile_or_exit, counted, fail, report_spec_error

@click.command(short_help="Train SPEC, writing metrics and weights to a run directory.")
@click.argument("spec", required=False, type=click.Path(path_type=Path))
@click.option("--data", type=click.Path(dir_okay=False, path_type=Path),
              help="Train on an .npz file (inputs, targets, optional starts) instead of the spec's task.")
@click.option("--steps", metavar="N", type=click.IntRange(min=1, max=MAX_STEPS),
              help="Train for this many steps, ending at a sequence boundary (default: training.steps).")
@click.option("--epochs", metavar="N", type=click.IntRange(min=1, max=MAX_EPOCHS),
              help="Passes over --data or the spec's data file (default: training.epochs).")
@click.option("--seed", metavar="N", type=click.IntRange(min=0, max=MAX_SEED),
              help="Seed of the weights and the data stream (default: init.seed, training.seed).")
@click.option("--trials", metavar="N", type=click.IntRange(min=1, max=MAX_TRIALS), default=1, show_default=True,
              help="Train this many networks at once (weight seeds seed, seed+1, ...), same data.")
@click.option("--rule", type=click.Choice(LEARNING_RULES),
              help="Learning rule, overriding the spec's training.learning_rule.")
@click.option("--learning-rate", metavar="X", type=float,
              help="Learning rate, overriding the spec's training.learning_rate.")
@click.option("--out", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Run directory (default: runs/NAME-YYYYMMDD-HHMMSS).")
@click.option("--resume", metavar="DIR", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Continue the run in this directory from its last checkpoint (no SPEC then).")
@click.option("--engine", type=click.Choice(ENGINES),
              help="compiled: the numba interpreter (online RTRL); numpy: the reference engine; "
                   "auto (default): compiled wherever it can train the spec.")
@click.option("--device", type=click.Choice(DEVICES),
              help="cuda: train the --trials networks on this machine's GPU with the compiled engine "
                   "(docs/gpu.md in the lstmgraph source); cpu (default): on this machine's cores.")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary (the run directory's summary.json) as one JSON object; no progress bar.")
def train(spec: Path | None, data: Path | None, steps: int | None, epochs: int | None, seed: int | None,
          trials: int, rule: str | None, learning_rate: float | None, out: Path | None, resume: Path | None, engine: str | None,
          device: str | None, quiet: bool, as_json: bool) -> None:
    """Train SPEC with its training section; write metrics, checkpoints and weights to a run directory."""
    # lstmgraph.training.run does the work (docs/api.md, "Training"); this parses, reports, prints.
    if resume is not None:
        if (spec is not None or any(v is not None for v in (data, steps, epochs, seed, rule, learning_rate, out, engine, device))
                or trials != 1):
            fail("--resume continues a run as it was started: give no SPEC and no other options but --quiet "
                 "and --json")
        spec = resume / RunDirectory.SPEC
    elif spec is None:
        fail("give a SPEC to train, or --resume DIR")
    else:
        plan = compile_or_exit(spec, overrides=Overrides(steps, epochs, seed, rule, data, learning_rate))
    try:
        run = resume_run(resume) if resume is not None else start_run(plan, out, trials, engine or "auto", spec,
                                                                               device or "cpu")
    except RunExists as error:
        fail(_exists(error))
    except SpecError as error:
        report_spec_error(spec, error)
    except (RunDirectoryError, DataError, EngineError, LimitError) as error:
        fail(str(error))
    except OutputError as error:  # the lock of a run to resume, on a full or read-only disk
        fail(f"{error}; once it can be written, run lstmgraph train --resume {resume} again" if resume is not None
             else str(error))
    if not quiet:
        for note in run.notes:
            click.echo(f"note: {note}", err=True)
    try:
        run.open()
    except RunExists as error:  # appeared since start_run looked
        run.close()
        fail(_exists(error))
    except RunDirectoryError as error:
        run.close()
        fail(str(error))
    except OutputError as error:  # a full or read-only disk: nothing written is lost
        run.close()
        fail(f"{error}; once it can be written, {_continuation(run)}")
    try:
        with stopped_by_signals(), _progress_bar(run, quiet or as_json) as progress:  # (SIGTERM as Ctrl-C)
            summary = run.train(progress)
    except RunDirectoryError as error:  # metrics.jsonl damaged while training
        fail(str(error))
    except LimitError as error:  # (a buffer the run's data needs, found when its first sequence is drawn)
        fail(f"{error}; the run directory {run.path} keeps what was written")
    except OutputError as error:
        fail(f"{error}; once it can be written, {_continuation(run)}")
    except TrainingDiverged as error:
        where = (f"the last good checkpoint is {run.directory.checkpoint_path}"
                 if run.directory.checkpoint_path.exists() else "no checkpoint was written before it")
        fail(f"training diverged: {error}; {where}", code=1)
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM, SIGHUP: the run's files are whole (written atomically)
        click.echo(f"\ninterrupted: {_continuation(run)}", err=True)
        sys.exit(128 + getattr(stop, "signal_number", signal.SIGINT))
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
    elif not quiet:
        where = f" on {run.trainer.device}" if run.trainer.device != "cpu" else ""
        click.echo(f"trained {summary.network}: {summary.steps} steps, {counted(summary.sequences, 'sequence')} "
                   f"(stopped by {summary.stopped_by}; {summary.engine} engine{where})")
        window = summary.window_sequences
        first, last = ("first sequence", "last") if window == 1 else (f"first {window} sequences", f"last {window}")
        click.echo(f"mean loss per step: {first} {summary.first_loss_per_step:.6g}, "
                   f"{last} {summary.last_loss_per_step:.6g}")
        click.echo(f"run directory: {summary.run_directory} (weights.npz, metrics.csv, checkpoint.npz)")
        click.echo(f"judge it: lstmgraph evaluate {summary.run_directory}")


def _exists(error: RunExists) -> str:
    """What to do about an --out that holds a run: resume it, or choose another."""
    return f"{error.path} already holds a run: continue it with --resume {error.path}, or choose another --out"


def _continuation(run: TrainingRun) -> str:
    """How to go on with a run that stopped: from its checkpoint, from step 0 where its files hold
    none yet, or with the same command where a new run removed what it created."""
    path = run.directory.path
    if run.directory.checkpoint_path.exists():
        return f"continue from its last checkpoint with lstmgraph train --resume {path}"
    if run.directory.exists():
        return f"start it again from step 0 with lstmgraph train --resume {path} (no checkpoint was written)"
    return "start it again with the same command (no checkpoint was written)"


#: Where standard error is a file (a log), a line at each tenth of the run's steps.
LOG_LINES = 10


@contextmanager
def _progress_bar(run: TrainingRun, quiet: bool) -> Iterator[Progress | None]:
    """A progress bar on standard error, fed by the run's `ProgressReport`s, where someone
    watches it; where it goes to a file, a line at each tenth of the steps instead."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():
        steps = run.trainer.training.steps
        shown = [run.trainer.steps * LOG_LINES // steps if steps else 0]

        def log(report: ProgressReport) -> None:  # (a run by epochs: its total is not known)
            tenth = report.done * LOG_LINES // steps if steps else 0
            if tenth > shown[0]:
                shown[0] = tenth
                click.echo(f"training {report.describe()}", err=True)
        yield log if steps else None
        return
    with click.progressbar(length=run.trainer.training.steps or 0, label=f"training {run.plan.name}",
                           show_pos=True, file=sys.stderr) as bar:
        done = [run.trainer.steps]

        def progress(report: ProgressReport) -> None:
            bar.label = f"training {report.label}  loss/step {report.figures['loss_per_step']:.4g}"
            bar.update(report.done - done[0])
            done[0] = report.done

        yield progress


@click.command(short_help="Run a trained net forward on inputs; print its outputs.")
@click.argument("spec", metavar="RUN_DIR|SPEC", type=click.Path(path_type=Path))
@click.option("--weights", "weights_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Weights .npz (e.g. weights.npz of a run directory); a RUN_DIR's own by default.")
@click.option("--inputs", "inputs_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Input sequence of shape (steps, inputs): .npy, .npz (its one array, or the one "
                   "named 'inputs', and its 'starts' if any) or .csv (one row per step).")
@click.option("--outputs", "outputs_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the outputs, one row per step, to this .npy or .csv file.")
@click.option("--record", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every unit group's activations per step to this .npz.")
def run(spec: Path, weights_file: Path | None, inputs_file: Path, outputs_file: Path | None,
        record: Path | None) -> None:
    """Run a trained net forward on an input sequence from zero activations; print the outputs
    as CSV (one row per step). An .npz's 'starts' (as in training data) split it into
    sequences, each run from zero activations. RUN_DIR is a run directory (train --out, or a reproduce trial's
    OUT/trials/SEED): its spec and its weights. SPEC is a spec file or a bundled spec's name,
    given with --weights."""
    for path, suffixes in ((outputs_file, (".npy", ".csv")), (record, (".npz",))):
        if path is not None and path.suffix.lower() not in suffixes:
            fail(f"{path}: cannot tell the format; expected a file ending in {' or '.join(suffixes)}")
    for option, path in (("--outputs", outputs_file), ("--record", record)):
        for source, read in (("--inputs", inputs_file), ("--weights", weights_file)):
            if path is not None and read is not None and replaces(path, read):
                fail(f"{path}: {option} names the {source} file, which it would overwrite; choose another file")
        if path is not None:
            check_not_own_file(path)
    bundled = bundled_spec(str(spec)) is not None
    if (spec.is_dir() and ((spec / RunDirectory.SPEC).is_file() or not bundled)  # a run directory
            or weights_file is None and not bundled and not spec.exists()):  # (load_run: no such run directory)
        try:
            trained = load_run(spec)
        except TrainedRunError as error:
            fail(str(error))
        except SpecError as error:
            report_spec_error(spec / RunDirectory.SPEC, error)
        plan, weights = trained.plan, trained.weights
    elif weights_file is None:
        if spec.is_dir():
            fail(f"{spec}: a folder with no spec.yaml (not a run directory), and the bundled spec '{spec}' runs "
                 "with --weights; give a run directory, or the spec with its --weights")
        fail(f"{spec}: give its --weights, or a run directory (which holds its spec and weights) instead of a spec")
    else:  # (its task's data file is not needed to run the net forward)
        plan = compile_or_exit(spec, data_files=False)
    try:
        if weights_file is not None:
            weights = load_weights(weights_file, plan)
        forward = run_forward(plan, weights, *input_sequences(inputs_file, plan.n_inputs,
                                                              max_input_steps(plan, weights)))
    except (WeightsError, ArrayFileError) as error:
        fail(str(error))
    except LimitError as error:
        fail(f"{inputs_file}: {error}")
    try:
        recorded = forward.record_bytes() if record is not None else None
    except ValueError as error:  # a group named as one of the record's own arrays
        fail(f"{record}: {error}")
    if outputs_file is not None:  # the files first: a disk that refuses one ends the command before it prints
        write_array(outputs_file, forward.outputs)
    if recorded is not None:
        write_atomically(record, recorded)
    for values in forward.outputs:
        click.echo(",".join(f"{v:.10g}" for v in values))
    if record is not None:
        sequences = f" ({len(forward.starts)} sequences)" if len(forward.starts) > 1 else ""
        click.echo(f"recorded {len(forward.signals)} unit groups over {len(forward.inputs)} steps{sequences} to {record}",
                   err=True)
