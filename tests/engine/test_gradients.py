"""Every learning rule against an independent computation, on every bundled spec and every net the
experiments train."""

from __future__ import annotations

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import RealTimeRecurrentLearning, Simulator, bptt_gradient
from lstmgraph.engine.gradcheck import gradient_check, random_problem, rtrl_gradient
from lstmgraph.program import lower

from conftest import EXPERIMENT_NETS, SPECS, experiment_data, experiment_plan, net_structure
from engine.test_forward import PAPERS_NETS, blocks_with_peepholes, papers_forward, papers_layout, papers_problem

SPEC_PATHS = sorted(SPECS.glob("*.yaml"))


@pytest.mark.parametrize("path", SPEC_PATHS, ids=lambda p: p.stem)
def test_gradients_agree_on_every_bundled_spec(path):
    report = gradient_check(lstmgraph.compile_spec(path), seed=3, steps=7)
    errors = {check["name"]: check["max_rel_error"] for check in report["checks"]}
    assert errors["truncated_rtrl_vs_bptt"] < 1e-9
    assert errors["rtrl_vs_bptt"] < 1e-9
    assert errors["bptt_vs_finite_differences"] < 1e-6
    assert report["passed"]


@pytest.mark.parametrize("key", EXPERIMENT_NETS)
def test_gradients_agree_on_every_net_the_experiments_train(key):
    """The three checks of `gradient_check` on the catalogue's variants (no forget gate, state
    decay, no peepholes, an identity output, 8 symbols, the 2000 wiring) and the sweeps' ones."""
    report = gradient_check(experiment_plan(key), seed=3, steps=7)
    errors = {check["name"]: check["max_rel_error"] for check in report["checks"]}
    assert errors["truncated_rtrl_vs_bptt"] < 1e-9 and errors["rtrl_vs_bptt"] < 1e-9
    assert errors["bptt_vs_finite_differences"] < 1e-6 and report["passed"]


def test_gradients_agree_with_logistic_outputs_under_cross_entropy():
    """No bundled spec pairs logistic outputs with cross-entropy (dE/dnet = y - t, with f'
    cancelled), so the finite differences above never checked that pairing: here, on the CERG
    net's 0/1 targets."""
    import yaml

    data = yaml.safe_load((SPECS / "gers2000_cerg.yaml").read_text())
    data["training"]["loss"] = "cross_entropy"
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data))
    assert plan.unit["prediction"].activation == "logistic" and plan.training.loss == "cross_entropy"
    report = gradient_check(plan, seed=3, steps=7)
    errors = {check["name"]: check["max_rel_error"] for check in report["checks"]}
    assert errors["truncated_rtrl_vs_bptt"] < 1e-9 and errors["rtrl_vs_bptt"] < 1e-9
    assert errors["bptt_vs_finite_differences"] < 1e-6 and report["passed"]


def test_every_catalogue_row_trains_one_of_the_nets_the_exactness_tests_check():
    """A row added with a new net (a new variant, spec or wiring) must join EXPERIMENT_NETS,
    so that the tests parametrised over it check its arithmetic too."""
    from lstmgraph.experiments.catalogue import EXPERIMENTS
    checked = {net_structure(experiment_data(key)) for key in EXPERIMENT_NETS}
    assert len(checked) == len(EXPERIMENT_NETS)  # no net listed twice
    missing = [name for name, row in EXPERIMENTS.items() if net_structure(row.spec_data()[0]) not in checked]
    assert missing == []


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


def _split(pairs, matrix: np.ndarray, peephole: str | None) -> dict[str, np.ndarray]:
    """The columns of ``matrix`` (rows, sources) cut into the weights of ``pairs`` (connection,
    source value) in order; the columns left, if any, are ``peephole``'s."""
    out, start = {}, 0
    for name, value in pairs:
        out[name], start = matrix[:, start:start + len(value)], start + len(value)
    if start < matrix.shape[1]:
        out[peephole] = matrix[:, start:]
    return out


def papers_truncated_rtrl(plan, weights, inputs, targets) -> list[dict[str, np.ndarray]]:
    """Per-step dE(t)/dW of a papers' net (`papers_forward`) by the 1997/2000/2002 truncated
    RTRL rule as papers.md section 2 writes it out, sum of squares: error reaches the past only
    through the CEC, and the cell states keep traces of their own block's cell-input,
    input-gate and forget-gate weights (peepholes included); the output gate and output weights
    learn from the step alone. A NaN target carries no error."""
    L = papers_layout(plan)
    M, Y, blocks, per_block, n, block, gates, decay = (
        L[k] for k in ("M", "Y", "blocks", "per_block", "n", "block", "gates", "decay"))
    W = {name: value[0] for name, value in weights.items()}
    trace = {}
    steps = []
    for v, target in zip(papers_forward(plan, weights, inputs), targets):
        def source_rows(port, peek):
            """Per cell, the values port's weights multiply at this step: its sources, then
            (a gate with peepholes) the cells of the cell's block."""
            rows = np.tile(np.concatenate([value for _, value in v["sources"][port]]), (n, 1))
            if f"{M}.state->{M}.{port}" in W:
                rows = np.concatenate([rows, peek.reshape(blocks, per_block)[block]], axis=1)
            return rows
        carry = (decay * v["y_fg"][block])[:, None]
        new = {"cell_input": (v["y_in"][block] * v["g_prime"])[:, None] * source_rows("cell_input", None)}
        if "input_gate" in gates:
            new["input_gate"] = (v["g"] * v["gate_prime"]["input_gate"][block])[:, None] * source_rows(
                "input_gate", v["s_prev"])
        if "forget_gate" in gates:
            new["forget_gate"] = (decay * v["s_prev"] * v["gate_prime"]["forget_gate"][block])[:, None] * source_rows(
                "forget_gate", v["s_prev"])
        trace = {port: carry * trace.get(port, 0.0) + value for port, value in new.items()}
        delta = np.where(np.isnan(target), 0.0, v["y"] - target) * v["y_prime"]
        grad = {name: np.outer(delta, value) for name, value in v["out_sources"]}
        e = W[f"{M}.cell_output->{Y}"].T @ delta       # truncated: the outputs' error only
        e_s = e * v["y_og"][block] * v["h_prime"]
        if "output_gate" in gates:
            delta_og = np.bincount(block, e * v["h"], minlength=blocks) * v["gate_prime"]["output_gate"]
            rows = source_rows("output_gate", v["s"])[::per_block]  # one row a block
            grad.update(_split(v["sources"]["output_gate"], delta_og[:, None] * rows, f"{M}.state->{M}.output_gate"))
        grad.update(_split(v["sources"]["cell_input"], e_s[:, None] * trace["cell_input"], None))
        for gate in ("input_gate", "forget_gate"):
            if gate in gates:
                summed = np.stack([(e_s[:, None] * trace[gate])[block == k].sum(axis=0) for k in range(blocks)])
                grad.update(_split(v["sources"][gate], summed, f"{M}.state->{M}.{gate}"))
        steps.append(grad)
    return steps


@pytest.mark.parametrize("make_plan", [pytest.param(lambda: blocks_with_peepholes(1.0), id="peepholes"),
                                       pytest.param(lambda: blocks_with_peepholes(0.9), id="peepholes-decay-0.9"),
                                       *PAPERS_NETS])
def test_truncated_rtrl_is_the_papers_rule_written_out(make_plan):
    """Not only BPTT with the same cuts: the cuts themselves are the papers'. Per step, every
    weight's gradient against the rule written out by hand, to 1e-12 of each matrix's largest
    entry, over 8 steps (the traces grow for 7): 2 blocks of 2 cells with peepholes, forget
    gates, the 1997 squashing functions and a CEC weight 1 or 0.9 (the 2000 state-decay
    baseline); and every papers' net, bundled or a variant an experiment trains."""
    plan = make_plan()
    weights, inputs, targets = papers_problem(plan, 5, 8)
    sim = Simulator(plan)
    learner, state = RealTimeRecurrentLearning(sim, 1), sim.zero_state(1)
    for t, expected in enumerate(papers_truncated_rtrl(plan, weights, inputs, targets)):
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


def test_the_gradient_engines_take_a_simulator_and_say_so_of_a_plan():
    """Before: "'Plan' object has no attribute 'program'", from deep inside."""
    from lstmgraph.engine import initial_weights

    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    with pytest.raises(TypeError, match=r"RealTimeRecurrentLearning takes a Simulator, not a Plan: "
                                        r"RealTimeRecurrentLearning\(Simulator\(plan\), ...\)"):
        RealTimeRecurrentLearning(plan)
    with pytest.raises(TypeError, match=r"bptt_gradient takes a Simulator, not a Plan"):
        bptt_gradient(plan, initial_weights(plan), np.zeros((3, 1)), np.zeros((3, 1)), "sum_of_squares")
