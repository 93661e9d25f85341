"""The compiled kernels' tanh (`vector_math.tanh`) against libm's, over its whole range."""

from __future__ import annotations

import math

import numba
import numpy as np

from lstmgraph.engine.compiled.vector_math import tanh


@numba.njit
def _apply(values: np.ndarray, out: np.ndarray) -> None:
    for i in range(values.shape[0]):  # a loop LLVM vectorises: the SIMD code path is tested
        out[i] = tanh(values[i])


def test_tanh_is_within_two_units_in_the_last_place_of_libm_s():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.uniform(-1, 1, 200_000), rng.uniform(-25, 25, 200_000), rng.normal(0, 3, 200_000),
                             np.linspace(-0.7, 0.7, 100_001), rng.uniform(-1e-8, 1e-8, 1000),
                             [0.625, -0.625, np.nextafter(0.625, 0), 22.0, 23.0, 1e300, -1e300, 5e-324]])
    out = np.empty_like(values)
    _apply(values, out)
    expected = np.array([math.tanh(value) for value in values])
    ulps = np.abs(out - expected) / np.spacing(np.maximum(np.abs(expected), 1e-300))
    assert ulps.max() <= 2.0
    assert (out == expected).mean() > 0.7


def test_tanh_keeps_nan_and_saturates_at_infinity():
    out = np.empty(3)
    _apply(np.array([np.nan, np.inf, -np.inf]), out)
    assert np.isnan(out[0])
    assert out[1] == 1.0 and out[2] == -1.0
