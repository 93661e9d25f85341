"""The training loop: it learns, populations equal single trials, updates are the gradients,
data files and schedules work, a blow-up is caught."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph.engine import Simulator
from lstmgraph.engine.gradcheck import rtrl_gradient
from lstmgraph.errors import SpecError
from lstmgraph.limits import MAX_EPOCHS, MAX_STEPS, MAX_TRIALS
from lstmgraph.spec.models import LearningRateDecay
from lstmgraph.training import DataError, LimitError, Optimizer, Trainer, TrainingDiverged

from conftest import EXPLODING, SPECS


def _plan(name: str, **training):
    data = yaml.safe_load((SPECS / f"{name}.yaml").read_text())
    data["training"].update(training)
    return lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(SPECS / f"{name}.yaml")))


def _losses(trainer: Trainer) -> list[float]:
    losses = []
    while trainer.steps < trainer.training.steps:
        sequence = trainer.source.next()
        losses.append(float(trainer.train_sequence(sequence).mean()) / len(sequence))
    return losses


def test_cerg_loss_falls_within_a_few_thousand_steps():
    losses = _losses(Trainer(_plan("gers2000_cerg", steps=2500)))
    assert np.mean(losses[-20:]) < 0.85 * np.mean(losses[:20])


def test_a_population_trains_like_its_trials_one_by_one():
    together = Trainer(_plan("hochreiter1997_adding", steps=300, seed=5), trials=3)
    together.run()
    for index in range(3):
        data = yaml.safe_load((SPECS / "hochreiter1997_adding.yaml").read_text())
        data["init"]["seed"] += index
        data["training"].update(steps=300, seed=5)
        alone = Trainer(lstmgraph.compile_plan(lstmgraph.spec_from_data(data)))
        alone.run()
        for name, values in alone.weights.items():
            assert np.array_equal(together.weights[name][index], values[0]), name


def test_sequence_updates_apply_the_summed_truncated_gradient():
    plan = _plan("gers2002_timing", update="sequence", momentum=0.0, learning_rate=0.01, reset="sequence")
    trainer = Trainer(plan)
    before = copy.deepcopy(trainer.weights)
    sequence = trainer.source.next()
    trainer.train_sequence(sequence)
    grads = rtrl_gradient(Simulator(plan), before, sequence.inputs, sequence.targets, "sum_of_squares")
    for name, grad in grads.items():
        np.testing.assert_allclose(trainer.weights[name], before[name] - 0.01 * grad, rtol=1e-12, atol=1e-15)


def test_training_on_a_data_file_counts_epochs(tmp_path):
    rng = np.random.default_rng(0)
    inputs = rng.uniform(-1, 1, (30, 4))
    targets = np.full((30, 3), np.nan)
    targets[[9, 19, 29]] = np.eye(3)
    np.savez(tmp_path / "data.npz", inputs=inputs, targets=targets, starts=[0, 10, 20])
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["training"].pop("task")
    data["training"].pop("steps")
    data["training"].update(data="data.npz", epochs=4)
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(tmp_path / "rnn.yaml")))
    summary = Trainer(plan).run()
    assert (summary.steps, summary.sequences, summary.stopped_by) == (120, 12, "epochs")


def test_steps_that_end_a_run_before_its_epochs_are_named_before_it_starts(tmp_path):
    np.savez(tmp_path / "data.npz", inputs=np.zeros((30, 4)), targets=np.zeros((30, 3)), starts=[0, 10, 20])
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["training"].pop("task")
    data["training"].update(data="data.npz", epochs=4, steps=50)
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(tmp_path / "rnn.yaml")))
    assert Trainer(plan).length_note == ("4 epochs of data.npz are 120 steps, but the run stops at its 50 steps "
                                         "(about 1.7 epochs): whichever ends first stops it; --steps 120 runs every "
                                         "epoch")
    data["training"].update(steps=120)
    assert Trainer(lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(tmp_path / "rnn.yaml")))).length_note \
        is None


def test_bad_data_files_are_explained(tmp_path):
    np.savez(tmp_path / "data.npz", inputs=np.zeros((5, 2)), targets=np.zeros((5, 3)))
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["training"].pop("task")
    data["training"]["data"] = "data.npz"
    with pytest.raises(SpecError, match=r"'inputs' has shape \(5, 2\); the network needs \(steps, 4\)"):
        lstmgraph.spec_from_data(data, str(tmp_path / "rnn.yaml"))  # (validate reads the file too)
    np.savez(tmp_path / "data.npz", inputs=np.zeros((5, 4)), targets=np.ones((5, 3)))
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(tmp_path / "rnn.yaml")))
    np.savez(tmp_path / "data.npz", inputs=np.zeros((5, 2)), targets=np.zeros((5, 3)))  # (changed since)
    with pytest.raises(DataError, match=r"'inputs' has shape \(5, 2\); the network needs \(steps, 4\)"):
        Trainer(plan)
    targets = np.full((5, 3), np.nan)  # NaN: no target
    for arrays, words in (({"inputs": np.zeros((5, 4)), "targets": targets, "starts": [0.5]}, "'starts' holds float64"),
                          ({"inputs": np.full((5, 4), np.inf), "targets": targets}, "NaN or infinite values in 'inputs'"),
                          ({"inputs": np.zeros((5, 4)), "targets": np.full((5, 3), np.inf)}, "infinite values in 'targets'"),
                          ({"inputs": np.zeros((5, 4)), "targets": targets.astype(str)}, "string values in 'targets'")):
        np.savez(tmp_path / "data.npz", **arrays)
        with pytest.raises(DataError, match=words):
            Trainer(plan)
    (tmp_path / "data.npz").write_bytes((tmp_path / "data.npz").read_bytes()[:100])
    with pytest.raises(DataError, match="data.npz: not an .npz archive"):
        Trainer(plan)
    np.savez(tmp_path / "data.npz", inputs=np.zeros((5, 4)), targets=targets)
    with pytest.raises(DataError, match="every value of 'targets' is NaN"):  # no target at all: nothing to learn
        Trainer(plan)
    targets[-1] = 1.0
    np.savez(tmp_path / "data.npz", inputs=np.zeros((5, 4)), targets=targets)
    assert Trainer(plan).source.sequences[0].targets.shape == (5, 3)  # NaN targets elsewhere are fine


def test_learning_rate_schedules():
    weights = {"w": np.zeros(1)}
    multiplicative = Optimizer(0.5, 0.0, LearningRateDecay(kind="multiplicative", factor=0.9, every="step"))
    for _ in range(3):
        multiplicative.after("step")
        multiplicative.after("sequence")
    assert multiplicative.rate == pytest.approx(0.5 * 0.9 ** 3)
    inverse = Optimizer(0.6, 0.0, LearningRateDecay(kind="inverse_time", every="sequence"))
    inverse.after("sequence")
    inverse.after("sequence")
    assert inverse.rate == pytest.approx(0.2)
    momentum = Optimizer(0.1, 0.5, LearningRateDecay())
    momentum.apply(weights, {"w": np.ones(1)})
    momentum.apply(weights, {"w": np.ones(1)})
    assert weights["w"][0] == pytest.approx(-0.1 - (0.05 + 0.1))


def test_a_blow_up_names_the_step_and_the_group():
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(EXPLODING))
    with pytest.raises(TrainingDiverged) as caught:
        Trainer(plan).run()
    assert caught.value.step > 1
    message = str(caught.value)
    assert message.startswith(f"non-finite values at step {caught.value.step} in ")
    assert "unit group '" in message or "the weights of '" in message


def test_a_population_too_large_for_the_memory_is_refused_before_allocating():
    # 1400 x 1400 recurrent weights (1.96 million, under the spec's limit) for 10,000 trials: over 150 GB.
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["groups"][1]["size"] = 1400
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data))
    with pytest.raises(MemoryError, match=r"10000 trials of rnn need more than [\d,.]+ GiB; this machine has"):
        Trainer(plan, trials=10_000)


def test_a_population_over_the_trial_limit_is_refused_naming_the_limit():
    plan = lstmgraph.compile_spec(SPECS / "rnn.yaml")
    for trials in (MAX_TRIALS + 1, 10**9, 10**12, 10**5000):
        with pytest.raises(LimitError, match=rf"trials is .*, more than the limit of {MAX_TRIALS:,}"):
            Trainer(plan, trials=trials)
    for trials in (0, -1):
        with pytest.raises(LimitError, match="trials must be at least 1"):
            Trainer(plan, trials=trials)


def test_a_run_longer_than_the_limits_is_a_located_spec_error_before_anything_runs(tmp_path):
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["training"]["steps"] = MAX_STEPS + 1
    with pytest.raises(SpecError) as raised:  # the spec's own check, so `validate` refuses it too
        lstmgraph.spec_from_data(data)
    (problem,) = raised.value.problems
    assert problem.path == ("training", "steps") and f"more than the limit of {MAX_STEPS:,}" in problem.message
    data["training"]["steps"] = MAX_STEPS  # at the limit: accepted (nothing runs until run())
    assert Trainer(lstmgraph.compile_plan(lstmgraph.spec_from_data(data))).training.steps == MAX_STEPS
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", inputs=rng.random((5, 4)), targets=np.eye(3)[rng.integers(0, 3, 5)])
    del data["training"]["task"], data["training"]["steps"]
    data["training"].update(data=str(tmp_path / "d.npz"), epochs=MAX_EPOCHS + 1)
    with pytest.raises(SpecError, match=f"passes over the data, more than the limit of {MAX_EPOCHS:,}"):
        lstmgraph.spec_from_data(data)


def test_run_takes_a_run_directory_and_says_where_progress_goes():
    """Before: "'str' object has no attribute 'append_metrics'"."""
    trainer = Trainer(lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml"), engine="numpy")
    with pytest.raises(TypeError, match=r"run_dir is a RunDirectory \(RunDirectory\(path\)\) or None, not a str$"):
        trainer.run("runs/x")
    with pytest.raises(TypeError, match=r"not a function; progress is the second argument: run\(progress=...\)"):
        trainer.run(print_progress)
    with pytest.raises(TypeError, match=r"overrides are an Overrides\(steps=..., seed=...\), not a dict"):
        lstmgraph.load_spec("rnn", {"steps": 5})


def print_progress(report) -> None:
    print(report)
