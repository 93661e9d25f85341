"""Where training sequences come from: a built-in task's seeded stream, or an .npz file.

Both sources save and restore their position exactly (the task's random generator state, or
the epoch and index in the file), so a resumed run sees the same data as an uninterrupted one.
A data file (its format: `tasks.data_file`) is visited in order, once per epoch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..tasks import Sequence, Task
from ..tasks.data_file import DataError, DataFileTask, read_data_file

__all__ = ["DataError", "DataFile", "TaskStream"]


class TaskStream:
    """An endless stream of sequences from a task; ``seed`` fixes it exactly."""

    def __init__(self, task: Task, seed: int):
        self.task = task
        self.continual = task.continual
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 2000]))

    def next(self) -> Sequence | None:
        return self.task.sample(self.rng)

    @property
    def digest(self) -> str | None:
        """The sha256 of the task's data file (the ``data_file`` task's), which run.json records."""
        return self.task.sha256 if isinstance(self.task, DataFileTask) else None

    @property
    def path(self) -> str | None:
        return self.task.path if isinstance(self.task, DataFileTask) else None

    def state(self) -> str:
        return json.dumps(self.rng.bit_generator.state)

    def restore(self, state: str) -> None:
        self.rng.bit_generator.state = json.loads(state)


class DataFile:
    """The sequences of an .npz file, ``epochs`` times over, in file order; ``digest`` is the
    sha256 of the file's bytes (a run records it: a resume on other data is refused)."""

    continual = False

    def __init__(self, path: str | Path, n_inputs: int, n_outputs: int, epochs: int | None):
        self.path = Path(path)
        self.sequences, self.digest = read_data_file(self.path, n_inputs, n_outputs)
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

