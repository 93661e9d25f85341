"""The loss operation and its output deltas, with NaN as 'no target'."""

from __future__ import annotations

import numpy as np

from lstmgraph.engine.executor import run_ops
from lstmgraph.operations import ACTIVATIONS, LOSSES
from lstmgraph.program import Op

# Slots: 0-1 constants, 2-4 y, 5-7 f'(net), 8-10 dE/dnet.
Y, DERIV, DNET = [2, 3, 4], [5, 6, 7], [8, 9, 10]


def _loss(loss: str, activation: str, net: np.ndarray, target) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(loss, dE/dnet, y) of one output group of three units, one trial per column of ``net``."""
    values = np.zeros((11, net.shape[1]))
    function = ACTIVATIONS[activation]
    values[Y] = function.apply(net)
    if function.elementwise:
        values[DERIV] = function.derivative(net, values[Y])
    op = Op("loss", "loss", np.array(DNET), np.array(Y), np.array(DERIV), np.arange(3),
            code=LOSSES.index(loss), mode=int(not function.elementwise))
    step_loss = run_ops([op], values, target=np.asarray(target, dtype=float))
    return step_loss, values[DNET], values[Y]


def test_sum_of_squares_ignores_missing_targets():
    loss, delta, y = _loss("sum_of_squares", "logistic", np.array([[0.0], [1.0], [-1.0]]), [1.0, np.nan, 0.0])
    error = y[:, 0] - [1.0, 0.0, 0.0]
    np.testing.assert_allclose(loss, [0.5 * (error[0] ** 2 + error[2] ** 2)])
    np.testing.assert_allclose(delta[:, 0], [error[0] * y[0, 0] * (1 - y[0, 0]), 0.0,
                                             error[2] * y[2, 0] * (1 - y[2, 0])])


def test_softmax_cross_entropy_delta_is_output_minus_target():
    loss, delta, y = _loss("cross_entropy", "softmax", np.array([[0.3], [-1.0], [2.0]]), [0.0, 1.0, 0.0])
    np.testing.assert_allclose(loss, [-np.log(y[1, 0])])
    np.testing.assert_allclose(delta[:, 0], y[:, 0] - [0.0, 1.0, 0.0])


def test_softmax_sum_of_squares_uses_the_jacobian():
    net = np.array([[0.3], [-1.0], [2.0]])
    loss, delta, y = _loss("sum_of_squares", "softmax", net, [0.0, 1.0, 0.0])
    error = y[:, 0] - [0.0, 1.0, 0.0]
    jacobian = np.diag(y[:, 0]) - np.outer(y[:, 0], y[:, 0])
    np.testing.assert_allclose(delta[:, 0], jacobian @ error)


def test_no_target_means_no_error():
    loss, delta, _ = _loss("cross_entropy", "softmax", np.zeros((3, 2)), [np.nan] * 3)
    assert np.array_equal(delta, np.zeros((3, 2))) and np.array_equal(loss, [0.0, 0.0])


def test_logistic_cross_entropy_is_the_binary_log_loss_with_delta_output_minus_target():
    loss, delta, y = _loss("cross_entropy", "logistic", np.array([[0.3], [-1.0], [2.0]]), [1.0, 0.0, 0.25])
    t = np.array([1.0, 0.0, 0.25])
    np.testing.assert_allclose(loss, [-(t * np.log(y[:, 0]) + (1 - t) * np.log(1 - y[:, 0])).sum()], rtol=1e-14)
    np.testing.assert_allclose(delta[:, 0], y[:, 0] - t, rtol=1e-14)
