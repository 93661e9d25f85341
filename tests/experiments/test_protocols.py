"""Protocol mechanics: streams handed out without losing steps, first-error counting, trials
reproducible from their seed."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph.experiments import find_experiment, run_trial
from lstmgraph.experiments.protocols import StreamProtocol, StreamSource, stream_score
from lstmgraph.tasks import Sequence, concatenated, make_task


def test_a_stream_source_hands_out_the_task_stream_exactly():
    task = make_task("continual_embedded_reber")
    source = StreamSource(task, np.random.default_rng(5))
    pieces = [source.steps(n) for n in (3, 17, 1, 40, 9)]
    inputs = np.concatenate([piece[0] for piece in pieces])
    expected, targets = concatenated(task, 70, np.random.default_rng(5))
    np.testing.assert_array_equal(inputs, expected)
    np.testing.assert_array_equal(np.concatenate([piece[1] for piece in pieces]), targets)


def test_a_restarted_stream_begins_at_a_sequence_start_and_reuses_unused_draws():
    task = make_task("continual_embedded_reber")
    rng = np.random.default_rng(2)
    drawn = [task.sample(rng) for _ in range(4)]
    source = StreamSource(task, np.random.default_rng(2))
    source.steps(len(drawn[0]) + 2)          # the second sequence is cut
    source.restart()                         # its rest is dropped ...
    inputs, _, ends = source.steps(len(drawn[2]))
    np.testing.assert_array_equal(inputs, drawn[2].inputs)  # ... the third starts the new stream
    assert ends.tolist() == [len(drawn[2])]


class ScriptedNetwork:
    """Errs at one given step of the whole stream (counting from 0), or never."""

    def __init__(self, error_at: int | None):
        self.error_at = error_at
        self.position = 0
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def run(self, inputs, targets, learn, tolerance=0.0):
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
    source = StreamSource(FixedLength(), np.random.default_rng(0))
    score, _ = stream_score(ScriptedNetwork(error_at), source, protocol, 100, learn=False)
    assert score == expected


@pytest.mark.parametrize("error_at,expected", [(None, 30), (9, 0), (10, 1), (159, 15), (299, 29)])
def test_sequences_completed_before_the_first_error_are_counted_in_sequences(error_at, expected):
    protocol = StreamProtocol(tolerance=0.5, unit="sequences", train_limit=30, test_limit=30, max_streams=1)
    source = StreamSource(FixedLength(), np.random.default_rng(0))
    score, _ = stream_score(ScriptedNetwork(error_at), source, protocol, 30, learn=False)
    assert score == expected


def test_external_reset_resets_before_every_sequence():
    protocol = StreamProtocol(tolerance=0.5, unit="steps", train_limit=45, test_limit=45, max_streams=1,
                              reset_each_sequence=True)
    network = ScriptedNetwork(None)
    score, steps = stream_score(network, StreamSource(FixedLength(), np.random.default_rng(0)), protocol, 45,
                                learn=False)
    assert (score, steps, network.resets) == (45, 45, 1 + 5)


@pytest.mark.parametrize("name", ["hochreiter1997-adding-t100", "gers2000-cerg-forget"])
def test_a_trial_is_reproducible_from_its_seed(name):
    experiment = find_experiment(name)
    plan = experiment.plan()
    rate, momentum = experiment.rates(plan)

    def trial():
        row = run_trial(plan, experiment.make_task(), experiment.protocol, 3, rate, momentum, budget_steps=3000)
        row.pop("seconds")
        return row

    first = trial()
    assert first == trial()
    assert first["steps"] >= 3000 and first["presented"] > 0


def test_the_learning_rate_decays_only_after_an_error_free_training_stream(monkeypatch):
    import lstmgraph.experiments.protocols as protocols
    scripted = iter([(3, 4), (100, 100), (7, 8), (100, 100)])  # (right, steps) of each training stream
    rates = []

    def fake_score(network, source, protocol, limit, learn):
        if learn:
            rates.append(float(network.rate[0]))
            return next(scripted)
        return 0, 1

    monkeypatch.setattr(protocols, "stream_score", fake_score)
    experiment = find_experiment("gers2000-cerg-forget-decay")
    protocol = StreamProtocol(tolerance=0.49, unit="steps", train_limit=100, test_limit=100, max_streams=4,
                              rate_decay=0.5)
    row = protocols.run_streams(experiment.plan(), experiment.make_task(), protocol, 0, 0.8, 0.0)
    assert rates == [0.8, 0.8, 0.4, 0.4] and row["presented"] == 4
