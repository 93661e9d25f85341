"""Checkpoint and restore in-process: every learning rule and data source continues exactly."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph.training import RunDirectory, Trainer

from conftest import SPECS


def _plan(name: str, **training):
    data = yaml.safe_load((SPECS / f"{name}.yaml").read_text())
    data["training"].update(training)
    return lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(SPECS / f"{name}.yaml")))


@pytest.mark.parametrize("name,extra,engine", [
    ("gers2000_cerg", {}, "auto"),                           # truncated RTRL, continual stream: compiled
    ("gers2000_cerg", {}, "numpy"),
    ("rnn", {}, "auto"),                                     # BPTT per sequence, momentum: compiled
    ("rnn", {}, "numpy"),
    ("gru", {"learning_rule": "bptt", "bptt_window": 3}, "auto"),    # BPTT windows
    # Adam and clipping: the moments and the update count come back bit-identical.
    ("modern_lstm", {"optimizer": {"name": "adam"}, "clip_norm": 1.0, "learning_rate": 0.01}, "auto"),
    ("gers2002_timing", {"learning_rule": "rtrl", "update": "sequence", "clip_norm": 0.5, "momentum": 0.0,
                         "optimizer": {"name": "adam", "beta1": 0.8, "beta2": 0.99, "epsilon": 1.0e-6}},
     "auto"),
    ("gers2002_timing", {"learning_rule": "rtrl", "learning_rate_decay":
                         {"kind": "multiplicative", "factor": 0.999, "every": "step"}}, "numpy"),
    # Exact RTRL, momentum and a decay inside the kernel (the kernel compiled/test_network.py builds).
    ("rnn", {"learning_rule": "rtrl", "learning_rate_decay":
             {"kind": "multiplicative", "factor": 0.999, "every": "step"}}, "auto"),
])
def test_resuming_from_a_checkpoint_equals_an_uninterrupted_run(tmp_path, name, extra, engine):
    whole = Trainer(_plan(name, steps=400, **extra), trials=2, engine=engine)
    whole.run()
    first = RunDirectory(tmp_path / "run")
    first.create({}, {})
    half = Trainer(_plan(name, steps=200, **extra), trials=2, engine=engine)
    half.run(first)
    first.close()
    rest = Trainer(_plan(name, steps=400, **extra), trials=2, engine=engine)
    training = rest.training
    numpy_only = ((training.update_mode != "online" and training.learning_rule != "bptt")
                  or training.optimizer.name != "sgd" or training.clip_norm is not None)
    assert rest.engine == ("numpy" if engine == "numpy" or numpy_only else "compiled")
    rest.restore(first.load_checkpoint())
    assert rest.steps == half.steps
    rest.run()
    assert rest.steps == whole.steps
    for key, value in whole.weights.items():
        assert np.array_equal(rest.weights[key], value), key
    finished = whole.checkpoint()  # velocity, rate, activations, traces, losses, data position
    for key, value in rest.checkpoint().items():
        assert np.array_equal(value, finished[key]), key


@pytest.mark.parametrize("path", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_bundled_spec_trains_out_of_the_box(path):
    data = yaml.safe_load(path.read_text())
    data["training"]["steps"] = 60
    trainer = Trainer(lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(path))))
    summary = trainer.run()
    assert summary.steps >= 60 and np.isfinite(summary.stop_window_loss_per_step)


def test_a_numpy_checkpoint_restores_into_the_compiled_engine_and_damage_is_named():
    numpy = Trainer(_plan("gers2000_cerg", steps=100), trials=2, engine="numpy")
    numpy.run()
    arrays = numpy.checkpoint()
    assert not any(name.startswith("optimizer/velocity/") for name in arrays)  # no momentum
    compiled = Trainer(_plan("gers2000_cerg", steps=200), trials=2, engine="compiled")
    compiled.restore(arrays)
    assert compiled.steps == numpy.steps
    weight = next(name for name in arrays if name.startswith("weights/"))
    damaged = {**arrays, weight: arrays[weight][:1], "extra": np.zeros(1)}
    del damaged["counters"]
    problems = compiled.checkpoint_problems(damaged)
    assert problems == ["missing array 'counters'",
                        f"'{weight}' has shape {arrays[weight][:1].shape}, expected {arrays[weight].shape}",
                        "unknown array 'extra' (a checkpoint of another network?)"]
