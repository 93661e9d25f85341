"""Independent checks of the learning rules on any spec (`lstmgraph gradcheck`).

1. truncated RTRL, summed over a sequence with the weights held fixed, against BPTT with the
   same edges cut (stop-gradients): equal up to rounding (tolerance 1e-9);
2. exact RTRL against full BPTT, every edge carrying gradient (1e-9);
3. full BPTT against finite differences of the loss (1e-6, beyond the differences' own error).

Checks 1 and 2 compare two exact computations: per weight matrix, max |a - b| / max(|a|max,
|b|max, floor), the floor being 1e-6 of the largest gradient entry of the network, so that
matrices whose gradient is numerically zero do not turn rounding noise into large errors.

Check 3 compares with an approximation that has an error of its own, which is bounded and
allowed for weight by weight (docs/training.md, "lstmgraph gradcheck"):

- each weight's derivative is the Richardson extrapolation of central differences at steps
  h and 2h, h = u^(1/5) max(1, |w|) (u the unit roundoff): truncation error O(h^4), the step
  that balances it against rounding for a fourth-order formula;
- its truncation error is estimated from a second extrapolation at steps 2h and 4h (16 times
  the first's: |R(h) - R(2h)| / 15);
- its rounding error comes from the loss's own rounding, measured: the second differences of
  the loss at steps of 1e-11 max(1, |w|), whose true value is far below one rounding, are pure
  rounding noise; their spread gives the noise of one loss value (sigma), hence that of the
  extrapolation (0.95 sigma / h), allowed up to `ROUNDING_SIGMAS` times.
A weight passes when |BPTT - extrapolation| <= 1e-6 scale + truncation + rounding allowance,
scale being the largest gradient of its matrix; the reported error of a matrix is its largest
|BPTT - extrapolation| beyond that allowance, relative to the scale (0 when within it).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..operations import ACTIVATIONS
from ..limits import (COUNT_LIMITS_HINT, MAX_GRADCHECK_STEPS, MAX_GRADCHECK_WORK, MAX_SEED, LimitError,
                      check_count)
from ..plan import Plan, require_plan
from .bptt import bptt_gradient
from .executor import run_ops
from .simulator import Simulator
from .traces import RealTimeRecurrentLearning
from .weights import Weights, flatten, initial_weights, unflatten

TOLERANCES = {"truncated_rtrl_vs_bptt": 1e-9, "rtrl_vs_bptt": 1e-9, "bptt_vs_finite_differences": 1e-6}

#: The difference step relative to max(1, |w|): u^(1/5), the optimum for an O(h^4) formula.
STEP = float(np.finfo(np.float64).eps / 2) ** 0.2
#: The step of the rounding-noise probe relative to max(1, |w|): it moves every product of the
#: weight by some 10^5 roundings (so each loss value's rounding is drawn afresh) while the
#: true second difference, f'' step^2, stays some 10^6 times below one rounding of the loss.
NOISE_STEP = 1e-11
#: How many standard deviations of the measured rounding noise a difference may be off. The
#: rounding errors of the extrapolations are close to normal: over the bundled specs, seeds
#: 0-9 and 37,150 weights the largest seen was 4.9 sigma (tests/engine/test_gradcheck.py);
#: 8 sigma leaves room for the tails while keeping the check blind to no more than some
#: 1e-5 of a matrix's largest gradient on any bundled spec.
ROUNDING_SIGMAS = 8.0
#: Population rows run at once, at most (memory: rows x slots doubles)...
_CHUNK = 4096
#: ... and at most this many bytes of their values.
_CHUNK_BYTES = 1 << 28
#: Each weight's moves, relative to max(1, |w|): the central differences at h, 2h and 4h, then
#: the noise probe (`finite_difference_gradient`: a loss evaluation each).
OFFSETS = (STEP, -STEP, 2 * STEP, -2 * STEP, 4 * STEP, -4 * STEP, NOISE_STEP, -NOISE_STEP)


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
    return weights, inputs, np.concatenate(columns, axis=1), _loss(plan)


def _loss(plan: Plan) -> str:
    """The loss a check computes: the spec's training section's, else the sum of squares."""
    return plan.training.loss if plan.training else "sum_of_squares"


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


def summed_losses(plan: Plan, sim: Simulator, weights: Weights, points: np.ndarray,
                  inputs: np.ndarray, targets: np.ndarray, loss: str) -> np.ndarray:
    """The loss summed over the sequence at each row of ``points`` (rows, n_parameters), the
    other connections as in ``weights``; forward only, the rows run as one population."""
    program = sim.program(loss)
    forward, keep, loss_ops = program.phase("forward"), program.phase("keep_state"), program.phase("loss")
    population = unflatten(plan, points, {k: np.repeat(v, len(points), axis=0) for k, v in weights.items()})
    V = sim.values(program, population, None)
    total = np.zeros(len(points))
    for x, target in zip(inputs, targets):
        run_ops(forward, V, sim.columns(x, "inputs", len(points)))
        total += run_ops(loss_ops, V, target=sim.columns(target, "targets", len(points)))
        run_ops(keep, V)
    return total


def finite_difference_gradient(plan: Plan, sim: Simulator, weights: Weights, inputs: np.ndarray,
                               targets: np.ndarray, loss: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each trainable weight's derivative of the summed loss by Richardson-extrapolated central
    differences, with bounds on its truncation and rounding errors (module docstring).
    Returns (derivative, truncation error estimate, standard deviation of its rounding error),
    each a vector laid out like `flatten`. The moved weights run a population at a time, never
    all held at once (a row per moved weight: len(`OFFSETS`) x weights rows)."""
    base = flatten(plan, weights)[0]
    count = base.size
    size = np.maximum(1.0, np.abs(base))
    moved = np.array([base + offset * size for offset in OFFSETS])
    steps = moved - base  # the steps as the weights actually moved (rounded)
    rows = len(OFFSETS) * count + 1     # row k * count + i: weight i moved to moved[k, i]; the last unmoved
    chunk = max(1, min(_CHUNK, _CHUNK_BYTES // (8 * sim.program(loss).n_slots)))
    values = []
    for start in range(0, rows, chunk):
        row = np.arange(start, min(start + chunk, rows))
        points = np.repeat(base[None], len(row), axis=0)
        shifted = row < rows - 1
        which, index = np.divmod(row[shifted], count)
        points[np.flatnonzero(shifted), index] = moved[which, index]
        values.append(summed_losses(plan, sim, weights, points, inputs, targets, loss))
    values = np.concatenate(values)
    at = values[:-1].reshape(len(OFFSETS), count)
    centre = values[-1]
    central = [(at[2 * k] - at[2 * k + 1]) / (steps[2 * k] - steps[2 * k + 1]) for k in range(3)]
    fine = (4 * central[0] - central[1]) / 3     # R(h): the h^2 term cancelled
    coarse = (4 * central[1] - central[2]) / 3   # R(2h): its h^4 term 16 times R(h)'s
    truncation = np.abs(fine - coarse) / 15
    # The noise probe: f(w + e) - 2 f(w) + f(w - e) = its rounding alone, variance 6 sigma^2.
    probe = at[6] - 2 * centre + at[7]
    sigma = float(np.sqrt(np.mean(probe ** 2) / 6)) if count else 0.0
    # R(h) = [8 (f(h) - f(-h)) - (f(2h) - f(-2h))] / (12 h): rounding sd sqrt(130) sigma / (12 h).
    h = (steps[0] - steps[1]) / 2
    rounding = np.sqrt(130.0) * sigma / (12 * h)
    return fine, truncation, rounding


def _errors(plan: Plan, first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> dict[str, float]:
    floor = 1e-6 * max((np.abs(v).max() for v in second.values()), default=0.0)
    errors = {}
    for slot in plan.parameters:
        a, b = first[slot.connection], second[slot.connection]
        scale = max(np.abs(a).max(), np.abs(b).max(), floor)
        errors[slot.connection] = 0.0 if scale == 0 else float(np.abs(a - b).max() / scale)
    return errors


def _finite_difference_errors(plan: Plan, gradient: dict[str, np.ndarray], estimate: np.ndarray,
                              truncation: np.ndarray, rounding: np.ndarray, tolerance: float
                              ) -> tuple[dict[str, float], dict[str, float], dict[str, float], bool]:
    """Per matrix: the error beyond the allowance (relative to its largest gradient), the raw
    relative error, and the finite differences' error bound relative to the same scale; and
    whether every weight is within tolerance * scale + its bound."""
    exact = flatten(plan, gradient)[0]
    bound = truncation + ROUNDING_SIGMAS * rounding
    excess, raw, bounds, passed = {}, {}, {}, True
    for slot in plan.parameters:
        part = slice(slot.offset, slot.offset + slot.size)
        difference = np.abs(exact[part] - estimate[part])
        scale = max(np.abs(exact[part]).max(), np.abs(estimate[part]).max())
        if not np.all(np.isfinite(difference)):
            excess[slot.connection] = raw[slot.connection] = bounds[slot.connection] = float("inf")
            passed = False
            continue
        passed &= bool(np.all(difference <= tolerance * scale + bound[part]))
        if scale == 0:
            excess[slot.connection] = raw[slot.connection] = bounds[slot.connection] = 0.0
            continue
        excess[slot.connection] = float(np.maximum(difference - bound[part], 0.0).max() / scale)
        raw[slot.connection] = float(difference.max() / scale)
        bounds[slot.connection] = float(bound[part].max() / scale)
    return excess, raw, bounds, passed


def gradient_check(plan: Plan, seed: int = 0, steps: int = 8, weight_range: float = 0.5) -> dict[str, Any]:
    """Run the three comparisons; returns per-check, per-matrix relative errors. `LimitError` for
    more than `MAX_GRADCHECK_STEPS` steps or `MAX_GRADCHECK_WORK` (limits.py), before anything
    runs."""
    return next(gradient_checks(plan, (seed,), steps, weight_range))


def gradient_checks(plan: Plan, seeds: Sequence[int], steps: int = 8,
                    weight_range: float = 0.5) -> Iterator[dict[str, Any]]:
    """`gradient_check`'s report for each seed in turn, lowering the plan's programs once for all
    (the lowering takes most of a small net's check). The work limit counts every seed's."""
    require_plan(plan, "gradient_check")
    check_count("steps", steps, MAX_GRADCHECK_STEPS)
    for seed in seeds:
        check_count("seed", seed, MAX_SEED, minimum=0)
    if isinstance(weight_range, bool) or not isinstance(weight_range, (int, float)) or not 0 < weight_range < math.inf:
        raise ValueError(f"weight_range: a finite number > 0, not {weight_range!r:.60}")
    truncated = Simulator(plan)
    full = Simulator(plan, full_gradient=True)
    slots = full.program(_loss(plan)).n_slots
    work = (len(OFFSETS) * plan.n_parameters + 1) * steps * slots * len(seeds)
    if work > MAX_GRADCHECK_WORK:
        draws = f" for each of {len(seeds):,} draws" if len(seeds) > 1 else ""
        raise LimitError(f"{plan.name}: the finite differences would run {len(OFFSETS)} x {plan.n_parameters:,} "
                         f"networks of {slots:,} values for {steps:,} steps{draws}, over the limit of "
                         f"{MAX_GRADCHECK_WORK:.0e} values computed ({COUNT_LIMITS_HINT}); give fewer --steps "
                         "or --draws, or check a smaller net of the same kinds of groups and connections")
    for seed in seeds:
        yield _check(plan, truncated, full, seed, steps, weight_range)


def _check(plan: Plan, truncated: Simulator, full: Simulator, seed: int, steps: int,
           weight_range: float) -> dict[str, Any]:
    weights, inputs, targets, loss = random_problem(plan, seed, steps, weight_range)
    _, bptt_truncated, _ = bptt_gradient(truncated, weights, inputs, targets, loss)
    losses, bptt_full, _ = bptt_gradient(full, weights, inputs, targets, loss)
    checks = []
    for name, errors in (
            ("truncated_rtrl_vs_bptt",
             _errors(plan, rtrl_gradient(truncated, weights, inputs, targets, loss), bptt_truncated)),
            ("rtrl_vs_bptt", _errors(plan, rtrl_gradient(full, weights, inputs, targets, loss), bptt_full))):
        worst = max(errors.values(), default=0.0)
        checks.append({"name": name, "tolerance": TOLERANCES[name], "max_rel_error": worst,
                       "passed": worst <= TOLERANCES[name], "per_connection": errors})
    name = "bptt_vs_finite_differences"
    estimate, truncation, rounding = finite_difference_gradient(plan, full, weights, inputs, targets, loss)
    excess, raw, bounds, passed = _finite_difference_errors(plan, bptt_full, estimate, truncation, rounding,
                                                            TOLERANCES[name])
    checks.append({"name": name, "tolerance": TOLERANCES[name], "max_rel_error": max(excess.values(), default=0.0),
                   "passed": passed, "per_connection": excess,
                   "raw_rel_error": max(raw.values(), default=0.0), "raw_per_connection": raw,
                   "finite_difference_error_bound": bounds})
    report = {"network": plan.name, "parameters": plan.n_parameters, "steps": steps, "seed": seed,
              "loss": loss, "loss_value": float(losses[0]), "checks": checks,
              "max_rel_error": max(check["max_rel_error"] for check in checks),
              "passed": all(check["passed"] for check in checks)}
    kinked = sorted({unit.activation for unit in plan.units if not ACTIVATIONS[unit.activation].smooth})
    if kinked and not passed:
        report["note"] = (f"{' and '.join(kinked)} units: a derivative jumps at 0, and a difference step that carries "
                          "a net input across it fails the finite differences though the gradient is right; checks 1 "
                          "and 2 are exact; other draws (--seed, --draws) tell such a step from an error")
    return report
