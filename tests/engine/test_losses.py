"""Losses and their output deltas, with NaN as 'no target'."""

from __future__ import annotations

import numpy as np

from lstmgraph import activations
from lstmgraph.engine.losses import loss_and_delta
from lstmgraph.graph.units import Unit


def _unit(activation: str, size: int = 3) -> Unit:
    return Unit("out", "output", size, activation, "out", ())


def test_sum_of_squares_ignores_missing_targets():
    unit = _unit("logistic")
    net = np.array([[0.0, 1.0, -1.0]])
    y = activations.apply("logistic", net)
    loss, delta = loss_and_delta("sum_of_squares", [unit], {"out": net}, {"out": y}, [1.0, np.nan, 0.0])
    error = y[0] - [1.0, 0.0, 0.0]
    np.testing.assert_allclose(loss, [0.5 * (error[0] ** 2 + error[2] ** 2)])
    np.testing.assert_allclose(delta["out"][0], [error[0] * y[0, 0] * (1 - y[0, 0]), 0.0,
                                                  error[2] * y[0, 2] * (1 - y[0, 2])])


def test_softmax_cross_entropy_delta_is_output_minus_target():
    unit = _unit("softmax")
    net = np.array([[0.3, -1.0, 2.0]])
    y = activations.apply("softmax", net)
    loss, delta = loss_and_delta("cross_entropy", [unit], {"out": net}, {"out": y}, [0.0, 1.0, 0.0])
    np.testing.assert_allclose(loss, [-np.log(y[0, 1])])
    np.testing.assert_allclose(delta["out"], y - [0.0, 1.0, 0.0])


def test_no_target_means_no_error():
    unit = _unit("softmax")
    net = np.zeros((2, 3))
    y = activations.apply("softmax", net)
    loss, delta = loss_and_delta("cross_entropy", [unit], {"out": net}, {"out": y}, [np.nan] * 3)
    assert delta == {} and np.array_equal(loss, [0.0, 0.0])
