"""Gers, Schraudolph & Schmidhuber 2002, the spike-timing tasks: measuring spike delays (MSD),
its non-continual variant (NMSD), and generating timed spikes (GTS).

Both tasks are made of intervals. Interval n lasts F + I(n) steps: F is the fixed ``period``,
I(n) a delay drawn uniformly from ``delays`` (2002: {0, 1}; for the wide-range MSD runs
{0, i} or {0, ..., i}, i <= 10, with F = 10). Spike n falls on its interval's last step, so
with the stream starting at step 1 after a reset the spikes are at the paper's
T(n) = T(n-1) + F + I(n), T(0) = 0, i.e. T(1) = F + I(1) (seed 002). One sample is one
interval; the continual tasks chain intervals with no reset between them.

- MSD: input 1 at the spike, 0 elsewhere; target I(n) at the spike, unscaled (seed 002: the
  wide-range runs switched the output to the identity because a sigmoid cannot reach I > 1),
  and no target (NaN) elsewhere: seed 002 notes that a net whose output gate stays open
  between spikes is not penalised, "because predictions are rare".
- GTS, the inverse: the input carries a cue at the interval's first step, 0 elsewhere, and
  the target is 1 at the spike and 0 at every other step, so the net must also stay silent
  between spikes. ``cue``: ``length`` (the default, seed 002's coding: the input is the
  interval's length F + I(n), "followed by" zeros, and the target "T(n) - 1 zeros, followed
  by a 1"); ``delay`` puts I(n) there instead, so a zero delay leaves the input silent and the
  net must keep time unprompted (the coding of the GTS rows before issue 15, kept so their
  results can be reproduced); ``spike`` puts a 1 there, which tells the net when an interval
  starts but not its delay, so it needs a single delay value.

A task whose samples are all the same sequence says so with ``deterministic`` (true here only
for a single delay value): a stream protocol then needs only one test stream per test phase.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import shown
from ..success import SuccessTest
from .base import Sequence, Sequences, register

CUES = ("length", "delay", "spike")


def _period(period: Any) -> int:
    if isinstance(period, bool) or not isinstance(period, int) or period < 2:
        raise ValueError(f"period (F, the fixed part of each interval) must be an integer >= 2, "
                         f"got {shown(period)}")
    return period


def _delays(delays: Any) -> tuple[int, ...]:
    """The delay set as a sorted tuple; ValueError unless distinct integers >= 0."""
    if isinstance(delays, (str, bytes)) or not isinstance(delays, (list, tuple)) or not delays:
        raise ValueError(f"delays must be a non-empty list of integers >= 0, such as [0, 1], "
                         f"got {shown(delays)}")
    for value in delays:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"delays must be integers >= 0, got {shown(value)} in {shown(list(delays))}")
    if len(set(delays)) != len(delays):
        raise ValueError(f"delays must be distinct (each is drawn with equal probability), "
                         f"got {shown(list(delays))}")
    return tuple(sorted(delays))


def _bool(option: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{option} must be true or false, not {shown(value)}")
    return value


class _Intervals:
    """What MSD and GTS share: F, the delay set, and drawing one interval's delay."""

    n_inputs = 1
    n_outputs = 1
    draws_in_threads = True  # `base.draws_in_threads`: compiled draws (`draws.interval_rows`)
    period: int
    delays: tuple[int, ...]
    cue: str | None = None  # GTS's (`CUES`); MSD has none

    @property
    def deterministic(self) -> bool:
        """Every sample the same interval: true only with a single delay value."""
        return len(self.delays) == 1

    def sample(self, rng: np.random.Generator) -> Sequence:
        """One interval."""
        delay = self.delays[int(rng.integers(len(self.delays)))]
        length = self.period + delay
        return Sequence(*self._coded(length, 0, length - 1, delay))

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        """``count`` intervals end to end, as ``count`` calls of `sample` would draw them, in
        compiled code (`draws.interval_rows`, which the GPU runs too; tests/tasks/test_spikes.py
        holds the data to its digests)."""
        from .draws import draw_rows

        return draw_rows(rng, self.stream_rows, count, count * (self.period + self.delays[-1]), self.n_inputs,
                         self.n_outputs)

    @property
    def stream_rows(self):
        """How its stream is drawn in place (`draws.StreamRows`): the GPU's draws."""
        from .draws import CUE_DELAY, CUE_LENGTH, CUE_SPIKE, MEASURED, StreamRows, interval_rows

        coding = {"length": CUE_LENGTH, "delay": CUE_DELAY, "spike": CUE_SPIKE, None: MEASURED}[self.cue]
        return StreamRows(interval_rows, (self.period, np.array(self.delays, dtype=np.int64), coding),
                          self.period + self.delays[0], self.period + self.delays[-1], 1, (self.name, self.period, self.delays, self.cue))

    def _coded(self, steps: int, starts: Any, spikes: Any, delays: Any) -> tuple[np.ndarray, np.ndarray]:
        """(inputs, targets) of one interval of ``steps`` steps, starting at step ``starts`` with
        delay ``delays`` and its spike at step ``spikes`` (`sample`; `sample_many` codes many in
        compiled code)."""
        raise NotImplementedError


@register("measuring_spike_delays")
class MeasuringSpikeDelays(_Intervals):
    """2002 MSD: at each input spike, output the delay I(n) by which its interval exceeded F.

    Options: ``period`` F (10; integer >= 2), ``delays`` (``[0, 1]``; distinct integers >= 0,
    each equally likely), ``continual`` (true: one stream of intervals with no reset, MSD;
    false: the state is reset before each interval, so a sequence holds a single spike, NMSD).
    One sample: F + I - 1 zeros, then the spike; target I at the spike, NaN elsewhere.
    """

    name = "measuring_spike_delays"
    #: 2002: every output within 0.49 of its target.
    success_test = SuccessTest("tolerance", 0.49)

    def __init__(self, period: int = 10, delays: list[int] | tuple[int, ...] = (0, 1),
                 continual: bool = True) -> None:
        self.period = _period(period)
        self.delays = _delays(delays)
        self.continual = _bool("continual", continual)

    def _coded(self, steps: int, starts: Any, spikes: Any, delays: Any) -> tuple[np.ndarray, np.ndarray]:
        inputs = np.zeros((steps, 1))
        inputs[spikes, 0] = 1.0
        targets = np.full((steps, 1), np.nan)
        targets[spikes, 0] = delays
        return inputs, targets


@register("generating_timed_spikes")
class GeneratingTimedSpikes(_Intervals):
    """2002 GTS: emit an output spike F + I(n) steps after the previous one (or the start).

    Options: ``period`` F (10; integer >= 2), ``delays`` (``[0, 1]``), ``cue`` (``length``:
    the interval's first input is its length F + I(n), 0 elsewhere, seed 002's coding;
    ``delay``: it is I(n), the former coding; ``spike``: it is 1, which needs a single delay
    value). Continual: intervals follow each other with no reset. Target 1 at the interval's
    last step, 0 at every other step.
    """

    name = "generating_timed_spikes"
    #: 2002: every output within 0.49 of its target.
    success_test = SuccessTest("tolerance", 0.49)
    continual = True

    def __init__(self, period: int = 10, delays: list[int] | tuple[int, ...] = (0, 1),
                 cue: str = "length") -> None:
        self.period = _period(period)
        self.delays = _delays(delays)
        if cue not in CUES:
            raise ValueError(f"cue must be one of {', '.join(map(repr, CUES))}, got {shown(cue)}")
        if cue == "spike" and len(self.delays) > 1:
            raise ValueError(f"cue 'spike' marks when an interval starts but not its delay, so the "
                             f"spike time could not be known; give one delay value (e.g. delays: "
                             f"[0]) or use cue 'delay', got delays {shown(list(self.delays))}")
        self.cue = cue

    def _coded(self, steps: int, starts: Any, spikes: Any, delays: Any) -> tuple[np.ndarray, np.ndarray]:
        inputs = np.zeros((steps, 1))
        inputs[starts, 0] = {"length": self.period + delays, "delay": delays, "spike": 1.0}[self.cue]
        targets = np.zeros((steps, 1))
        targets[spikes, 0] = 1.0
        return inputs, targets
