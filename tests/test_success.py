"""The papers' success tests on hand-made outputs."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph.success import most_active_correct, squared_error, within_tolerance

NAN = np.nan


def test_within_tolerance_judges_only_present_targets_and_is_strict():
    outputs = np.array([[0.50, 0.9], [0.96, 0.2], [0.0, 5.0]])
    targets = np.array([[0.54, NAN], [1.0, NAN], [NAN, NAN]])
    # |0.5 - 0.54| = 0.04 is not < 0.04; 0.04 at row 1 is not either; a row without targets is right
    assert within_tolerance(outputs, targets, 0.04).tolist() == [False, False, True]
    assert within_tolerance(outputs, targets, 0.0401).tolist() == [True, True, True]


def test_the_cerg_test_needs_every_output_on_the_right_side_of_one_half():
    targets = np.array([[1.0, 0.0]])
    assert within_tolerance(np.array([[0.52, 0.48]]), targets, 0.49).tolist() == [True]
    assert within_tolerance(np.array([[0.50, 0.0]]), targets, 0.49).tolist() == [False]  # an untrained net's 0.5


def test_most_active_needs_every_legal_symbol_above_every_other():
    targets = np.array([[0, 1, 1, 0], [1, 0, 0, 0], [0, 1, 1, 0], [NAN, NAN, NAN, NAN]], dtype=float)
    outputs = np.array([[0.1, 0.6, 0.5, 0.4],    # both legal above the rest: right
                        [0.3, 0.3, 0.0, 0.0],    # a tie with an illegal unit: wrong
                        [0.1, 0.9, 0.2, 0.3],    # one legal unit below an illegal one: wrong
                        [9.0, 0.0, 0.0, 0.0]])   # no target: right
    assert most_active_correct(outputs, targets).tolist() == [True, False, False, True]


def test_squared_error_is_the_mean_over_present_targets():
    outputs = np.array([[0.5, 0.0], [1.0, 3.0]])
    targets = np.array([[1.0, NAN], [0.0, NAN]])
    assert squared_error(outputs, targets) == (0.25 + 1.0) / 2
    assert squared_error(outputs, np.full_like(targets, NAN)) == 0.0


def test_a_tolerance_below_zero_or_not_finite_is_refused_by_every_test():
    import math

    import pytest

    from lstmgraph.success import SuccessTest

    for name in ("tolerance", "most_active"):
        for tolerance in (-1.0, math.nan, math.inf):
            with pytest.raises(ValueError, match="tolerance must be a finite number"):
                SuccessTest(name, tolerance)
    assert SuccessTest("most_active", 0.0).kernel_tolerance < 0  # (most_active reads no tolerance: 0 is its own)


def test_outputs_and_targets_of_other_shapes_are_refused_not_broadcast():
    """Before: targets (2, 1) against outputs (2, 2) were broadcast, and judged wrongly."""
    outputs = np.array([[0.1, 0.9], [0.9, 0.1]])
    for judge in (lambda o, t: within_tolerance(o, t, 0.3), most_active_correct):
        for targets in (np.array([[0.0], [1.0]]), np.array([0.0, 1.0])):
            with pytest.raises(ValueError, match=r"outputs and targets are \(steps, n_outputs\) of one shape"):
                judge(outputs, targets)
        with pytest.raises(ValueError, match="of one shape, not \\(2,\\)"):
            judge(outputs[0], outputs[0])
