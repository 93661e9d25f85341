"""A trained net run forward on input sequences, each from all-zero activations (`lstmgraph run`):
the sequences read from a file and checked against the net, and the outputs and every group's
activations per step, as the numpy executor (`Simulator`) computes them. An .npz file's
``starts`` split its steps into sequences, as they do training and held-out data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..arrays import (ArrayFileError, TooManyRows, archive_array, npz_bytes, numbers, read_array, read_npz,
                      sequence_starts, starts_problem)
from ..limits import COUNT_LIMITS_HINT, MAX_RECORD_BYTES
from ..plan import Plan
from .simulator import Simulator
from .weights import Weights, population


#: The arrays a record holds beside the unit groups' activations.
RECORD_ARRAYS = ("inputs", "starts")


@dataclass(frozen=True)
class ForwardRun:
    """``inputs`` (steps, n_inputs); ``outputs`` one row per step, the output groups side by side
    (trial by trial for several networks); ``signals`` every group's activations per step:
    (steps, size) for one network, (steps, trials, size) for several."""

    inputs: np.ndarray
    outputs: np.ndarray
    signals: dict[str, np.ndarray]
    starts: np.ndarray  # the steps where sequences begin, each run from zero activations

    def record_bytes(self) -> bytes:
        """An .npz archive of the inputs, their starts and every group's activations (``run
        --record``); `ValueError` for a group named as one of `RECORD_ARRAYS`, which it would hide."""
        clash = sorted(set(RECORD_ARRAYS) & set(self.signals))
        if clash:
            raise ValueError(f"a unit group named '{clash[0]}' would replace the record's own '{clash[0]}' "
                             "array; rename the group in the spec to record it")
        return npz_bytes({"inputs": self.inputs, "starts": self.starts, **self.signals})


def input_sequences(path: Path, n_inputs: int, max_steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The inputs in ``path`` (.npy, .npz, .csv: `arrays.read_array`) as real, finite (steps,
    ``n_inputs``) values, a 1-D file taken as the steps of a net of one input, and the steps
    where its sequences begin (an .npz's ``starts``; else one sequence); `ArrayFileError` names
    the file and the shape the net needs. ``max_steps`` (`max_input_steps`): a longer file is
    refused as it is read, not once read whole."""
    starts = None
    try:
        if path.suffix.lower() == ".npz":
            arrays = read_npz(path)
            array, starts = archive_array(path, arrays, "inputs", max_steps), arrays.get("starts")
        else:
            array = read_array(path, max_rows=max_steps)
    except TooManyRows as error:
        raise ArrayFileError(f"{error} (steps); a forward run of the network keeps at most "
                             f"{MAX_RECORD_BYTES / 2**30:,.0f} GiB of values ({COUNT_LIMITS_HINT}); give fewer "
                             "steps") from None
    inputs = numbers(path, "the inputs", array)
    if inputs.ndim == 1 and n_inputs == 1:
        inputs = inputs[:, None]
    if inputs.ndim != 2 or inputs.shape[1] != n_inputs or len(inputs) == 0:
        raise ArrayFileError(f"{path}: inputs have shape {inputs.shape}; the network needs (steps, {n_inputs}) "
                             "with at least one step")
    return inputs, sequence_starts(path, starts, len(inputs))


def max_input_steps(plan: Plan, weights: Weights) -> int:
    """The most steps `run_forward` runs ``weights``' networks over (`Simulator.max_record_steps`)."""
    return Simulator(plan).max_record_steps(population(weights))


def run_forward(plan: Plan, weights: Weights, inputs: np.ndarray, starts: np.ndarray | None = None) -> ForwardRun:
    """Every network of ``weights`` run over ``inputs``, each sequence (from each of ``starts``;
    None: one) from zero activations; `LimitError` where the activations kept would exceed the
    record limit (`Simulator.run`)."""
    sim = Simulator(plan)
    starts = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts).ravel()
    problem = starts_problem(starts, len(inputs))
    if problem:
        raise ValueError(problem)
    sim.check_records(len(inputs), population(weights))
    bounds = [*starts.tolist(), len(inputs)]
    records = [record for a, b in zip(bounds[:-1], bounds[1:]) for record in sim.run(weights, inputs[a:b])[0]]
    signals = {name: values[:, 0] if values.shape[1] == 1 else values
               for name, values in sim.signals(records).items()}
    outputs = np.concatenate([signals[unit.name] for unit in sim.outputs], axis=-1).reshape(len(inputs), -1)
    return ForwardRun(inputs, outputs, signals, starts)
