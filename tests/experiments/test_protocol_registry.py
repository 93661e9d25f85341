"""The protocol registry: every protocol is one registered class, and a new one is one module.

`FixedCount` below is a whole toy protocol, as a new protocol's module would hold it: its
settings, its trial (here a plain Python loop), its summary, its registration. Nothing else
in the package changes for it to run trials, be looked up by kind or by what it counts, have
its options checked, and checkpoint and restore.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from lstmgraph.experiments import PROTOCOLS, SequenceProtocol, StreamProtocol, find_experiment
from lstmgraph.experiments.data import StreamData, data_rng
from lstmgraph.experiments.protocols import Protocol, ProtocolError, protocol_counting, protocol_kind, register
from lstmgraph.experiments.trial import Trial, from_json_array, json_array, new_trial, result_row


# -- a toy protocol, as a module of its own would define it ---------------------------------------
@dataclass(frozen=True)
class FixedCount(Protocol):
    """Train on ``sequences`` sequences (a reset before each); solved if the last one was right."""

    kind: ClassVar[str] = "fixed_count"
    counted: ClassVar[str] = "training sequences"
    success_word: ClassVar[str] = "solved"
    rate_key: ClassVar[str] = "success_percent"
    terms: ClassVar[str] = "A training sequence: one sequence from a reset state. Solved: the last one right."

    sequences: int
    success: str = "tolerance"
    tolerance: float = 0.3

    @property
    def limit(self) -> int:
        return self.sequences

    def describe(self) -> str:
        return f"{self.sequences} training sequences; solved if the last is right ({self.success_test.describe()})"

    def make_trial(self, engine, task, seed: int, budget_steps: int | None = None) -> "FixedCountTrial":
        return FixedCountTrial(engine, task, self, seed, budget_steps)

    @classmethod
    def summary_fields(cls, rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {"last_right_percent": 100.0 * sum(row["solved"] for row in rows) / len(rows) if rows else None}


class FixedCountTrial(Trial):
    def __init__(self, engine, task, protocol: FixedCount, seed: int, budget_steps: int | None = None):
        super().__init__(engine, task, protocol, seed, budget_steps)
        self.counters = np.zeros(2, dtype=np.int64)  # presented, steps trained
        self.data = StreamData(task, data_rng(seed, 0))

    @staticmethod
    def _advance_all(trials: list["FixedCountTrial"], steps: int | None) -> None:
        for trial in trials:
            goal = None if steps is None else trial.steps_trained() + steps
            while trial.row is None and (goal is None or trial.steps_trained() < goal):
                trial.data.ensure(1, "sequences")
                start = trial.data.position
                end = int(np.flatnonzero(trial.data.ends[start:])[0]) + start + 1
                trial.engine.reset()
                _, outputs = trial.engine.present(trial.data.inputs[start:end], trial.data.targets[start:end], True)
                trial.data.position = end
                trial.counters += (1, end - start)
                if trial.presented() == trial.protocol.sequences:
                    right = bool(trial.protocol.success_test.steps_correct(outputs, trial.data.judged[start:end]).all())
                    trial.row = result_row(trial.seed, right, trial.presented(), trial.steps_trained())

    def _figures(self) -> dict[str, float]:
        return {}

    def _state(self) -> dict[str, np.ndarray]:
        return {"counters": self.counters.copy(), "data": json_array(self.data.where())}

    def _restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.counters[:] = arrays["counters"]
        self.data.go_to(from_json_array(arrays["data"]))


# -- the tests ------------------------------------------------------------------------------------
@pytest.fixture
def toy():
    register(FixedCount)
    yield FixedCount
    del PROTOCOLS[FixedCount.kind]


def test_the_papers_protocols_are_registered_by_kind_and_by_what_they_count():
    assert PROTOCOLS == {"sequences": SequenceProtocol, "streams": StreamProtocol}
    assert protocol_counting("training streams") is StreamProtocol and protocol_kind("sequences") is SequenceProtocol
    assert (StreamProtocol.rate_key, StreamProtocol.rate_label(), SequenceProtocol.rate_label()) == \
        ("perfect_percent", "% perfect", "% solved")
    with pytest.raises(ProtocolError, match="no protocol of kind 'batches'; the kinds: sequences, streams"):
        protocol_kind("batches")
    with pytest.raises(ValueError, match="registered already"):
        register(StreamProtocol)


def test_a_new_protocol_is_one_class_and_its_registration(toy):
    assert protocol_kind("fixed_count") is toy and protocol_counting("training sequences") is toy
    experiment = find_experiment("hochreiter1997-temporal-order-6a")
    plan, protocol = experiment.plan(), toy(sequences=30)
    assert protocol.with_settings({"sequences": 12}).sequences == 12
    with pytest.raises(ProtocolError, match="no setting 'sequence' \\(did you mean 'sequences'\\?\\)"):
        protocol.with_settings({"sequence": 12})
    whole = new_trial(plan, experiment.task, experiment.task_options, protocol, 4)
    row = whole.run()
    assert (row["presented"], row["seed"]) == (30, 4) and row["steps"] > 30
    # in pieces, restored into a new network between them, it ends as it does straight through
    cut = new_trial(plan, experiment.task, experiment.task_options, protocol, 4)
    cut.advance(200)
    assert cut.row is None and 0 < cut.presented() < 30
    resumed = new_trial(plan, experiment.task, experiment.task_options, protocol, 4)
    resumed.restore(cut.checkpoint())
    resumed.advance()
    assert {k: v for k, v in resumed.row.items() if k != "seconds"} == {k: v for k, v in row.items() if k != "seconds"}
    assert toy.summary_fields([row]) == {"last_right_percent": 100.0 * row["solved"]}


def test_a_setting_the_success_test_does_not_read_is_refused_where_given():
    row = find_experiment("hochreiter1997-erg-3x2-lr0.5")  # judged by most_active
    with pytest.raises(ProtocolError, match="tolerance: this sequences protocol judges by most_active, which reads no "
                                            "tolerance"):
        row.protocol.check_read({"tolerance": 0.2})
    options = {"success": "tolerance", "tolerance": 0.2}
    row.with_protocol_options(options).protocol.check_read(options)  # nothing raised: the test reads it
    row.protocol.check_read({"max_sequences": 500})
