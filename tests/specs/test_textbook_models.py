"""The textbook chapter's Models 3-1 and 3-2 (seed 003) as bundled specs, against its equations.

The reference values are computed here from the chapter's formulas with plain numpy and math
(eq_lstm_sg_example_model, eq_lstm_mg_general with the K = 2 example eq_lstm_mg_example_model
plus a tanh third addend), not with lstmgraph's engine, and compared with `Simulator.run`.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import Simulator, initial_weights
from lstmgraph.training import Trainer

from conftest import SPECS

SINGLE = SPECS / "textbook_single_forget_gate.yaml"
MULTIPLE = SPECS / "textbook_multiple_forget_gates.yaml"
M, N_IN, TRIALS, STEPS = 3, 4, 2, 3


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def layer(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One affine map of the chapter, b + U h + V x, for each of the TRIALS nets."""
    return {"b": rng.uniform(-1.0, 1.0, (TRIALS, M)),
            "U": rng.uniform(-1.0, 1.0, (TRIALS, M, M)),
            "V": rng.uniform(-1.0, 1.0, (TRIALS, M, N_IN))}


def affine(p: dict[str, np.ndarray], h: np.ndarray, x: np.ndarray) -> np.ndarray:
    """b + U h + V x per trial; h (TRIALS, M), x (TRIALS, N_IN)."""
    return p["b"] + np.einsum("tij,tj->ti", p["U"], h) + np.einsum("tij,tj->ti", p["V"], x)


def engine_weights(plan, layers: dict[str, dict[str, np.ndarray]], same_step: str) -> dict:
    """The spec's weights with each trainable group's U, V, b set to the given layer; the fixed
    connections keep the spec's initial value, which must be 1 (the chapter's plain sums)."""
    weights = initial_weights(plan, [0, 1])
    for connection in plan.connections:
        if not connection.trainable:
            assert np.all(weights[connection.name] == 1.0), connection.name
    for group, p in layers.items():
        weights[f"x->{group}"] = p["V"].copy()
        weights[f"h->{group}"] = p["U"].copy()
        weights[f"bias->{group}"] = p["b"][:, :, None].copy()
    assert set(layers) >= {same_step}
    trainable = {c.name for c in plan.connections if c.trainable}
    assert trainable == {f"{s}->{g}" for g in layers for s in ("x", "h", "bias")}
    return weights


def inputs(rng: np.random.Generator) -> np.ndarray:
    """Real-valued inputs, different for each trial: (STEPS, TRIALS, N_IN)."""
    return rng.uniform(-1.0, 1.0, (STEPS, TRIALS, N_IN))


def test_single_forget_gate_forward_pass_follows_the_chapter():
    """eq_lstm_sg_example_model: sigma_t = sigmoid(b_s + U_s h(t-1) + V_s x(t)),
    h(t) = sigma_t * (h(t-1) + sigmoid(b_f + U_f h(t-1) + V_f x(t))),
    y^(t) = sigmoid(b_g + U_g h(t) + V_g x(t)) * tanh(h(t)), from h(0) = 0."""
    rng = np.random.default_rng(2026)
    p = {"forget": layer(rng), "candidate": layer(rng), "output_gate": layer(rng)}
    x = inputs(rng)
    plan = lstmgraph.compile_spec(SINGLE)
    records, _ = Simulator(plan).run(engine_weights(plan, p, "output_gate"), x)
    assert len(records) == STEPS

    h = np.zeros((TRIALS, M))
    for t in range(STEPS):
        sigma = sigmoid(affine(p["forget"], h, x[t]))
        f = h + sigmoid(affine(p["candidate"], h, x[t]))
        h_new = sigma * f
        # the same transition written out as eq_lstm_sg_example_model_hidden_state_transition
        np.testing.assert_allclose(
            h_new, sigma * h + sigma * sigmoid(affine(p["candidate"], h, x[t])), rtol=0, atol=1e-15)
        h = h_new
        y = sigmoid(affine(p["output_gate"], h, x[t])) * np.tanh(h)
        record = records[t]
        np.testing.assert_allclose(record.y["forget"], sigma, rtol=0, atol=1e-12)
        np.testing.assert_allclose(record.y["h"], h, rtol=0, atol=1e-12)
        np.testing.assert_allclose(record.y["y"], y, rtol=0, atol=1e-12)

    # The first unit of trial 0 at step 1 once more, scalar by scalar with math (h(0) = 0).
    p_s, p_f, p_g = p["forget"], p["candidate"], p["output_gate"]
    x1 = x[0, 0]
    sig = lambda z: 1.0 / (1.0 + math.exp(-z))  # noqa: E731
    s1 = sig(p_s["b"][0, 0] + sum(p_s["V"][0, 0, j] * x1[j] for j in range(N_IN)))
    c1 = sig(p_f["b"][0, 0] + sum(p_f["V"][0, 0, j] * x1[j] for j in range(N_IN)))
    h1 = [None] * M
    for i in range(M):
        s_i = sig(p_s["b"][0, i] + sum(p_s["V"][0, i, j] * x1[j] for j in range(N_IN)))
        c_i = sig(p_f["b"][0, i] + sum(p_f["V"][0, i, j] * x1[j] for j in range(N_IN)))
        h1[i] = s_i * (0.0 + c_i)
    assert h1[0] == pytest.approx(s1 * c1, abs=1e-15)
    o1 = sig(p_g["b"][0, 0] + sum(p_g["U"][0, 0, j] * h1[j] for j in range(M))
             + sum(p_g["V"][0, 0, j] * x1[j] for j in range(N_IN)))
    assert abs(records[0].y["y"][0, 0] - o1 * math.tanh(h1[0])) < 1e-12


def test_multiple_forget_gates_forward_pass_follows_the_chapter():
    """eq_lstm_mg_general with K = 3: h(t) = sum_j sigma_j(t) * f_j, sigma_j = sigmoid(b_sj +
    U_sj h(t-1) + V_sj x(t)), f_1 = h(t-1), f_2 = sigmoid(b_f2 + U_f2 h(t-1) + V_f2 x(t)) (the
    chapter's K = 2 example), f_3 = tanh(b_f3 + U_f3 h(t-1) + V_f3 x(t)); y^ as in Model 3-1."""
    rng = np.random.default_rng(17)
    names = ("forget_1", "forget_2", "forget_3", "candidate_2", "candidate_3", "output_gate")
    p = {name: layer(rng) for name in names}
    x = inputs(rng)
    plan = lstmgraph.compile_spec(MULTIPLE)
    records, _ = Simulator(plan).run(engine_weights(plan, p, "output_gate"), x)

    h = np.zeros((TRIALS, M))
    for t in range(STEPS):
        sigmas = [sigmoid(affine(p[f"forget_{j}"], h, x[t])) for j in (1, 2, 3)]
        fs = [h, sigmoid(affine(p["candidate_2"], h, x[t])), np.tanh(affine(p["candidate_3"], h, x[t]))]
        h = sum(s * f for s, f in zip(sigmas, fs))
        y = sigmoid(affine(p["output_gate"], h, x[t])) * np.tanh(h)
        record = records[t]
        for j in (1, 2, 3):
            np.testing.assert_allclose(record.y[f"forget_{j}"], sigmas[j - 1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(record.y["h"], h, rtol=0, atol=1e-12)
        np.testing.assert_allclose(record.y["y"], y, rtol=0, atol=1e-12)
    # the third addend matters: h goes negative somewhere (f_1, f_2 >= 0 alone cannot do that)
    assert min(record.y["h"].min() for record in records) < 0


def test_two_forget_gates_sharing_weights_give_the_single_gate_model():
    """eq_lstm_sg_general is eq_lstm_mg_general's K = 2 example with sigma_1 = sigma_2: give
    forget_1 and forget_2 the same weights, switch f_3 off (sigma_3 ~ 0 via a bias of -800)
    and the K = 3 net computes Model 3-1 exactly."""
    rng = np.random.default_rng(5)
    single = {"forget": layer(rng), "candidate": layer(rng), "output_gate": layer(rng)}
    off = layer(rng)
    off["b"] = np.full((TRIALS, M), -800.0)  # sigmoid(-800 + O(1)) underflows to 0 exactly
    multiple = {"forget_1": single["forget"], "forget_2": single["forget"], "forget_3": off,
                "candidate_2": single["candidate"], "candidate_3": layer(rng),
                "output_gate": single["output_gate"]}
    x = inputs(rng)
    plan_s, plan_m = lstmgraph.compile_spec(SINGLE), lstmgraph.compile_spec(MULTIPLE)
    rec_s, _ = Simulator(plan_s).run(engine_weights(plan_s, single, "output_gate"), x)
    rec_m, _ = Simulator(plan_m).run(engine_weights(plan_m, multiple, "output_gate"), x)
    for a, b in zip(rec_s, rec_m):
        np.testing.assert_allclose(b.y["forget_3"], 0.0, atol=1e-300)
        np.testing.assert_allclose(b.y["h"], a.y["h"], rtol=0, atol=1e-14)
        np.testing.assert_allclose(b.y["y"], a.y["y"], rtol=0, atol=1e-14)


# gradcheck on both specs: tests/engine/test_gradients.py runs it on every bundled spec.


@pytest.mark.parametrize("path", [SINGLE, MULTIPLE], ids=lambda p: p.stem)
def test_every_recurrent_edge_carries_gradient(path):
    """The chapter trains by plain backpropagation through time: nothing is truncated, so the
    spec's truncated RTRL is exact RTRL."""
    plan = lstmgraph.compile_spec(path)
    assert all(connection.gradient for connection in plan.connections)


SCRIPT = Path(sys.executable).with_name("lstmgraph")


def cli(*args: str) -> subprocess.CompletedProcess:
    executable = str(SCRIPT) if SCRIPT.exists() else shutil.which("lstmgraph")
    assert executable, "the lstmgraph console script is not installed (run bash setup.sh)"
    return subprocess.run([executable, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path,parameters", [(SINGLE, 72), (MULTIPLE, 144)], ids=["single", "multiple"])
def test_validate_and_render(path, parameters, tmp_path):
    """72 = 3 layers x (3x4 V + 3x3 U + 3 b); 144 = 6 such layers (3 gates, 2 candidates, g)."""
    result = cli("validate", str(path))
    assert result.returncode == 0, result.stderr
    assert f"parameters: {parameters}" in result.stdout
    dot = tmp_path / "net.dot"
    result = cli("render", str(path), "-o", str(dot))
    assert result.returncode == 0, result.stderr
    text = dot.read_text()
    assert text.startswith(f"digraph {path.stem}") and f"({parameters} parameters)" in text


@pytest.mark.parametrize("path", [SINGLE, MULTIPLE], ids=lambda p: p.stem)
def test_trains_on_its_task_out_of_the_box(path):
    """The spec's own training section (exact online RTRL, rate 0.5, 80,000 steps of
    recall_first) takes the mean loss per step from about 0.045, near the 1/24 of answering 1/3
    for every class, to below 1e-4, and to the figures docs/spec.md's `lstmgraph train` prints.
    Seconds on the compiled kernel, which the bundled-spec training tests compile anyway."""
    trainer = Trainer(lstmgraph.compile_spec(path))
    losses = []
    while trainer.steps < 80_000:
        losses.append(trainer.train_sequence(trainer.source.next())[0] / 8)
    assert np.mean(losses[:100]) > 0.03
    assert np.mean(losses[-100:]) < 1e-4
    doc = (SPECS.parent / "docs" / "spec.md").read_text(encoding="utf-8")
    (first, last), = re.findall(rf"\$ lstmgraph train specs/{path.name}.*\n.*\nmean loss per step: first 100 "
                                rf"sequences (\S+), last 100 (\S+)\n", doc)
    assert (f"{np.mean(losses[:100]):.6g}", f"{np.mean(losses[-100:]):.6g}") == (first, last)
