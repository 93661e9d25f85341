"""1997 Exp. 4 (adding) and Exp. 5 (multiplication): remember two marked real values.

Each step is a pair (value, marker). Positions below are 0-based array indices.

- length L uniform integer in [T, T + T//10] (both ends included);
- the first mark at a uniform position among the first 10 pairs (indices 0..9);
- the second mark at a uniform position among the first T//2 - 1 pairs (indices
  0..T//2-2) other than the first mark;
- markers: 1 at the two marked pairs, -1 at the first and the last pair unless marked (the
  last pair never is), 0 elsewhere;
- if the first pair (index 0) is marked, its value is replaced by the neutral element of the
  operation: 0 for adding, 1.0 for multiplication (the 1997 text: "we set X1 to zero / to
  1.0"); the input carries the replaced value, so the target can be recomputed from inputs;
- target only at the last step (NaN elsewhere): adding 0.5 + (X1 + X2)/4, in [0, 1];
  multiplication X1 * X2.
"""

from __future__ import annotations

import numpy as np

from ..errors import shown
from ..success import SuccessTest
from .base import Sequence, Sequences, register

FIRST_WINDOW = 10


class _MarkedPairs:
    n_inputs = 2
    n_outputs = 1
    continual = False
    draws_in_threads = True  # `base.draws_in_threads`: compiled draws (`draws.marked_pairs_rows`)
    low: float
    high: float
    neutral: float
    adding: bool  # the target: 0.5 + (X1 + X2) / 4, else X1 * X2

    def __init__(self, length: int = 100) -> None:
        if isinstance(length, bool) or not isinstance(length, int) or length < 2 * FIRST_WINDOW:
            raise ValueError(f"length (the minimal sequence length T) must be an integer >= "
                             f"{2 * FIRST_WINDOW}, got {shown(length)}")
        self.length = length

    def combine(self, x1: float, x2: float) -> float:
        raise NotImplementedError

    def sample(self, rng: np.random.Generator) -> Sequence:
        T = self.length
        L = int(rng.integers(T, T + T // 10, endpoint=True))
        first = int(rng.integers(FIRST_WINDOW))
        # The second mark: the j-th of the pairs 0..T//2-2 other than the first (a draw among
        # as many as there are, as a list of them would be indexed; 1.6x faster, the same data).
        skip = first < T // 2 - 1
        second = int(rng.integers(T // 2 - 1 - skip))
        second += skip and second >= first
        values = rng.uniform(self.low, self.high, L)
        if first == 0 or second == 0:
            values[0] = self.neutral
        inputs = np.zeros((L, 2))
        inputs[:, 0] = values
        inputs[0, 1] = inputs[L - 1, 1] = -1.0
        inputs[first, 1] = inputs[second, 1] = 1.0
        targets = np.full((L, 1), np.nan)
        targets[L - 1, 0] = self.combine(float(values[first]), float(values[second]))
        return Sequence(inputs, targets)

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        """``count`` sequences end to end, drawn and coded as ``count`` calls of `sample`, in
        compiled code (`draws.marked_pairs_rows`, which the GPU runs too)."""
        from .draws import draw_rows

        return draw_rows(rng, self.stream_rows, count, count * (self.length + self.length // 10),
                         self.n_inputs, self.n_outputs)

    @property
    def stream_rows(self):
        """How its sequences are drawn in place (`draws.StreamRows`): the GPU's draws."""
        from .draws import StreamRows, marked_pairs_rows

        arguments = (self.length, FIRST_WINDOW, self.low, self.high - self.low, self.neutral, self.adding)
        return StreamRows(marked_pairs_rows, arguments, self.length, self.length + self.length // 10, 1,
                          (self.name, self.length))


@register("adding")
class Adding(_MarkedPairs):
    """1997 Exp. 4, the adding problem: values in [-1, 1], target 0.5 + (X1 + X2) / 4 at
    the last step. ``length`` is the minimal sequence length T (paper: 100, 500, 1000)."""

    name = "adding"
    #: 1997 Exp. 4: the absolute error at the sequence end below 0.04.
    success_test = SuccessTest("tolerance", 0.04)
    low, high, neutral, adding = -1.0, 1.0, 0.0, True

    def combine(self, x1: float, x2: float) -> float:
        return 0.5 + (x1 + x2) / 4.0


@register("multiplication")
class Multiplication(_MarkedPairs):
    """1997 Exp. 5, the multiplication problem: values in [0, 1], target X1 * X2 at the
    last step. ``length`` is the minimal sequence length T (paper: 100)."""

    name = "multiplication"
    #: 1997 Exp. 5: as the adding problem.
    success_test = SuccessTest("tolerance", 0.04)
    low, high, neutral, adding = 0.0, 1.0, 1.0, False

    def combine(self, x1: float, x2: float) -> float:
        return x1 * x2
