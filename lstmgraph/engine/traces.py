"""Real-time recurrent learning with exactly the eligibility traces the gradient flags need.

The gradient of the step loss E(t) splits into a part within the step and a part through the
previous step's values that carrying delay-1 edges read (the *traced* values, e.g. the cell
states through the CEC)::

    dE(t)/dW = dE(t)/dW|within step  +  sum_s  dE(t)/dy_s(t-1) . T_s(t-1),   T_s = dy_s/dW

The lowered program (`lstmgraph.program`) holds all of it: the within-step backward pass, the
contraction with the stored traces, and the propagation of the traces to step t by exactly the
sensitivities its analysis found non-zero (with the 1997 truncation, the cell states' traces of
their own block's cell-input, input-gate and forget-gate weights; with every edge carrying,
exact RTRL). This class runs it with the numpy executor and speaks in named arrays.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..limits import is_whole_number
from .executor import run_ops
from .simulator import Simulator, StepRecord, require_simulator
from .weights import Weights

#: The phases of an RTRL gradient step (the update is the optimiser's).
GRADIENT_PHASES = ("forward", "loss", "backward", "contract", "propagate", "keep_traces", "keep_state")


class RealTimeRecurrentLearning:
    """Per-step gradients by (truncated) RTRL: `step` returns dE(t)/dW with weights as given.

    With ``Simulator(plan)`` this is the papers' truncated RTRL; with
    ``Simulator(plan, full_gradient=True)`` exact RTRL. ``traces`` maps each traced group to
    its stored traces, (trials, entries), entry k being d y[unit k] / d theta[parameter k] of
    ``sim.program(loss, True).trace_entries[group]``.
    """

    def __init__(self, sim: Simulator, trials: int = 1):
        self.sim = require_simulator(sim, "RealTimeRecurrentLearning")
        self.program = sim.program("sum_of_squares", traces=True)
        self.reset(trials)

    def reset(self, trials: int) -> None:
        """Zero traces: at the start of a sequence, with the activations."""
        if not is_whole_number(trials, 1):
            raise ValueError(f"trials must be a whole number >= 1, not {trials!r}")
        self.trials = trials
        self.traces = {group: np.zeros((trials, len(units)))
                       for group, (units, _) in self.program.trace_entries.items()}

    def step(self, weights: Weights, state: Mapping[str, np.ndarray], x: np.ndarray, target: np.ndarray,
             loss: str | None = None) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], StepRecord]:
        """One step forward; returns (loss per trial, dE(t)/dW, new state, record)."""
        sim = self.sim
        program = sim.program(loss or "sum_of_squares", traces=True)  # the same traces for any loss
        V = sim.values(program, weights, state)
        if V.shape[1] != self.trials:
            raise ValueError(f"the learner carries the traces of {self.trials} trials (reset(trials)); the weights "
                             f"hold {V.shape[1]}")
        for group, data in self.traces.items():
            V[program.trace(group)] = data.T
        step_loss = run_ops(program.phase(*GRADIENT_PHASES), V, sim.columns(x, "inputs", self.trials),
                            sim.columns(target, "targets", self.trials))
        self.traces = {group: V[program.trace(group)].T.copy() for group in self.traces}
        return step_loss, gradients(program, V), sim.state_of(program, V), StepRecord(program, V)


def gradients(program, V: np.ndarray) -> dict[str, np.ndarray]:
    """The gradient slots as ``connection -> (trials, *shape)``."""
    grad = V[program.grad]
    return {slot.connection: grad[slot.offset:slot.offset + slot.size].T.reshape((-1,) + slot.shape).copy()
            for slot in program.plan.parameters}
