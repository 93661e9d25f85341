"""The GPU population against the CPU's: the same steps, losses, weights, velocities and traces.

In numba's CUDA simulator (no GPU needed) every arithmetic operation is the CPU's, so the two
agree bit for bit; on a GPU (``NUMBA_ENABLE_CUDASIM=0``) fused multiply-adds may move the last
bits, and the tests allow 1e-12 there. benchmarks/gpu_check.py runs the long agreement checks.
"""

from __future__ import annotations


import numpy as np
import pytest

from lstmgraph import compile_spec
from lstmgraph.benchmark import stream
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.gpu import GpuPopulation, GpuUnavailable, cuda_module

from conftest import SIMULATED, SPECS


pytestmark = pytest.mark.gpu
TOLERANCE = 0.0 if SIMULATED else 1e-12


def networks(spec: str) -> CompiledNetwork:
    return CompiledNetwork(compile_spec(SPECS / spec), kernel="interpreter")


def assert_same(cpu, gpu, results_cpu, results_gpu) -> None:
    assert (results_cpu[0] == results_gpu[0]).all()
    np.testing.assert_allclose(results_gpu[1], results_cpu[1], rtol=0, atol=TOLERANCE)
    for name, (one, other) in {"weights": (cpu.weights(), gpu.weights()), "velocity": (cpu.velocity(), gpu.velocity()),
                               "traces": (cpu.traces(), gpu.traces()), "state": (cpu.state(), gpu.state())}.items():
        assert one.keys() == other.keys()
        for key in one:
            np.testing.assert_allclose(other[key], one[key], rtol=0, atol=TOLERANCE, err_msg=f"{name} {key}")


@pytest.mark.parametrize("slots_in", ["shared", "global"])
def test_a_thread_a_trial_learns_as_the_cpu_does(slots_in):
    network = networks("gers2002_timing.yaml")
    weights = initial_weights(network.plan, [0, 1, 2])
    inputs, targets = stream(network.n_inputs, network.n_outputs, 40)
    cpu, gpu = network.population(weights, 0.3), GpuPopulation(network, weights, 0.3, threads=1, slots_in=slots_in)
    assert gpu.layout.shared == (slots_in == "shared")
    assert_same(cpu, gpu, cpu.run(inputs, targets, momentum=0.9, decay=0.999),
                gpu.run(inputs, targets, momentum=0.9, decay=0.999))
    np.testing.assert_array_equal(gpu.rate(), cpu.rate())


@pytest.mark.parametrize("slots_in", ["shared", "global"])
def test_a_warp_keeps_a_trial_s_slots_side_by_side_and_learns_as_the_cpu_does(slots_in):
    """With a warp a trial the device's slot array is in F order (`Layout.slot_order`): the
    same slots and results, read and written by name, snapshot and restore as with C order."""
    network = networks("gers2002_timing.yaml")
    weights = initial_weights(network.plan, [0, 1])
    inputs, targets = stream(network.n_inputs, network.n_outputs, 6)
    cpu, gpu = network.population(weights, 0.3), GpuPopulation(network, weights, 0.3, threads=32, slots_in=slots_in)
    assert gpu.slots().flags.f_contiguous and not gpu.slots().flags.c_contiguous
    assert_same(cpu, gpu, cpu.run(inputs, targets, momentum=0.9), gpu.run(inputs, targets, momentum=0.9))
    snapshot = gpu.snapshot()
    gpu.run(inputs, targets, momentum=0.9)
    gpu.restore([np.ascontiguousarray(snapshot[0]), snapshot[1]])  # any order in, the layout's kept
    assert gpu.slots().flags.f_contiguous
    np.testing.assert_array_equal(gpu.slots(), snapshot[0])
    assert GpuPopulation(network, weights, 0.3, threads=1).slots().flags.c_contiguous


def test_a_warp_a_trial_learns_as_the_cpu_does():
    """The CERG net (2,600 slots), its runs shared among 32 threads."""
    network = networks("gers2000_cerg.yaml")
    weights = initial_weights(network.plan, [4])
    inputs, targets = stream(network.n_inputs, network.n_outputs, 2)
    cpu, gpu = network.population(weights, 0.5), GpuPopulation(network, weights, 0.5, threads=32)
    assert gpu.layout.threads == 32
    assert_same(cpu, gpu, cpu.run(inputs, targets), gpu.run(inputs, targets))


def test_each_trial_stops_at_its_first_error_on_its_own_data():
    """Per-trial streams, a learning and a frozen trial, the success test: the trial whose
    targets are far off stops after its first step, the other runs on."""
    network = networks("gers2002_timing.yaml")
    weights = initial_weights(network.plan, [0, 1])
    inputs, targets = stream(network.n_inputs, network.n_outputs, 12)
    inputs = np.stack([inputs, inputs[::-1]], axis=2)
    targets = np.stack([np.full_like(targets, 0.5), np.full_like(targets, 9.0)], axis=2)
    cpu, gpu = network.population(weights, 0.2), GpuPopulation(network, weights, 0.2, threads=1)
    options = dict(tolerance=0.6, learn=np.array([True, False]))
    outputs_cpu, outputs_gpu = np.zeros((2, 12, network.n_outputs)), np.zeros((2, 12, network.n_outputs))
    results = cpu.run(inputs, targets, outputs=outputs_cpu, **options), \
        gpu.run(inputs, targets, outputs=outputs_gpu, **options)
    assert list(results[1][0]) == [12, 1]
    assert_same(cpu, gpu, *results)
    np.testing.assert_allclose(outputs_gpu, outputs_cpu, rtol=0, atol=TOLERANCE)


def test_softmax_outputs_and_cross_entropy():
    network = CompiledNetwork(compile_spec(SPECS / "modern_lstm.yaml"), loss="cross_entropy", kernel="interpreter")
    weights = initial_weights(network.plan, [0])
    inputs, _ = stream(network.n_inputs, network.n_outputs, 4)
    targets = np.eye(network.n_outputs)[np.arange(4) % network.n_outputs]
    cpu, gpu = network.population(weights, 0.1), GpuPopulation(network, weights, 0.1, threads=1)
    assert_same(cpu, gpu, cpu.run(inputs, targets), gpu.run(inputs, targets))


@pytest.mark.skipif(not SIMULATED, reason="the simulator's refusal")
def test_the_simulator_is_refused_where_a_real_gpu_is_asked_for():
    assert cuda_module(allow_simulator=True) is not None
    with pytest.raises(GpuUnavailable, match="simulator"):
        cuda_module(allow_simulator=False)


@pytest.mark.skipif(not SIMULATED, reason="the simulator's module stands in for a machine without a GPU")
def test_no_gpu_is_refused_saying_how_to_get_one(monkeypatch):
    from numba import cuda

    import lstmgraph.engine.gpu.population as population

    monkeypatch.setattr(population, "simulated", lambda module: False)
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    with pytest.raises(GpuUnavailable,
                       match=r"no CUDA GPU is available .*install numba-cuda \(in a checkout: pip install '\.\[gpu\]'\)"):
        cuda_module()


def test_a_kernel_too_long_to_compile_is_refused_before_compiling(monkeypatch):
    """A kernel over the limit is refused with a clear error, on the simulator as on a GPU, before
    anything is compiled or allocated. No bundled spec's kernel passes 10,000 lines (the GRU's
    18,276 did before `entries.MAX_RUNS_GROWTH`), so the limit is lowered under the GRU's 3,027."""
    import lstmgraph.engine.gpu.population as population

    monkeypatch.setattr(population, "MAX_GPU_KERNEL_LINES", 2_000)
    network = networks("gru.yaml")
    with pytest.raises(GpuUnavailable, match=r"GPU kernel is 3,\d{3} lines, over the 2,000 .* run it on the CPU"):
        GpuPopulation(network, initial_weights(network.plan, [0]), 0.1, threads=32)
    monkeypatch.undo()
    GpuPopulation(network, initial_weights(network.plan, [0]), 0.1, threads=32)  # compiled on first launch


@pytest.mark.parametrize("spec", ["gru.yaml", "gru_torch.yaml"])
def test_sums_in_their_given_order_learn_as_the_cpu_does(spec):
    """The GRU nets' gated sums keep their given order (`entries.MAX_RUNS_GROWTH`): a slot's terms
    spread over runs, which a warp's threads share."""
    network = CompiledNetwork(compile_spec(SPECS / spec), loss="cross_entropy", kernel="interpreter")
    weights = initial_weights(network.plan, [0])
    inputs, _ = stream(network.n_inputs, network.n_outputs, 2)
    targets = np.eye(network.n_outputs)[np.arange(2) % network.n_outputs]
    cpu, gpu = network.population(weights, 0.1), GpuPopulation(network, weights, 0.1, threads=32)
    assert gpu.layout.threads == 32
    assert_same(cpu, gpu, cpu.run(inputs, targets, momentum=0.9), gpu.run(inputs, targets, momentum=0.9))
