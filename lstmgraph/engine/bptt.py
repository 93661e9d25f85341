"""Backpropagation through time over one segment of steps, honouring the gradient flags.

A truncated edge is a stop-gradient: its source receives no error along it (the weights on
it still get their gradient). With every edge carrying (``Simulator(full_gradient=True)``)
this is full BPTT. A window of k steps is a segment of k steps whose start state is treated
as a constant; the caller carries the state from one segment to the next. The numpy executor
runs the program's BPTT phases (`lower` with ``segments``), as the compiled engine's
``run_segment`` does: the forward steps, each step's ``tape`` kept; then latest step first its
loss, ``carry_in`` (the error its delayed values got from the step after), ``backward`` and
``carry_out``; the segment's summed gradient at ``segment_end``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .executor import run_ops
from .simulator import Simulator, require_simulator
from .traces import gradients
from .weights import Weights


def bptt_gradient(sim: Simulator, weights: Weights, inputs: np.ndarray, targets: np.ndarray,
                  loss: str, state: Mapping[str, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Summed loss per trial, dE/dW summed over the segment, and the final state. `ValueError`
    for inputs and targets of other shapes or lengths."""
    program = require_simulator(sim, "bptt_gradient").program(loss, segments=True)
    V = sim.values(program, weights, state)
    inputs, targets = sim.sequence_array(inputs, "inputs"), sim.sequence_array(targets, "targets")
    if len(inputs) != len(targets):
        raise ValueError(f"{len(inputs)} steps of inputs but {len(targets)} of targets")
    forward, keep, loss_ops = program.phase("forward"), program.phase("keep_state"), program.phase("loss")
    step_back = program.phase("carry_in") + program.phase("backward") + program.phase("carry_out")  # in this order
    (tape,) = program.phase("tape")
    kept = tape.rows[0]  # the slots a step's backward pass reads
    snapshots = []
    for x in inputs:
        run_ops(forward, V, sim.columns(x, "inputs", V.shape[1]))
        snapshots.append(V[kept].copy())
        run_ops(keep, V)
    final_state = sim.state_of(program, V)
    run_ops(program.phase("segment_begin"), V)
    total = np.zeros(V.shape[1])
    for snapshot, target in zip(reversed(snapshots), reversed(targets)):
        V[kept] = snapshot
        total += run_ops(loss_ops, V, target=sim.columns(target, "targets", V.shape[1]))
        run_ops(step_back, V)
    run_ops(program.phase("segment_end"), V)
    return total, gradients(program, V), final_state
