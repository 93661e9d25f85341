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
