"""Protocol mechanics: streams handed out without losing steps, first-error counting, trials
reproducible from their seed."""

from __future__ import annotations

import json
import subprocess
import sys

from dataclasses import replace

import numpy as np
import pytest

from lstmgraph.experiments import find_experiment, run_trial, trial_engine
from lstmgraph.experiments.sequences import SequenceTrial, run_sequences_reference
from lstmgraph.experiments.data import StreamData, next_start
from lstmgraph.experiments.streams import StreamProtocol, StreamTrial, run_streams_reference, stream_score
from lstmgraph.tasks import Sequence, make_task


def test_stream_data_serves_the_draws_in_order_whatever_the_refills():
    task = make_task("continual_embedded_reber")
    rng = np.random.default_rng(5)
    drawn = [task.sample(rng) for _ in range(300)]
    stream = np.concatenate([sequence.inputs for sequence in drawn])
    ends = np.cumsum([len(sequence) for sequence in drawn])
    data = StreamData(task, np.random.default_rng(5))
    position = 0  # in the single order of draws
    for amount in (3, 17, 1, 40, 9, 120, 2):
        data.ensure(amount, "steps")
        assert data.available("steps") >= amount
        np.testing.assert_array_equal(data.inputs[data.position:data.position + amount],
                                      stream[position:position + amount])
        # a stream that stopped here: the next one starts with the next sequence
        data.position = next_start(data.ends, data.position + amount)
        position = int(ends[np.searchsorted(ends, position + amount)])


def test_sequences_are_counted_and_the_cursor_stays_at_sequence_starts():
    data = StreamData(FixedLength(), np.random.default_rng(0))
    data.ensure(3, "sequences")
    # 3 and a quarter more (at least 1) are due; `draw`s run to the next anchor
    assert data.available("sequences") == StreamData.ANCHOR_EVERY and data.available("steps") == 2560
    assert data.counts[:12].tolist() == [0] * 10 + [1, 1]
    assert next_start(data.ends, 0) == 0 and next_start(data.ends, 1) == 10 and next_start(data.ends, 10) == 10


class ScriptedNetwork:
    """Errs at one given step of the whole stream (counting from 0), or never."""

    def __init__(self, error_at: int | None):
        self.error_at = error_at
        self.position = 0
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def present(self, inputs, targets, learn, tolerance=0.0, judged=None):
        outputs = np.where(np.isnan(targets), 0.0, targets)
        steps = len(inputs)
        if self.error_at is not None and self.position <= self.error_at < self.position + steps:
            steps = self.error_at - self.position + 1
            outputs = outputs[:steps].copy()
            outputs[-1] += 1.0  # a wrong output on the last step run
        self.position += steps
        return steps, outputs[:steps]


class FixedLength:
    """Sequences of 10 steps with a target everywhere."""
    n_inputs = n_outputs = 1
    continual = True

    def sample(self, rng):
        return Sequence(np.zeros((10, 1)), np.zeros((10, 1)))


@pytest.mark.parametrize("error_at,expected", [(None, 100), (0, 0), (15, 15), (63, 63), (64, 64), (99, 99)])
def test_steps_right_before_the_first_error_are_counted_in_steps(error_at, expected):
    protocol = StreamProtocol(tolerance=0.5, unit="steps", train_limit=100, test_limit=100, max_streams=1)
    data = StreamData(FixedLength(), np.random.default_rng(0))
    score, _ = stream_score(ScriptedNetwork(error_at), data, protocol, 100, learn=False)
    assert score == expected


@pytest.mark.parametrize("error_at,expected", [(None, 30), (9, 0), (10, 1), (159, 15), (299, 29)])
def test_sequences_completed_before_the_first_error_are_counted_in_sequences(error_at, expected):
    protocol = StreamProtocol(tolerance=0.5, unit="sequences", train_limit=30, test_limit=30, max_streams=1)
    data = StreamData(FixedLength(), np.random.default_rng(0))
    score, _ = stream_score(ScriptedNetwork(error_at), data, protocol, 30, learn=False)
    assert score == expected


# A lane that makes no error runs ever longer chunks. The growth was once unbounded: after 59
# doublings with no stop it overflowed to 0, and the trials of the block ran zero-step chunks
# for ever. Only where chunks are short did that happen before the data ran out (which starts a
# new drive call): with a reset at every sequence start, a chunk ends at each one (CERG nets of
# the external-reset row, 2026-11-23). Here 3,000 steps of intervals of 10-11 steps, each its
# own chunk. A child process, so that the bug, come back, fails the test instead of hanging.
NEVER_ERRS = """
from lstmgraph.experiments import find_experiment, trial_engine
from lstmgraph.experiments.streams import StreamProtocol, StreamTrial
experiment = find_experiment("gers2002-gts-peephole")
protocol = StreamProtocol(tolerance=1e9, unit="steps", train_limit=3_000, test_limit=10, max_streams=1,
                          test_streams=1, reset_each_sequence=True)
trial = StreamTrial(trial_engine(experiment.plan(), 0), experiment.make_task(), protocol, 0)
trial.engine.rate = 0.0  # the weights stay as drawn (a huge tolerance, no error: they would grow)
trial.advance(None)
print(trial.row["presented"], trial.row["steps"], trial.row["solved"])
"""


def test_a_stream_with_no_error_in_hundreds_of_chunks_runs_to_its_limit():
    try:
        done = subprocess.run([sys.executable, "-c", NEVER_ERRS], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise AssertionError("a 3,000-step stream with no error did not end in 10 minutes") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "3000", "True"]


def test_external_reset_resets_before_every_sequence():
    protocol = StreamProtocol(tolerance=0.5, unit="steps", train_limit=45, test_limit=45, max_streams=1,
                              reset_each_sequence=True)
    network = ScriptedNetwork(None)
    score, steps = stream_score(network, StreamData(FixedLength(), np.random.default_rng(0)), protocol, 45,
                                learn=False)
    assert (score, steps, network.resets) == (45, 45, 5)  # 4 whole sequences and the cut fifth


@pytest.mark.parametrize("name", ["hochreiter1997-adding-t100", "gers2000-cerg-forget"])
def test_a_trial_is_reproducible_from_its_seed(name):
    experiment = find_experiment(name)
    plan = experiment.plan()
    protocol = experiment.protocol
    if hasattr(protocol, "test_sequences"):
        protocol = replace(protocol, test_sequences=64)  # the test set is not what is checked

    def trial():
        row = run_trial(trial_engine(plan, 3), experiment.make_task(), protocol, 3, budget_steps=3000)
        row.pop("seconds")
        return row

    first = trial()
    assert first == trial()
    assert first["steps"] >= 3000 and first["presented"] > 0


def test_the_learning_rate_decays_only_after_an_error_free_training_stream(monkeypatch):
    import lstmgraph.experiments.streams as streams
    scripted = iter([(3, 4), (100, 100), (7, 8), (100, 100)])  # (right, steps) of each training stream
    rates = []

    def fake_score(network, data, protocol, limit, learn):
        if learn:
            rates.append(network.rate)
            return next(scripted)
        return 0, 1

    monkeypatch.setattr(streams, "stream_score", fake_score)
    experiment = find_experiment("gers2000-cerg-forget-decay")
    protocol = StreamProtocol(tolerance=0.49, unit="steps", train_limit=100, test_limit=100, max_streams=4,
                              rate_decay=0.5)
    engine = trial_engine(experiment.plan(), 0)
    engine.rate = 0.8
    row = streams.run_streams_reference(engine, experiment.make_task(), protocol, 0)
    assert rates == [0.8, 0.8, 0.4, 0.4] and row["presented"] == 4
    # Another reading: after every 2nd training stream, whatever its end.
    scripted, rates[:] = iter([(3, 4), (5, 6), (7, 8), (9, 10)]), []
    engine.rate = 0.8
    streams.run_streams_reference(engine, experiment.make_task(), replace(protocol, rate_decay_every=2), 0)
    assert rates == [0.8, 0.8, 0.4, 0.4]


def test_a_decay_reading_added_since_leaves_the_folders_records_as_they_were():
    from lstmgraph.experiments.protocols import ProtocolError, protocol_from_settings

    protocol = StreamProtocol(tolerance=0.49, unit="steps", train_limit=100, test_limit=100, max_streams=4)
    assert "rate_decay_every" not in protocol.settings()  # as every folder written before it holds it
    assert protocol_from_settings(protocol.settings()) == protocol
    every = replace(protocol, rate_decay_every=100)
    assert every.settings()["rate_decay_every"] == 100 and protocol_from_settings(every.settings()) == every
    assert "after every 100 training streams" in replace(every, rate_decay=0.99).describe()
    with pytest.raises(ProtocolError, match="rate_decay_every must be 0"):
        protocol_from_settings({**protocol.settings(), "rate_decay_every": -1})
    with pytest.raises(ProtocolError, match="rate_decay_every: this protocol's rate does not decay"):
        every.check_read({"rate_decay_every"})  # (a sweep's check: the setting would change nothing)
    replace(every, rate_decay=0.9).check_read({"rate_decay_every"})


@pytest.mark.parametrize("stops,max_streams,budget,tests_run", [
    (False, 3, None, 3 * 10),       # every phase runs its 10 streams
    (True, 3, None, 1 + 1 + 10),    # a failed phase ends at its first stream; the last runs all
    (True, 50, 4 * 8, 1 + 1 + 1 + 10),  # the last: the phase after the training stream that spends the budget
])
def test_a_failed_test_phase_ends_at_its_first_failing_stream_but_for_the_last(monkeypatch, stops, max_streams,
                                                                            budget, tests_run):
    import lstmgraph.experiments.streams as streams
    tests = []

    def fake_score(network, data, protocol, limit, learn):
        if learn:
            return 3, 8  # (right, steps): a training stream of 8 steps
        tests.append(limit)
        return 5 + len(tests) % 2, 7  # every test stream fails, at 5 or 6 of 10

    monkeypatch.setattr(streams, "stream_score", fake_score)
    experiment = find_experiment("gers2000-cerg-forget")
    protocol = StreamProtocol(tolerance=0.49, unit="steps", train_limit=100, test_limit=10, max_streams=max_streams,
                              test_phase_stops_at_failure=stops)
    row = streams.run_streams_reference(trial_engine(experiment.plan(), 0), experiment.make_task(), protocol, 0,
                                        budget)
    assert len(tests) == tests_run and not row["solved"] and row["class"] == "rest"
    assert row["presented"] == (max_streams if budget is None else budget // 8)
    assert row["score"] == 5.5  # the mean of the last phase's 10 streams, all run


def test_test_phases_that_end_at_a_failure_leave_the_training_as_it_was():
    """The compiled loop: a test phase only decides whether training stops, so over training
    streams that solve nothing, phases ended at their first failing stream give bit-identical
    weights with far fewer test sequences drawn, and the last phase runs all its streams."""
    experiment = find_experiment("gers2000-cerg-forget")
    trials = {}
    for stops in (False, True):
        protocol = replace(experiment.protocol, max_streams=300, train_limit=300, test_limit=200,
                           test_phase_stops_at_failure=stops)
        trial = StreamTrial(trial_engine(experiment.plan(), 4), experiment.make_task(), protocol, 4)
        trial.run()
        trials[stops] = trial
    plain, stopping = trials[False], trials[True]
    assert not plain.row["solved"] and not stopping.row["solved"]
    assert (plain.row["presented"], plain.row["steps"]) == (stopping.row["presented"], stopping.row["steps"]) == \
        (300, plain.row["steps"])
    for key, values in plain.engine.weights.items():
        np.testing.assert_array_equal(stopping.engine.weights[key], values)
    drawn = {stops: trial.testing.first + int(trial.testing.counts[trial.testing.position])
             for stops, trial in trials.items()}
    assert drawn[True] < drawn[False] / 5
    assert (stopping.scores >= 0).all() and stopping.row["score"] == stopping.scores.mean()


# The compiled protocol loop against the Python one, stream for stream: each case reaches a
# different branch (steps or sequences, external reset, rate decay, a solved trial, a budget).
# (seed 5 at |error| < 0.7 and GTS at 0.52 pass their test streams at once, the first after
# error-free training streams that decay the rate.)
# (The CERG cases keep the former 10^5-step stream limit: the 10^6 of seed 000 only makes each
# trial draw ten times more data before its first stream, and the loop is the same.)
CASES = [("gers2000-cerg-forget", 4, dict(max_streams=150, train_limit=100_000, test_limit=100_000), None),
         ("gers2000-cerg-forget", 5, dict(tolerance=0.7, train_limit=50, test_limit=40, rate_decay=0.9), None),
         ("gers2000-cerg-forget", 4, dict(max_streams=150, train_limit=100_000, test_limit=100_000, rate_decay=0.9,
                                          rate_decay_every=7), None),  # every 7th stream, errors or not: 21 decays
         ("gers2000-cerg-standard-reset", 4, dict(max_streams=150, train_limit=100_000, test_limit=100_000), None),
         ("gers2000-cerg-standard-reset", 4, dict(tolerance=0.7, train_limit=25, test_limit=12, max_streams=300), None),
         ("gers2002-gts-peephole", 4, dict(max_streams=3000), None),
         ("gers2002-gts-peephole", 4, dict(tolerance=0.52, train_limit=2, test_limit=20, rate_decay=0.5), None),
         ("gers2002-pfg-cos-f10-peephole", 4, dict(max_streams=3000), 2000),
         # A test phase ending at its first failing stream, but for the last (at max_streams, a budget).
         ("gers2000-cerg-forget", 4, dict(max_streams=150, train_limit=100_000, test_limit=100_000,
                                          test_phase_stops_at_failure=True), None),
         ("gers2000-cerg-forget", 4, dict(train_limit=300, test_limit=200, test_phase_stops_at_failure=True), 4000),
         ("gers2002-gts-peephole", 4, dict(max_streams=3000, test_phase_stops_at_failure=True), None)]


@pytest.mark.parametrize("name,seed,changes,budget", CASES)
def test_the_compiled_stream_loop_gives_the_python_loop_s_result(name, seed, changes, budget):
    experiment = find_experiment(name)
    plan = experiment.plan()
    protocol = replace(experiment.protocol, **changes)
    networks = [trial_engine(plan, seed) for _ in range(2)]
    compiled = StreamTrial(networks[0], experiment.make_task(), protocol, seed, budget).run()
    compiled.pop("seconds")
    reference = run_streams_reference(networks[1], experiment.make_task(), protocol, seed, budget)
    assert compiled == reference
    for key, values in networks[1].weights.items():  # the same updates, in the same order
        np.testing.assert_array_equal(networks[0].weights[key], values)
    assert compiled["steps"] >= compiled["presented"] > 0


def test_a_stream_ends_at_its_first_judged_error_when_a_task_judges_apart():
    """CNTO trained toward 0 between classifications but judged only at them: the compiled loop
    gives the Python loop's result, and the streams run longer than when every step is judged."""
    experiment = find_experiment("gers2000-cnto-forget")
    protocol = replace(experiment.protocol, max_streams=30, test_streams=2)
    rows = {}
    for judged in (True, False):
        task_row = experiment.with_task_options({"idle_judged": judged})
        networks = [trial_engine(experiment.plan(), 2) for _ in range(2)]
        compiled = StreamTrial(networks[0], task_row.make_task(), protocol, 2).run()
        compiled.pop("seconds")
        reference = run_streams_reference(networks[1], task_row.make_task(), protocol, 2)
        assert compiled == reference
        for key, values in networks[1].weights.items():
            np.testing.assert_array_equal(networks[0].weights[key], values)
        rows[judged] = compiled
    assert rows[True]["presented"] == rows[False]["presented"] == 30
    assert rows[False]["steps"] > 30 * 100 > rows[True]["steps"]  # each stream reaches a classification


def test_a_stream_judged_by_its_most_active_unit_ends_at_its_first_misclassification():
    """CNTO with ``success: most_active`` (`reproduce --protocol-option`): the compiled loop
    gives the Python loop's result, and a stream runs on where an output is 0.3 or more off its
    target but the class's unit is the most active, so longer than with the tolerance."""
    experiment = find_experiment("gers2000-cnto-forget")
    rows = {}
    for success in ("tolerance", "most_active"):
        row = experiment.with_protocol_options({"success": success, "max_streams": 30, "test_streams": 2})
        networks = [trial_engine(experiment.plan(), 2) for _ in range(2)]
        compiled = StreamTrial(networks[0], row.make_task(), row.protocol, 2).run()
        compiled.pop("seconds")
        reference = run_streams_reference(networks[1], row.make_task(), row.protocol, 2)
        assert compiled == reference
        for key, values in networks[1].weights.items():
            np.testing.assert_array_equal(networks[0].weights[key], values)
        rows[success] = compiled
    assert rows["most_active"]["presented"] == rows["tolerance"]["presented"] == 30
    assert rows["most_active"]["steps"] > rows["tolerance"]["steps"]


def _poisoned(plan, seed):
    """A trial's network with every weight at 1e308: its first sequence overflows."""
    engine = trial_engine(plan, seed)
    weights = engine.weights
    for values in weights.values():
        values[...] = 1e308
    engine.population.set_weights(weights)
    return engine


# The compiled sequence loop against the Python one: each case reaches a different branch.
# ERG seed 1: full checks that fail, then one that passes (17,700 sequences); adding, its rule
# loosened: the window is all right from sequence 30 on, the mean squared error below 0.03
# only at 95, then the test set; multiplication: at most 45 of 50 wrong; temporal order: the
# step budget; a network that overflows: diverged after its first sequence.
SEQUENCE_CASES = [
    ("hochreiter1997-erg-3x2-lr0.5", 1, dict(evaluate_every=100), None, False),
    ("hochreiter1997-adding-t100", 1, dict(tolerance=0.4, window=30, max_error=0.03, test_sequences=30), None, False),
    ("hochreiter1997-multiplication-t100-nseq140", 2, dict(window=50, allowed_wrong=45, test_sequences=50), None,
     False),
    ("hochreiter1997-temporal-order-6a", 3, dict(test_sequences=40), 8000, False),
    ("hochreiter1997-adding-t100", 4, {}, None, True),
]


@pytest.mark.parametrize("name,seed,changes,budget,poison", SEQUENCE_CASES)
def test_the_compiled_sequence_loop_gives_the_python_loop_s_result(name, seed, changes, budget, poison):
    experiment = find_experiment(name)
    plan = experiment.plan()
    protocol = replace(experiment.protocol, **changes)
    networks = [(_poisoned if poison else trial_engine)(plan, seed) for _ in range(2)]
    compiled = SequenceTrial(networks[0], experiment.make_task(), protocol, seed, budget).run()
    compiled.pop("seconds")
    reference = run_sequences_reference(networks[1], experiment.make_task(), protocol, seed, budget)
    assert compiled == reference
    assert json.loads(json.dumps(compiled)) == compiled  # plain values, not numpy's
    assert compiled["diverged"] == poison and (compiled["solved"] or budget or poison)
    if not poison:
        for key, values in networks[1].weights.items():
            np.testing.assert_array_equal(networks[0].weights[key], values)


def test_a_sequence_protocol_says_which_test_judges_a_sequence_right():
    """Under most_active no tolerance is read: the description says the test, not "|error| < 0.0"."""
    adding = find_experiment("hochreiter1997-adding-t100").protocol
    assert "(|error| < 0.04)" in adding.describe()
    most_active = adding.with_settings({"success": "most_active"})
    assert "(the target's unit the most active)" in most_active.describe()
    assert "error|" not in most_active.describe()


def test_a_rate_decaying_every_7th_stream_decays_21_times_in_150_streams():
    """The case of the compiled-against-Python test above decays the rate (so it tests the setting)."""
    experiment = find_experiment("gers2000-cerg-forget")
    protocol = replace(experiment.protocol, max_streams=150, train_limit=100_000, test_limit=100_000, rate_decay=0.9,
                       rate_decay_every=7)
    trial = StreamTrial(trial_engine(experiment.plan(), 4), experiment.make_task(), protocol, 4)
    trial.run()
    assert trial.engine.rate == pytest.approx(experiment.plan().training.learning_rate * 0.9 ** 21)


def test_a_test_mse_that_overflows_is_null_and_so_is_the_summary_s():
    """Before: float('inf') went into trials.jsonl as Infinity, which the folder's reader then refused."""
    import numpy as np

    from lstmgraph.experiments.sequences import SequenceProtocol, _sequences_row

    overflowed = _sequences_row(0, False, 5, 5, 2560, np.array([np.inf, 1.0]))
    assert overflowed["test_mse"] is None and overflowed["test_wrong"] == 2560
    fine = _sequences_row(1, False, 5, 5, 3, np.array([0.25, 0.75]))
    assert fine["test_mse"] == 0.5
    assert SequenceProtocol.summary_fields([overflowed, fine]) == {"test_wrong": (2560 + 3) / 2, "test_mse": None}
    assert SequenceProtocol.summary_fields([fine, fine])["test_mse"] == 0.5
