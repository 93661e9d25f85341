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
from typing import Any, Literal

import numpy as np

from ..tasks import Sequence, Task
from .network import OnlineNetwork
from .streams import StreamProtocol, run_streams
from .success import most_active_correct, squared_error, within_tolerance
from .trial import Progress, data_rng, result_row

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


def run_sequences(network: OnlineNetwork, task: Task, protocol: SequenceProtocol, seed: int,
                  budget_steps: int | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """One trial of a 1997 experiment (``network`` is trained in place); returns its result row."""
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
            return result_row(seed, False, sequences, steps, diverged=True)
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
    row = result_row(seed, solved, sequences, steps)
    if not training and protocol.test_sequences:
        test_rng = data_rng(seed, 1)
        results = [_present(network, protocol, task.sample(test_rng), learn=False)
                   for _ in range(protocol.test_sequences)]
        row["test_wrong"] = sum(not ok for ok, _ in results)
        row["test_mse"] = float(np.mean([e for _, e in results]))
    return row


def run_trial(network: OnlineNetwork, task: Task, protocol: Protocol, seed: int, budget_steps: int | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """One trial under its protocol, timed; ``network`` (its weights drawn from ``seed``) is
    trained in place, and the data come from ``seed`` too."""
    start = time.perf_counter()
    runner = run_sequences if isinstance(protocol, SequenceProtocol) else run_streams
    row = runner(network, task, protocol, seed, budget_steps, progress)
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row
