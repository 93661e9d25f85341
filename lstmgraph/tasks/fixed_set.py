"""A fixed training set as a sequence source (1997 Exp. 1: the ERG rows' training strings are
drawn from a set of 256, the full check runs that set and as many test strings)."""

from __future__ import annotations

import hashlib

import numpy as np

from .base import Sequence, Sequences, Task


class FixedSet:
    """A fixed training set as a sequence source: each draw one of its strings, chosen by
    ``rng.integers(len(strings))`` (1997 Exp. 1: training strings drawn from the set)."""

    draws_in_threads = True  # `tasks.base.draws_in_threads`: compiled draws (`draws.picked_rows`)

    def __init__(self, task: Task, strings: list[Sequence]):
        self.strings = strings
        self.n_inputs, self.n_outputs = task.n_inputs, task.n_outputs
        self._rows = None

    def sample(self, rng: np.random.Generator) -> Sequence:
        return self.strings[int(rng.integers(len(self.strings)))]

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        """``count`` strings end to end, picked as ``count`` calls of `sample` pick them, in
        compiled code (`draws.picked_rows`, which the GPU runs too)."""
        from .draws import draw_rows

        return draw_rows(rng, self.stream_rows, count, count * self.stream_rows.longest, self.n_inputs, self.n_outputs)

    @property
    def stream_rows(self):
        """How its strings are picked in place (`draws.StreamRows`): the strings end to end, their
        judged values a second plane where they differ from the targets; each trial's own set."""
        from .draws import StreamRows, picked_rows

        if self._rows is None:
            laid = Sequences.of(self.strings, self.n_inputs, self.n_outputs)
            apart = not np.array_equal(laid.judged, laid.targets, equal_nan=True)
            targets = np.stack([laid.targets, laid.judged][:1 + apart], axis=1)
            starts = np.concatenate([[0], np.cumsum(laid.lengths)]).astype(np.int64)
            digest = hashlib.sha256(b"".join(np.ascontiguousarray(array).tobytes()
                                             for array in (laid.inputs, targets, starts))).hexdigest()
            self._rows = StreamRows(picked_rows, (laid.inputs, targets, starts), int(laid.lengths.min()),
                                    int(laid.lengths.max()), 1 + apart, ("fixed set", digest), (0, 1, 2))
        return self._rows
