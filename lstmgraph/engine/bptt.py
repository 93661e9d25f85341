"""Backpropagation through time over one segment of steps, honouring the gradient flags.

A truncated edge is a stop-gradient: its source receives no error along it (the weights on
it still get their gradient). With every edge carrying (``Simulator(full_gradient=True)``)
this is full BPTT. A window of k steps is a segment of k steps whose start state is treated
as a constant; the caller carries the state from one segment to the next. The program's
backward phase runs once per step, latest first, the error reaching step t-1's values
(its ``perr`` slots) becoming the error of those values at step t-1.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .executor import run_ops
from .simulator import Simulator, _step_columns
from .traces import gradients
from .weights import Weights


def bptt_gradient(sim: Simulator, weights: Weights, inputs: np.ndarray, targets: np.ndarray,
                  loss: str, state: Mapping[str, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Summed loss per trial, dE/dW summed over the segment, and the final state."""
    program = sim.program(loss)
    V = sim.values(program, weights, state)
    forward, keep = program.phase("forward"), program.phase("keep_state")
    # A step's forward values (activations, net inputs, derivatives, previous values) sit
    # below the weights; that part of the slot array is kept per step.
    kept = slice(0, program.regions[("theta", "")])
    snapshots = []
    for x in inputs:
        run_ops(forward, V, _step_columns(x))
        snapshots.append(V[kept].copy())
        run_ops(keep, V)
    final_state = sim.state_of(program, V)
    loss_ops, backward = program.phase("loss"), program.phase("backward")
    carried = [name for name in program.plan.delayed_sources if program.plan.unit[name].computed]
    total = np.zeros(V.shape[1])
    grad = np.zeros_like(V[program.grad])
    future = None
    for snapshot, target in zip(reversed(snapshots), reversed(np.asarray(targets))):
        V[kept] = snapshot
        step_loss = run_ops(loss_ops, V, target=_step_columns(target))
        total += step_loss
        if future is not None:
            for name in carried:
                rows = program.rows("dy", name, program.plan.unit[name].size)
                V[rows] += future[name]
        run_ops(backward, V)
        grad += V[program.grad]
        future = {name: V[program.rows("perr", name, program.plan.unit[name].size)].copy() for name in carried}
    V[program.grad] = grad
    return total, gradients(program, V), final_state
