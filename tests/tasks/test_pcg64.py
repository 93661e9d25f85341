"""numpy's PCG64 and bounded integers as scalar compiled code: the same numbers as numpy's
generator and the same state after them, on the CPU and as GPU device code."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import cuda

from lstmgraph.engine.gpu.device_code import device_version
from lstmgraph.tasks import pcg64
from tests.conftest import SIMULATED

BOUNDS = [(0, 2), (0, 7), (3, 4), (1, 100), (-5, 2**31 + 17), (0, 2**32)]


@numba.njit
def _draws(state, count, low, high):
    out = np.empty(count, dtype=np.int64)
    for i in range(count):
        out[i] = pcg64.integers(state, low, high)
    return out


@pytest.mark.parametrize("low, high", BOUNDS)
@pytest.mark.parametrize("waiting", [False, True])
def test_integers_are_numpys_and_leave_its_state(low, high, waiting):
    """From a state with and without a waiting 32-bit half; one value (3, 4) draws nothing."""
    for seed in (0, 1, 2):
        numpys, ours = np.random.default_rng(seed), np.random.default_rng(seed)
        if waiting:
            numpys.integers(0, 2), ours.integers(0, 2)
        want = np.array([numpys.integers(low, high) for _ in range(500)])
        assert np.array_equal(pcg64.draw_with(ours, _draws, 500, low, high), want)
        assert numpys.bit_generator.state == ours.bit_generator.state


def test_next_uint64_is_numpys_raw_draw():
    generator = np.random.default_rng(7)
    state = pcg64.state_of(generator)
    want = generator.bit_generator.random_raw(100)
    assert [pcg64.next_uint64(state) for _ in range(100)] == list(want)


def test_multiply_high_is_the_high_half_of_the_product():
    for a, b in [(2**64 - 1, 2**64 - 1), (2**63 + 12345, 3), (0xDEADBEEFCAFEBABE, 0x0123456789ABCDEF), (5, 7)]:
        assert int(pcg64.multiply_high(np.uint64(a), np.uint64(b))) == (a * b) >> 64


def test_another_generator_is_refused_by_name():
    with pytest.raises(TypeError, match="PCG64.*Philox"):
        pcg64.state_of(np.random.Generator(np.random.Philox(0)))


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the simulator: numpy's uint64 wrap
def test_device_code_draws_numpys_numbers_one_state_row_a_trial():
    """The functions rebuilt as device code (`engine.gpu.device_code`), one generator per thread."""
    generators = [np.random.default_rng(seed) for seed in range(4)]
    states = np.stack([pcg64.state_of(generator) for generator in generators])
    out = np.zeros((4, 50), dtype=np.int64)
    _device_draws()[1, 4](states, out, 0, 7)
    for trial, generator in enumerate(generators):
        assert list(out[trial]) == [generator.integers(0, 7) for _ in range(50)]
        assert pcg64.state_of(generator).tolist() == states[trial].tolist()


def _device_draws():
    """A kernel: thread k draws ``out[k]`` from generator state ``states[k]``."""
    integers = device_version(pcg64.integers, (lambda function: function) if SIMULATED else cuda.jit(device=True))

    @cuda.jit
    def draw(states, out, low, high):
        trial = cuda.grid(1)
        if trial < out.shape[0]:
            for i in range(out.shape[1]):
                out[trial, i] = integers(states[trial], low, high)

    return draw
