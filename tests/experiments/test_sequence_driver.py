"""The sequence driver's sums: a mean there is numpy's, bit for bit, so that the 1997 rule
"mean squared error below max_error" decides as the reference loop does."""

from __future__ import annotations

import numpy as np

from lstmgraph.experiments.sequence_driver import pairwise_mean, pairwise_scratch


def test_the_driver_s_mean_is_numpy_s_to_the_last_bit():
    rng = np.random.default_rng(0)
    # Below 8, up to 128 (eight partial sums) and beyond (halves), at and around each edge.
    for n in [*range(1, 300), 383, 384, 385, 1000, 1999, 2000, 2001, 2560, 4097, 100_003]:
        values = rng.random(n) ** 3 * 10.0 ** rng.uniform(-6, 2, n)
        assert pairwise_mean(values, n, *pairwise_scratch()) == np.mean(values), n
