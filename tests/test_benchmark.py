"""The benchmark helpers of `lstmgraph.benchmark` (the timed runs themselves are the bench command,
not a test; tests/cli/test_bench.py runs the command)."""

from __future__ import annotations

import lstmgraph
from lstmgraph.benchmark import fit_exponent, scaling_spec, stream


def test_scaling_nets_grow_like_the_cerg_net():
    sizes = [lstmgraph.compile_plan(lstmgraph.spec_from_data(scaling_spec(blocks))).n_parameters
             for blocks in (4, 64)]
    assert sizes[0] == 424  # the CERG net itself at 4 blocks of 2 cells
    assert 40_000 < sizes[1] < 50_000


def test_fit_exponent_recovers_a_power_law():
    weights = [100, 1000, 10000]
    assert abs(fit_exponent(weights, [3e-9 * w ** 1.5 for w in weights]) - 1.5) < 1e-9


def test_benchmark_stream_shapes():
    inputs, targets = stream(7, 3, 50)
    assert inputs.shape == (50, 7) and (inputs.sum(axis=1) == 1).all() and targets.shape == (50, 3)


def test_first_train_seconds_runs_the_command_on_an_unseen_copy(tmp_path):
    from lstmgraph.benchmark import first_train_seconds

    from conftest import SPECS
    assert first_train_seconds(SPECS / "gers2002_timing.yaml", steps=20) > 0
