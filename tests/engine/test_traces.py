"""`RealTimeRecurrentLearning.step`'s arguments: what it refuses, and how it says so."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import RealTimeRecurrentLearning, Simulator, initial_weights


def test_weights_of_another_population_size_and_a_wrong_target_are_named():
    """Before: a broadcasting ValueError from inside the executor."""
    plan = lstmgraph.compile_spec("gers2000_cerg")
    sim = Simulator(plan)
    learner = RealTimeRecurrentLearning(sim, trials=1)
    weights = initial_weights(plan, [0, 1])
    with pytest.raises(ValueError, match=re.escape("the learner carries the traces of 1 trials (reset(trials)); "
                                                   "the weights hold 2")):
        learner.step(weights, sim.zero_state(2), np.zeros(7), np.zeros(7))
    learner.reset(2)
    with pytest.raises(ValueError, match=re.escape("targets of a step have shape (2,)")):
        learner.step(weights, sim.zero_state(2), np.zeros(7), np.zeros(2))
    loss, *_ = learner.step(weights, sim.zero_state(2), np.zeros(7), np.zeros(7))
    assert loss.shape == (2,)
