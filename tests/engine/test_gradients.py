"""Every learning rule against an independent computation, on every bundled spec."""

from __future__ import annotations

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import RealTimeRecurrentLearning, Simulator, bptt_gradient
from lstmgraph.engine.gradcheck import gradient_check, random_problem, rtrl_gradient
from lstmgraph.program import lower

from conftest import SPECS
from engine.test_forward import blocks_with_peepholes, papers_forward, random_weights

SPEC_PATHS = sorted(SPECS.glob("*.yaml"))


@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_gradients_agree_on_every_bundled_spec(path):
    report = gradient_check(lstmgraph.compile_spec(path), seed=3, steps=7)
    errors = {check["name"]: check["max_rel_error"] for check in report["checks"]}
    assert errors["truncated_rtrl_vs_bptt"] < 1e-9
    assert errors["rtrl_vs_bptt"] < 1e-9
    assert errors["bptt_vs_finite_differences"] < 1e-6
    assert report["passed"]


def test_truncated_gradient_differs_from_the_full_one():
    """The cut edges matter: the 1997 truncation is not the true gradient."""
    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    weights, inputs, targets, loss = random_problem(plan, 0, 8, 0.5)
    _, truncated, _ = bptt_gradient(Simulator(plan), weights, inputs, targets, loss)
    _, full, _ = bptt_gradient(Simulator(plan, full_gradient=True), weights, inputs, targets, loss)
    name = "symbols->memory.input_gate"
    assert np.abs(truncated[name] - full[name]).max() > 1e-3 * np.abs(full[name]).max()


def test_cutting_only_the_recurrent_outputs_is_not_the_1997_rule():
    """design-notes.md: peepholes must be cut too; letting them carry changes the gradient."""
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    weights, inputs, targets, loss = random_problem(plan, 1, 8, 0.5)
    truncated = rtrl_gradient(Simulator(plan), weights, inputs, targets, loss)
    data = lstmgraph.spec_from_data(_with_carrying_peepholes(plan))
    leaky = lstmgraph.compile_plan(data)
    other = rtrl_gradient(Simulator(leaky), weights, inputs, targets, loss)
    differences = [np.abs(truncated[k] - other[k]).max() / np.abs(truncated[k]).max() for k in truncated]
    assert max(differences) > 1e-2


def _with_carrying_peepholes(plan):
    import copy
    data = copy.deepcopy(plan.resolved_spec)
    for connection in data["connections"]:
        if connection.get("pattern") == "peephole":
            connection["gradient"] = True
    return data


def _traced_weights(program) -> dict[str, set[tuple[int, str]]]:
    """Per traced group: the (unit, connection) pairs it keeps traces of."""
    owner = {}
    for slot in program.plan.parameters:
        for offset in range(slot.offset, slot.offset + slot.size):
            owner[offset] = slot.connection
    return {group: {(int(unit), owner[int(p)]) for unit, p in zip(units, params)}
            for group, (units, params) in program.trace_entries.items()}


def test_lstm_truncation_keeps_the_papers_traces_only():
    """Gers et al. 2002: the cell state's traces of cell-input, input-gate and forget-gate
    weights (peepholes included), one per weight: 3 + 4 + 4 numbers."""
    program = lower(lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml"))
    traced = _traced_weights(program)
    assert list(traced) == ["memory.state"]
    assert {name for _, name in traced["memory.state"]} == {
        "spikes->memory.cell_input", "memory.cell_output->memory.cell_input",
        "bias->memory.cell_input", "spikes->memory.input_gate",
        "memory.cell_output->memory.input_gate", "bias->memory.input_gate",
        "memory.state->memory.input_gate", "spikes->memory.forget_gate",
        "memory.cell_output->memory.forget_gate", "bias->memory.forget_gate",
        "memory.state->memory.forget_gate"}
    assert len(program.trace_entries["memory.state"][0]) == 11


@pytest.mark.parametrize("blocks,cells", [(1, 1), (4, 2), (16, 2), (8, 4)])
def test_truncated_trace_storage_is_linear_in_the_weights(blocks, cells):
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data({
        "version": 1,
        "groups": [{"name": "x", "kind": "input", "size": 3},
                   {"name": "m", "kind": "memory_block", "blocks": blocks, "cells_per_block": cells,
                    "gates": ["input", "forget", "output"]},
                   {"name": "y", "kind": "output", "size": 2}],
        "connections": [{"from": "x", "to": ["m.cell_input", "m.input_gate", "m.forget_gate", "m.output_gate"]},
                        {"from": "m.cell_output", "delay": 1,
                         "to": ["m.cell_input", "m.input_gate", "m.forget_gate", "m.output_gate"]},
                        {"from": "m.cell_output", "to": "y"}]}))
    truncated = lower(plan)
    stored = sum(len(units) for units, _ in truncated.trace_entries.values())
    assert stored <= cells * plan.n_parameters
    # A cell's traces: its own row of the cell input and its block's input- and forget-gate rows.
    columns = 3 + blocks * cells
    assert stored == blocks * cells * 3 * columns
    # Exact RTRL: every traced value depends on every weight that reaches it (lowered for the
    # small nets only: its traces grow with the square of the cells, 11 s of the suite at 32).
    if 1 < blocks * cells <= 8:
        exact = lower(plan, full_gradient=True)
        assert sum(len(units) for units, _ in exact.trace_entries.values()) > stored


def test_online_rtrl_gradient_of_each_step_matches_bptt_of_that_step():
    """dE(t)/dW from RTRL at step t equals BPTT of the loss of step t alone."""
    plan = lstmgraph.compile_spec(SPECS / "hochreiter1997_erg.yaml")
    weights, inputs, targets, loss = random_problem(plan, 2, 6, 0.5)
    sim = Simulator(plan)
    learner = RealTimeRecurrentLearning(sim, 1)
    state = sim.zero_state(1)
    for t in range(len(inputs)):
        _, grads, state, _ = learner.step(weights, state, inputs[t], targets[t], loss)
        only_t = np.full_like(targets[: t + 1], np.nan)
        only_t[t] = targets[t]
        _, reference, _ = bptt_gradient(sim, weights, inputs[: t + 1], only_t, loss)
        for name in grads:
            np.testing.assert_allclose(grads[name], reference[name], rtol=1e-9, atol=1e-15)


def _papers_truncated_rtrl(weights, inputs, targets, decay):
    """Per-step dE(t)/dW of `blocks_with_peepholes` by the 1997/2000/2002 truncated RTRL rule as
    papers.md section 2 writes it out: error reaches the past only through the CEC, and the
    cell states keep traces of their own block's cell-input, input-gate and forget-gate weights
    (peepholes included); the output gate and output weights learn from the step alone."""
    W = {name: value[0] for name, value in weights.items()}
    per_block, n_cells = 2, 4
    block = np.arange(n_cells) // per_block
    columns = 2 + n_cells + 1  # x~(t): inputs, y_c(t-1), bias
    trace = {"cell_input": np.zeros((n_cells, columns)),
             "input_gate": np.zeros((n_cells, columns + per_block)),  # + the peepholes on s(t-1)
             "forget_gate": np.zeros((n_cells, columns + per_block))}
    steps = []
    for v, target in zip(papers_forward(weights, inputs, decay), targets):
        src = v["source"]
        peeked = v["s_prev"].reshape(-1, per_block)[block]  # each cell's row: its block's s(t-1)
        gated_src = np.concatenate([np.tile(src, (n_cells, 1)), peeked], axis=1)
        carry = (decay * v["y_fg"][block])[:, None]
        sigma_c = (v["g"] + 2.0) / 4.0
        g_prime = 4 * sigma_c * (1 - sigma_c)
        trace["cell_input"] = carry * trace["cell_input"] + (v["y_in"][block] * g_prime)[:, None] * src
        f_in, f_fg = v["y_in"] * (1 - v["y_in"]), v["y_fg"] * (1 - v["y_fg"])
        trace["input_gate"] = carry * trace["input_gate"] + (v["g"] * f_in[block])[:, None] * gated_src
        trace["forget_gate"] = carry * trace["forget_gate"] + (decay * v["s_prev"] * f_fg[block])[:, None] * gated_src
        delta_out = (v["y"] - target) * v["y"] * (1 - v["y"])
        e = W["m.cell_output->y"].T @ delta_out
        e_s = e * v["y_og"][block] * 2 * ((v["h"] + 1) / 2) * (1 - (v["h"] + 1) / 2)  # e y_og h'(s)
        delta_og = np.bincount(block, e * v["h"]) * v["y_og"] * (1 - v["y_og"])
        grad = {"m.cell_output->y": np.outer(delta_out, v["y_c"]), "bias->y": delta_out[:, None],
                "m.state->m.output_gate": delta_og[:, None] * v["s"].reshape(-1, per_block)}
        by_port = {"output_gate": np.outer(delta_og, src),
                   "cell_input": e_s[:, None] * trace["cell_input"]}
        for gate in ("input_gate", "forget_gate"):
            summed = np.stack([(e_s[:, None] * trace[gate])[block == k].sum(axis=0) for k in range(2)])
            by_port[gate] = summed[:, :columns]
            grad[f"m.state->m.{gate}"] = summed[:, columns:]
        for port, full in by_port.items():
            grad[f"x->m.{port}"], grad[f"m.cell_output->m.{port}"] = full[:, :2], full[:, 2:2 + n_cells]
            grad[f"bias->m.{port}"] = full[:, -1:]
        steps.append(grad)
    return steps


@pytest.mark.parametrize("decay", [1.0, 0.9])
def test_truncated_rtrl_is_the_papers_rule_written_out(decay):
    """Not only BPTT with the same cuts: the cuts themselves are the papers'. Per step, every
    weight's gradient of 2 blocks of 2 cells with peepholes, forget gates, the 1997 squashing
    functions and a CEC weight ``decay`` (the 2000 state-decay baseline) against the rule written
    out by hand, to 1e-12 of each matrix's largest entry, over 8 steps (the traces grow for 7)."""
    plan = blocks_with_peepholes(decay)
    weights = random_weights(plan, 5)
    rng = np.random.default_rng(7)
    inputs, targets = rng.uniform(-1.0, 1.0, (8, 2)), rng.uniform(0.0, 1.0, (8, 2))
    sim = Simulator(plan)
    learner, state = RealTimeRecurrentLearning(sim, 1), sim.zero_state(1)
    for t, expected in enumerate(_papers_truncated_rtrl(weights, inputs, targets, decay)):
        _, grads, state, _ = learner.step(weights, state, inputs[t], targets[t])
        assert set(grads) == set(expected)
        for name, values in expected.items():
            assert np.abs(grads[name][0] - values).max() <= 1e-12 * np.abs(values).max(), (t, name)
    assert all(np.abs(values).min() > 0 for values in expected.values())  # the last step: every weight counts


def test_gradients_agree_with_peepholes_in_blocks_and_a_decaying_state():
    """A CEC weight other than 1 (state_decay), beside the bundled specs' 1s."""
    report = gradient_check(blocks_with_peepholes(0.9), seed=3, steps=7)
    errors = {check["name"]: check["max_rel_error"] for check in report["checks"]}
    assert errors["truncated_rtrl_vs_bptt"] < 1e-12 and errors["rtrl_vs_bptt"] < 1e-12
    assert report["passed"]
