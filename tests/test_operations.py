"""The registry of operation kinds: each entry's forms agree with each other."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.compiled.vector_math import tanh
from lstmgraph.engine.gradcheck import gradient_check
from lstmgraph.files import BUNDLED_SPECS
from lstmgraph.operations import ACTIVATION_CODE, ACTIVATIONS, GATE_SIDES, OPERATION_KINDS, PATTERNS, NumpyStep
from lstmgraph.program import MINUS_ONE, ONE, Op, lower

ELEMENTWISE = [name for name, activation in ACTIVATIONS.items() if activation.elementwise]
POINTS = np.array([-3.0, -0.7, -0.1, 0.2, 0.9, 2.5])  # away from relu's kink at 0


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_derivative_is_the_slope_of_the_function(name):
    activation = ACTIVATIONS[name]
    step = 1e-6
    slope = (activation.apply(POINTS + step) - activation.apply(POINTS - step)) / (2 * step)
    np.testing.assert_allclose(activation.derivative(POINTS, activation.apply(POINTS)), slope, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_compiled_form_is_the_numpy_form(name):
    """The scalar expressions the compiled kernels are generated from (``tanh``: theirs,
    `vector_math.tanh`) compute what numpy does."""
    activation = ACTIVATIONS[name]
    for x in POINTS:
        y = eval(activation.scalar, {"math": math, "tanh": tanh, "x": float(x)})  # noqa: S307 - our own registry text
        assert y == pytest.approx(float(activation.apply(np.array([x]))[0]), rel=1e-15, abs=1e-15)
        slope = eval(activation.scalar_derivative, {"math": math, "tanh": tanh, "x": float(x), "y": y})  # noqa: S307
        assert slope == pytest.approx(float(activation.derivative(np.array([x]), np.array([y]))[0]), rel=1e-14)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_every_activation_trains_the_same_in_both_executors_and_passes_gradcheck(name):
    """A small recurrent net whose hidden group uses the activation: gradcheck, and 300 online
    steps of exact RTRL in the compiled executor against the numpy one."""
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data({
        "version": 1,
        "groups": [{"name": "x", "kind": "input", "size": 2},
                   {"name": "h", "kind": "hidden", "size": 3, "activation": name},
                   {"name": "y", "kind": "output", "size": 1, "activation": "identity"}],
        "connections": [{"from": "x", "to": "h"}, {"from": "h", "to": "h", "delay": 1, "gradient": True},
                        {"from": "bias", "to": "h"}, {"from": "h", "to": "y"}],
        "init": {"uniform": 0.5}}))
    assert gradient_check(plan, seed=1, steps=6)["passed"]
    rng = np.random.default_rng(0)
    inputs, targets = rng.uniform(-1, 1, (300, 2)), rng.uniform(-1, 1, (300, 1))
    weights = initial_weights(plan, [0])
    population = CompiledNetwork(plan, full_gradient=True).population(weights, 0.01)
    population.run(inputs, targets)
    from lstmgraph.engine import RealTimeRecurrentLearning, Simulator
    sim = Simulator(plan, full_gradient=True)
    learner, state = RealTimeRecurrentLearning(sim), sim.zero_state(1)
    for x, target in zip(inputs, targets):
        _, grads, state, _ = learner.step(weights, state, x, target)
        for key, grad in grads.items():
            weights[key] = weights[key] - 0.01 * grad
    for key, values in population.weights().items():
        np.testing.assert_allclose(values, weights[key], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(PATTERNS))
def test_a_pattern_s_triples_fill_its_weight_shape_once(name):
    pattern = PATTERNS[name]
    n_target, n_source = (2, 4) if name == "peephole" else (3, 3)
    shape = pattern.shape(n_target, n_source)
    triples = list(pattern.triples(n_target, n_source))
    assert sorted(w for _, _, w in triples) == list(range(math.prod(shape)))
    assert all(0 <= i < n_target and 0 <= j < n_source for i, j, _ in triples)


def test_gate_sides_pick_the_block_of_their_side():
    assert GATE_SIDES["source"].gate_unit(5, 7, 2) == 3
    assert GATE_SIDES["target"].gate_unit(5, 7, 2) == 2


def test_the_program_of_a_target_gated_connection_multiplies_after_the_weights():
    """r * (W h): the gate index of each product follows the target unit."""
    plan = lstmgraph.compile_spec(BUNDLED_SPECS / "gru_torch.yaml")
    program = lower(plan, traces=False)
    op = next(op for op in program.ops if op.what == "net of candidate += W_hn")
    reset = program.y("reset")
    net = program.rows("net", "candidate", 8)
    assert list(op.b - reset.start) == list(op.out - net.start)  # gate unit = target unit


ENTRYWISE = [name for name, kind in OPERATION_KINDS.items() if kind.entrywise]


@pytest.mark.parametrize("name,distinct", [(name, True) for name in ENTRYWISE]
                         + [(name, False) for name in ENTRYWISE if OPERATION_KINDS[name].term])
def test_an_operation_kind_s_statement_computes_its_numpy_form(name, distinct):
    """The compiled form, the statement run entry by entry and lane by lane in plain Python,
    against the numpy form on the same slots: bit for bit (the activations' compiled ``tanh`` is
    the kernels' own, so those to 1e-15). Entries that share an output slot (not ``distinct``)
    add in entry order in the statement and in `np.add.reduceat`'s order in numpy: to 1e-15."""
    kind = OPERATION_KINDS[name]
    rng = np.random.default_rng(3)
    slots, lanes = 40, 3
    out = np.array([4, 5, 6, 7]) if distinct else np.array([4, 5, 4, 4])
    a, b, c = np.array([10, 11, 12, 13]), np.array([20, 21, 22, 23]), np.array([30, 31, 32, 33])
    code = ACTIVATION_CODE["logistic"]
    op = Op(name, "forward", out, a, b, c, code=code, distinct=distinct)
    V = rng.uniform(-2, 2, (slots, lanes))
    V[ONE], V[MINUS_ONE] = 1.0, -1.0
    x, rate, momentum = rng.uniform(-1, 1, (slots, lanes)), rng.uniform(0.1, 0.2, lanes), 0.9
    expected = V.copy()
    kind.numpy(op, expected, NumpyStep(x, None, rate, momentum, np.zeros(lanes)))

    got = V.copy()
    activation = list(ACTIVATIONS.values())[code]
    for l in range(lanes):
        scope = {"V": got, "inputs": x, "rate": rate, "momentum": momentum, "decay": 1.0, "tanh": tanh,
                 "math": math, "l": l}
        for k in range(len(out)):
            operands = {"out": f"V[{out[k]}, l]", "a": f"V[{a[k]}, l]", "b": f"V[{b[k]}, l]", "c": f"V[{c[k]}, l]",
                        "input": f"inputs[{a[k]}, l]", "rate": "rate[l]"}
            exec("\n".join(kind.lines(activation, **operands)), scope)  # noqa: S102 - our own registry text
    if kind.form or not distinct:
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-15)
    else:
        assert np.array_equal(got, expected)
    assert not np.array_equal(got, V)  # the operation wrote something
