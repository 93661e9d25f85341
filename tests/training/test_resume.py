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


@pytest.mark.parametrize("name,extra", [
    ("gers2000_cerg", {}),                                   # truncated RTRL, continual stream
    ("rnn", {}),                                             # BPTT per sequence, momentum
    ("gru", {"learning_rule": "bptt", "bptt_window": 3}),    # BPTT windows
    ("gers2002_timing", {"learning_rule": "rtrl", "learning_rate_decay":
                         {"kind": "multiplicative", "factor": 0.999, "every": "step"}}),
])
def test_resuming_from_a_checkpoint_equals_an_uninterrupted_run(tmp_path, name, extra):
    whole = Trainer(_plan(name, steps=400, **extra), trials=2)
    whole.run()
    first = RunDirectory(tmp_path / "run")
    first.create({}, {})
    half = Trainer(_plan(name, steps=200, **extra), trials=2)
    half.run(first)
    first.close()
    rest = Trainer(_plan(name, steps=400, **extra), trials=2)
    rest.restore(first.load_checkpoint())
    assert rest.steps == half.steps
    rest.run()
    assert rest.steps == whole.steps
    for key, value in whole.weights.items():
        assert np.array_equal(rest.weights[key], value), key


@pytest.mark.parametrize("path", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_bundled_spec_trains_out_of_the_box(path):
    data = yaml.safe_load(path.read_text())
    data["training"]["steps"] = 60
    trainer = Trainer(lstmgraph.compile_plan(lstmgraph.spec_from_data(data, str(path))))
    summary = trainer.run()
    assert summary.steps >= 60 and np.isfinite(summary.final_loss_per_step)
