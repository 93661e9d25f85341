"""The papers' training and test regimes, as code.

Two kinds (docs/results.md describes each experiment's settings):

- `SequenceProtocol` (Hochreiter & Schmidhuber 1997): independent sequences, activations and
  traces reset before each, an online update after every step; training stops by the
  experiment's rule (all training and test strings right for the ERG; for adding, multiplication
  and temporal order, the most recent ``window`` sequences right, or at most ``allowed_wrong``
  of them wrong, and their mean squared error below ``max_error``), then a frozen test set.
- `StreamProtocol` (Gers et al. 2000, 2002): a continual stream, no reset inside it (unless
  ``reset_each_sequence``, the "external reset" baseline); a training stream stops at its first
  error or after ``train_limit`` steps or sequences; after each, weights frozen, ``test_streams``
  test streams each run to their first error or ``test_limit``; "perfect" when every test stream
  reaches its limit, "good" when their mean reaches ``good_score``.

Every random choice comes from the trial's seed: weights from ``seed``, data from generators
derived from (seed, purpose), so a trial is reproducible alone or in any worker.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

from ..plan import Plan
from ..tasks import Sequence, Task
from .network import OnlineNetwork
from .success import most_active_correct, squared_error, within_tolerance

Progress = Callable[[dict[str, Any]], None]


def data_rng(seed: int, purpose: int) -> np.random.Generator:
    """The generator of one data stream of a trial (purposes: 0 training, 1 test, 2 sets)."""
    return np.random.default_rng(np.random.SeedSequence([seed, 1997, purpose]))


@dataclass(frozen=True)
class SequenceProtocol:
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
    kind: str = field(default="sequences", init=False)

    def describe(self) -> str:
        if self.fixed_sets:
            return (f"{self.fixed_sets} training / {self.fixed_sets} test strings ({self.data_sets} set pairs); "
                    f"success: every symbol of every string predicted ({self.success}); "
                    f"at most {self.max_sequences:,} sequences")
        rule = f"the last {self.window:,} sequences right" if not self.allowed_wrong else \
            f"at most {self.allowed_wrong} of the last {self.window:,} sequences wrong"
        if self.max_error is not None:
            rule += f" and their mean squared error < {self.max_error}"
        return (f"reset before each sequence; stop when {rule} (|error| < {self.tolerance}); "
                f"test on {self.test_sequences:,} new sequences; at most {self.max_sequences:,} sequences")


@dataclass(frozen=True)
class StreamProtocol:
    tolerance: float
    unit: Literal["steps", "sequences"]
    train_limit: int
    test_limit: int
    max_streams: int
    test_streams: int = 10
    # The "decay" rows: the learning rate is multiplied by this after each training stream that
    # ran its full length without an error. Applied after every stream (mostly a few symbols
    # long early on) it vanishes before anything is learned: 0 of 10 CERG nets, docs/results.md.
    rate_decay: float = 1.0
    reset_each_sequence: bool = False  # the "external reset" baseline
    good_score: float = 1000.0
    kind: str = field(default="streams", init=False)

    def describe(self) -> str:
        reset = "state reset at each sequence start" if self.reset_each_sequence else "no reset inside a stream"
        decay = (f"; learning rate x{self.rate_decay} after each error-free training stream"
                 if self.rate_decay != 1 else "")
        return (f"continual streams, {reset}; a training stream stops at its first error "
                f"(|error| >= {self.tolerance}) or after {self.train_limit:,} {self.unit}; then "
                f"{self.test_streams} frozen test streams of up to {self.test_limit:,} {self.unit}; "
                f"perfect = all reach it; good = mean >= {self.good_score:,.0f}; "
                f"at most {self.max_streams:,} training streams{decay}")


Protocol = SequenceProtocol | StreamProtocol


# -- sequences (1997) ------------------------------------------------------------------------
def _distinct_sequences(task: Task, count: int, rng: np.random.Generator) -> list[Sequence]:
    seen: set[bytes] = set()
    result: list[Sequence] = []
    while len(result) < count:
        sequence = task.sample(rng)
        key = sequence.inputs.tobytes()
        if key not in seen:
            seen.add(key)
            result.append(sequence)
    return result


def _sequence_correct(protocol: SequenceProtocol, outputs: np.ndarray, targets: np.ndarray) -> bool:
    if protocol.success == "most_active":
        return bool(most_active_correct(outputs, targets).all())
    return bool(within_tolerance(outputs, targets, protocol.tolerance).all())


def _present(network: OnlineNetwork, protocol: SequenceProtocol, sequence: Sequence,
             learn: bool) -> tuple[bool, float]:
    network.reset()
    _, outputs = network.run(sequence.inputs, sequence.targets, learn)
    return (_sequence_correct(protocol, outputs, sequence.judged),
            squared_error(outputs, sequence.targets))


def run_sequences(plan: Plan, task: Task, protocol: SequenceProtocol, seed: int, learning_rate: float,
                  momentum: float, budget_steps: int | None = None,
                  progress: Progress | None = None) -> dict[str, Any]:
    """One trial of a 1997 experiment; returns its result row."""
    network = OnlineNetwork(plan, seed, learning_rate, momentum)
    rng = data_rng(seed, 0)
    training = test = None
    if protocol.fixed_sets:
        sets = _distinct_sequences(task, 2 * protocol.fixed_sets, data_rng(seed % protocol.data_sets, 2))
        training, test = sets[:protocol.fixed_sets], sets[protocol.fixed_sets:]
    window = min(protocol.window, len(training)) if training else protocol.window
    recent: deque[tuple[bool, float]] = deque(maxlen=window)  # (right, squared error), newest last
    wrong = 0  # wrong sequences in `recent`, kept as sequences enter and leave it
    sequences = steps = 0
    last_check = 0
    solved = False
    while sequences < protocol.max_sequences and (budget_steps is None or steps < budget_steps):
        sequence = training[int(rng.integers(len(training)))] if training else task.sample(rng)
        if len(recent) == window:
            wrong -= not recent[0][0]
        recent.append(_present(network, protocol, sequence, learn=True))
        wrong += not recent[-1][0]
        sequences += 1
        steps += len(sequence)
        if not network.weights_finite():
            return _row(seed, False, sequences, steps, diverged=True)
        if progress and sequences % 1000 == 0:
            progress({"sequences": sequences, "recent_wrong": wrong,
                      "recent_mse": float(np.mean([e for _, e in recent]))})
        full = len(recent) == window
        if training:
            online_right = full and wrong == 0
            if (online_right and sequences - last_check >= 50) or sequences - last_check >= protocol.evaluate_every:
                last_check = sequences
                if all(_present(network, protocol, s, learn=False)[0] for s in training + test):
                    solved = True
                    break
        elif full and wrong <= protocol.allowed_wrong and (
                protocol.max_error is None or float(np.mean([e for _, e in recent])) < protocol.max_error):
            solved = True
            break
    row = _row(seed, solved, sequences, steps)
    if not training and protocol.test_sequences:
        test_rng = data_rng(seed, 1)
        results = [_present(network, protocol, task.sample(test_rng), learn=False)
                   for _ in range(protocol.test_sequences)]
        row["test_wrong"] = sum(not ok for ok, _ in results)
        row["test_mse"] = float(np.mean([e for _, e in results]))
    return row


# -- streams (2000, 2002) --------------------------------------------------------------------
class StreamSource:
    """A task's sequences laid end to end, handed out in pieces without losing a step."""

    def __init__(self, task: Task, rng: np.random.Generator):
        self.task = task
        self.rng = rng
        self.pending: list[Sequence] = []
        self.cut = False  # the first pending sequence is the rest of one cut by `steps`

    def restart(self) -> None:
        """Begin a new stream at a sequence start; whole sequences drawn but not yet used stay
        (they are independent draws), only the rest of a cut one is dropped."""
        if self.cut:
            self.pending.pop(0)
            self.cut = False

    def sequences(self, count: int) -> list[Sequence]:
        while len(self.pending) < count:
            self.pending.append(self.task.sample(self.rng))
        taken, self.pending = self.pending[:count], self.pending[count:]
        self.cut = False
        return taken

    def steps(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exactly ``count`` steps: (inputs, targets, ends of the sequences completed in them)."""
        inputs, targets, ends, total = [], [], [], 0
        while total < count:
            sequence = self.sequences(1)[0]
            need = count - total
            if len(sequence) > need:
                self.pending.insert(0, Sequence(sequence.inputs[need:], sequence.targets[need:]))
                self.cut = True
                sequence = Sequence(sequence.inputs[:need], sequence.targets[:need])
            else:
                ends.append(total + len(sequence))
            inputs.append(sequence.inputs)
            targets.append(sequence.targets)
            total += len(sequence)
        return np.concatenate(inputs), np.concatenate(targets), np.array(ends, dtype=np.int64)


def _failed(outputs: np.ndarray, targets: np.ndarray, steps: int, length: int, tolerance: float) -> bool:
    return steps < length or not within_tolerance(outputs[-1:], targets[steps - 1:steps], tolerance)[0]


def stream_score(network: OnlineNetwork, source: StreamSource, protocol: StreamProtocol, limit: int,
                 learn: bool) -> tuple[int, int]:
    """Run one stream from a zero state until its first error or ``limit`` units; returns
    (units right before the first error, steps run)."""
    network.reset()
    source.restart()
    done = steps_run = 0
    chunk = 16
    while done < limit:
        size = min(chunk, limit - done)
        if protocol.reset_each_sequence:
            sequence = source.sequences(1)[0]
            if protocol.unit == "steps":
                sequence = Sequence(sequence.inputs[:limit - done], sequence.targets[:limit - done])
            network.reset()
            inputs, targets, ends = sequence.inputs, sequence.targets, np.array([len(sequence)])
        elif protocol.unit == "steps":
            inputs, targets, ends = source.steps(size)
        else:
            taken = source.sequences(size)
            inputs = np.concatenate([s.inputs for s in taken])
            targets = np.concatenate([s.targets for s in taken])
            ends = np.cumsum([len(s) for s in taken])
        steps, outputs = network.run(inputs, targets, learn, protocol.tolerance)
        steps_run += steps
        if _failed(outputs, targets, steps, len(inputs), protocol.tolerance):
            right = steps - 1 if protocol.unit == "steps" else int(np.sum(ends <= steps - 1))
            return min(done + right, limit), steps_run
        done += len(inputs) if protocol.unit == "steps" else len(ends)
        chunk = min(chunk * 2, 16384)
    return limit, steps_run


def run_streams(plan: Plan, task: Task, protocol: StreamProtocol, seed: int, learning_rate: float,
                momentum: float, budget_steps: int | None = None,
                progress: Progress | None = None) -> dict[str, Any]:
    """One trial of a 2000/2002 stream experiment; returns its result row."""
    network = OnlineNetwork(plan, seed, learning_rate, momentum)
    training = StreamSource(task, data_rng(seed, 0))
    testing = StreamSource(task, data_rng(seed, 1))
    streams = steps = 0
    score = 0.0
    solved = False
    while streams < protocol.max_streams and (budget_steps is None or steps < budget_steps):
        right, run = stream_score(network, training, protocol, protocol.train_limit, learn=True)
        streams += 1
        steps += run
        if right >= protocol.train_limit:
            network.rate *= protocol.rate_decay
        if not network.weights_finite():
            return _row(seed, False, streams, steps, diverged=True, score=score)
        scores = [stream_score(network, testing, protocol, protocol.test_limit, learn=False)[0]
                  for _ in range(protocol.test_streams)]
        score = float(np.mean(scores))
        if progress and streams % 100 == 0:
            progress({"streams": streams, "score": score})
        if min(scores) >= protocol.test_limit:
            solved = True
            break
    row = _row(seed, solved, streams, steps, score=score)
    row["class"] = "perfect" if solved else ("good" if score >= protocol.good_score else "rest")
    return row


def _row(seed: int, solved: bool, count: int, steps: int, diverged: bool = False, **extra: Any) -> dict[str, Any]:
    return {"seed": seed, "solved": solved, "to_success": count if solved else None, "presented": count,
            "steps": steps, "diverged": diverged, **extra}


def run_trial(plan: Plan, task: Task, protocol: Protocol, seed: int, learning_rate: float, momentum: float,
              budget_steps: int | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """One trial under its protocol, timed."""
    start = time.perf_counter()
    runner = run_sequences if isinstance(protocol, SequenceProtocol) else run_streams
    row = runner(plan, task, protocol, seed, learning_rate, momentum, budget_steps, progress)
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row
