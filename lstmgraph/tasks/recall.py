"""A small synthetic classification task for the modern LSTM / GRU / RNN specs.

Not from the papers. Inputs are one-hot over ``n_inputs`` symbols; the first symbol is one of
the first ``n_classes`` symbols (uniform) and is the class; the other ``length - 1`` symbols are
uniform over all ``n_inputs`` symbols. Target only at the last step (NaN elsewhere): one-hot
of the class over ``n_classes`` outputs. The net must carry the first symbol to the end.
"""

from __future__ import annotations

import numpy as np

from ..errors import shown
from ..success import SuccessTest
from .base import Sequence, register


@register("recall_first")
class RecallFirst:
    """Recall the first symbol at the end. Options: ``n_inputs`` (4), ``n_classes`` (3,
    at most n_inputs), ``length`` (8, at least 1)."""

    name = "recall_first"
    #: A classifier: the class's output the most active.
    success_test = SuccessTest("most_active")
    continual = False

    def __init__(self, n_inputs: int = 4, n_classes: int = 3, length: int = 8) -> None:
        for option, value, least in (("n_inputs", n_inputs, 1), ("n_classes", n_classes, 1),
                                     ("length", length, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{option} must be an integer >= {least}, got {shown(value)}")
        if n_classes > n_inputs:
            raise ValueError(f"n_classes ({n_classes}) cannot exceed n_inputs ({n_inputs})")
        self.n_inputs = n_inputs
        self.n_outputs = n_classes
        self.n_classes = n_classes
        self.length = length
        self.longest = length  # (every sequence is this long: the drivers' size checks read it)

    def sample(self, rng: np.random.Generator) -> Sequence:
        label = int(rng.integers(self.n_classes))
        codes = np.concatenate([[label], rng.integers(self.n_inputs, size=self.length - 1)])
        inputs = np.zeros((self.length, self.n_inputs))
        inputs[np.arange(self.length), codes] = 1.0
        targets = np.full((self.length, self.n_classes), np.nan)
        targets[-1] = 0.0
        targets[-1, label] = 1.0
        return Sequence(inputs, targets)
