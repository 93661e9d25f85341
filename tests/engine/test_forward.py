"""Forward passes against numbers worked from the equations, and the gates' limiting cases."""

from __future__ import annotations

import io

import numpy as np
import pytest

import lstmgraph
from lstmgraph.arrays import ArrayFileError
from lstmgraph.engine import Simulator, initial_weights
from lstmgraph.engine.forward import input_sequences, run_forward

from conftest import EXPERIMENT_NETS, SPECS, experiment_plan

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


def test_run_forward_sets_each_trial_s_outputs_side_by_side_and_records_every_group(tmp_path):
    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    inputs = np.eye(7)[[0, 1, 5, 3]]
    forward = run_forward(plan, initial_weights(plan, [4, 5]), inputs)
    for index, seed in enumerate([4, 5]):
        alone = run_forward(plan, initial_weights(plan, [seed]), inputs)
        assert np.array_equal(forward.outputs[:, 7 * index:7 * (index + 1)], alone.outputs)
        assert alone.signals["memory.state"].shape == (4, 8) and forward.signals["memory.state"].shape == (4, 2, 8)
    recorded = np.load(io.BytesIO(forward.record_bytes()))
    assert set(recorded.files) == {"inputs", "starts", *plan.execution_order}
    assert np.array_equal(recorded["inputs"], inputs) and recorded["starts"].tolist() == [0]


def test_an_archive_s_starts_run_each_sequence_from_zero_activations(tmp_path):
    """Before: `run` read an .npz's inputs as one sequence and ignored its starts, so a second
    sequence began from the first's last state, unlike `evaluate` on the same file."""
    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    weights = initial_weights(plan, [3])
    first, second = np.eye(7)[[0, 1, 5]], np.eye(7)[[0, 2, 4, 6]]
    np.savez(tmp_path / "two.npz", inputs=np.concatenate([first, second]), starts=np.array([0, 3]))
    inputs, starts = input_sequences(tmp_path / "two.npz", 7)
    assert starts.tolist() == [0, 3]
    forward = run_forward(plan, weights, inputs, starts)
    alone = [run_forward(plan, weights, sequence).outputs for sequence in (first, second)]
    assert np.array_equal(forward.outputs, np.concatenate(alone))
    assert not np.array_equal(run_forward(plan, weights, inputs).outputs[3:], alone[1])
    np.savez(tmp_path / "bad.npz", inputs=inputs, starts=np.array([0, 9]))
    with pytest.raises(ArrayFileError, match="'starts' must begin at 0 and increase strictly within the 7 steps"):
        input_sequences(tmp_path / "bad.npz", 7)
    np.savez(tmp_path / "flat.npz", inputs=inputs, starts=np.array([[0, 3]]))  # (before: flattened, accepted)
    with pytest.raises(ArrayFileError, match=r"'starts' has shape \(1, 2\), expected \(sequences,\)"):
        input_sequences(tmp_path / "flat.npz", 7)
    np.savez(tmp_path / "one.npz", inputs=inputs, starts=np.array(0))  # (a scalar 0: one sequence, as before)
    assert input_sequences(tmp_path / "one.npz", 7)[1].tolist() == [0]


def test_an_input_file_is_read_as_steps_of_the_net_s_width(tmp_path):
    np.save(tmp_path / "one.npy", np.array([0.0, 1.0, 0.5]))
    assert input_sequences(tmp_path / "one.npy", 1)[0].shape == (3, 1)  # 1-D: a net of one input
    with pytest.raises(ArrayFileError, match=r"one.npy: inputs have shape \(3,\); the network needs \(steps, 2\)"):
        input_sequences(tmp_path / "one.npy", 2)
    np.save(tmp_path / "empty.npy", np.zeros((0, 2)))
    with pytest.raises(ArrayFileError, match="with at least one step"):
        input_sequences(tmp_path / "empty.npy", 2)


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


def _scaled_logistic(scale: float, shift: float):
    """x -> scale sigma(x) - shift and its derivative scale sigma(x) (1 - sigma(x))."""
    return (lambda x: scale * _sigma(x) - shift), (lambda x: scale * _sigma(x) * (1.0 - _sigma(x)))


#: The squashing functions and their derivatives as the papers define them, written here (not
#: read from lstmgraph's activation registry): the 1997 g = 4 sigma - 2 and h = 2 sigma - 1.
SQUASH = {"logistic": _scaled_logistic(1.0, 0.0), "four_logistic_minus_two": _scaled_logistic(4.0, 2.0),
          "two_logistic_minus_one": _scaled_logistic(2.0, 1.0), "identity": (lambda x: x, np.ones_like),
          "tanh": (np.tanh, lambda x: 1.0 - np.tanh(x) ** 2),
          "softmax": (lambda x: np.exp(x) / np.exp(x).sum(), lambda x: None)}  # (not elementwise: no f')


def papers_layout(plan) -> dict:
    """A papers' net from its spec: the input, the memory-block and the output group (one of
    each), the block of each cell, the gates and the CEC's weight (state_decay)."""
    groups = plan.resolved_spec["groups"]
    assert sorted(group["kind"] for group in groups) == ["input", "memory_block", "output"]
    kind = {group["kind"]: group for group in groups}
    memory = kind["memory_block"]
    blocks, per_block = memory["blocks"], memory["cells_per_block"]
    return dict(X=kind["input"]["name"], n_in=kind["input"]["size"], M=memory["name"], Y=kind["output"]["name"], memory=memory,
                output=kind["output"], blocks=blocks, per_block=per_block, n=blocks * per_block,
                block=np.arange(blocks * per_block) // per_block, gates=[f"{g}_gate" for g in memory["gates"]],
                decay=float(memory.get("state_decay", 1.0)))


def papers_forward(plan, weights: dict, inputs: np.ndarray) -> list[dict]:
    """The forward pass of a papers' net (inputs, one group of memory blocks, outputs) from
    papers.md section 1, written out here from its spec's groups and its weights by name. Per
    step: each port's sources (connection, value), activations, derivatives, previous state.
    Cell inputs and gates read x(t), the previous step's cell outputs and gates, and the bias;
    input and forget gates peek at s(t-1), the output gate at s(t); an absent gate is 1;
    s(t) = decay y_fg s(t-1) + y_in g. Outputs read x(t), the cell outputs y_c(t) and the bias.
    Every trainable weight must be read, so no wiring goes unchecked."""
    L = papers_layout(plan)
    X, M, Y, blocks, per_block, n, block, gates, decay = (
        L[k] for k in ("X", "M", "Y", "blocks", "per_block", "n", "block", "gates", "decay"))
    g_of, g_prime = SQUASH[L["memory"]["cell_input_activation"]]
    h_of, h_prime = SQUASH[L["memory"]["cell_output_activation"]]
    f_gate, f_gate_prime = SQUASH[L["memory"]["gate_activation"]]
    f_out, f_out_prime = SQUASH[L["output"]["activation"]]
    W = {name: value[0] for name, value in weights.items()}
    for connection in plan.connections:  # the fixed ones: the CEC's weight is the decay, the rest plain sums
        if not connection.trainable:
            assert np.all(W[connection.name] == (decay if connection.name == f"{M}.state->{M}.state" else 1.0))
    read = set()

    def weighted(pairs):
        read.update(name for name, _ in pairs)
        return sum(W[name] @ value for name, value in pairs)

    previous = {"cell_output": np.zeros(n), **{gate: np.zeros(blocks) for gate in gates}}
    s = np.zeros(n)
    steps = []
    for x in inputs:
        def sources(port):
            listed = [(f"{X}->{M}.{port}", x), *[(f"{M}.{unit}->{M}.{port}", previous[unit])
                                                for unit in ("cell_output", *gates)], (f"bias->{M}.{port}", np.ones(1))]
            return [(name, value) for name, value in listed if name in W]

        def net(port, peek):
            total = weighted(sources(port))
            peephole = f"{M}.state->{M}.{port}"
            if peephole in W:  # gate k sees the cells of block k only
                read.add(peephole)
                total = total + (W[peephole] * peek.reshape(blocks, per_block)).sum(axis=1)
            return total

        s_prev = s
        nets = {gate: net(gate, s_prev) for gate in gates if gate != "output_gate"}
        net_c = net("cell_input", None)
        y_in = f_gate(nets["input_gate"]) if "input_gate" in nets else np.ones(blocks)
        y_fg = f_gate(nets["forget_gate"]) if "forget_gate" in nets else np.ones(blocks)
        g = g_of(net_c)
        s = decay * y_fg[block] * s_prev + y_in[block] * g
        if "output_gate" in gates:
            nets["output_gate"] = net("output_gate", s)
        y_og = f_gate(nets["output_gate"]) if "output_gate" in nets else np.ones(blocks)
        h = h_of(s)
        y_c = y_og[block] * h
        out_sources = [(name, value) for name, value in ((f"{X}->{Y}", x), (f"{M}.cell_output->{Y}", y_c),
                                                         (f"bias->{Y}", np.ones(1))) if name in W]
        net_y = weighted(out_sources)
        steps.append(dict(sources={port: sources(port) for port in ("cell_input", *gates)}, out_sources=out_sources,
                          s_prev=s_prev, y_in=y_in, y_fg=y_fg, g=g, g_prime=g_prime(net_c), s=s, y_og=y_og, h=h,
                          h_prime=h_prime(s), y_c=y_c, y=f_out(net_y), y_prime=f_out_prime(net_y),
                          gate_prime={gate: f_gate_prime(value) for gate, value in nets.items()}))
        previous = {"cell_output": y_c, "input_gate": y_in, "forget_gate": y_fg, "output_gate": y_og}
    assert read == {connection.name for connection in plan.connections if connection.trainable}
    return steps


#: `papers_forward`'s name of each gate's activation.
GATE_KEYS = {"input_gate": "y_in", "forget_gate": "y_fg", "output_gate": "y_og"}


@pytest.mark.parametrize("decay", [1.0, 0.9])
def test_blocks_of_cells_with_peepholes_and_state_decay_follow_the_papers_equations(decay):
    """Each gate's peepholes read the cells of its own block; the state decays by its CEC weight."""
    plan = blocks_with_peepholes(decay)
    weights = random_weights(plan, 5)
    inputs = np.random.default_rng(6).uniform(-1.0, 1.0, (6, 2))
    records, _ = Simulator(plan).run(weights, inputs)
    names = {"y_in": "m.input_gate", "y_fg": "m.forget_gate", "g": "m.cell_input", "s": "m.state",
             "y_og": "m.output_gate", "y_c": "m.cell_output", "y": "y"}
    for record, expected in zip(records, papers_forward(plan, weights, inputs)):
        for key, group in names.items():
            np.testing.assert_allclose(record.y[group][0], expected[key], rtol=1e-13, atol=1e-15, err_msg=key)


#: The papers' nets: the bundled specs of the 1997, 2000 and 2002 papers and every net their
#: experiments and committed sweeps train (conftest.EXPERIMENT_NETS: the variants).
PAPERS_NETS = [pytest.param(lambda path=path: lstmgraph.compile_spec(path), id=path.stem)
               for path in sorted(SPECS.glob("*.yaml")) if path.stem.startswith(("hochreiter1997", "gers"))] + [
    pytest.param(lambda key=key: experiment_plan(key), id=key) for key in EXPERIMENT_NETS]


def papers_problem(plan, seed: int, steps: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """Weights uniform in [-1, 1], inputs in [-1, 1], targets in [0, 1] with none at step 1 and
    at some units of other steps (NaN), but for the last step, where every unit has one."""
    weights = random_weights(plan, seed)
    rng = np.random.default_rng(seed + 1)
    size = papers_layout(plan)["output"]["size"]
    inputs = rng.uniform(-1.0, 1.0, (steps, papers_layout(plan)["n_in"]))
    targets = rng.uniform(0.0, 1.0, (steps, size))
    targets[rng.random((steps, size)) < 0.2] = np.nan
    targets[1] = np.nan
    targets[-1] = rng.uniform(0.0, 1.0, size)
    return weights, inputs, targets


@pytest.mark.parametrize("make_plan", [*PAPERS_NETS, pytest.param(
    lambda: lstmgraph.compile_spec(SPECS / "modern_lstm.yaml"), id="modern_lstm")])
def test_every_memory_block_net_follows_the_papers_equations(make_plan):
    """Every unit of every papers' net, bundled or a variant, against `papers_forward`, 6 steps;
    and the modern LSTM (tanh squashing, forget gates without peepholes, a softmax output)."""
    plan = make_plan()
    weights, inputs, _ = papers_problem(plan, 11, 6)
    records, _ = Simulator(plan).run(weights, inputs)
    L = papers_layout(plan)
    M = L["M"]
    names = {"g": f"{M}.cell_input", "s": f"{M}.state", "y_c": f"{M}.cell_output", "y": L["Y"],
             **{GATE_KEYS[gate]: f"{M}.{gate}" for gate in L["gates"]}}
    for record, expected in zip(records, papers_forward(plan, weights, inputs)):
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


def _softmax(net: np.ndarray) -> np.ndarray:
    return np.exp(net) / np.exp(net).sum()


def test_the_elman_rnn_follows_its_equations():
    """rnn.yaml: h(t) = tanh(W_x x(t) + W_h h(t-1) + b), y(t) = softmax(W_y h(t) + b_y)."""
    plan = lstmgraph.compile_spec(SPECS / "rnn.yaml")
    weights = random_weights(plan, 3)
    inputs = np.random.default_rng(4).uniform(-1.0, 1.0, (6, 4))
    records, _ = Simulator(plan).run(weights, inputs)
    W = {name: value[0] for name, value in weights.items()}
    h = np.zeros(8)
    for record, x in zip(records, inputs):
        h = np.tanh(W["x->h"] @ x + W["h->h"] @ h + W["bias->h"][:, 0])
        y = _softmax(W["h->class"] @ h + W["bias->class"][:, 0])
        np.testing.assert_allclose(record.y["h"][0], h, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(record.y["class"][0], y, rtol=1e-13, atol=1e-15)


def test_the_gru_follows_the_equations_of_cho_et_al():
    """gru.yaml is the GRU of Cho et al. 2014 (the reset gate on h(t-1) before the weights,
    h(t) = z h(t-1) + (1 - z) n), `test_gru_torch.cho_gru`, with a softmax output on h(t)."""
    from engine.test_gru_torch import cho_gru
    plan = lstmgraph.compile_spec(SPECS / "gru.yaml")
    weights = random_weights(plan, 3)
    inputs = np.random.default_rng(4).uniform(-1.0, 1.0, (6, 4))
    records, _ = Simulator(plan).run(weights, inputs)
    W = {name: value[0] for name, value in weights.items()}
    assert all(np.all(W[name] == 1.0) for name in ("h_carry", "candidate->h"))  # plain products
    zero = np.zeros(8)
    cho = {"W_ir": W["x->reset"], "W_hr": W["h->reset"], "b_ir": W["bias->reset"][:, 0], "b_hr": zero,
           "W_iz": W["x->update"], "W_hz": W["h->update"], "b_iz": W["bias->update"][:, 0], "b_hz": zero,
           "W_in": W["x->candidate"], "W_hn": W["h->candidate"], "b_in": W["bias->candidate"][:, 0], "b_hn": zero}
    for record, h in zip(records, cho_gru(cho, inputs)):
        np.testing.assert_allclose(record.y["h"][0], h, rtol=1e-13, atol=1e-15)
        y = _softmax(W["h->class"] @ h + W["bias->class"][:, 0])
        np.testing.assert_allclose(record.y["class"][0], y, rtol=1e-13, atol=1e-15)


def test_an_input_file_is_bounded_by_the_steps_a_forward_run_may_keep(timing, tmp_path):
    """Before: the inputs were read whole, however long, and only then refused by the record
    limit; now `max_input_steps` (the steps whose values fit MAX_RECORD_BYTES) bounds the read."""
    from lstmgraph.engine.forward import max_input_steps
    from lstmgraph.limits import MAX_RECORD_BYTES

    weights = initial_weights(timing, [0, 1])
    steps = max_input_steps(timing, weights)
    assert steps == MAX_RECORD_BYTES // (Simulator(timing).forward_program.n_slots * 2 * 8)
    np.savetxt(tmp_path / "x.csv", np.zeros((5, 1)), delimiter=",")
    assert input_sequences(tmp_path / "x.csv", 1, max_steps=5)[0].shape == (5, 1)
    with pytest.raises(ArrayFileError,
                       match=r"x.csv: more than 4 rows \(steps\); a forward run of the network keeps at most 4 GiB"):
        input_sequences(tmp_path / "x.csv", 1, max_steps=4)


def test_starts_given_from_python_are_checked_and_a_group_named_as_a_record_array_is_refused():
    """Before: run_forward took starts [2] or [0, 5, 3] and returned outputs of the wrong width;
    and a group named 'starts' replaced the record's starts."""
    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    weights, inputs = initial_weights(plan, [3]), np.eye(7)[[0, 1, 5, 0, 2, 4, 6]]
    for starts in ([2], [0, 5, 3], [0, 7], [0.0, 3.0]):
        with pytest.raises(ValueError, match="'starts'"):
            run_forward(plan, weights, inputs, np.array(starts))
    forward = run_forward(plan, weights, inputs, np.array([0, 3]))
    clashing = type(forward)(forward.inputs, forward.outputs, {**forward.signals, "starts": forward.outputs},
                             forward.starts)
    with pytest.raises(ValueError, match="a unit group named 'starts' would replace the record's own 'starts'"):
        clashing.record_bytes()
