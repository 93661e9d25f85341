"""The stream driver's bookkeeping at a stream's end (`stream_driver._end_stream`) at its
boundaries: the rate decays after a training stream of exactly ``train_limit`` right, and a
trial is perfect with every test stream at exactly ``test_limit``, not one short."""

from __future__ import annotations

import numpy as np

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.counters import STREAM_COUNTERS, Status, StreamCounter as Counter, StreamSetting as Setting
from lstmgraph.experiments.stream_driver import _end_stream
from lstmgraph.experiments.streams import _rule

RULE = _rule(find_experiment("gers2000-cerg-forget-decay").protocol)  # decays after each error-free stream
SETTINGS = RULE.settings


def _end(phase: int, right: int, scores: int | None = None) -> tuple[np.ndarray, float]:
    """A lane's counters and rate after a stream of ``right`` units right ends in ``phase``,
    the earlier test streams of the phase at ``scores`` right."""
    counter = np.zeros(STREAM_COUNTERS, dtype=np.int64)
    counter[[Counter.PHASE, Counter.STREAMS, Counter.IN_STREAM, Counter.LAST_BUDGET]] = [phase, 1, 1, -1]
    score = np.full(SETTINGS[Setting.TEST_STREAMS], scores if scores is not None else 0, dtype=np.int64)
    V, rows, rates = np.zeros((4, 1)), np.array([0, 0, 0, 0, 0, 4]), np.array([0.5])
    _end_stream(counter, score, SETTINGS, right, 0, V, 0, rows, rates, 0, RULE.rate_decay)
    return counter, float(rates[0])


def test_the_rate_decays_after_a_training_stream_right_to_its_limit_and_not_one_short():
    limit = int(SETTINGS[Setting.TRAIN_LIMIT])
    assert SETTINGS[Setting.DECAY_EVERY] == 0 and RULE.rate_decay == 0.99
    assert _end(0, limit - 1)[1] == 0.5
    counter, rate = _end(0, limit)
    assert rate == 0.5 * 0.99 and counter[Counter.PHASE] == 1 and counter[Counter.STREAMS] == 2


def test_a_trial_is_perfect_with_its_last_test_stream_at_the_limit_and_not_one_short():
    limit, last = int(SETTINGS[Setting.TEST_LIMIT]), int(SETTINGS[Setting.TEST_STREAMS])
    short, _ = _end(last, limit - 1, scores=limit)
    assert short[Counter.STATUS] == Status.RUNNING and short[Counter.PHASE] == 0
    full, _ = _end(last, limit, scores=limit)
    assert full[Counter.STATUS] == Status.SOLVED
    earlier_short, _ = _end(last, limit, scores=limit - 1)  # one earlier stream of the phase one short
    assert earlier_short[Counter.STATUS] == Status.RUNNING
