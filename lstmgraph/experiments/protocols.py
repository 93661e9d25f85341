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

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..engine.weights import initial_weights
from ..plan import Plan
from ..progress import Progress
from ..tasks import Sequence, Task
from .streams import StreamProtocol, StreamTrial
from .success import most_active_correct, squared_error, within_tolerance
from .trial import Trial, data_rng, from_json_array, json_array, result_row


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


def _present(engine, protocol: SequenceProtocol, sequence: Sequence, learn: bool) -> tuple[bool, float]:
    engine.reset()
    _, outputs = engine.present(sequence.inputs, sequence.targets, learn)
    return (_sequence_correct(protocol, outputs, sequence.judged),
            squared_error(outputs, sequence.targets))


class SequenceTrial(Trial):
    """One trial of a 1997 experiment: sequences until the experiment's rule says solved (or the
    sequence or step limit), then the test set. State between sequences: the network, the
    training generator, the recent sequences' results and the counters."""

    unit = "sequences"

    def __init__(self, engine, task: Task, protocol: SequenceProtocol, seed: int,
                 budget_steps: int | None = None):
        super().__init__(engine, task, protocol, seed, budget_steps)
        self.rng = data_rng(seed, 0)
        self.training = self.test = None
        if protocol.fixed_sets:
            sets = _distinct_sequences(task, 2 * protocol.fixed_sets, data_rng(seed % protocol.data_sets, 2))
            self.training, self.test = sets[:protocol.fixed_sets], sets[protocol.fixed_sets:]
        self.window = min(protocol.window, len(self.training)) if self.training else protocol.window
        self.recent: deque[tuple[bool, float]] = deque(maxlen=self.window)  # (right, squared error), newest last
        self.wrong = 0  # wrong sequences in `recent`, kept as sequences enter and leave it
        self.sequences = self.steps = self.last_check = 0

    def presented(self) -> int:
        return self.sequences

    def steps_trained(self) -> int:
        return self.steps

    def _figures(self) -> dict[str, float]:
        mse = float(np.mean([e for _, e in self.recent])) if self.recent else float("nan")
        return {"recent_wrong": self.wrong, "recent_mse": mse}

    def _advance(self, steps: int | None) -> None:
        protocol, engine = self.protocol, self.engine
        stop_at = None if steps is None else self.steps + steps
        while self.sequences < protocol.max_sequences and (self.budget_steps is None or self.steps < self.budget_steps):
            if stop_at is not None and self.steps >= stop_at:
                return
            sequence = (self.training[int(self.rng.integers(len(self.training)))] if self.training
                        else self.task.sample(self.rng))
            if len(self.recent) == self.window:
                self.wrong -= not self.recent[0][0]
            self.recent.append(_present(engine, protocol, sequence, learn=True))
            self.wrong += not self.recent[-1][0]
            self.sequences += 1
            self.steps += len(sequence)
            if not engine.finite():
                self.row = result_row(self.seed, False, self.sequences, self.steps, diverged=True)
                return
            if self._solved():
                self._finish(solved=True)
                return
        self._finish(solved=False)

    def _solved(self) -> bool:
        """The experiment's rule for "solved", after the sequence just presented."""
        protocol, full = self.protocol, len(self.recent) == self.window
        if self.training:
            online_right = full and self.wrong == 0
            if (online_right and self.sequences - self.last_check >= 50) or \
                    self.sequences - self.last_check >= protocol.evaluate_every:
                self.last_check = self.sequences
                return all(_present(self.engine, protocol, s, learn=False)[0] for s in self.training + self.test)
            return False
        return full and self.wrong <= protocol.allowed_wrong and (
            protocol.max_error is None or float(np.mean([e for _, e in self.recent])) < protocol.max_error)

    def _finish(self, solved: bool) -> None:
        row = result_row(self.seed, solved, self.sequences, self.steps)
        if not self.training and self.protocol.test_sequences:
            test_rng = data_rng(self.seed, 1)
            results = [_present(self.engine, self.protocol, self.task.sample(test_rng), learn=False)
                       for _ in range(self.protocol.test_sequences)]
            row["test_wrong"] = sum(not ok for ok, _ in results)
            row["test_mse"] = float(np.mean([e for _, e in results]))
        self.row = row

    def _state(self) -> dict[str, np.ndarray]:
        return {"generator": json_array(self.rng.bit_generator.state),
                "counters": np.array([self.sequences, self.steps, self.last_check, self.wrong]),
                "recent_right": np.array([right for right, _ in self.recent], dtype=np.bool_),
                "recent_error": np.array([error for _, error in self.recent], dtype=np.float64)}

    def _restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.rng.bit_generator.state = from_json_array(arrays["generator"])
        self.sequences, self.steps, self.last_check, self.wrong = (int(v) for v in arrays["counters"])
        self.recent.clear()
        self.recent.extend(zip((bool(v) for v in arrays["recent_right"]), (float(v) for v in arrays["recent_error"])))


def trial_engine(plan: Plan, seed: int, kernel: str | None = None):
    """A trial's network: the compiled engine with the plan's training settings (online RTRL,
    truncated or exact, momentum SGD), weights drawn from ``seed``, running ``kernel``
    (`engine.compiled.KERNELS`; the kernels give bit-identical results). `EngineError` names
    what the compiled engine cannot do (e.g. a spec asking for BPTT)."""
    from ..training.engines import CompiledEngine, select_engine  # numba: only when a trial runs
    from ..training.optim import Optimizer

    training = plan.training
    select_engine(plan, training, "compiled")
    return CompiledEngine(plan, training, 1, Optimizer.for_training(training), initial_weights(plan, [seed]), kernel)


def make_trial(engine, task: Task, protocol: Protocol, seed: int, budget_steps: int | None = None) -> Trial:
    """The trial of ``protocol`` (its network ``engine``, weights drawn from ``seed``)."""
    kind = SequenceTrial if isinstance(protocol, SequenceProtocol) else StreamTrial
    return kind(engine, task, protocol, seed, budget_steps)


def run_trial(engine, task: Task, protocol: Protocol, seed: int, budget_steps: int | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """One trial under its protocol straight through, timed; ``engine`` is trained in place."""
    return make_trial(engine, task, protocol, seed, budget_steps).run(progress)
