"""The 1997 sequence protocol (`SequenceProtocol`), run in compiled code.

A trial presents independent sequences, activations and traces reset before each, with an
online update after every step, until the experiment's rule says solved (Hochreiter &
Schmidhuber 1997: every string of a fixed training and test set right for the ERG; for adding,
multiplication and temporal order the most recent ``window`` sequences right, or at most
``allowed_wrong`` of them wrong, and their mean squared error below ``max_error``), then a
frozen test set. `SequenceTrial` runs that loop in one numba function
(`sequence_driver.drive`), alone or side by side with other trials of its experiment;
`run_sequences_reference` is the same protocol written plainly in Python, sequence by sequence,
and the test suite checks that both give the same result row and weights.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Literal

import numpy as np

from ..success import SuccessTest, squared_error
from ..tasks import Sequence, Sequences, Task
from ..tasks.base import test_task
from ..tasks.fixed_set import FixedSet
from .counters import (CHECK_AFTER_RIGHT, CHUNK, SEQUENCE_COUNTERS, SEQUENCE_SAVED, SEQUENCE_SETTINGS, WORK,
                       SequenceCounter as Counter, SequenceSetting as Setting, Status)
from .data import StreamData, data_rng, draw_all, gpu_draw_threads, longest_sequence
from .protocols import Protocol, ProtocolError, check_positive, mean_or_none, register, trial_of
from .trial import Trial, from_json_array, json_array, result_row


#: The largest window of recent results (and fixed set) and test set: each lane keeps them in memory.
MAX_WINDOW = MAX_TEST_SEQUENCES = 1_000_000


@register
@dataclass(frozen=True)
class SequenceProtocol(Protocol):
    """Hochreiter & Schmidhuber 1997: independent sequences until the rule says solved, then a frozen test set."""

    kind: ClassVar[str] = "sequences"
    driver: ClassVar[str] = "lstmgraph.experiments.sequence_driver"
    counted: ClassVar[str] = "sequences"
    success_word: ClassVar[str] = "solved"
    limit_setting: ClassVar[str] = "max_sequences"
    rate_key: ClassVar[str] = "success_percent"
    terms: ClassVar[str] = ("A sequence: one input sequence from a reset state, the net learning online at every "
                            "step. A trial is solved when it meets the paper's stopping rule.")
    resets_each_sequence: ClassVar[bool] = True  # (each sequence is independent: module docstring)

    success: Literal["most_active", "tolerance"]
    tolerance: float = 0.0
    fixed_sets: int | None = None      # ERG: a fixed training set and a distinct test set of this size
    data_sets: int = 1                 # distinct set pairs, trial k uses pair k mod data_sets
    window: int = 2000
    max_error: float | None = None
    allowed_wrong: int = 0
    test_sequences: int = 2560
    max_sequences: int = 1_000_000
    evaluate_every: int = 1000         # fixed sets: full check at least this often

    def __post_init__(self) -> None:
        SuccessTest(self.success, self.tolerance)  # (ValueError for a test that does not exist)
        check_positive(self, "data_sets", "window", "test_sequences", "max_sequences", "evaluate_every")
        if self.window > MAX_WINDOW:
            raise ValueError(f"window must be at most {MAX_WINDOW:,} (its results are kept), not {self.window}")
        if self.test_sequences > MAX_TEST_SEQUENCES:
            raise ValueError(f"test_sequences must be at most {MAX_TEST_SEQUENCES:,}, not {self.test_sequences}")
        if self.fixed_sets is not None and not 1 <= self.fixed_sets <= MAX_WINDOW:
            raise ValueError(f"fixed_sets must be between 1 and {MAX_WINDOW:,} (or null), not {self.fixed_sets}")
        if not 0 <= self.allowed_wrong < self.window:
            raise ValueError(f"allowed_wrong must be at least 0 and below window ({self.window}), "
                             f"not {self.allowed_wrong}")
        if self.max_error is not None and not self.max_error > 0:
            raise ValueError(f"max_error must be > 0 (or null), not {self.max_error}")

    def sequences_to_succeed(self) -> int | None:
        return None if self.fixed_sets else self.window  # (fixed sets: a full check every evaluate_every)

    def check_task(self, task: Task) -> None:
        """Fixed sets draw their test strings from the training task: a task's held-out sequences
        (`test_task`) would go unused, so the two are refused together."""
        if self.fixed_sets and test_task(task) is not task:
            raise ProtocolError(f"fixed_sets: the full check's test strings come from the {task.name} task's training "
                                "sequences, so its held-out sequences (test_path) would go unused; leave one out")

    @classmethod
    def summary_fields(cls, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The test set's figures: wrong sequences and mean squared error, over the trials tested."""
        tested = [row for row in rows if "test_wrong" in row]
        if not tested:
            return {}
        return {"test_wrong": mean_or_none([row["test_wrong"] for row in tested]),
                "test_mse": mean_or_none([row["test_mse"] for row in tested])}

    @classmethod
    def test_rows(cls, summary: dict[str, Any], published: dict[str, Any], show) -> list[tuple[str, str, str]]:
        if "test_wrong" not in summary:
            return []
        return [("test sequences wrong (of 2,560)", show(summary["test_wrong"], 1), show(published.get("test_wrong"))),
                ("test MSE", show(summary["test_mse"], 4), show(published.get("test_mse"), 4))]

    def describe(self) -> str:
        if self.fixed_sets:
            return (f"{self.fixed_sets} training / {self.fixed_sets} test strings ({self.data_sets} set pairs); "
                    f"success: every symbol of every string predicted ({self.success}); "
                    f"at most {self.max_sequences:,} sequences")
        rule = f"the last {self.window:,} sequences right" if not self.allowed_wrong else \
            f"at most {self.allowed_wrong} of the last {self.window:,} sequences wrong"
        if self.max_error is not None:
            rule += f" and their mean squared error < {self.max_error}"
        right = "the target's unit the most active" if self.success == "most_active" else f"|error| < {self.tolerance}"
        return (f"reset before each sequence; stop when {rule} ({right}); "
                f"test on {self.test_sequences:,} new sequences; at most {self.max_sequences:,} sequences")


def _distinct_sequences(task: Task, count: int, rng: np.random.Generator) -> list[Sequence]:
    seen: set[bytes] = set()
    result: list[Sequence] = []
    while len(result) < count:
        sequence = task.sample(rng)
        if (key := sequence.inputs.tobytes()) not in seen:
            seen.add(key)
            result.append(sequence)
    return result


def _sequence_correct(protocol: SequenceProtocol, outputs: np.ndarray, targets: np.ndarray) -> bool:
    return bool(protocol.success_test.steps_correct(outputs, targets).all())


def _present(engine, protocol: SequenceProtocol, sequence: Sequence, learn: bool) -> tuple[bool, float]:
    engine.reset()
    _, outputs = engine.present(sequence.inputs, sequence.targets, learn)
    return (_sequence_correct(protocol, outputs, sequence.judged),
            squared_error(outputs, sequence.targets))


def _sequence_data(task: Task, protocol: SequenceProtocol, seed: int) -> tuple[Any, list[Sequence]]:
    """A trial's source of training sequences (the task, or its fixed training set) and the
    strings of a full check (the fixed training and test sets; none without fixed sets)."""
    if not protocol.fixed_sets:
        return task, []
    strings = _distinct_sequences(task, 2 * protocol.fixed_sets, data_rng(seed % protocol.data_sets, 2))
    return FixedSet(task, strings[:protocol.fixed_sets]), strings


def _window(protocol: SequenceProtocol) -> int:
    return min(protocol.window, protocol.fixed_sets) if protocol.fixed_sets else protocol.window


def _test_set(task: Task, protocol: SequenceProtocol, seed: int) -> list[Sequence]:
    """A trial's frozen test set (independent sequences only): the first sequences of its
    `_test_source`."""
    if protocol.fixed_sets or not protocol.test_sequences:
        return []
    source = _test_source(task, seed)
    return [source.task.sample(source.rng) for _ in range(protocol.test_sequences)]


def _test_source(task: Task, seed: int) -> StreamData:
    """A trial's test sequences in order, from their own generator (purpose 1, `data_rng`), of
    the task's held-out sequences where it has them (`test_task`)."""
    return StreamData(test_task(task), data_rng(seed, 1))


def _sequences_row(seed: int, solved: bool, sequences: int, steps: int, test_wrong: int,
                   test_errors: Any) -> dict[str, Any]:
    """The result row, with the test set's wrong sequences and mean squared error if it ran
    (``test_errors``: each test sequence's squared error)."""
    row = result_row(seed, solved, sequences, steps)
    if len(test_errors):
        row["test_wrong"] = test_wrong
        row["test_mse"] = mse if (mse := float(np.mean(test_errors))) <= 1e300 else None  # (JSON has no inf, NaN)
    return row


def run_sequences_reference(engine, task: Task, protocol: SequenceProtocol, seed: int,
                            budget_steps: int | None = None) -> dict[str, Any]:
    """One trial, sequence by sequence in Python: the plain statement of what `SequenceTrial`
    does. Sequences until the experiment's rule says solved (or the sequence or step limit):
    for fixed sets (ERG) a full check of every training and test string, weights frozen, when
    the last ``window`` training strings were right online (at most every
    `counters.CHECK_AFTER_RIGHT` sequences) and every ``evaluate_every`` sequences; else
    the last ``window`` sequences right (or at most ``allowed_wrong`` wrong) and their mean
    squared error below ``max_error``. Then the frozen test set."""
    source, checks = _sequence_data(task, protocol, seed)
    rng, window = data_rng(seed, 0), _window(protocol)
    recent: deque[tuple[bool, float]] = deque(maxlen=window)  # (right, squared error), newest last
    wrong = sequences = steps = last_check = 0
    solved = False
    while sequences < protocol.max_sequences and (budget_steps is None or steps < budget_steps):
        sequence = source.sample(rng)
        if len(recent) == window:
            wrong -= not recent[0][0]
        recent.append(_present(engine, protocol, sequence, learn=True))
        wrong += not recent[-1][0]
        sequences += 1
        steps += len(sequence)
        if not engine.finite():
            return result_row(seed, False, sequences, steps, diverged=True)
        full = len(recent) == window
        if checks:
            if (full and wrong == 0 and sequences - last_check >= CHECK_AFTER_RIGHT) or \
                    sequences - last_check >= protocol.evaluate_every:
                last_check = sequences
                solved = all(_present(engine, protocol, string, learn=False)[0] for string in checks)
        else:
            solved = full and wrong <= protocol.allowed_wrong and (
                protocol.max_error is None or float(np.mean([e for _, e in recent])) < protocol.max_error)
        if solved:
            break
    tests = [_present(engine, protocol, sequence, learn=False) for sequence in _test_set(task, protocol, seed)]
    return _sequences_row(seed, solved, sequences, steps, sum(not ok for ok, _ in tests), [e for _, e in tests])


#: Sequences drawn at a time when a trial's training sequences run out (fewer for long ones: `StreamData.refill`).
SEQUENCE_REFILL = 1 << 10


@trial_of(SequenceProtocol)
class SequenceTrial(Trial):
    """One trial of a 1997 experiment: the loop of `run_sequences_reference`, run in compiled
    code (`sequence_driver.drive`), alone or side by side with other trials of its experiment
    in one block of lanes (`advance_together`); it returns to Python to draw more sequences,
    and pauses between training sequences, where its state is the network, the counters, the
    window of recent results and the place in its training sequences."""

    DEVICES = ("cpu", "cuda")
    WHOLE_SEQUENCES = True

    def __init__(self, engine, task: Task, protocol: SequenceProtocol, seed: int,
                 budget_steps: int | None = None):
        super().__init__(engine, task, protocol, seed, budget_steps)
        source, strings = _sequence_data(task, protocol, seed)
        self.checks = _laid_end_to_end(strings, task)  # the full check's strings (fixed sets)
        _test_source(task, seed).check_set(0 if protocol.fixed_sets else protocol.test_sequences)
        self.training = StreamData(source, data_rng(seed, 0))
        self.window = _window(protocol)
        self.counters = np.zeros(SEQUENCE_SAVED, dtype=np.int64)  # its place: `counters.SequenceCounter`
        self.recent_right = np.zeros(0, dtype=np.bool_)  # the window, oldest first
        self.recent_error = np.zeros(0)

    def _figures(self) -> dict[str, float]:
        mse = float(np.mean(self.recent_error)) if len(self.recent_error) else float("nan")
        return {"recent_wrong": int(self.counters[Counter.WRONG]), "recent_mse": mse}

    @staticmethod
    def _advance_all(trials: list["SequenceTrial"], steps: int | None) -> None:
        """Run ``trials`` (each `runs_beside` the first) side by side, each until it ends or has trained
        about ``steps`` more steps and finished its sequence: in a block of lanes on the CPU,
        or on the GPU (`gpu_drivers`) where the trials' device is ``cuda``."""
        from . import sequence_driver as driver  # numba: only when a trial runs

        protocol = trials[0].protocol
        count, window = len(trials), trials[0].window
        counters = np.zeros((count, SEQUENCE_COUNTERS), dtype=np.int64)
        recent = driver.Window(np.zeros((count, window), dtype=np.bool_), np.zeros((count, window)))
        tests = 0 if protocol.fixed_sets else protocol.test_sequences
        test_errors = np.zeros((count, tests))
        for lane, trial in enumerate(trials):
            counters[lane, :SEQUENCE_SAVED] = trial.counters
            filled = len(trial.recent_right)
            counters[lane, Counter.FILLED] = filled
            recent.right[lane, :filled], recent.error[lane, :filled] = trial.recent_right, trial.recent_error
            counters[lane, Counter.POSITION] = trial.training.position
            counters[lane, Counter.BUDGET] = -1 if trial.budget_steps is None else trial.budget_steps
            counters[lane, Counter.PAUSE] = -1 if steps is None else int(trial.counters[Counter.STEPS]) + steps
        settings = np.zeros(SEQUENCE_SETTINGS, dtype=np.int64)
        settings[[Setting.WINDOW, Setting.ALLOWED_WRONG, Setting.MAX_SEQUENCES, Setting.FIXED, Setting.EVALUATE_EVERY,
                  Setting.TEST_SEQUENCES]] = [window, protocol.allowed_wrong, protocol.max_sequences,
                                              bool(protocol.fixed_sets), protocol.evaluate_every, tests]
        max_error = math.nan if protocol.max_error is None else float(protocol.max_error)
        rule = driver.Rule(settings, protocol.success_test.kernel_tolerance, max_error)
        frozen = [trial.checks for trial in trials]  # the test sets replace them when asked for
        if trials[0].device == "cuda":
            from .gpu_drivers import advance_sequences_on_gpu  # numba-cuda: only there

            threads = gpu_draw_threads([trial.task for trial in trials])
            advance_sequences_on_gpu(trials, rule, counters, recent, test_errors, frozen,
                                     lambda training, tests: _refill_sequences(trials, counters, frozen, threads,
                                                                               training, tests))
        else:
            _advance_on_cpu(trials, rule, counters, recent, test_errors, frozen)
        status = counters[:, Counter.STATUS]
        for lane, trial in enumerate(trials):
            trial.counters[:] = counters[lane, :SEQUENCE_SAVED]
            trial.training.position = int(counters[lane, Counter.POSITION])
            order = (counters[lane, Counter.HEAD] + np.arange(counters[lane, Counter.FILLED])) % window
            trial.recent_right, trial.recent_error = recent.right[lane, order], recent.error[lane, order]
            if status[lane] == Status.DIVERGED:
                trial.row = result_row(trial.seed, False, trial.presented(), trial.steps_trained(), diverged=True)
            elif status[lane] in (Status.SOLVED, Status.DONE):
                trial.row = _sequences_row(trial.seed, bool(status[lane] == Status.SOLVED), trial.presented(),
                                           trial.steps_trained(), int(counters[lane, Counter.TEST_WRONG]),
                                           test_errors[lane])

    def test_source(self) -> StreamData:
        """Its test set's sequences in order, as `_test_set` draws them (the GPU draws them there)."""
        return _test_source(self.task, self.seed)

    def _state(self) -> dict[str, np.ndarray]:
        return {"counters": self.counters.copy(), "training_data": json_array(self.training.where()),
                "recent_right": self.recent_right.copy(), "recent_error": self.recent_error.copy()}

    def _restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.counters[:] = arrays["counters"]
        self.training.go_to(from_json_array(arrays["training_data"]))
        self.recent_right = np.asarray(arrays["recent_right"], dtype=np.bool_)
        self.recent_error = np.asarray(arrays["recent_error"], dtype=np.float64)



def _laid_end_to_end(strings: list[Sequence], task: Task) -> tuple[np.ndarray, ...]:
    """(inputs, targets, judged, ends) of ``strings`` one after another; ``judged`` is the
    targets array itself where it equals it (the GPU then stages one target plane)."""
    laid = Sequences.of(strings, task.n_inputs, task.n_outputs)
    ends = np.zeros(len(laid.inputs), dtype=np.bool_)
    ends[np.cumsum(laid.lengths) - 1] = True
    same = np.array_equal(laid.judged, laid.targets, equal_nan=True)
    return laid.inputs, laid.targets, laid.targets if same else laid.judged, ends


def _room_for(outputs: np.ndarray, *lengths: int) -> np.ndarray:
    """``outputs`` (lanes, steps, n) with room for ``lengths`` steps, its contents kept."""
    longest = max(lengths)
    if longest <= outputs.shape[1]:
        return outputs
    grown = np.zeros((outputs.shape[0], longest, outputs.shape[2]))
    grown[:, :outputs.shape[1]] = outputs
    return grown


def _refill_sequences(trials: list[SequenceTrial], counters: np.ndarray, frozen: list, threads: int = 1,
                      training_too: bool = True, tests_too: bool = True) -> None:
    """The data the driver asked for: more training sequences (`Status.NEED_TRAINING`, or none
    drawn yet), or the test set in place of the frozen strings (`NEED_TEST`), drawn ``threads``
    trials at a time (`data.draw_all`); those lanes run again. Not ``training_too`` or
    ``tests_too``: those the GPU draws."""
    status = counters[:, Counter.STATUS]
    training, tests = [], []
    for lane, trial in enumerate(trials):
        if training_too and (status[lane] == Status.NEED_TRAINING or len(trial.training.inputs) == 0):
            trial.training.position = int(counters[lane, Counter.POSITION])
            training.append(lane)
        elif tests_too and status[lane] == Status.NEED_TEST:
            tests.append(lane)

    def test_set(lane: int) -> None:
        trial = trials[lane]
        frozen[lane] = _laid_end_to_end(_test_set(trial.task, trial.protocol, trial.seed), trial.task)

    draw_all([partial(trials[lane].training.refill, SEQUENCE_REFILL, "sequences") for lane in training]
             + [partial(test_set, lane) for lane in tests], threads)
    for lane in training:
        counters[lane, Counter.POSITION] = trials[lane].training.position
    status[((status == Status.NEED_TEST) & tests_too) | ((status == Status.NEED_TRAINING) & training_too)] = Status.RUNNING


def _advance_on_cpu(trials: list[SequenceTrial], rule, counters: np.ndarray, recent, test_errors: np.ndarray,
                    frozen: list) -> None:
    """The trials side by side in one block of lanes, the compiled driver (`sequence_driver.drive`)
    called until every lane has stopped; the networks and rates scattered back. Trials learning
    by BPTT run one at a time: a kernel call is then one segment, and the driver's calls end at
    the end of a sequence of the lane alone (staged whole)."""
    from ..engine.compiled.lanes import LaneArrays, LaneBlock
    from . import sequence_driver as driver

    segments = trials[0].engine.segments
    if segments and len(trials) > 1:
        for lane, trial in enumerate(trials):
            _advance_on_cpu([trial], rule, counters[lane:lane + 1], type(recent)(*(r[lane:lane + 1] for r in recent)),
                            test_errors[lane:lane + 1], frozen[lane:lane + 1])
        return
    program = trials[0].engine.network.program
    engines = [trial.engine for trial in trials]
    block = LaneBlock.gather(engines)
    stage_inputs = np.zeros((CHUNK, program.n_inputs, block.width))
    stage_targets = np.zeros((CHUNK, 1, program.n_outputs, block.width))
    outputs = np.zeros((block.width, 0, program.n_outputs))
    lane_training, lane_tests = LaneArrays(driver.LaneSequences), LaneArrays(driver.LaneSequences)
    status = counters[:, Counter.STATUS]
    while True:
        _refill_sequences(trials, counters, frozen)
        longest = max([longest_sequence(trial.training.ends) for trial in trials]
                      + [longest_sequence(data[3]) for data in frozen])
        outputs = _room_for(outputs, longest)
        if segments and longest > len(stage_inputs):
            stage_inputs = np.zeros((longest, program.n_inputs, block.width))
            stage_targets = np.zeros((longest, 1, program.n_outputs, block.width))
        training = lane_training([tuple(getattr(trial.training, field) for field in driver.LaneSequences._fields)
                                  for trial in trials])
        driver.drive(block, trials[0].engine.training.momentum, rule, training, lane_tests(frozen),
                     counters, recent, test_errors, outputs, stage_inputs, stage_targets, WORK)
        if not np.isin(status, (Status.RUNNING, Status.NEED_TRAINING, Status.NEED_TEST)).any():
            break
    block.scatter(engines)
