"""Where training sequences come from: a built-in task's seeded stream, or an .npz file.

Both sources save and restore their position exactly (the task's random generator state, or
the epoch and index in the file), so a resumed run sees the same data as an uninterrupted one.
An .npz data file holds ``inputs`` (steps, n_inputs), ``targets`` (steps, n_outputs; NaN = no
target) and optionally ``starts``, the step indices where sequences begin (default: one
sequence). Sequences of a file are visited in order, once per epoch.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..arrays import ArrayFileError, numbers, read_npz, sequence_starts
from ..tasks import Sequence, Task


class DataError(Exception):
    """A data file that cannot be used with this network."""


class TaskStream:
    """An endless stream of sequences from a task; ``seed`` fixes it exactly."""

    def __init__(self, task: Task, seed: int):
        self.task = task
        self.continual = task.continual
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 2000]))

    def next(self) -> Sequence | None:
        return self.task.sample(self.rng)

    def state(self) -> str:
        return json.dumps(self.rng.bit_generator.state)

    def restore(self, state: str) -> None:
        self.rng.bit_generator.state = json.loads(state)


class DataFile:
    """The sequences of an .npz file, ``epochs`` times over, in file order; ``digest`` is the
    sha256 of the file's bytes (a run records it: a resume on other data is refused)."""

    continual = False

    def __init__(self, path: str | Path, n_inputs: int, n_outputs: int, epochs: int | None):
        path = Path(path)
        self.path = path
        try:
            arrays = read_npz(path)
        except ArrayFileError as error:
            hint = "" if path.suffix.lower() == ".npz" else (
                "; training data is an .npz archive of 'inputs', 'targets' and optional 'starts', e.g. "
                "numpy.savez(FILE, inputs=X, targets=Y) (docs/spec.md in the lstmgraph source, Data files)")
            raise DataError(f"{error}{hint}") from None
        try:
            self.digest = _sha256(path)
            for key in ("inputs", "targets"):
                if key not in arrays:
                    raise DataError(f"{path}: missing array '{key}' (has: {', '.join(sorted(arrays)) or 'none'})")
            inputs = numbers(path, "'inputs'", arrays["inputs"])
            targets = numbers(path, "'targets'", arrays["targets"], nan="no target")
        except ArrayFileError as error:
            raise DataError(str(error)) from None
        if inputs.ndim == 1 and n_inputs == 1:
            inputs = inputs[:, None]
        if targets.ndim == 1 and n_outputs == 1:
            targets = targets[:, None]
        if inputs.ndim != 2 or inputs.shape[1] != n_inputs:
            raise DataError(f"{path}: 'inputs' has shape {inputs.shape}; the network needs (steps, {n_inputs})")
        if targets.shape != (len(inputs), n_outputs):
            raise DataError(f"{path}: 'targets' has shape {targets.shape}; the network needs "
                            f"({len(inputs)}, {n_outputs}), one row per input step")
        try:
            starts = sequence_starts(path, arrays.get("starts"), len(inputs))
        except ArrayFileError as error:
            raise DataError(str(error)) from None
        bounds = list(starts) + [len(inputs)]
        self.sequences = [Sequence(inputs[a:b], targets[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        self.epochs = epochs
        self.epoch = 0
        self.index = 0

    def next(self) -> Sequence | None:
        if self.index == len(self.sequences):
            self.epoch += 1
            self.index = 0
        if self.epochs is not None and self.epoch >= self.epochs:
            return None
        sequence = self.sequences[self.index]
        self.index += 1
        return sequence

    def state(self) -> str:
        return json.dumps({"epoch": self.epoch, "index": self.index})

    def restore(self, state: str) -> None:
        """Go back to `state`'s place; `ValueError` for a place in no epoch's sequences."""
        position = json.loads(state)
        epoch, index = position["epoch"], position["index"]
        if type(epoch) is not int or type(index) is not int or epoch < 0 or not 0 <= index <= len(self.sequences):
            raise ValueError(f"epoch {epoch!r:.40}, sequence {index!r:.40} of {len(self.sequences)}")
        self.epoch, self.index = epoch, index


def _sha256(path: Path) -> str:
    """The sha256 digest of a file's bytes (read in blocks: it may be large), as hex."""
    try:
        with open(path, "rb") as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError as error:
        raise ArrayFileError(f"{path}: cannot read it ({error.strerror or error})") from None
