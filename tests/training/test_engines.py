"""The compiled engine against the numpy engine inside the trainer: same weights, optimiser
state, activations, traces and metrics; the choice of engine; divergence reports; checkpoints
that either engine restores."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph.engine.compiled import network as compiled_network
from lstmgraph.training import EngineError, RunDirectory, Trainer, TrainingDiverged, select_engine
from lstmgraph.training import numpy_engine

from conftest import EXPLODING, SPECS


def _plan(name: str, **training):
    data = yaml.safe_load((SPECS / f"{name}.yaml").read_text())
    data["training"].update(training)
    return lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(SPECS / f"{name}.yaml")))


def _rows(run_dir: RunDirectory) -> list[dict]:
    return [json.loads(line) for line in (run_dir.path / "metrics.jsonl").read_text().splitlines()]


def _assert_same_checkpoints(compiled: dict, numpy: dict) -> None:
    """Every checkpoint array (weights, velocity, rate, activations, traces, losses) to 1e-12
    relative to the largest entry of its array; counters and data position exactly. Without
    momentum numpy keeps no velocity, the compiled engine keeps one still (either restores it)."""
    extra = set(compiled) - set(numpy)
    assert set(numpy) <= set(compiled) and all(name.startswith("optimizer/velocity/") for name in extra)
    for key, expected in numpy.items():
        actual = compiled[key]
        if expected.dtype.kind in "iuU":
            assert np.array_equal(actual, expected), key
            continue
        scale = max(float(np.abs(expected).max(initial=0.0)), 1e-300)
        assert np.abs(actual - expected).max(initial=0.0) <= 1e-12 * scale, key


# Three training sections with momentum and a decaying rate, one per way the compiled engine
# handles a schedule: decay after every step inside the kernel (CERG, a continual stream with
# no reset), decay between sequences (embedded Reber grammar, reset before every sequence),
# and inverse-time decay after every step (one kernel call per step; adding task, stop_loss).
CASES = {
    "cerg_continual": ("gers2000_cerg", 2000, dict(
        momentum=0.5, learning_rate=0.2,
        learning_rate_decay={"kind": "multiplicative", "factor": 0.9999, "every": "step"})),
    "erg_reset_per_sequence": ("hochreiter1997_erg", 2000, dict(
        momentum=0.9, learning_rate=0.1,
        learning_rate_decay={"kind": "multiplicative", "factor": 0.99, "every": "sequence"})),
    "adding_inverse_time_stop_loss": ("hochreiter1997_adding", 1500, dict(
        momentum=0.9, task={"name": "adding", "length": 20}, stop_loss=2e-5, stop_window=3,
        learning_rate_decay={"kind": "inverse_time", "every": "step"})),
    "adding_inverse_time_constant": ("hochreiter1997_adding", 1500, dict(
        task={"name": "adding", "length": 20},
        learning_rate_decay={"kind": "inverse_time", "time_constant": 40.0, "every": "sequence"})),
    # BPTT (the kernel's segments): over whole sequences, softmax and cross-entropy, momentum,
    # the rate decayed after every step between updates; over windows of 3 steps.
    "rnn_bptt_sequences": ("rnn", 1500, dict(
        learning_rate_decay={"kind": "multiplicative", "factor": 0.999, "every": "step"})),
    "gru_bptt_windows": ("gru", 1500, dict(
        bptt_window=3, learning_rate_decay={"kind": "inverse_time", "every": "step"})),
    # The other two bundled specs that learn by BPTT, as their files say.
    "modern_lstm_bptt_sequences": ("modern_lstm", 400, {}),
    "gru_torch_bptt_sequences": ("gru_torch", 400, {}),
}


@pytest.mark.parametrize("case", CASES)
def test_compiled_and_numpy_trainers_agree(tmp_path, case):
    name, steps, extra = CASES[case]
    plan = _plan(name, steps=steps, checkpoint_every=10**9, **extra)
    results = {}
    for engine in ("compiled", "numpy"):
        trainer = Trainer(plan, trials=2, engine=engine)
        assert trainer.engine == engine
        run_dir = RunDirectory(tmp_path / engine)
        run_dir.create({}, {})
        summary = trainer.run(run_dir)
        run_dir.close()
        results[engine] = (summary, trainer.checkpoint(), _rows(run_dir), trainer)
    (summary_c, arrays_c, rows_c, trainer_c), (summary_n, arrays_n, rows_n, trainer_n) = (
        results["compiled"], results["numpy"])
    assert summary_c.steps >= min(steps, 100) and summary_c.sequences > 5
    assert (summary_c.steps, summary_c.sequences, summary_c.stopped_by) == (
        summary_n.steps, summary_n.sequences, summary_n.stopped_by)
    if "stop_loss" in extra:
        assert summary_c.stopped_by == "stop_loss"
    _assert_same_checkpoints(arrays_c, arrays_n)
    assert len(rows_c) == len(rows_n)
    for row_c, row_n in zip(rows_c, rows_n):
        assert row_c.keys() == row_n.keys()
        assert (row_c["sequence"], row_c["step"]) == (row_n["sequence"], row_n["step"])
        assert row_c["learning_rate"] == row_n["learning_rate"]  # the same float operations
        for key in ("loss", "loss_per_step"):
            assert row_c[key] == pytest.approx(row_n[key], rel=1e-12, abs=1e-300)
        np.testing.assert_allclose(row_c["loss_trials"], row_n["loss_trials"], rtol=1e-12)
    for key, values in trainer_n.state.items():
        np.testing.assert_allclose(trainer_c.state[key], values, rtol=1e-12, atol=1e-14)


def test_the_engine_is_chosen_by_the_training_section():
    assert select_engine(*_pair("gers2000_cerg")) == ("compiled", None)
    assert select_engine(*_pair("rnn", learning_rule="rtrl")) == ("compiled", None)
    assert select_engine(*_pair("rnn")) == ("compiled", None)                    # bptt
    engine, note = select_engine(*_pair("gers2002_timing", update="sequence"))
    assert engine == "numpy" and "update: sequence" in note
    assert select_engine(*_pair("gers2000_cerg"), "numpy") == ("numpy", None)
    with pytest.raises(EngineError, match="cannot train this spec: .*update: sequence"):
        select_engine(*_pair("rnn", learning_rule="rtrl", update="sequence"), "compiled")
    with pytest.raises(EngineError, match="cannot train this spec"):
        Trainer(_plan("gers2002_timing", update="sequence"), engine="compiled")


def _pair(name: str, **training):
    plan = _plan(name, **training)
    return plan, plan.training


def test_checkpoints_cross_between_the_engines():
    """A numpy checkpoint continues in the compiled engine (and back) as numpy would."""
    # Exact RTRL (dense traces) with momentum; the kernel is the one tests/engine/compiled/test_network.py builds.
    plan = lambda steps: _plan("rnn", steps=steps, learning_rule="rtrl")  # noqa: E731
    reference = Trainer(plan(600), trials=2, engine="numpy")
    reference.run()
    first = Trainer(plan(200), trials=2, engine="numpy")
    first.run()
    second = Trainer(plan(400), trials=2, engine="compiled")
    second.restore(first.checkpoint())
    second.run()
    third = Trainer(plan(600), trials=2, engine="numpy")
    third.restore(second.checkpoint())
    third.run()
    assert third.steps == reference.steps
    for key, values in reference.weights.items():
        np.testing.assert_allclose(third.weights[key], values, rtol=1e-12, atol=1e-15)


def test_a_blow_up_is_reported_at_the_same_step_by_both_engines(monkeypatch):
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(EXPLODING))
    reports = {}
    for engine in ("numpy", "compiled"):
        trainer = Trainer(plan, engine=engine)
        with pytest.raises(TrainingDiverged) as caught:
            trainer.run()
        reports[engine] = (caught.value.step, caught.value.where)
    assert reports["compiled"] == reports["numpy"]
    assert reports["numpy"][0] > 1
    # The kernel's own step-by-step replay (used should the numpy replay stay finite) agrees.
    monkeypatch.setattr(numpy_engine.NumpyEngine, "train", lambda self, sequence, done: np.zeros(self.trials))
    trainer = Trainer(plan, engine="compiled")
    with pytest.raises(TrainingDiverged) as caught:
        trainer.run()
    assert (caught.value.step, caught.value.where) == reports["numpy"]
    # The buffers are left as they were before the chunk that diverged: finite, resumable.
    assert all(np.isfinite(values).all() for values in trainer.weights.values())


def test_blocks_of_trials_in_threads_equal_one_call(monkeypatch):
    """Trials in one block of lanes, in blocks on threads, and one by one: the same weights.
    (The interpreter's blocks; the specialised kernel's are tested in tests/engine/compiled/test_specialised.py.)"""
    monkeypatch.setenv("LSTMGRAPH_KERNEL", "interpreter")
    plan = _plan("gers2000_cerg", steps=300)
    results = []
    for lanes in (3, 2, 1):
        monkeypatch.setattr(compiled_network, "LANES", lanes)
        trainer = Trainer(plan, trials=3, engine="compiled")
        blocks = [lane.V for lane in trainer.backend.population.lanes]
        assert sum(block.shape[1] for block in blocks) == 3 and max(block.shape[1] for block in blocks) <= lanes
        trainer.run()
        results.append(trainer.weights)
    for weights in results[1:]:
        for key, values in results[0].items():
            assert np.array_equal(weights[key], values), key
