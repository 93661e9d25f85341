"""2002 MSD, NMSD and GTS: spike times T(n) = T(n-1) + F + I(n) recomputed from the generated
streams, targets at and between spikes, the delay distribution, and the options."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lstmgraph.tasks import (GeneratingTimedSpikes, MeasuringSpikeDelays, TaskError, concatenated,
                             make_task)

from task_helpers import CHI2_999, chi_square, sampled_digest


def spike_steps(column: np.ndarray) -> np.ndarray:
    """1-based steps where ``column`` is 1."""
    return np.flatnonzero(column == 1.0) + 1


@pytest.mark.parametrize("F, delays", [(10, [0, 1]), (49, [0, 1]), (10, [0, 5]),
                                       (10, list(range(11)))])
def test_msd_stream_follows_the_spike_recurrence(F, delays):
    task = MeasuringSpikeDelays(period=F, delays=delays)
    assert (task.n_inputs, task.n_outputs, task.continual) == (1, 1, True)
    inputs, targets = concatenated(task, 3000, np.random.default_rng(20))
    assert set(np.unique(inputs)) == {0.0, 1.0}
    T = spike_steps(inputs[:, 0])
    # targets exactly at the spikes, nowhere else
    np.testing.assert_array_equal(np.flatnonzero(~np.isnan(targets[:, 0])) + 1, T)
    I = targets[T - 1, 0]
    assert set(I) <= set(delays)
    # T(1) = F + I(1), T(n) = T(n-1) + F + I(n)
    np.testing.assert_array_equal(np.diff(np.concatenate([[0], T])), F + I)


def test_msd_sample_is_one_interval_and_delays_are_uniform():
    task = MeasuringSpikeDelays(period=10, delays=[0, 1, 2, 3])
    rng = np.random.default_rng(21)
    counts, n = Counter(), 4000
    for _ in range(n):
        seq = task.sample(rng)
        delay = len(seq) - 10
        assert seq.inputs[-1, 0] == 1.0 and np.all(seq.inputs[:-1] == 0.0)
        assert seq.targets[-1, 0] == delay
        assert np.isnan(seq.targets[:-1]).all()
        counts[delay] += 1
    assert set(counts) == {0, 1, 2, 3}
    assert chi_square(counts, n / 4) < CHI2_999[3], counts


def test_nmsd_is_one_spike_per_reset_sequence():
    nmsd = make_task("measuring_spike_delays", {"continual": False})
    msd = make_task("measuring_spike_delays", {})
    assert not nmsd.continual and msd.continual
    assert (nmsd.period, nmsd.delays) == (10, (0, 1))
    a, b = np.random.default_rng(22), np.random.default_rng(22)
    for _ in range(50):
        x, y = nmsd.sample(a), msd.sample(b)
        assert spike_steps(x.inputs[:, 0]).tolist() == [len(x)]        # T(1) = F + I(1)
        assert x.targets[-1, 0] == len(x) - 10
        np.testing.assert_array_equal(x.inputs, y.inputs)
        np.testing.assert_array_equal(x.targets, y.targets)


@pytest.mark.parametrize("cue", ["length", "delay"])
@pytest.mark.parametrize("F, delays", [(10, [0, 1]), (25, [0, 2, 3])])
def test_gts_stream_follows_the_spike_recurrence(F, delays, cue):
    task = GeneratingTimedSpikes(period=F, delays=delays, cue=cue)
    assert (task.n_inputs, task.n_outputs, task.continual) == (1, 1, True)
    inputs, targets = concatenated(task, 3000, np.random.default_rng(23))
    assert not np.isnan(targets).any() and set(np.unique(targets)) == {0.0, 1.0}
    T = spike_steps(targets[:, 0])
    starts = np.concatenate([[0], T[:-1]])               # interval n begins at T(n-1) + 1
    cues = inputs[starts, 0]
    I = cues - F if cue == "length" else cues            # the cue is F + I(n), or I(n)
    assert set(I) == set(delays)
    np.testing.assert_array_equal(T - starts, F + I)
    # the input is silent everywhere else (the stream is cut inside its last interval)
    rest = np.ones(len(inputs), bool)
    rest[starts] = False
    rest[T[-1]:T[-1] + 1] = False
    assert np.all(inputs[rest, 0] == 0.0)


def test_gts_default_is_seed_002_s_coding():
    """Seed 002: the input is the interval's length, followed by zeros; the target zeros,
    followed by a 1 at the interval's last step."""
    task = make_task("generating_timed_spikes", {})
    assert task.cue == "length"
    rng = np.random.default_rng(27)
    for _ in range(20):
        sequence = task.sample(rng)
        length = len(sequence)
        assert length in (10, 11)
        np.testing.assert_array_equal(sequence.inputs[:, 0], [length] + [0] * (length - 1))
        np.testing.assert_array_equal(sequence.targets[:, 0], [0] * (length - 1) + [1])


def test_gts_spike_cue():
    task = GeneratingTimedSpikes(period=12, delays=[0], cue="spike")
    inputs, targets = concatenated(task, 120, np.random.default_rng(24))
    np.testing.assert_array_equal(spike_steps(targets[:, 0]), np.arange(12, 121, 12))
    np.testing.assert_array_equal(spike_steps(inputs[:, 0]), np.arange(1, 120, 12))
    with pytest.raises(TaskError, match=r"cue 'spike' marks when an interval starts but not its delay"):
        make_task("generating_timed_spikes", {"cue": "spike"})      # default delays [0, 1]
    with pytest.raises(TaskError, match=r"cue must be one of 'length', 'delay', 'spike'"):
        make_task("generating_timed_spikes", {"cue": "start"})


def test_gts_is_msd_with_inputs_and_targets_swapped():
    """With the same seed both draw the same delays: MSD's target at each spike is GTS's cue,
    MSD's input spike is GTS's target spike."""
    msd, gts = MeasuringSpikeDelays(), GeneratingTimedSpikes(cue="delay")
    a, b = np.random.default_rng(25), np.random.default_rng(25)
    for _ in range(50):
        m, g = msd.sample(a), gts.sample(b)
        assert len(m) == len(g)
        assert g.inputs[0, 0] == m.targets[-1, 0]
        np.testing.assert_array_equal(g.targets, m.inputs)


def test_only_a_single_delay_makes_the_spike_tasks_deterministic():
    assert not MeasuringSpikeDelays().deterministic and not GeneratingTimedSpikes().deterministic
    assert MeasuringSpikeDelays(delays=[1]).deterministic
    assert GeneratingTimedSpikes(delays=[0], cue="spike").deterministic


@pytest.mark.parametrize("name", ["measuring_spike_delays", "generating_timed_spikes"])
@pytest.mark.parametrize("options, message", [
    ({"period": 1}, r"period \(F, the fixed part of each interval\) must be an integer >= 2"),
    ({"period": 10.0}, r"period .* must be an integer >= 2"),
    ({"delays": []}, r"delays must be a non-empty list of integers >= 0"),
    ({"delays": 1}, r"delays must be a non-empty list"),
    ({"delays": "01"}, r"delays must be a non-empty list"),
    ({"delays": [0, -1]}, r"delays must be integers >= 0, got -1"),
    ({"delays": [0, 0.5]}, r"delays must be integers >= 0, got 0.5"),
    ({"delays": [True]}, r"delays must be integers >= 0, got True"),
    ({"delays": [1, 1]}, r"delays must be distinct"),
    ({"F": 10}, r"has no option 'F'"),
])
def test_options_are_validated(name, options, message):
    with pytest.raises(TaskError, match=message):
        make_task(name, options)


def test_msd_continual_option_is_validated():
    with pytest.raises(TaskError, match=r"continual must be true or false"):
        make_task("measuring_spike_delays", {"continual": 0})
    with pytest.raises(TaskError, match=r"has no option 'continual'"):
        make_task("generating_timed_spikes", {"continual": False})


def test_delays_are_kept_sorted_so_their_order_does_not_matter():
    a = MeasuringSpikeDelays(delays=[3, 0, 1])
    b = MeasuringSpikeDelays(delays=(0, 1, 3))
    assert a.delays == b.delays == (0, 1, 3)
    x = concatenated(a, 500, np.random.default_rng(26))
    y = concatenated(b, 500, np.random.default_rng(26))
    np.testing.assert_array_equal(x[0], y[0])


@pytest.mark.parametrize("name, options, expected", [
    ("generating_timed_spikes", {}, ["c1feb928236082f5", "6f71ed96d83755b6", "268e4d9efe228394"]),
    ("generating_timed_spikes", {"cue": "delay"}, ["f5028411537910b4", "d32df4290b476315", "fcef8b94fe13ad4c"]),
    ("generating_timed_spikes", {"cue": "spike", "delays": [0]},
     ["2fd3feffccfa44b0", "a5bf2c227dc3af95", "3a1b0a09b00041d6"]),
    ("measuring_spike_delays", {}, ["a80b0a8721ef12ae", "a7e7ef7b4829dca5", "b5e7508290c9da78"]),
    ("measuring_spike_delays", {"delays": list(range(11))},
     ["cc5caa19bfcbafb1", "b1d32c9fbcadb5de", "fa33eaf653838225"]),
])
def test_the_intervals_are_those_the_committed_results_were_drawn_with(name, options, expected):
    """The first 700 intervals of seeds 0-1-2 and the generator state after them, hashed: the
    digests come from the sampler before `sample_many` (2026-11-23), which docs/results' rows
    were drawn with; test_tasks.py holds `sample_many` to `sample`."""
    task = make_task(name, options)
    assert [sampled_digest(task, seed, 700) for seed in range(len(expected))] == expected


def test_a_delay_beyond_the_task_limit_is_a_task_error_before_anything_is_drawn():
    """`reproduce --task-option delays=[0,1000000000000]` reaches `make_task`, not the spec's
    check: the same bound (`limits.check_task_integers`), not terabytes allocated."""
    with pytest.raises(TaskError, match=r"option delays: 1000000000000 is beyond 10,000,000"):
        make_task("measuring_spike_delays", {"delays": [0, 10**12]})
