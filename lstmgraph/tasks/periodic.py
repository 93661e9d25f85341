"""Gers et al. 2002, periodic function generation (PFG): produce a wave with no input.

The timing network has one input unit; PFG gives it nothing, so the input is always 0.
With step t = 1, 2, ... (the papers' step numbering) and m = t mod F:

- cosine:    f(t) = (1 - cos(2 pi t / F)) / 2
- triangle:  f(t) = 2 m / F if m <= F/2, else 2 - 2 m / F      (0 at m = 0, 1 at m = F/2)
- rectangle: f(t) = 1 if m > F/2, else 0

all in [0, 1] with period F (seed 002). The triangle is the seed's formula with its two
branches swapped: as printed (2m/F if m > F/2, else 2 - 2m/F) it is a triangle on [1, 2]
with its peak at m = 0, outside the [0, 1] of the other two waves. Swapped, it is 2 minus the
printed wave: the same slopes (the seed's max |f'| = 2/F and max |f''| = 4/F still hold),
range [0, 1], and, like the cosine and the rectangle, 0 at m = 0, where the stream starts
from the zero state; the other repair, the printed wave minus 1, would start at its peak. The
rectangle is as printed. For odd F the triangle peaks at 1 - 1/F (m = 12 and 13 for F = 25).

The task is continual (no reset between samples) yet stateless: every sample is a whole
number of periods long (``length`` rounded up to a multiple of F), so sample k + 1 continues
the wave exactly where sample k ended, and every sample is the same (``rng`` is not used):
the task is ``deterministic``, so a stream protocol's test streams would all be identical.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import shown
from ..success import SuccessTest
from .base import Sequence, Sequences, register

SHAPES = ("cosine", "triangle", "rectangle")


def wave(shape: str, period: int, t: np.ndarray) -> np.ndarray:
    """The target wave ``shape`` of period ``period`` at steps ``t``."""
    t = np.asarray(t, dtype=np.float64)
    m = np.mod(t, period)
    if shape == "cosine":
        return (1.0 - np.cos(2.0 * np.pi * t / period)) / 2.0
    if shape == "triangle":
        return np.where(m <= period / 2, 2.0 * m / period, 2.0 - 2.0 * m / period)
    if shape == "rectangle":
        return np.where(m > period / 2, 1.0, 0.0)
    raise ValueError(f"shape must be one of {', '.join(map(repr, SHAPES))}, got {shown(shape)}")


@register("periodic_function")
class PeriodicFunction:
    """2002 PFG. Options: ``shape`` (cosine, triangle, rectangle), ``period`` F (integer >= 2,
    paper: 10 or 25), ``length`` of one sample, rounded up to a multiple of F (attribute
    ``length`` holds the rounded value)."""

    name = "periodic_function"
    #: 2002 PFG: every output within 0.3 of its target.
    success_test = SuccessTest("tolerance", 0.3)
    n_inputs = 1
    n_outputs = 1
    continual = True
    deterministic = True  # every sample is the same sequence

    def __init__(self, shape: str = "cosine", period: int = 10, length: int = 100) -> None:
        if shape not in SHAPES:
            raise ValueError(f"shape must be one of {', '.join(map(repr, SHAPES))}, got {shown(shape)}")
        for option, value, least in (("period", period, 2), ("length", length, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{option} must be an integer >= {least}, got {shown(value)}")
        self.shape = shape
        self.period = period
        self.length = math.ceil(length / period) * period
        self._sequence = Sequence(np.zeros((self.length, 1)),
                                  wave(shape, period, np.arange(1, self.length + 1))[:, None])

    def sample(self, rng: np.random.Generator) -> Sequence:
        return Sequence(self._sequence.inputs.copy(), self._sequence.targets.copy())

    @property
    def stream_rows(self):
        """How its stream is drawn in place on the GPU (`draws.StreamRows`): one sample repeated."""
        from .draws import StreamRows, repeated_rows

        return StreamRows(repeated_rows, (self._sequence.inputs, self._sequence.targets), self.length, self.length, 1,
                          (self.name, self.shape, self.period, self.length))

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        """``count`` samples end to end (no draws)."""
        targets = np.tile(self._sequence.targets, (count, 1))
        return Sequences(np.tile(self._sequence.inputs, (count, 1)), targets, targets,
                         np.full(count, self.length, dtype=np.int64))
