"""The update rules: momentum SGD, Adam against its formula, gradient-norm clipping, the spec's checks."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph.spec.models import LearningRateDecay, OptimizerSpec
from lstmgraph.training.optim import Optimizer, clipped

from conftest import SPECS


def test_momentum_sgd_follows_its_formula_velocity_first():
    """``v <- momentum v - rate g``, then ``w <- w + v``, with the rate the schedule gives at each
    step; before, only the engines' agreement held this (an update applied before the velocity
    was scaled passed here)."""
    rng = np.random.default_rng(1)
    grads = [rng.normal(size=(2, 5)) for _ in range(4)]
    optimizer = Optimizer(0.5, 0.9, LearningRateDecay(kind="multiplicative", factor=0.99, every="step"))
    weights, expected, velocity, rate = {"w": np.ones((2, 5))}, np.ones((2, 5)), np.zeros((2, 5)), 0.5
    for grad in grads:
        optimizer.apply(weights, {"w": grad})
        optimizer.after("step")
        velocity = 0.9 * velocity - rate * grad
        expected = expected + velocity
        rate *= 0.99
        np.testing.assert_array_equal(weights["w"], expected)
    plain = Optimizer(0.5, 0.0, LearningRateDecay())
    weights = {"w": np.ones((2, 5))}
    plain.apply(weights, {"w": grads[0]})
    np.testing.assert_array_equal(weights["w"], 1.0 - 0.5 * grads[0])


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


def _state(optimizer: Optimizer) -> dict[str, np.ndarray]:
    return {key: value for key, value in optimizer.state().items() if key in ("rate", "decays", "updates")}


@pytest.mark.parametrize("decay, events, steps, sequences", [
    (LearningRateDecay(), 0, 5000, 50),
    (LearningRateDecay(kind="multiplicative", factor=0.9999, every="step"), 100_000, 100_000, 10),
    (LearningRateDecay(kind="multiplicative", factor=0.99, every="step"), 80_000, 80_000, 10),  # to 0
    (LearningRateDecay(kind="multiplicative", factor=0.99, every="sequence"), 300, 9000, 300),
    (LearningRateDecay(kind="inverse_time", every="sequence"), 700, 7000, 700),
    (LearningRateDecay(kind="inverse_time", time_constant=250.0, every="step"), 7000, 7000, 70),
])
def test_a_saved_rate_and_counters_fit_the_schedule_that_made_them(decay, events, steps, sequences):
    optimizer = Optimizer(0.5, 0.0, decay)
    for _ in range(events):
        optimizer.after(decay.every)
    assert optimizer.state_problems(_state(optimizer), steps, sequences) == []
    if optimizer.rate > 0:  # the rate the schedule gives, as `after` computed it step by step
        assert optimizer.scheduled_rate(optimizer.decays) == pytest.approx(optimizer.rate, rel=1e-9)


@pytest.mark.parametrize("name, value, words", [
    ("rate", -1.0, "'optimizer/rate' is -1.0; expected 0.25, the spec's learning_rate 0.5 after 1 decays"),
    ("rate", 0.0, "'optimizer/rate' is 0.0; expected 0.25"),
    ("rate", 1e300, "'optimizer/rate' is 1e+300; expected 0.25"),
    ("rate", 0.26, "'optimizer/rate' is 0.26; expected 0.25"),
    ("decays", -1, "'optimizer/decays' is -1; expected the schedule's decays after every sequence (1)"),
    ("decays", 7, "'optimizer/decays' is 7; expected the schedule's decays after every sequence (1)"),
    ("updates", -3, "'optimizer/updates' is -3; expected 0 (only Adam counts its updates)"),
])
def test_a_damaged_rate_or_counter_is_named_with_what_was_expected(name, value, words):
    optimizer = Optimizer(0.5, 0.0, LearningRateDecay(kind="inverse_time", every="sequence"))
    optimizer.after("sequence")
    state = {**_state(optimizer), name: np.array(value)}
    problems = optimizer.state_problems(state, 10, 1)
    assert len(problems) == 1 and problems[0].startswith(words), problems


def test_adam_counts_at_most_one_update_per_step():
    optimizer = Optimizer(0.01, 0.0, LearningRateDecay(), OptimizerSpec(name="adam"))
    assert optimizer.state_problems({**_state(optimizer), "updates": np.array(10)}, 10, 2) == []
    assert optimizer.state_problems({**_state(optimizer), "updates": np.array(11)}, 10, 2) == [
        "'optimizer/updates' is 11; expected an integer from 0 to 10 (at most one Adam update per step)"]


def test_an_inverse_time_decay_halves_the_rate_after_its_time_constant():
    """Before: alpha / (n + 1) only, which took a rate of 0.1 to 5e-6 in 20,000 steps."""
    slow = Optimizer(0.1, 0.0, LearningRateDecay(kind="inverse_time", time_constant=1000.0, every="step"))
    plain = Optimizer(0.1, 0.0, LearningRateDecay(kind="inverse_time", every="step"))
    for _ in range(1000):
        slow.after("step"), plain.after("step")
    assert slow.rate == pytest.approx(0.05, rel=1e-12) and plain.rate == pytest.approx(0.1 / 1001, rel=1e-12)
    assert slow.scheduled_rate(20_000) == pytest.approx(0.1 / 21, rel=1e-12)
    with pytest.raises(ValueError, match="time_constant applies to inverse_time decay only"):
        LearningRateDecay(kind="multiplicative", factor=0.9, time_constant=10.0)
