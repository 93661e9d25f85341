"""`bptt_gradient`'s arguments: what it refuses, and how it says so."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import Simulator, bptt_gradient, initial_weights


def test_inputs_and_targets_of_other_lengths_or_widths_and_an_unknown_loss_are_refused():
    """Before: targets shorter than the inputs were paired with the wrong steps (zip), without a
    word; a wrong width was an IndexError and an unknown loss a KeyError from inside."""
    plan = lstmgraph.compile_spec("gers2000_cerg")
    sim, weights = Simulator(plan), initial_weights(plan)
    with pytest.raises(ValueError, match="5 steps of inputs but 4 of targets"):
        bptt_gradient(sim, weights, np.zeros((5, 7)), np.zeros((4, 7)), "sum_of_squares")
    with pytest.raises(ValueError, match=re.escape("targets of a step have shape (3,); gers2000_cerg expects (7,)")):
        bptt_gradient(sim, weights, np.zeros((4, 7)), np.zeros((4, 3)), "sum_of_squares")
    with pytest.raises(ValueError, match="unknown loss 'mse'; the losses: sum_of_squares, cross_entropy"):
        bptt_gradient(sim, weights, np.zeros((4, 7)), np.zeros((4, 7)), "mse")
