"""The papers' success tests: is a network's output at a step (or over a sequence) correct?

Each test takes ``outputs`` and ``targets`` of shape (steps, n_outputs); NaN targets mean "no
target here" and are never judged. A step with no target at all counts as correct.
"""

from __future__ import annotations

import numpy as np


def within_tolerance(outputs: np.ndarray, targets: np.ndarray, tolerance: float) -> np.ndarray:
    """Per step: every judged output is within ``tolerance`` of its target. The papers' tests:
    |error| < 0.04 (1997 adding, multiplication), < 0.3 (temporal order, 2002 PFG), < 0.49
    (2002 spike tasks, and 2000 CERG: see catalogue.py for why not squared error < 0.49)."""
    judged = ~np.isnan(targets)
    error = np.abs(np.where(judged, outputs - np.where(judged, targets, 0.0), 0.0))
    return (error < tolerance).all(axis=1)


def most_active_correct(outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per step: the units of the symbols that may come next (target 1) are all more active
    than every other unit (1997 Exp. 1: "the output units of the possible next symbols are
    always the most active")."""
    judged = ~np.isnan(targets).any(axis=1)
    legal = np.where(judged[:, None], targets, 0.0) > 0.5
    lowest_legal = np.where(legal, outputs, np.inf).min(axis=1)
    highest_other = np.where(legal, -np.inf, outputs).max(axis=1)
    return ~judged | (lowest_legal > highest_other)


def steps_correct(success: str, outputs: np.ndarray, targets: np.ndarray, tolerance: float) -> np.ndarray:
    """Per step, by the test named ``success`` (a protocol's): `most_active_correct`, or
    `within_tolerance` of ``tolerance``."""
    if success == "most_active":
        return most_active_correct(outputs, targets)
    return within_tolerance(outputs, targets, tolerance)


def squared_error(outputs: np.ndarray, targets: np.ndarray) -> float:
    """Mean squared error over the judged entries (0 if none)."""
    judged = ~np.isnan(targets)
    if not judged.any():
        return 0.0
    return float(np.mean((outputs[judged] - targets[judged]) ** 2))
