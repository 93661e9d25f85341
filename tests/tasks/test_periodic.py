"""2002 PFG: the three waves for F = 10 and 25 against their formulas, the triangle against
the seed's printed formula (of which it is the reflection 2 - f), range, phase, continuation."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph.tasks import PeriodicFunction, TaskError, make_task
from lstmgraph.tasks.periodic import wave


def stream(shape: str, period: int, samples: int = 3, length: int = 50) -> np.ndarray:
    """The targets of ``samples`` consecutive samples, laid end to end (steps 1, 2, ...)."""
    task = PeriodicFunction(shape=shape, period=period, length=length)
    rng = np.random.default_rng(0)
    return np.concatenate([task.sample(rng).targets[:, 0] for _ in range(samples)])


def seed_printed_triangle(t: np.ndarray, F: int) -> np.ndarray:
    """Seed 002's triangle exactly as printed: 2m/F if m > F/2, else 2 - 2m/F."""
    m = np.mod(t, F)
    return np.where(m > F / 2, 2 * m / F, 2 - 2 * m / F)


@pytest.mark.parametrize("F", [10, 25])
def test_cosine(F):
    values = stream("cosine", F)
    t = np.arange(1, len(values) + 1)
    np.testing.assert_allclose(values, (1 - np.cos(2 * np.pi * t / F)) / 2, atol=1e-12)


@pytest.mark.parametrize("F", [10, 25])
def test_triangle(F):
    values = stream("triangle", F)
    t = np.arange(1, len(values) + 1)
    m = t % F
    np.testing.assert_allclose(values, 1 - np.abs(2 * m / F - 1), atol=1e-12)
    np.testing.assert_allclose(values, 2 - seed_printed_triangle(t, F), atol=1e-12)
    # the printed formula lies on [1, 2]: it cannot be the target of a [0, 1] output as is
    printed = seed_printed_triangle(t, F)
    assert printed.min() >= 1.0 and printed.max() == 2.0
    # slopes as the seed derives them: max |f'| = 2/F
    assert np.max(np.abs(np.diff(values))) == pytest.approx(2 / F)


def test_triangle_second_difference_for_even_F():
    values = stream("triangle", 10)
    assert np.max(np.abs(np.diff(values, 2))) == pytest.approx(4 / 10)      # seed: 4/F


@pytest.mark.parametrize("F", [10, 25])
def test_rectangle(F):
    values = stream("rectangle", F)
    t = np.arange(1, len(values) + 1)
    np.testing.assert_array_equal(values, (t % F > F / 2).astype(float))
    assert values[: F].sum() == (F - 1) // 2                                # 4 of 10, 12 of 25


def test_known_values_for_F_10():
    tri = stream("triangle", 10, samples=1, length=20)
    rect = stream("rectangle", 10, samples=1, length=20)
    cos = stream("cosine", 10, samples=1, length=20)
    # steps 1..10
    np.testing.assert_allclose(tri[:10], [.2, .4, .6, .8, 1., .8, .6, .4, .2, 0.])
    np.testing.assert_array_equal(rect[:10], [0, 0, 0, 0, 0, 1, 1, 1, 1, 0])
    assert cos[4] == pytest.approx(1.0) and cos[9] == pytest.approx(0.0)


@pytest.mark.parametrize("shape", ["cosine", "triangle", "rectangle"])
@pytest.mark.parametrize("F", [10, 25])
def test_range_phase_and_continuation(shape, F):
    values = stream(shape, F, samples=4, length=2 * F + 1)   # 3 periods per sample
    assert values.min() == pytest.approx(0.0) and values.max() <= 1.0
    assert values.max() >= 1.0 - 1.0 / F
    # every wave is 0 at t = 0 (mod F), where the stream starts from the zero state
    t = np.arange(1, len(values) + 1)
    assert np.all(np.abs(values[t % F == 0]) < 1e-12)
    # periodic across sample boundaries: the stream is one wave
    np.testing.assert_allclose(values[F:], values[:-F], atol=1e-12)
    np.testing.assert_allclose(values, wave(shape, F, t), atol=0)


def test_task_interface_and_options():
    task = PeriodicFunction(shape="cosine", period=25, length=90)
    assert task.continual and task.length == 100 and (task.n_inputs, task.n_outputs) == (1, 1)
    seq = task.sample(np.random.default_rng(9))
    assert np.all(seq.inputs == 0.0) and not np.isnan(seq.targets).any()
    # deterministic: every sample is the same sequence, whatever the generator
    assert task.deterministic
    other = task.sample(np.random.default_rng(10))
    np.testing.assert_array_equal(seq.targets, other.targets)
    np.testing.assert_array_equal(seq.inputs, other.inputs)
    with pytest.raises(TaskError, match=r"shape must be one of"):
        make_task("periodic_function", {"shape": "sine"})
    with pytest.raises(TaskError, match=r"period must be an integer >= 2"):
        make_task("periodic_function", {"period": 1})
    with pytest.raises(TaskError, match=r"its options: shape, period, length"):
        make_task("periodic_function", {"frequency": 10})
