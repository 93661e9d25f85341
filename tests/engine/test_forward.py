"""Forward passes against numbers worked from the equations, and the gates' limiting cases."""

from __future__ import annotations

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import Simulator, initial_weights

from conftest import SPECS

# The 17-weight timing net (papers.md section 1, 2002 convention, g = h = identity) with these
# weights, inputs 1, 0, 1. Step 1 by hand (all activations start at 0):
#   cell input  g  = 1.0*1 + 0.5*0 + 0.1                      = 1.1
#   input gate  yi = sigma(0.3*1 - 0.2*0 + 0.0 + 0.4*0)      = sigma(0.3)  = 0.574442516811659
#   forget gate yf = sigma(-0.1*1 + 0.2*0 - 2.0 + 0.3*0)     = sigma(-2.1) = 0.109096821195613
#   state       s  = yf*0 + yi*g                              = 0.631886768492825
#   output gate yo = sigma(0.2*1 + 0.1*0 + 2.0 - 0.5*s)      (peeks at the new state)
#   cell output yc = yo*s;   output y = sigma(1.5*yc - 0.5)
TIMING_WEIGHTS = {
    "spikes->memory.cell_input": 1.0, "memory.cell_output->memory.cell_input": 0.5,
    "bias->memory.cell_input": 0.1,
    "spikes->memory.input_gate": 0.3, "memory.cell_output->memory.input_gate": -0.2,
    "bias->memory.input_gate": 0.0, "memory.state->memory.input_gate": 0.4,
    "spikes->memory.forget_gate": -0.1, "memory.cell_output->memory.forget_gate": 0.2,
    "bias->memory.forget_gate": -2.0, "memory.state->memory.forget_gate": 0.3,
    "spikes->memory.output_gate": 0.2, "memory.cell_output->memory.output_gate": 0.1,
    "bias->memory.output_gate": 2.0, "memory.state->memory.output_gate": -0.5,
    "memory.cell_output->target": 1.5, "bias->target": -0.5,
}
#            input gate          forget gate          state                output gate         cell output          output
EXPECTED = [(0.574442516811659, 0.10909682119561293, 0.631886768492825, 0.8680763832433153, 0.5485259806125575, 0.5800037949558196),
            (0.5357015180743245, 0.1543701070650186, 0.29803768017131577, 0.8705503683199193, 0.25945681224635325, 0.4723246197427682),
            (0.5908121343810291, 0.12360809512164238, 0.7633783342510647, 0.8634513405626502, 0.6591400460655646, 0.6198025105428029)]


@pytest.fixture(scope="module")
def timing():
    return lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")


def test_timing_net_forward_equals_hand_worked_values(timing):
    weights = initial_weights(timing)
    assert set(TIMING_WEIGHTS) == {slot.connection for slot in timing.parameters}
    for name, value in TIMING_WEIGHTS.items():
        weights[name] = np.full_like(weights[name], value)
    sim = Simulator(timing)
    records, _ = sim.run(weights, np.array([[1.0], [0.0], [1.0]]))
    for record, expected in zip(records, EXPECTED):
        got = tuple(float(record.y[name][0, 0]) for name in (
            "memory.input_gate", "memory.forget_gate", "memory.state", "memory.output_gate",
            "memory.cell_output", "target"))
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)


def _one_block():
    return lstmgraph.spec_from_data({
        "version": 1,
        "groups": [{"name": "x", "kind": "input", "size": 1},
                   {"name": "m", "kind": "memory_block", "blocks": 1, "cells_per_block": 2,
                    "gates": ["input", "forget", "output"]},
                   {"name": "y", "kind": "output", "size": 1}],
        "connections": [{"from": "x", "to": ["m.cell_input", "m.input_gate", "m.forget_gate", "m.output_gate"]},
                        {"from": "bias", "to": ["m.input_gate", "m.forget_gate", "m.output_gate"]},
                        {"from": "m.cell_output", "to": "y"}]})


def _gate(weights, name: str, open_: bool) -> None:
    weights[f"bias->m.{name}"][:] = 60.0 if open_ else -60.0
    weights[f"x->m.{name}"][:] = 0.0


def test_saturated_gates_behave_as_the_papers_say():
    plan = lstmgraph.compile_plan(_one_block())
    sim = Simulator(plan)
    weights = initial_weights(plan, [0])
    for gate in ("input_gate", "forget_gate", "output_gate"):
        _gate(weights, gate, True)
    state = sim.zero_state(1)
    record, state = sim.step(weights, state, [1.0])
    first = record.y["m.state"].copy()
    assert np.abs(first).min() > 0.01
    # input gate shut: the state is carried unchanged (forget gate open)
    _gate(weights, "input_gate", False)
    record, state = sim.step(weights, state, [1.0])
    np.testing.assert_allclose(record.y["m.state"], first, rtol=1e-12)
    # forget gate shut, input gate open: the old state is gone, only the new cell input remains
    _gate(weights, "input_gate", True)
    _gate(weights, "forget_gate", False)
    record, state = sim.step(weights, state, [-1.0])
    np.testing.assert_allclose(record.y["m.state"], record.y["m.cell_input"], rtol=1e-12)
    # output gate shut: the cell output is zero whatever the state
    _gate(weights, "output_gate", False)
    record, state = sim.step(weights, state, [1.0])
    assert np.abs(record.y["m.state"]).min() > 0.01
    np.testing.assert_allclose(record.y["m.cell_output"], 0.0, atol=1e-24)


def test_a_population_runs_like_its_trials_one_by_one():
    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    sim = Simulator(plan)
    inputs = np.eye(7)[np.random.default_rng(0).integers(0, 7, 30)]
    together = initial_weights(plan, [4, 5, 6])
    records, _ = sim.run(together, inputs)
    for index, seed in enumerate([4, 5, 6]):
        alone, _ = sim.run(initial_weights(plan, [seed]), inputs)
        for mixed, single in zip(records, alone):
            assert np.array_equal(mixed.y["prediction"][index], single.y["prediction"][0])


def test_signals_record_every_group_over_time(timing):
    sim = Simulator(timing)
    records, state = sim.run(initial_weights(timing), np.zeros((5, 1)))
    signals = sim.signals(records)
    assert set(signals) == set(timing.execution_order)
    assert signals["memory.state"].shape == (5, 1, 1)
    assert np.array_equal(state["memory.state"], signals["memory.state"][-1])


def blocks_with_peepholes(state_decay: float = 1.0) -> lstmgraph.Plan:
    """2 blocks of 2 cells, input, forget and output gates with peepholes, the 1997 squashing
    functions, cell outputs fed back (delay 1) to every port and forward to 2 logistic outputs."""
    ports = ["m.cell_input", "m.input_gate", "m.forget_gate", "m.output_gate"]
    return lstmgraph.compile_plan(lstmgraph.spec_from_data({
        "version": 1,
        "groups": [{"name": "x", "kind": "input", "size": 2},
                   {"name": "m", "kind": "memory_block", "blocks": 2, "cells_per_block": 2,
                    "gates": ["input", "forget", "output"], "state_decay": state_decay,
                    "cell_input_activation": "four_logistic_minus_two",
                    "cell_output_activation": "two_logistic_minus_one"},
                   {"name": "y", "kind": "output", "size": 2, "activation": "logistic"}],
        "connections": [{"from": "x", "to": ports}, {"from": "m.cell_output", "to": ports, "delay": 1},
                        {"from": "m.state", "to": ports[1:], "pattern": "peephole"},
                        {"from": "bias", "to": [*ports, "y"]}, {"from": "m.cell_output", "to": "y"}]}))


def random_weights(plan, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    weights = initial_weights(plan, [0])
    for slot in plan.parameters:
        weights[slot.connection] = rng.uniform(-1.0, 1.0, weights[slot.connection].shape)
    return weights


def _sigma(x):
    return 1.0 / (1.0 + np.exp(-x))


def papers_forward(weights: dict, inputs: np.ndarray, decay: float = 1.0) -> list[dict]:
    """The forward pass of `blocks_with_peepholes` from papers.md section 1, written out here:
    each step's activations, net inputs' squashed values and the previous state."""
    W = {name: value[0] for name, value in weights.items()}
    n_cells, per_block = 4, 2
    block = np.arange(n_cells) // per_block
    y_c, s = np.zeros(n_cells), np.zeros(n_cells)
    steps = []
    for x in inputs:
        def net(port, peek=None):
            total = W[f"x->m.{port}"] @ x + W[f"m.cell_output->m.{port}"] @ y_c + W[f"bias->m.{port}"][:, 0]
            if peek is not None:  # gate k sees the cells of block k only
                total = total + (W[f"m.state->m.{port}"] * peek.reshape(-1, per_block)).sum(axis=1)
            return total
        source = np.concatenate([x, y_c, [1.0]])          # x~(t): inputs, y_c(t-1), bias
        s_prev = s
        y_in = _sigma(net("input_gate", s_prev))          # input and forget gates peek at s(t-1)
        y_fg = _sigma(net("forget_gate", s_prev))
        g = 4.0 * _sigma(net("cell_input")) - 2.0
        s = decay * y_fg[block] * s_prev + y_in[block] * g
        y_og = _sigma(net("output_gate", s))              # the output gate at the new s(t)
        h = 2.0 * _sigma(s) - 1.0
        y_c = y_og[block] * h
        y = _sigma(W["m.cell_output->y"] @ y_c + W["bias->y"][:, 0])
        steps.append(dict(source=source, s_prev=s_prev, y_in=y_in, y_fg=y_fg, g=g, s=s, y_og=y_og, h=h,
                          y_c=y_c, y=y))
    return steps


@pytest.mark.parametrize("decay", [1.0, 0.9])
def test_blocks_of_cells_with_peepholes_and_state_decay_follow_the_papers_equations(decay):
    """Each gate's peepholes read the cells of its own block; the state decays by its CEC weight."""
    plan = blocks_with_peepholes(decay)
    weights = random_weights(plan, 5)
    inputs = np.random.default_rng(6).uniform(-1.0, 1.0, (6, 2))
    records, _ = Simulator(plan).run(weights, inputs)
    names = {"y_in": "m.input_gate", "y_fg": "m.forget_gate", "g": "m.cell_input", "s": "m.state",
             "y_og": "m.output_gate", "y_c": "m.cell_output", "y": "y"}
    for record, expected in zip(records, papers_forward(weights, inputs, decay)):
        for key, group in names.items():
            np.testing.assert_allclose(record.y[group][0], expected[key], rtol=1e-13, atol=1e-15, err_msg=key)


def test_the_1997_erg_net_follows_the_1997_equations():
    """The bundled 1997 net (3 blocks of 2 cells, input and output gates, no forget gate): its
    hidden layer fully recurrent, every cell input and gate seeing the previous step's cell
    outputs and gate activations (experiments.md, 1997), the state never decaying, written out."""
    plan = lstmgraph.compile_spec(SPECS / "hochreiter1997_erg.yaml")
    weights = random_weights(plan, 8)
    inputs = np.eye(7)[np.random.default_rng(9).integers(0, 7, 6)]
    records, _ = Simulator(plan).run(weights, inputs)
    W = {name: value[0] for name, value in weights.items()}
    block = np.arange(6) // 2
    y_c, y_in, y_out, s = np.zeros(6), np.zeros(3), np.zeros(3), np.zeros(6)
    for record, x in zip(records, inputs):
        def net(port):
            return (W[f"symbols->memory.{port}"] @ x + W[f"memory.cell_output->memory.{port}"] @ y_c
                    + W[f"memory.input_gate->memory.{port}"] @ y_in + W[f"memory.output_gate->memory.{port}"] @ y_out)
        y_in_now = _sigma(net("input_gate") + W["bias->memory.input_gate"][:, 0])
        y_out_now = _sigma(net("output_gate") + W["bias->memory.output_gate"][:, 0])
        g = 4.0 * _sigma(net("cell_input")) - 2.0        # the cell inputs have no bias (1997)
        s = s + y_in_now[block] * g                      # the CEC: weight 1, no forget gate
        y_c = y_out_now[block] * (2.0 * _sigma(s) - 1.0)
        y = _sigma(W["memory.cell_output->prediction"] @ y_c)  # no output bias (1997: gates only)
        y_in, y_out = y_in_now, y_out_now
        for group, expected in (("memory.input_gate", y_in), ("memory.output_gate", y_out), ("memory.state", s),
                                ("memory.cell_output", y_c), ("prediction", y)):
            np.testing.assert_allclose(record.y[group][0], expected, rtol=1e-13, atol=1e-15, err_msg=group)
