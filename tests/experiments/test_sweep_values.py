"""`sweep_values`: the values of --vary, --task-option and --protocol-option, however large."""

from __future__ import annotations

from lstmgraph.experiments.sweep_values import same_value


def test_integers_too_large_for_a_float_compare_without_overflow():
    """Before: same_value(10**400, 0.1) raised OverflowError (float(10**400)), a traceback from
    ``sweep --vary learning_rate=1000...0`` (400 digits) as the grid compared it with the row's."""
    huge = 10 ** 400
    assert not same_value(huge, 0.1) and not same_value(0.1, [huge]) and same_value(huge, 10 ** 400)
    assert same_value(2, 2.0) and same_value([0.5], 0.5) and not same_value(2 ** 53 + 1, float(2 ** 53))
    assert not same_value(True, 1)

