"""Independent checks of the learning rules on any spec (`lstmgraph gradcheck`).

1. truncated RTRL, summed over a sequence with the weights held fixed, against BPTT with the
   same edges cut (stop-gradients): equal up to rounding (tolerance 1e-9);
2. exact RTRL against full BPTT, every edge carrying gradient (1e-9);
3. full BPTT against central finite differences of the loss (1e-6).
Errors are per weight matrix: max |a - b| / max(|a|max, |b|max, floor), the floor being
1e-6 of the largest gradient entry of the network, so that matrices whose gradient is
numerically zero do not turn rounding noise into large relative errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plan import Plan
from .bptt import bptt_gradient
from .simulator import Simulator
from .traces import RealTimeRecurrentLearning
from .weights import Weights, flatten, initial_weights, unflatten

TOLERANCES = {"truncated_rtrl_vs_bptt": 1e-9, "rtrl_vs_bptt": 1e-9, "bptt_vs_finite_differences": 1e-6}


def random_problem(plan: Plan, seed: int, steps: int, weight_range: float
                   ) -> tuple[Weights, np.ndarray, np.ndarray, str]:
    """Random weights (trainable ones uniform in +-weight_range), inputs and targets."""
    rng = np.random.default_rng(seed)
    weights = initial_weights(plan, [seed])
    for slot in plan.parameters:
        weights[slot.connection] = rng.uniform(-weight_range, weight_range, weights[slot.connection].shape)
    sim = Simulator(plan)
    inputs = rng.uniform(-1.0, 1.0, (steps, sim.n_inputs))
    columns = []
    for unit in sim.outputs:
        if unit.activation == "softmax":
            columns.append(np.eye(unit.size)[rng.integers(0, unit.size, steps)])
        else:
            columns.append(rng.uniform(0.0, 1.0, (steps, unit.size)))
    loss = plan.training.loss if plan.training else "sum_of_squares"
    return weights, inputs, np.concatenate(columns, axis=1), loss


def rtrl_gradient(sim: Simulator, weights: Weights, inputs: np.ndarray, targets: np.ndarray,
                  loss: str) -> dict[str, np.ndarray]:
    """Per-step RTRL gradients summed over the sequence, weights fixed."""
    learner = RealTimeRecurrentLearning(sim, 1)
    state = sim.zero_state(1)
    total = None
    for x, target in zip(inputs, targets):
        _, grads, state, _ = learner.step(weights, state, x, target, loss)
        total = grads if total is None else {k: total[k] + grads[k] for k in grads}
    return total


def finite_difference_gradient(plan: Plan, sim: Simulator, weights: Weights, inputs: np.ndarray,
                               targets: np.ndarray, loss: str, epsilon: float = 1e-5) -> np.ndarray:
    """Central differences of the summed loss, all perturbations run as one population."""
    base = flatten(plan, weights)[0]
    count = base.size
    perturbed = np.repeat(base[None], 2 * count, axis=0)
    perturbed[np.arange(count), np.arange(count)] += epsilon
    perturbed[count + np.arange(count), np.arange(count)] -= epsilon
    population = unflatten(plan, perturbed, {k: np.repeat(v, 2 * count, axis=0) for k, v in weights.items()})
    losses, _, _ = bptt_gradient(sim, population, inputs, targets, loss)
    return (losses[:count] - losses[count:]) / (2 * epsilon)


def _errors(plan: Plan, first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> dict[str, float]:
    floor = 1e-6 * max((np.abs(v).max() for v in second.values()), default=0.0)
    errors = {}
    for slot in plan.parameters:
        a, b = first[slot.connection], second[slot.connection]
        scale = max(np.abs(a).max(), np.abs(b).max(), floor)
        errors[slot.connection] = 0.0 if scale == 0 else float(np.abs(a - b).max() / scale)
    return errors


def gradient_check(plan: Plan, seed: int = 0, steps: int = 8, weight_range: float = 0.5) -> dict[str, Any]:
    """Run the three comparisons; returns per-check, per-matrix relative errors."""
    weights, inputs, targets, loss = random_problem(plan, seed, steps, weight_range)
    truncated = Simulator(plan)
    full = Simulator(plan, full_gradient=True)
    _, bptt_truncated, _ = bptt_gradient(truncated, weights, inputs, targets, loss)
    _, bptt_full, _ = bptt_gradient(full, weights, inputs, targets, loss)
    finite = finite_difference_gradient(plan, full, weights, inputs, targets, loss)
    finite_grads = unflatten(plan, finite[None], weights)
    comparisons = {
        "truncated_rtrl_vs_bptt": _errors(plan, rtrl_gradient(truncated, weights, inputs, targets, loss), bptt_truncated),
        "rtrl_vs_bptt": _errors(plan, rtrl_gradient(full, weights, inputs, targets, loss), bptt_full),
        "bptt_vs_finite_differences": _errors(plan, bptt_full, finite_grads),
    }
    checks = []
    for name, errors in comparisons.items():
        worst = max(errors.values(), default=0.0)
        checks.append({"name": name, "tolerance": TOLERANCES[name], "max_rel_error": worst,
                       "passed": worst <= TOLERANCES[name], "per_connection": errors})
    return {"network": plan.name, "parameters": plan.n_parameters, "steps": steps, "seed": seed,
            "loss": loss, "checks": checks,
            "max_rel_error": max(check["max_rel_error"] for check in checks),
            "passed": all(check["passed"] for check in checks)}
