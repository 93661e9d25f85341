"""specs/gru_torch.yaml is torch.nn.GRU: its outputs and gradients against PyTorch's equations
written out here in numpy (torch is not a test dependency), with the same weights."""

from __future__ import annotations

import numpy as np

import lstmgraph
from lstmgraph.engine import Simulator, bptt_gradient, initial_weights
from lstmgraph.engine.gradcheck import gradient_check

from conftest import SPECS


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def torch_gru(w: dict[str, np.ndarray], inputs: np.ndarray) -> np.ndarray:
    """h(t) of torch.nn.GRU (its documentation's equations), one network, from h(0) = 0."""
    h = np.zeros(w["W_hr"].shape[0])
    states = []
    for x in inputs:
        r = _sigmoid(w["W_ir"] @ x + w["b_ir"] + w["W_hr"] @ h + w["b_hr"])
        z = _sigmoid(w["W_iz"] @ x + w["b_iz"] + w["W_hz"] @ h + w["b_hz"])
        n = np.tanh(w["W_in"] @ x + w["b_in"] + r * (w["W_hn"] @ h + w["b_hn"]))
        h = (1.0 - z) * n + z * h
        states.append(h)
    return np.array(states)


def _problem(seed: int = 0):
    plan = lstmgraph.compile_spec(SPECS / "gru_torch.yaml")
    weights = initial_weights(plan, [seed])
    rng = np.random.default_rng(seed)
    for slot in plan.parameters:  # away from the initial range, so every term matters
        weights[slot.connection] = rng.uniform(-1.0, 1.0, weights[slot.connection].shape)
    inputs = rng.uniform(-1.0, 1.0, (5, 4))
    torch_weights = {name: values[0].reshape(-1) if name.startswith("b_") else values[0]
                     for name, values in weights.items() if name[:2] in ("W_", "b_")}
    return plan, weights, inputs, torch_weights


def test_hidden_states_are_torch_gru_states():
    plan, weights, inputs, torch_weights = _problem()
    records, _ = Simulator(plan).run(weights, inputs)
    ours = np.array([record.y["h"][0] for record in records])
    np.testing.assert_allclose(ours, torch_gru(torch_weights, inputs), rtol=0, atol=1e-14)


def cho_gru(w: dict[str, np.ndarray], inputs: np.ndarray) -> np.ndarray:
    """The same weights in the other convention (Cho et al. 2014, specs/gru.yaml): the reset
    gate on h(t-1) before the weights, both candidate biases outside it."""
    h = np.zeros(w["W_hr"].shape[0])
    states = []
    for x in inputs:
        r = _sigmoid(w["W_ir"] @ x + w["b_ir"] + w["W_hr"] @ h + w["b_hr"])
        z = _sigmoid(w["W_iz"] @ x + w["b_iz"] + w["W_hz"] @ h + w["b_hz"])
        n = np.tanh(w["W_in"] @ x + w["b_in"] + w["W_hn"] @ (r * h) + w["b_hn"])
        h = (1.0 - z) * n + z * h
        states.append(h)
    return np.array(states)


def test_it_is_not_the_other_convention():
    """With the same weights the textbook convention gives other states, far above rounding."""
    plan, weights, inputs, torch_weights = _problem()
    records, _ = Simulator(plan).run(weights, inputs)
    ours = np.array([record.y["h"][0] for record in records])
    assert np.abs(ours - cho_gru(torch_weights, inputs)).max() > 1e-3


def test_gradients_are_those_of_torch_gru():
    """BPTT's gradient of a loss on h equals central differences of the numpy torch GRU."""
    plan, weights, inputs, torch_weights = _problem(1)
    probe = np.random.default_rng(2).uniform(-1.0, 1.0, (5, 8))

    def loss(w):  # E = sum over t of probe(t) . h(t)
        return float((probe * torch_gru(w, inputs)).sum())

    # The same loss through the spec: identity readout of h is not in the spec, so use its
    # BPTT with targets chosen so that dE/dh(t) = probe(t) on an added identity output.
    data = lstmgraph.load_spec(SPECS / "gru_torch.yaml").data
    data = {**data, "groups": data["groups"][:-1] + [{"name": "readout", "kind": "output", "size": 8,
                                                         "activation": "identity"}],
            "connections": [c for c in data["connections"] if c.get("to") != "class"]
            + [{"from": "h", "to": "readout", "pattern": "one_to_one", "trainable": False,
                "init": {"constant": 1.0}}]}
    data.pop("training")
    probe_plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data))
    probe_weights = initial_weights(probe_plan, [0]) | {k: v for k, v in weights.items() if k in
                                                         {s.connection for s in probe_plan.parameters}}
    records, _ = Simulator(probe_plan).run(probe_weights, inputs)
    h = np.array([record.y["h"][0] for record in records])
    # 1/2 (h - target)^2 with target = h - probe has dE/dh = probe.
    _, grads, _ = bptt_gradient(Simulator(probe_plan, full_gradient=True), probe_weights, inputs, h - probe,
                                "sum_of_squares")
    epsilon = 1e-6
    for name, values in torch_weights.items():
        numeric = np.zeros_like(values)
        for index in np.ndindex(values.shape):
            up, down = {k: v.copy() for k, v in torch_weights.items()}, {k: v.copy() for k, v in torch_weights.items()}
            up[name][index] += epsilon
            down[name][index] -= epsilon
            numeric[index] = (loss(up) - loss(down)) / (2 * epsilon)
        np.testing.assert_allclose(grads[name][0].reshape(values.shape), numeric, rtol=1e-6, atol=1e-8,
                                   err_msg=name)


def test_gradcheck_passes():
    report = gradient_check(lstmgraph.compile_spec(SPECS / "gru_torch.yaml"), seed=0, steps=6)
    assert report["passed"], report
