"""A trial run in pieces, its state saved and restored into a new network between them, ends
exactly as the same trial run straight through: the same row and bit-identical weights."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lstmgraph.arrays import npz_arrays, npz_bytes
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.data import StreamData
from lstmgraph.experiments.trial import advance_together
from lstmgraph.tasks import make_task

# (experiment, seed, protocol changes, step budget): one of each protocol kind and branch:
# independent sequences (adding), fixed training and test sets (ERG), streams counted in steps
# (CERG), with an external reset, with the rate decay, with test phases that end at a failing
# stream, and counted in sequences (PFG, GTS).
CASES = [("hochreiter1997-adding-t100", 1, dict(test_sequences=200), 6000),
         ("hochreiter1997-erg-3x2-lr0.5", 2, dict(evaluate_every=20), 3000),
         ("gers2000-cerg-forget", 4, dict(train_limit=300, test_limit=200), 4000),
         ("gers2000-cerg-standard-reset", 4, dict(tolerance=0.7, train_limit=25, test_limit=12), 3000),
         ("gers2000-cerg-forget-decay", 4, dict(train_limit=50, test_limit=40, rate_decay=0.9), 3000),
         ("gers2000-cerg-forget", 4, dict(train_limit=300, test_limit=200, test_phase_stops_at_failure=True), 4000),
         ("gers2002-pfg-cos-f10-peephole", 0, {}, 3000),
         ("gers2002-gts-peephole", 4, {}, 3000)]


def _roundtrip(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Through an .npz file's content, as the runner keeps and sends checkpoints (no pickle)."""
    return npz_arrays(npz_bytes(arrays))


@pytest.mark.parametrize("name,seed,changes,budget", CASES)
def test_a_trial_in_pieces_ends_as_one_run_straight_through(name, seed, changes, budget):
    experiment = find_experiment(name)
    experiment = replace(experiment, protocol=replace(experiment.protocol, **changes))
    plan = experiment.plan()
    straight = experiment.trial(plan, seed, budget)
    straight.run()
    trial, pieces = experiment.trial(plan, seed, budget), 0
    while not trial.done:
        trial.advance(400 + 300 * pieces)  # pieces of different lengths
        if not trial.done:
            saved = _roundtrip(trial.checkpoint())
            trial = experiment.trial(plan, seed, budget)  # a new network, as on another worker
            trial.restore(saved)
            pieces += 1
    assert pieces >= 3
    expected, row = dict(straight.row), dict(trial.row)
    expected.pop("seconds"), row.pop("seconds")
    assert row == expected
    assert row["steps"] >= budget or row["solved"]
    for key, values in straight.engine.weights.items():
        np.testing.assert_array_equal(trial.engine.weights[key], values)


# Every case on the interpreter's block of three lanes; the timing nets also on the specialised
# kernel's block of four (its lanes are shared by every protocol: `LaneBlock.gather`; the CERG,
# ERG and adding nets' four-lane kernels take 10-25 s each to compile from an empty cache).
SIDE_BY_SIDE = [(*case, "interpreter") for case in CASES] + \
    [(*case, "specialised") for case in CASES if case[0].startswith("gers2002")]


@pytest.mark.parametrize("name,seed,changes,budget,kernel", SIDE_BY_SIDE)
def test_trials_side_by_side_end_as_each_alone(name, seed, changes, budget, kernel):
    """Three trials in one block of lanes (their own data, sequences or streams, checks, test
    phases and ends), in pieces with checkpoints between them, end with each trial's row and
    bit-identical weights when run alone."""
    experiment = find_experiment(name)
    experiment = replace(experiment, protocol=replace(experiment.protocol, **changes))
    plan = experiment.plan()
    seeds = [seed, seed + 1, seed + 2]
    alone = [experiment.trial(plan, s, budget, "interpreter") for s in seeds]
    for trial in alone:
        trial.run()
    trials = [experiment.trial(plan, s, budget, kernel) for s in seeds]
    pieces = 0
    while not all(trial.done for trial in trials):
        advance_together(trials, 500 + 200 * pieces)
        saved = [None if trial.done else _roundtrip(trial.checkpoint()) for trial in trials]
        for index, arrays in enumerate(saved):
            if arrays is not None:
                trials[index] = experiment.trial(plan, seeds[index], budget, kernel)
                trials[index].restore(arrays)
        pieces += 1
    assert pieces >= 2
    for one, together in zip(alone, trials):
        expected, row = dict(one.row), dict(together.row)
        expected.pop("seconds"), row.pop("seconds")
        assert row == expected
        for key, values in one.engine.weights.items():
            np.testing.assert_array_equal(together.engine.weights[key], values)


def test_stream_data_taken_up_at_a_saved_place_gives_the_same_sequences():
    task = make_task("embedded_reber", {})
    whole, cut = StreamData(task, np.random.default_rng(3)), StreamData(task, np.random.default_rng(3))
    whole.ensure(5000, "steps")
    cut.ensure(40, "steps")
    for _ in range(3):  # refills that keep an unread tail
        cut.position = int(np.flatnonzero(cut.ends)[len(np.flatnonzero(cut.ends)) // 2]) + 1
        cut.ensure(len(cut.inputs) - cut.position + 30, "steps")
    cut.position = int(np.flatnonzero(cut.ends)[5]) + 1
    place = cut.where()
    restored = StreamData(task, np.random.default_rng(99))
    restored.go_to(place)
    restored.ensure(200, "steps")
    start = int(np.flatnonzero(np.concatenate([[True], whole.ends]))[place["sequence"]])
    np.testing.assert_array_equal(restored.inputs[:200], whole.inputs[start:start + 200])
    np.testing.assert_array_equal(restored.targets[:200], whole.targets[start:start + 200])


def test_the_learning_rate_a_protocol_decayed_is_part_of_the_checkpoint():
    experiment = find_experiment("gers2000-cerg-forget-decay")
    plan = experiment.plan()
    trial = experiment.trial(plan, 0, 1000)
    trial.advance(100)
    trial.engine.rate = 0.123  # as the driver leaves it after error-free training streams
    restored = experiment.trial(plan, 0, 1000)
    restored.restore(_roundtrip(trial.checkpoint()))
    assert restored.engine.rate == 0.123
    assert trial.advance() == restored.advance()
    for key, values in trial.engine.weights.items():
        np.testing.assert_array_equal(restored.engine.weights[key], values)


def test_every_protocol_counts_units_presented_and_steps_trained_first():
    """A checkpoint's place (`checkpoint_place`) reads the counters of either protocol."""
    from lstmgraph.experiments.counters import SequenceCounter, StreamCounter
    from lstmgraph.experiments.trial import PRESENTED, STEPS_TRAINED

    assert (StreamCounter.STREAMS, StreamCounter.STEPS) == (PRESENTED, STEPS_TRAINED)
    assert (SequenceCounter.SEQUENCES, SequenceCounter.STEPS) == (PRESENTED, STEPS_TRAINED)


def _with(row, key: str, name: str, value):
    from lstmgraph.experiments.sweep_keys import KEYS

    return KEYS[key].apply(row, name, value)


def test_a_1997_trial_learning_by_bptt_over_each_sequence_ends_as_by_exact_rtrl():
    """Temporal order 6a (a target at a sequence's last step only, no momentum): BPTT over each
    sequence with every connection carrying makes exact RTRL's updates, so its trials end with
    exact RTRL's rows, the squared errors to rounding. Its trials run one at a time in pieces,
    and end as each run alone, bit for bit."""
    row = find_experiment("hochreiter1997-temporal-order-6a")
    row = replace(row, protocol=replace(row.protocol, max_sequences=300, test_sequences=40))
    bptt = _with(_with(row, "learning_rule", "learning_rule", "bptt"), "variant.NAME", "full_gradient", True)
    exact = _with(row, "learning_rule", "learning_rule", "rtrl")
    seeds = [0, 1]
    rows = {}
    for experiment in (bptt, exact):
        plan = experiment.plan()
        trials = [experiment.trial(plan, seed) for seed in seeds]
        assert trials[0].engine.segments == (experiment is bptt)
        pieces = 0
        while not all(trial.done for trial in trials):
            advance_together(trials, 9000)
            for index, trial in enumerate(trials):
                if not trial.done:
                    trials[index] = experiment.trial(plan, seeds[index])
                    trials[index].restore(_roundtrip(trial.checkpoint()))
            pieces += 1
        assert pieces >= 3
        rows[experiment is bptt] = [dict(trial.row) for trial in trials]
        if experiment is bptt:
            for seed, together in zip(seeds, trials):
                alone = experiment.trial(plan, seed)
                alone.run()
                assert {**alone.row, "seconds": 0} == {**together.row, "seconds": 0}
                for key, values in alone.engine.weights.items():
                    np.testing.assert_array_equal(together.engine.weights[key], values)
    for by_bptt, by_rtrl in zip(rows[True], rows[False]):
        mse = by_bptt.pop("test_mse"), by_rtrl.pop("test_mse")
        assert mse[0] == pytest.approx(mse[1], rel=1e-9)
        assert {**by_bptt, "seconds": 0} == {**by_rtrl, "seconds": 0}
        assert by_bptt["presented"] == 300


def test_a_stream_trial_and_a_gpu_refuse_bptt():
    from lstmgraph.experiments.run_checks import check_run_device
    from lstmgraph.experiments.sweep_keys import SweepError
    from lstmgraph.experiments.trial import DeviceError
    from lstmgraph.experiments.variants import Variant
    from lstmgraph.training import EngineError

    row = find_experiment("gers2000-cerg-forget")
    with pytest.raises(SweepError, match="never ends one"):
        _with(row, "learning_rule", "learning_rule", "bptt")
    by_bptt = replace(row, variants=row.variants + (
        Variant("bptt", lambda data: data["training"].update(learning_rule="bptt")),))
    with pytest.raises(EngineError, match="learn online by RTRL only"):
        by_bptt.trial(by_bptt.plan(), 0)
    sequences = _with(find_experiment("hochreiter1997-temporal-order-6b"), "learning_rule", "learning_rule", "bptt")
    with pytest.raises(DeviceError, match="bptt run on the CPU only"):
        check_run_device(sequences, sequences.plan(), "cuda", None)
    with pytest.raises(DeviceError, match="bptt run on the CPU only"):
        sequences.trial(sequences.plan(), 0, device="cuda")
    check_run_device(sequences, sequences.plan(), "cpu", None)


@pytest.mark.parametrize("name,changes", [("gers2000-cerg-forget", dict(train_limit=60, test_limit=40)),
                                          ("hochreiter1997-adding-t100", dict(test_sequences=20))])
def test_python_and_the_compiled_drivers_call_one_signature_of_the_kernel(name, changes):
    """Each signature numba sees compiles the kernel again (10 s or more): the drivers' calls
    (a stream trial, a sequence trial) and Python's (inputs shared or each lane's, a block cut
    from the middle of the trials, read-only arrays) all take the same one."""
    experiment = find_experiment(name)
    experiment = replace(experiment, protocol=replace(experiment.protocol, **changes))
    plan = experiment.plan()
    trials = [experiment.trial(plan, seed, 600, "interpreter") for seed in (0, 1, 2)]
    advance_together(trials, 600)
    network = trials[0].engine.network
    population = network.population({key: np.concatenate([w] * 7) for key, w in trials[0].engine.weights.items()}, 0.1,
                                    lanes=3)
    inputs, targets = np.zeros((5, network.n_inputs)), np.full((5, network.n_outputs), 0.5)
    inputs.flags.writeable = False
    population.run(inputs, targets)
    population.run(np.zeros((5, network.n_inputs, 7)), np.zeros((5, network.n_outputs, 7)), judged=targets)
    assert len(network.interpreter_run.signatures) == 1


@pytest.mark.parametrize("name,changes", [("gers2000-cerg-forget", dict(train_limit=60, test_limit=40)),
                                          ("hochreiter1997-adding-t100", dict(test_sequences=20))])
def test_a_driver_compiles_once_whatever_the_number_of_lanes(name, changes):
    """A block's per-lane data are typed lists (`lanes.LaneArrays`): as tuples, whose type names
    their length, each number of lanes compiled the driver again (3-18 s)."""
    from lstmgraph.engine.compiled.bound import _BOUND
    from lstmgraph.experiments import sequence_driver, stream_driver

    experiment = find_experiment(name)
    experiment = replace(experiment, protocol=replace(experiment.protocol, **changes))
    plan = experiment.plan()
    trials = [experiment.trial(plan, seed, 400, "interpreter") for seed in range(5)]
    advance_together(trials[:2], 400)
    advance_together(trials[2:], 400)
    drivers = [bound for (driver, _), bound in _BOUND.items() if driver in (stream_driver._drive, sequence_driver._drive)]
    # (a driver bound but never run, as `run_checks.compile_note` binds one to name it, has none)
    assert any(len(bound.signatures) == 1 for bound in drivers) and all(len(bound.signatures) <= 1 for bound in drivers)


def test_a_trial_refuses_a_network_that_does_not_fit_its_task_and_steps_that_are_no_count():
    """Before: a CERG net took the spike task's trials (its kernel reading past the data),
    budget_steps=-5 was taken, and advance(-1) never returned."""
    from lstmgraph.experiments import run_trial, trial_engine
    spikes, cerg = find_experiment("gers2002-msd-f10-peephole"), find_experiment("gers2000-cerg-forget")
    with pytest.raises(ValueError, match="task 'measuring_spike_delays' has 1 inputs and 1 outputs, network "
                                         "'gers2000_cerg' 7 and 7"):
        spikes.trial(cerg.plan(), seed=0, budget_steps=100)
    with pytest.raises(ValueError, match="task 'measuring_spike_delays' has 1 inputs"):
        run_trial(trial_engine(cerg.plan(), 0), spikes.make_task(), spikes.protocol, 0, budget_steps=100)
    with pytest.raises(ValueError, match="budget_steps is None or a whole number >= 0, not -5"):
        spikes.trial(spikes.plan(), seed=0, budget_steps=-5)
    trial = spikes.trial(spikes.plan(), seed=0, budget_steps=100)
    from lstmgraph.experiments.trial import advance_together
    for steps in (-1, 0, 2.5):
        with pytest.raises(ValueError, match=f"steps is None or a whole number >= 1, not {steps}"):
            trial.advance(steps)
        with pytest.raises(ValueError, match=f"steps is None or a whole number >= 1, not {steps}"):
            advance_together([trial], steps)  # (before: -1 never returned here either)
    assert trial.advance(50).done > 0


def test_a_trial_s_cpu_time_leaves_out_what_numba_spends_compiling(monkeypatch):
    """Before: a first run on a fresh installation counted the kernels' compilation (10-30 s) as
    its first trial's CPU time, beside a second of its own."""
    import time

    import numba

    experiment = find_experiment("gers2002-gts-peephole")
    trial = experiment.trial(experiment.plan(), 0, 1000)
    cls = type(trial)

    def compiling_only(trials, steps):  # a function numba has not seen: compiled here, in the block
        @numba.njit
        def fresh(x):
            return np.sum(np.sin(np.arange(x) * 0.5)) + x
        fresh(3)
        busy = time.process_time() + 0.2  # and 0.2 s of the trial's own work
        while time.process_time() < busy:
            pass

    monkeypatch.setattr(cls, "_advance_all", staticmethod(compiling_only))
    start = time.process_time()
    advance_together([trial], 10)
    assert time.process_time() - start > 0.3 and 0.19 < trial.seconds < 0.3
