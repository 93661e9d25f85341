"""The papers' success tests and error measure, each defined once.

A success test says whether a network's output at a step is right. Two exist:

- ``tolerance``: every judged output within a tolerance of its target (1997 adding and
  multiplication |error| < 0.04, temporal order and 2002 PFG < 0.3, 2000 CERG and the 2002
  spike tasks < 0.49);
- ``most_active``: the units judged 1 (the legal next symbols) are all more active than every
  other unit (1997 Exp. 1: "the output units of the possible next symbols are always the most
  active").

Each test has a vectorised numpy form (`SuccessTest.steps_correct`, for the reference loops,
`evaluate` and plots) and a scalar form that numba compiles into the protocol drivers
(`sequence_right`). The kernels judge a stream step by step; they read the test as one float,
`kernel_tolerance`: the tolerance itself (> 0), `MOST_ACTIVE`, or `NOT_JUDGED`. Outputs and
targets are (steps, n_outputs); NaN targets are never judged, and a step without any counts
as right.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import numpy as np

#: The kernels' encoding of the most-active test (their ``tolerance`` argument below zero).
MOST_ACTIVE = -1.0
#: The kernels' encoding of "judge nothing" (a run that only learns or records).
NOT_JUDGED = 0.0


def _check_shapes(outputs: np.ndarray, targets: np.ndarray) -> None:
    """`ValueError` unless both are (steps, n_outputs) of one shape (numpy would broadcast a
    column of targets against every output, and judge wrongly)."""
    if np.ndim(outputs) != 2 or np.shape(outputs) != np.shape(targets):
        raise ValueError(f"outputs and targets are (steps, n_outputs) of one shape, not {np.shape(outputs)} "
                         f"and {np.shape(targets)}")


def within_tolerance(outputs: np.ndarray, targets: np.ndarray, tolerance: float) -> np.ndarray:
    """Per step: every judged output is within ``tolerance`` of its target (strictly)."""
    _check_shapes(outputs, targets)
    judged = ~np.isnan(targets)
    error = np.abs(np.where(judged, outputs - np.where(judged, targets, 0.0), 0.0))
    return (error < tolerance).all(axis=1)


def most_active_correct(outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per step: the units judged 1 are all more active than every other unit; a step whose
    targets are not all present is not judged."""
    _check_shapes(outputs, targets)
    judged = ~np.isnan(targets).any(axis=1)
    legal = np.where(judged[:, None], targets, 0.0) > 0.5
    lowest_legal = np.where(legal, outputs, np.inf).min(axis=1)
    highest_other = np.where(legal, -np.inf, outputs).max(axis=1)
    return ~judged | (lowest_legal > highest_other)


@dataclass(frozen=True)
class SuccessTest:
    """One success test: its name (a protocol's ``success`` setting) and, for ``tolerance``,
    the tolerance."""

    name: str
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in SUCCESS_TESTS:
            close = difflib.get_close_matches(self.name, SUCCESS_TESTS, n=1)
            raise ValueError(f"success is one of {', '.join(map(repr, SUCCESS_TESTS))}, not {self.name!r}"
                             + (f" (did you mean {close[0]!r}?)" if close else ""))
        if self.name == "tolerance" and not (self.tolerance > 0 and math.isfinite(self.tolerance)):
            raise ValueError(f"tolerance must be a finite number > 0, not {self.tolerance}")
        if not (self.tolerance >= 0 and math.isfinite(self.tolerance)):  # (unread by most_active, never invalid)
            raise ValueError(f"tolerance must be a finite number >= 0, not {self.tolerance}")

    @property
    def kernel_tolerance(self) -> float:
        """The float the compiled kernels and drivers judge by."""
        return MOST_ACTIVE if self.name == "most_active" else float(self.tolerance)

    def steps_correct(self, outputs: np.ndarray, judged: np.ndarray) -> np.ndarray:
        """Per step of ``outputs`` (steps, n_outputs): right by this test against ``judged``."""
        if self.name == "most_active":
            return most_active_correct(outputs, judged)
        return within_tolerance(outputs, judged, self.tolerance)

    def describe(self) -> str:
        return SUCCESS_TESTS[self.name].format(tolerance=self.tolerance)


#: Every success test: its name and what it checks, in words.
SUCCESS_TESTS = {
    "tolerance": "every judged output within {tolerance} of its target",
    "most_active": "the outputs whose target is 1 more active than every other output",
}

#: The test of outputs that no task's test judges (a task that declares none, a data file):
#: every output on the right side of 0.5 (`tasks.task_success_test` falls back to it).
FALLBACK_TEST = SuccessTest("tolerance", 0.49)


def squared_error(outputs: np.ndarray, targets: np.ndarray) -> float:
    """Mean squared error over the judged entries (0 if none)."""
    judged = ~np.isnan(targets)
    if not judged.any():
        return 0.0
    return float(np.mean((outputs[judged] - targets[judged]) ** 2))


# -- scalar forms, compiled into the protocol drivers by numba ------------------------------------
def sequence_right(outputs, judged, start, length, kernel_tolerance):
    """Every step of a sequence right (outputs[t] against judged[start + t]): the scalar form of
    `SuccessTest.steps_correct(...).all()`, the test given as its ``kernel_tolerance``."""
    for t in range(length):
        row = judged[start + t]
        if kernel_tolerance < 0.0:
            lowest_legal, highest_other, present = np.inf, -np.inf, True
            for k in range(row.shape[0]):
                if math.isnan(row[k]):
                    present = False
            if not present:
                continue
            for k in range(row.shape[0]):
                if row[k] > 0.5:
                    lowest_legal = min(lowest_legal, outputs[t, k])
                else:
                    highest_other = max(highest_other, outputs[t, k])
            if not lowest_legal > highest_other:
                return False
        else:
            for k in range(row.shape[0]):
                if not math.isnan(row[k]) and not abs(outputs[t, k] - row[k]) < kernel_tolerance:
                    return False
    return True


def squared_differences(outputs, targets, start, length, scratch):
    """`squared_error`'s terms of a sequence (outputs[t] against targets[start + t]) into
    ``scratch``, in numpy's order; returns how many (their mean is the squared error)."""
    n = 0
    for t in range(length):
        for k in range(targets.shape[1]):
            target = targets[start + t, k]
            if not math.isnan(target):
                difference = outputs[t, k] - target
                scratch[n] = difference * difference
                n += 1
    return n
