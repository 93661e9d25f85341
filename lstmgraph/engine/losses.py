"""Losses per step. Targets are concatenated over the output groups in declaration order;
NaN marks "no target here" (a unit, or for cross-entropy a whole group, without error).

- ``sum_of_squares`` (the papers): E(t) = 1/2 sum_i (y_i - target_i)^2.
- ``cross_entropy``: E(t) = -sum_i target_i log y_i for softmax groups (seed 003's classifier)
  and the binary form for logistic groups; both give dE/dnet = y - target.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .. import activations
from ..graph.units import Unit

LossName = Literal["sum_of_squares", "cross_entropy"]
LOSSES: tuple[str, ...] = ("sum_of_squares", "cross_entropy")


def split_targets(outputs: list[Unit], targets: np.ndarray, trials: int) -> dict[str, np.ndarray]:
    targets = np.broadcast_to(np.asarray(targets, dtype=np.float64),
                              (trials, sum(u.size for u in outputs)))
    parts, start = {}, 0
    for unit in outputs:
        parts[unit.name] = targets[:, start:start + unit.size]
        start += unit.size
    return parts


def loss_and_delta(loss: str, outputs: list[Unit], net: dict[str, np.ndarray],
                   y: dict[str, np.ndarray], targets: np.ndarray
                   ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Loss per trial (trials,) and dE/dnet for each output group with a target."""
    trials = next(iter(y.values())).shape[0]
    parts = split_targets(outputs, targets, trials)
    total = np.zeros(trials)
    deltas: dict[str, np.ndarray] = {}
    for unit in outputs:
        target = parts[unit.name]
        missing = np.isnan(target)
        if missing.all():
            continue
        output = y[unit.name]
        if loss == "sum_of_squares":
            error = np.where(missing, 0.0, output - np.where(missing, 0.0, target))
            total += 0.5 * (error * error).sum(axis=1)
            deltas[unit.name] = activations.backward(unit.activation, net[unit.name], output, error)
        elif loss == "cross_entropy":
            present = ~missing.any(axis=1, keepdims=True)
            clean = np.where(missing, 0.0, target)
            tiny = np.finfo(np.float64).tiny
            if unit.activation == "softmax":
                total += np.where(present[:, 0], -(clean * np.log(np.maximum(output, tiny))).sum(axis=1), 0.0)
            elif unit.activation == "logistic":
                terms = clean * np.log(np.maximum(output, tiny)) + (1 - clean) * np.log(np.maximum(1 - output, tiny))
                total += np.where(present[:, 0], -terms.sum(axis=1), 0.0)
            else:
                raise ValueError(f"cross_entropy needs softmax or logistic outputs; "
                                 f"'{unit.name}' is {unit.activation}")
            deltas[unit.name] = np.where(present, output - clean, 0.0)
        else:
            raise ValueError(f"unknown loss {loss!r}")
    return total, deltas
