"""`lstmgraph train` and `lstmgraph run`."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import click
import numpy as np

import lstmgraph
from lstmgraph.arrays import ArrayFileError, numbers, read_array, write_array
from lstmgraph.engine import Simulator, WeightsError, load_weights, save_weights
from lstmgraph.errors import SpecError
from lstmgraph.files import write_atomically
from lstmgraph.training import (CheckpointError, DataError, EngineError, RunDirectory, RunDirectoryError, Trainer,
                                TrainingDiverged)
from lstmgraph.training.rundir import default_run_path

from .common import SPEC_ARGUMENT, compile_or_exit, fail, report_spec_error

@click.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--data", type=click.Path(dir_okay=False, path_type=Path),
              help="Train on an .npz file (inputs, targets, optional starts) instead of the spec's task.")
@click.option("--steps", type=click.IntRange(min=1), help="Train for this many steps (ends at a sequence boundary).")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over --data (or the spec's data file).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the weights and the data stream.")
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True,
              help="Train this many networks at once (weight seeds seed, seed+1, ...), same data.")
@click.option("--rule", type=click.Choice(["truncated_rtrl", "rtrl", "bptt"]),
              help="Learning rule, overriding the spec's training.learning_rule.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Run directory (default: runs/NAME-YYYYMMDD-HHMMSS).")
@click.option("--resume", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Continue the run in this directory from its last checkpoint (no SPEC then).")
@click.option("--engine", type=click.Choice(["auto", "compiled", "numpy"]),
              help="compiled: the numba interpreter (online RTRL); numpy: the reference engine; "
                   "auto (default): compiled wherever it can train the spec.")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary.")
def train(spec: Path | None, data: Path | None, steps: int | None, epochs: int | None, seed: int | None,
          trials: int, rule: str | None, out: Path | None, resume: Path | None, engine: str | None,
          quiet: bool) -> None:
    """Train SPEC with its training section; write metrics, checkpoints and weights to a run directory."""
    if resume is not None:
        if (spec is not None or any(v is not None for v in (data, steps, epochs, seed, rule, out, engine))
                or trials != 1):
            fail("--resume continues a run as it was started: give no SPEC and no other options but --quiet")
        run_dir = RunDirectory(resume)
        if not run_dir.exists() or not run_dir.checkpoint_path.exists():
            fail(f"{resume} holds no run with a checkpoint to resume")
        try:
            info = run_dir.read_info()
            trials = info["trials"]
            checkpoint = run_dir.load_checkpoint(trials)
        except RunDirectoryError as error:
            fail(str(error))
        plan = compile_or_exit(run_dir.path / "spec.yaml")
        engine = info.get("engine", "numpy")  # runs from before the compiled engine used numpy
    else:
        if spec is None:
            fail("give a SPEC to train, or --resume DIR")
        overrides: dict = {"training": {}, "init": {}}
        if data is not None:
            overrides["training"].update(data=str(data.resolve()), task=None)
        if steps is not None:
            overrides["training"]["steps"] = steps
        if epochs is not None:
            overrides["training"]["epochs"] = epochs
        if rule is not None:
            overrides["training"]["learning_rule"] = rule
            if rule != "bptt":
                overrides["training"]["bptt_window"] = None
        if seed is not None:
            overrides["training"]["seed"] = seed
            overrides["init"]["seed"] = seed
        plan = compile_or_exit(spec, overrides=overrides)
        out = out or default_run_path(plan.name)
        run_dir = RunDirectory(out)
        if run_dir.exists():
            fail(f"{out} already holds a run: continue it with --resume {out}, or choose another --out")
        info = {"lstmgraph": lstmgraph.__version__, "spec": str(spec), "trials": trials}
    try:
        trainer = Trainer(plan, trials, engine=engine or "auto")
    except SpecError as error:
        report_spec_error(spec or run_dir.path / "spec.yaml", error)
    except (DataError, EngineError) as error:
        fail(str(error))
    info["engine"] = trainer.engine
    if not quiet:
        if trainer.engine_note:
            click.echo(f"note: {trainer.engine_note}", err=True)
        if trainer.engine == "compiled" and not trainer.backend.network.compiled_before:
            click.echo("note: compiling the compiled engine (once per installation, about 10-30 s; "
                       f"cached in {trainer.backend.network.cache})", err=True)
    if resume is not None:
        try:
            trainer.restore(checkpoint)
        except CheckpointError as error:
            fail(f"{run_dir.checkpoint_path}: does not fit {run_dir.path / 'spec.yaml'}: {error}")
        try:
            run_dir.cut_metrics(trainer.metric_rows)
        except RunDirectoryError as error:
            fail(str(error))
    else:
        run_dir.create(copy.deepcopy(plan.resolved_spec), info)
    summary = _train_with_progress(trainer, run_dir, quiet)
    save_weights(run_dir.path / "weights.npz", plan, trainer.weights)
    window, first, last = _loss_windows(run_dir)
    report = {"network": plan.name, "steps": summary.steps, "sequences": summary.sequences,
              "stopped_by": summary.stopped_by, "window_sequences": window,
              "first_loss_per_step": first, "last_loss_per_step": last, "trials": trials,
              "engine": trainer.engine, "run_directory": str(run_dir.path)}
    run_dir.write_json("summary.json", report)
    if not quiet:
        click.echo(f"trained {plan.name}: {summary.steps} steps, {summary.sequences} sequences "
                   f"(stopped by {summary.stopped_by}; {trainer.engine} engine)")
        click.echo(f"mean loss per step: first {window} sequences {first:.6g}, last {window} {last:.6g}")
        click.echo(f"run directory: {run_dir.path} (weights.npz, metrics.csv, checkpoint.npz)")


def _train_with_progress(trainer: Trainer, run_dir: RunDirectory, quiet: bool):
    try:
        if quiet or not click.get_text_stream("stderr").isatty():
            return trainer.run(run_dir)  # a progress bar only where someone watches it
        total = trainer.training.steps
        with click.progressbar(length=total or 0, label=f"training {trainer.plan.name}",
                               show_pos=True, file=click.get_text_stream("stderr")) as bar:
            done = [trainer.steps]

            def progress(steps: int, budget: int | None, loss: float) -> None:
                bar.label = f"training {trainer.plan.name}  loss/step {loss:.4g}"
                bar.update(steps - done[0])
                done[0] = steps

            return trainer.run(run_dir, progress)
    except TrainingDiverged as error:
        run_dir.close()
        where = (f"the last good checkpoint is {run_dir.checkpoint_path}"
                 if run_dir.checkpoint_path.exists() else "no checkpoint was written before it")
        fail(f"training diverged: {error}; {where}", code=1)
    finally:
        run_dir.close()


def _loss_windows(run_dir: RunDirectory) -> tuple[int, float, float]:
    """Mean loss per step over the first and the last tenth of the sequences (at most 100)."""
    with open(run_dir.path / "metrics.jsonl", encoding="utf-8") as stream:
        losses = [json.loads(line)["loss_per_step"] for line in stream]
    if not losses:
        return 0, float("nan"), float("nan")
    window = max(1, min(100, len(losses) // 10))
    return window, float(np.mean(losses[:window])), float(np.mean(losses[-window:]))


@click.command()
@SPEC_ARGUMENT
@click.option("--weights", "weights_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Weights .npz (e.g. weights.npz of a run directory).")
@click.option("--inputs", "inputs_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Input sequence of shape (steps, inputs): .npy, .npz (its one array, or the one "
                   "named 'inputs') or .csv (one row per step).")
@click.option("--outputs", "outputs_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the outputs, one row per step, to this .npy or .csv file.")
@click.option("--record", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every unit group's activations per step to this .npz.")
def run(spec: Path, weights_file: Path, inputs_file: Path, outputs_file: Path | None,
        record: Path | None) -> None:
    """Run SPEC forward on an input sequence; print the outputs as CSV (one row per step)."""
    for path, suffixes in ((outputs_file, (".npy", ".csv")), (record, (".npz",))):
        if path is not None and path.suffix.lower() not in suffixes:
            fail(f"{path}: cannot tell the format; expected a file ending in {' or '.join(suffixes)}")
    plan = compile_or_exit(spec)
    sim = Simulator(plan)
    try:
        weights = load_weights(weights_file, plan)
        for name, values in weights.items():
            numbers(weights_file, f"'{name}'", values)
        inputs = numbers(inputs_file, "the inputs", read_array(inputs_file))
    except (WeightsError, ArrayFileError) as error:
        fail(str(error))
    if inputs.ndim == 1 and sim.n_inputs == 1:
        inputs = inputs[:, None]
    if inputs.ndim != 2 or inputs.shape[1] != sim.n_inputs or len(inputs) == 0:
        fail(f"{inputs_file}: inputs have shape {inputs.shape}; the network needs (steps, {sim.n_inputs}) "
             "with at least one step")
    records, _ = sim.run(weights, inputs)
    signals = {name: values[:, 0] if values.shape[1] == 1 else values
               for name, values in sim.signals(records).items()}
    # One row per step: the output groups side by side (trial by trial for a population).
    outputs = np.concatenate([signals[u.name] for u in sim.outputs], axis=-1).reshape(len(inputs), -1)
    for values in outputs:
        click.echo(",".join(f"{v:.10g}" for v in values))
    if outputs_file is not None:
        write_array(outputs_file, outputs)
    if record is not None:
        buffer = io.BytesIO()
        np.savez(buffer, inputs=inputs, **signals)
        write_atomically(record, buffer.getvalue())
        click.echo(f"recorded {len(signals)} unit groups over {len(inputs)} steps to {record}", err=True)
