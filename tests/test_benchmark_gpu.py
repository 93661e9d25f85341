"""`benchmark_gpu.first_difference`: where a GPU population's slots first leave the CPU's."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph import benchmark_gpu, compile_spec
from lstmgraph.benchmark import stream
from lstmgraph.benchmark_gpu import first_difference, written_by
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.gpu import GpuPopulation

from conftest import SIMULATED, SPECS


def timing_net() -> CompiledNetwork:
    return CompiledNetwork(compile_spec(SPECS / "gers2002_timing.yaml"), kernel="interpreter")


def a_trained_weight(program) -> int:
    """The slot of the first trainable connection's first weight (the update writes it)."""
    return program.weight_slots(next(c for c in program.plan.connections if c.trainable)).start


def test_a_slot_is_named_by_the_first_operation_that_writes_it():
    program = timing_net().program
    net = program.ops[1].out  # the forget gate's net: zeroed by operation 1, then summed into
    assert written_by(program, net).startswith("operation 1: zero (forward) net of memory.forget_gate")
    assert written_by(program, np.array([a_trained_weight(program)])).split(": ")[1].startswith("update (")
    assert written_by(program, np.array([], dtype=np.int64)) == ""


@pytest.mark.gpu
@pytest.mark.skipif(not SIMULATED, reason="the simulator's arithmetic is the CPU's; a GPU's may differ")
def test_the_simulated_gpu_never_leaves_the_cpu():
    network = timing_net()
    inputs, targets = stream(network.n_inputs, network.n_outputs, 3)
    assert first_difference(network, initial_weights(network.plan, [0, 1]), inputs, targets, threads=1) is None


@pytest.mark.gpu
@pytest.mark.skipif(not SIMULATED, reason="nudges the simulated GPU's slots")
def test_a_slot_nudged_after_the_second_step_is_found_there(monkeypatch):
    network = timing_net()
    weight = a_trained_weight(network.program)

    class Nudged(GpuPopulation):
        launches = 0

        def run(self, *arguments, **options):
            result = super().run(*arguments, **options)
            Nudged.launches += 1
            if Nudged.launches == 2:  # after step 1 (the second), one weight of trial 1 moves
                host = self.slots()
                host[weight, 1] += 1e-15
                self.V.copy_to_device(host)
            return result

    monkeypatch.setattr(benchmark_gpu, "GpuPopulation", Nudged)
    inputs, targets = stream(network.n_inputs, network.n_outputs, 4)
    found = first_difference(network, initial_weights(network.plan, [0, 1]), inputs, targets, threads=1)
    assert found["step"] == 1 and found["slots"] >= 1
    assert found["operation"] == written_by(network.program, np.array([weight])) != ""
