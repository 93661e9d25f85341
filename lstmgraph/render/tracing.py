"""A trained network run forward to be drawn: `trace_run` runs a run's weights (every trial)
with the numpy engine on fresh steps of the run's own task, on its training data file, or on a
held-out data file (`sequence_source`), keeping every step's values as a `Trace`; `describe`
says in one line what a trace shows. `PlotError` is the plots' error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.simulator import Simulator
from ..limits import MAX_SEED, MAX_STEPS, LimitError, check_count
from ..tasks import Sequence as TaskSequence
from ..training.trained import (DataKind, SequenceSource, TrainedRun, TrainedRunError, describe_data,
                                sequence_source)
from ..training.rundir import RunDirectory
from ..training.trainer import training_section


class PlotError(TrainedRunError):
    """A request that does not fit the runs (steps, panels, trial) or a figure that cannot be
    written; a run that cannot be read is the `TrainedRunError` of `load_run`."""


@dataclass(frozen=True)
class Trace:
    """The trained network run forward on fresh data; every array has a trial axis."""

    inputs: np.ndarray                # (T, n_inputs)
    targets: np.ndarray               # (T, n_outputs), NaN where there is no target
    signals: dict[str, np.ndarray]    # unit group (inputs included) -> (T, trials, size)
    loss: np.ndarray                  # (T, trials) loss of each step
    starts: tuple[int, ...]           # first step of each sequence
    reset: bool                       # activations set to zero at each start (else only at 0)
    seed: int
    source: str                       # task name, or the data file's name
    input_symbols: tuple[str, ...] | None = None   # the task's names of its input units
    output_symbols: tuple[str, ...] | None = None  # and of its output units (all output groups)
    kind: DataKind = "task"           # which data the source is (`describe_data`)

    @property
    def steps(self) -> int:
        return len(self.inputs)

    @property
    def judged(self) -> bool:
        """Whether any traced step has a target: a loss of 0 over none would look perfect."""
        return bool(np.isfinite(self.targets).any())


def trace_run(run: TrainedRun, steps: int = 200, seed: int = 0, data: str | Path | None = None) -> Trace:
    """Run the trained weights (every trial) over ``steps`` steps of the run's data, or of the
    data file ``data`` (held-out data in the training data format, lstmgraph/training/data.py).

    A task's sequences are drawn from ``numpy.random.default_rng(seed)``, laid end to end as
    `lstmgraph.tasks.concatenated` does (a stream other than the training stream, which is
    seeded with ``[seed, 2000]``); a data file's sequences are taken from its start, in order.
    Activations start at zero and are reset at each sequence as in training (the spec's
    ``reset``, else only for tasks that are not continual).
    """
    if not isinstance(run, TrainedRun):
        raise TypeError(f"trace_run takes a TrainedRun, not a {type(run).__name__}: trace_run(load_run(path), ...)")
    try:
        check_count("steps", steps, MAX_STEPS)
        check_count("seed", seed, MAX_SEED, minimum=0)
    except LimitError as error:
        raise PlotError(str(error)) from None
    training = training_section(run.plan)
    sim = Simulator(run.plan)
    try:
        sim.check_records(steps, run.trials)  # before drawing: every step's values are kept
    except LimitError as error:
        raise PlotError(f"{run.path}: {error}") from None
    sequences, origin = _fresh_sequences(run, sim, steps, seed, data)
    continual = origin.continual
    reset = training.reset == "sequence" if training.reset else not continual
    state, records, losses, starts, done = None, [], [], [], 0
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging net is drawn, not refused
        for sequence in sequences:
            if reset or state is None:
                state = sim.zero_state(run.trials)
            part, state = sim.run(run.weights, sequence.inputs, state)
            for record, target in zip(part, sequence.targets):
                losses.append(sim.loss(record, target, training.loss))
            records.extend(part)
            starts.append(done)
            done += len(sequence)
    inputs = np.concatenate([s.inputs for s in sequences])
    targets = np.concatenate([s.targets for s in sequences])
    signals = {unit.name: np.stack([r.y[unit.name] for r in records]) for unit in sim.inputs}
    signals.update(sim.signals(records))
    return Trace(inputs, targets, signals, np.array(losses), tuple(starts), reset, seed, origin.source,
                 *origin.symbols, kind=origin.kind)


def _fresh_sequences(run: TrainedRun, sim: Simulator, steps: int, seed: int, data: str | Path | None = None
                     ) -> tuple[list[TaskSequence], SequenceSource]:
    """Sequences of the run's task or data file (or ``data``), cut to ``steps`` steps in all,
    and where they come from."""
    origin = sequence_source(run, sim, seed, data=data)
    sequences, count = [], 0
    while count < steps:
        sequence = origin.draw()
        keep = min(len(sequence), steps - count)
        if keep < len(sequence):
            sequence = TaskSequence(sequence.inputs[:keep], sequence.targets[:keep])
        sequences.append(sequence)
        count += keep
    return sequences, origin


def describe(run: TrainedRun, trace: Trace, trial: int = 0) -> str:
    """One line on what the trace shows: the loss and the range of the cell states."""
    states = [trace.signals[u.name][:, trial] for u in run.plan.units if u.role == "state"]
    text = (f"{run.path}: {run.plan.name}, {run.steps_trained} steps trained, trial {run.trial_number(trial)}; "
            + describe_data(trace.kind, trace.source, trace.seed, trace.steps, "steps")
            + (f": loss per step {float(np.mean(trace.loss[:, trial])):.4g}" if trace.judged
               else ": no targets in these steps, so no loss (more --steps reach them)"))
    if states:
        values = np.concatenate(states, axis=1)
        text += f", cell states in [{np.min(values):.3g}, {np.max(values):.3g}]"
    if run.weights_file != RunDirectory.WEIGHTS:
        text += f" (unfinished run: weights of {run.weights_file})"
    return text

