"""The compiled kernels' arithmetic, pinned: committed experiment trials replay to the last bit
only while every kernel performs the same floating-point operations in the same order.

A digest of everything a short training run of the timing net leaves (outputs, steps done,
losses, weights, velocities, states, traces, rates; learning with momentum and rate decay, some
lanes forward only, lanes stopped by either success test) against the digest recorded before
the kernels were generated from the operation registry (issue 33). The timing net squashes
with the kernels' own `vector_math.tanh` and its loss is the sum of squares, so no libm call
enters and the digest is the same on any x86-64 machine. A change that moves a bit here changes
committed trials: it needs a new `TRIAL_ARITHMETIC` and a new digest.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.success import MOST_ACTIVE

from conftest import SPECS
from engine.compiled.test_network import _stream

#: Recorded with the kernels of commit 8a3bd56 (hand-written operation kinds).
DIGEST = {1: "aaf37332d3f7824f19b49367", 6: "d9ddb50c1ce1316da4c6b41d"}


def _digest(kernel: str, seeds: list[int]) -> str:
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    inputs, targets = _stream(plan, 300)
    network = CompiledNetwork(plan, kernel=kernel, threads=1)
    population = network.population(initial_weights(plan, seeds), 0.05)
    assert population.kernel == kernel
    results = []
    outputs = np.zeros((len(seeds), len(inputs), network.n_outputs))
    results += population.run(inputs, targets, 0.9, 0.9999, outputs=outputs)
    results.append(outputs)
    results += population.run(inputs[:80], targets[:80], 0.9, learn=np.arange(len(seeds)) % 3 == 1)
    population.reset()
    results += population.run(inputs, targets, 0.5, tolerance=0.4)
    population.reset()
    judged = np.where(np.arange(len(targets))[:, None] % 7 == 3, targets, np.nan)
    results += population.run(inputs, targets, 0.5, tolerance=MOST_ACTIVE, judged=judged)
    for part in (population.weights(), population.velocity(), population.state(), population.traces()):
        results += [part[key] for key in sorted(part)]
    results.append(population.rate())
    data = b"".join(np.ascontiguousarray(result, dtype=np.float64).tobytes() for result in results)
    return hashlib.sha256(data).hexdigest()[:24]


@pytest.mark.parametrize("kernel", ["interpreter", "specialised"])
@pytest.mark.parametrize("trials", [1, 6])  # one lane; lanes side by side (the specialised: a full block, a padded one)
def test_the_kernels_compute_bit_for_bit_what_they_computed_before(kernel, trials):
    assert _digest(kernel, list(range(trials))) == DIGEST[trials]
