"""Backpropagation through time over one segment of steps, honouring the gradient flags.

A truncated edge is a stop-gradient: its source receives no error along it (the weights on
it still get their gradient). With every edge carrying (``Simulator(full_gradient=True)``)
this is full BPTT. A window of k steps is a segment of k steps whose start state is treated
as a constant; the caller carries the state from one segment to the next.
"""

from __future__ import annotations

import numpy as np

from .losses import loss_and_delta
from .simulator import Simulator
from .weights import Weights


def bptt_gradient(sim: Simulator, weights: Weights, inputs: np.ndarray, targets: np.ndarray,
                  loss: str, state: dict[str, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Summed loss per trial, dE/dW summed over the segment, and the final state."""
    trials = next(iter(weights.values())).shape[0]
    if state is None:
        state = sim.zero_state(trials)
    records, final_state = sim.run(weights, inputs, state)
    total = np.zeros(trials)
    deltas = []
    for record, target in zip(records, targets):
        step_loss, delta = loss_and_delta(loss, sim.outputs, record.net, record.y, target)
        total += step_loss
        deltas.append(delta)
    grads = None
    future: dict[str, np.ndarray] = {}
    for record, delta in zip(reversed(records), reversed(deltas)):
        grads, future = sim.backward_step(weights, record, delta, future, grads)
    if grads is None:
        grads = {name: np.zeros_like(weights[name]) for name, link in sim.links.items() if link.trainable}
    return total, grads, final_state
