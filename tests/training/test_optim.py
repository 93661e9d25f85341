"""The update rules: momentum SGD, Adam against its formula, gradient-norm clipping, the spec's checks."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph.spec.models import LearningRateDecay, OptimizerSpec
from lstmgraph.training.optim import Optimizer, clipped

from conftest import SPECS


def test_adam_follows_its_formula_with_bias_correction():
    rng = np.random.default_rng(0)
    grads = [rng.normal(size=(2, 3, 4)) for _ in range(3)]
    optimizer = Optimizer(0.01, 0.0, LearningRateDecay(), OptimizerSpec(name="adam", beta1=0.8, beta2=0.9,
                                                                      epsilon=1e-3))
    weights = {"w": np.ones((2, 3, 4))}
    expected, m, u = np.ones((2, 3, 4)), 0.0, 0.0
    for n, grad in enumerate(grads, start=1):
        optimizer.apply(weights, {"w": grad})
        m = 0.8 * m + 0.2 * grad
        u = 0.9 * u + 0.1 * grad ** 2
        expected = expected - 0.01 * (m / (1 - 0.8 ** n)) / (np.sqrt(u / (1 - 0.9 ** n)) + 1e-3)
    np.testing.assert_allclose(weights["w"], expected, rtol=1e-13)
    assert optimizer.updates == 3


def test_clipping_scales_each_network_to_the_norm_and_leaves_short_gradients():
    grads = {"a": np.array([[3.0, 0.0], [0.3, 0.0]]), "b": np.array([[[4.0]], [[0.4]]])}
    out = clipped(grads, 1.0)
    np.testing.assert_allclose(out["a"], [[0.6, 0.0], [0.3, 0.0]])  # network 0: norm 5 -> 1
    np.testing.assert_allclose(out["b"], [[[0.8]], [[0.4]]])       # network 1: norm 0.5, kept
    plain = Optimizer(1.0, 0.0, LearningRateDecay(), clip_norm=1.0)
    weights = {"a": np.zeros((2, 2)), "b": np.zeros((2, 1, 1))}
    plain.apply(weights, grads)
    np.testing.assert_allclose(weights["a"], -out["a"])


def _training(**changes):
    data = yaml.safe_load((SPECS / "modern_lstm.yaml").read_text())
    data["training"].update(changes)
    return lstmgraph.spec_from_data(data, "net.yaml")


@pytest.mark.parametrize("changes,message", [
    ({"optimizer": {"name": "sgd", "beta1": 0.9}}, "beta1 apply to name: adam only"),
    ({"optimizer": {"name": "adam"}, "momentum": 0.9}, "adam has optimizer.beta1"),
    ({"learning_rule": "truncated_rtrl", "optimizer": {"name": "adam"}}, "online updates use momentum SGD"),
    ({"learning_rule": "rtrl", "clip_norm": 1.0}, "online updates use momentum SGD"),
    ({"optimizer": {"name": "adagrad"}}, "one of sgd, adam"),
    ({"clip_norm": 0}, "greater than 0"),
])
def test_spec_refuses_optimizer_options_that_do_not_apply(changes, message):
    with pytest.raises(lstmgraph.SpecError) as caught:
        _training(**changes)
    assert message in str(caught.value)


def test_adam_defaults_and_per_sequence_rtrl_are_accepted():
    training = _training(learning_rule="rtrl", update="sequence", optimizer={"name": "adam"},
                         clip_norm=2.0).spec.training
    assert training.optimizer.adam == (0.9, 0.999, 1e-8) and training.clip_norm == 2.0
