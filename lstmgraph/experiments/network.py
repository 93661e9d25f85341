"""One trial's network in the compiled executor: weights, state, traces and learning rate.

The protocols drive training and testing through this small interface; every step runs in
the compiled interpreter (engine/compiled), whose agreement with the numpy reference engine is
tested on every bundled spec.
"""

from __future__ import annotations

import numpy as np

from ..engine import initial_weights
from ..engine.compiled import CompiledNetwork
from ..plan import Plan


class OnlineNetwork:
    """A single trial trained online (an update after every step) with truncated RTRL, or
    exact RTRL when the spec's learning rule is ``rtrl``."""

    def __init__(self, plan: Plan, seed: int, learning_rate: float, momentum: float):
        self.plan = plan
        training = plan.document.spec.training
        rule = training.learning_rule if training else "truncated_rtrl"
        if rule == "bptt":
            raise ValueError("the protocols train online with RTRL; this spec asks for BPTT")
        loss = training.loss if training else "sum_of_squares"
        self.compiled = CompiledNetwork(plan, full_gradient=rule == "rtrl", loss=loss, threads=1)
        self.population = self.compiled.population(initial_weights(plan, [seed]), learning_rate)
        self.momentum = momentum
        self.n_inputs = self.compiled.n_inputs
        self.n_outputs = self.compiled.n_outputs

    @property
    def rate(self) -> float:
        return float(self.population.rate()[0])

    @rate.setter
    def rate(self, value: float) -> None:
        self.population.set_rate(value)

    def reset(self) -> None:
        """Zero activations and traces (the 1997 reset before each sequence)."""
        self.population.reset()

    def run(self, inputs: np.ndarray, targets: np.ndarray, learn: bool,
            tolerance: float = 0.0) -> tuple[int, np.ndarray]:
        """Run ``inputs`` from the current state; with ``tolerance`` > 0 stop after the first
        step whose error reaches it. Returns (steps run, outputs of those steps)."""
        outputs = np.zeros((1, len(inputs), self.n_outputs))
        steps, _ = self.population.run(inputs, targets, self.momentum, 1.0, tolerance, learn, outputs)
        return int(steps[0]), outputs[0, :int(steps[0])]

    def weights_finite(self) -> bool:
        return self.population.finite()

    def weights(self) -> dict[str, np.ndarray]:
        return self.population.weights()
