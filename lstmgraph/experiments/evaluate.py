"""Judge a trained run (`lstmgraph train`, or a `reproduce` trial) on fresh sequences of its task,
or on a held-out data file.

The run's weights (weights.npz, or the checkpoint's for an unfinished run; `load_run`) are run
forward by the numpy engine on ``sequences`` new sequences of the run's own task, or on the
sequences of a data file in order: the file given as ``data`` (held-out data, in the training
data format), else the run's own training data file (which is then not held out; `Evaluation.data`
says which). The activations are reset before each sequence as in training (a continual task's
stream runs on). Each sequence is judged by the task's success test, the one the
catalogue's experiments of that task use (success.py): the 1997 tests per sequence, the
2000/2002 tolerance per step. A `reproduce` trial (OUT/trials/SEED) is judged by its own
row's test, as OUT/experiment.json records it (with any `--protocol-option`). Reported per
network: sequences correct, mean squared error per output and over all, the mean loss per
step, and for continual tasks the papers' test-stream figure, the sequences (and steps)
before the first error.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..engine.simulator import Simulator
from ..render.plots import DataKind, Run, load_run, sequence_source
from ..training.trainer import training_section
from .catalogue import EXPERIMENTS
from .protocols import ProtocolError
from .. import success

#: Tasks that no experiment of the catalogue judges: (success test, tolerance, why).
_OTHER_TESTS: dict[str, tuple[str, float, str]] = {
    "reber": ("most_active", 0.0, "as the embedded Reber grammar of 1997"),
    "recall_first": ("most_active", 0.0, "a classifier: the class's output is the most active"),
}


class EvaluationError(Exception):
    """A request that does not fit the run (no trial of that number, no sequences)."""


@dataclass(frozen=True)
class SuccessTest:
    kind: Literal["most_active", "tolerance"]
    tolerance: float
    basis: str  # where the test comes from

    def describe(self) -> str:
        rule = ("the outputs whose target is 1 are more active than every other output"
                if self.kind == "most_active" else f"every judged output within {self.tolerance} of its target")
        return f"{rule} at every step ({self.basis})"

    def steps_correct(self, outputs: np.ndarray, judged: np.ndarray) -> np.ndarray:
        """Per step: correct (steps without a target count as correct)."""
        return success.SuccessTest(self.kind, self.tolerance).steps_correct(outputs, judged)


def success_test(task: str | None) -> SuccessTest:
    """The success test of a task: that of the catalogue's experiments on it, else `_OTHER_TESTS`,
    else every output within 0.49 of its target (on the right side of 0.5, as 2000 and 2002)."""
    used = {(e.protocol.success, e.protocol.tolerance)
            for e in EXPERIMENTS.values() if e.task == task}
    if len(used) == 1:
        kind, tolerance = used.pop()
        return SuccessTest(kind, tolerance, f"the test of the catalogue's {task} experiments")
    if task in _OTHER_TESTS:
        kind, tolerance, basis = _OTHER_TESTS[task]
        return SuccessTest(kind, tolerance, basis)
    return SuccessTest("tolerance", 0.49, "no paper's test for this data: on the right side of 0.5")


def trial_success_test(run_path: Path, task: str | None) -> SuccessTest | None:
    """The test of the row a `reproduce` trial folder (OUT/trials/SEED) was run by, as
    OUT/experiment.json records it, protocol options included; None for any other run, or a
    row of another task or no longer in the catalogue. `EvaluationError` for a damaged file."""
    settings_path = run_path.resolve().parent.parent / "experiment.json"
    if run_path.resolve().parent.name != "trials" or not settings_path.is_file():
        return None
    try:
        settings = json.loads(settings_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvaluationError(f"{settings_path}: cannot read the trial's settings ({error})") from None
    name = settings.get("name") if isinstance(settings, dict) else None
    experiment = EXPERIMENTS.get(name) if isinstance(name, str) else None
    if experiment is None or experiment.task != task:
        return None
    options = settings.get("protocol_options", {})
    if not isinstance(options, dict):
        raise EvaluationError(f"{settings_path}: protocol_options: not a mapping of settings to values")
    try:
        protocol = experiment.with_protocol_options(options).protocol
    except ProtocolError as error:
        raise EvaluationError(f"{settings_path}: protocol_options: {error}") from None
    shown = "".join(f", {key} {json.dumps(value)}" for key, value in options.items())
    return SuccessTest(protocol.success, protocol.tolerance, f"the test of {name}{shown}, as {settings_path} records")


@dataclass(frozen=True)
class TrialResult:
    """One network's figures."""

    trial: int
    correct: int                         # sequences with every step correct
    wrong: int
    fraction_correct: float
    mse: float                           # over every judged output of every step
    mse_per_output: dict[str, float]     # output unit (group[i]) -> mean squared error (NaN: never judged)
    loss_per_step: float                 # the training loss, per step, steps without a target included
    sequences_before_error: int | None   # continual tasks: the test-stream figure of 2000/2002
    steps_before_error: int | None


@dataclass(frozen=True)
class Evaluation:
    run: str
    network: str
    weights_file: str
    steps_trained: int
    source: str                  # the task's name, or the data file's
    data: DataKind               # "task" (fresh sequences), "training data" or "held-out data"
    sequences: int
    steps: int
    seed: int
    reset: bool                  # activations reset before each sequence
    success_test: SuccessTest
    trials: list[TrialResult]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["success_test"]["description"] = self.success_test.describe()
        return _json_safe(data)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def evaluate_run(path: str | Path, sequences: int = 1000, seed: int = 0,
                 data: str | Path | None = None) -> Evaluation:
    """Run every network of the run at ``path`` on ``sequences`` fresh sequences (drawn from
    ``numpy.random.default_rng(seed)``), or on those of the data file ``data`` (held-out data)
    or else of the run's own data file (in order, at most one pass), and judge them. Raises
    `PlotError` (from `load_run`, `sequence_source`) for a directory that is not a run, a
    damaged file in it, or a data file that cannot be read or does not fit the network."""
    if sequences < 1:
        raise EvaluationError(f"sequences must be at least 1, not {sequences}")
    run = load_run(path)
    training = training_section(run.plan)
    sim = Simulator(run.plan)
    origin = sequence_source(run, sim, seed, epochs=1, data=data)
    draw, continual, source = origin.draw, origin.continual, origin.source
    task = training.task.name if training.task is not None else None
    test = trial_success_test(run.path, task) or success_test(task)
    reset = training.reset == "sequence" if training.reset else not continual
    outputs, judged, targets, losses, correct_steps = [], [], [], [], []
    state = sim.zero_state(run.trials)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged net is judged, not refused
        for index in range(sequences):
            sequence = draw()
            if sequence is None:
                break
            if reset and index:
                state = sim.zero_state(run.trials)
            records, state = sim.run(run.weights, sequence.inputs, state)
            y = np.stack([np.concatenate([r.y[u.name] for u in sim.outputs], axis=1) for r in records])
            outputs.append(y)  # (T, trials, n_outputs)
            judged.append(sequence.judged)
            targets.append(sequence.targets)
            losses.append(sum(sim.loss(r, t, training.loss) for r, t in zip(records, sequence.targets)))
            correct_steps.append(np.stack([test.steps_correct(y[:, k], sequence.judged)
                                           for k in range(run.trials)], axis=1))  # (T, trials)
    if not outputs:
        raise EvaluationError(f"{source} holds no sequences")
    names = [f"{u.name}[{i}]" for u in sim.outputs for i in range(u.size)]
    steps = sum(len(t) for t in targets)
    results = [_trial_result(k, [o[:, k] for o in outputs], targets, [c[:, k] for c in correct_steps],
                             sum(loss[k] for loss in losses) / steps, names, continual)
               for k in range(run.trials)]
    return Evaluation(str(run.path), run.plan.name, run.weights_file, run.steps_trained, source, origin.kind,
                      len(outputs), steps, seed, reset, test, results)


def _trial_result(trial: int, outputs: list[np.ndarray], targets: list[np.ndarray],
                  correct_steps: list[np.ndarray], loss_per_step: float, names: list[str],
                  continual: bool) -> TrialResult:
    per_sequence = np.array([steps.all() for steps in correct_steps])
    y, t = np.concatenate(outputs), np.concatenate(targets)
    seen = ~np.isnan(t)
    errors = np.where(seen, y - np.where(seen, t, 0.0), 0.0) ** 2
    per_output = {name: float(errors[:, i].sum() / seen[:, i].sum()) if seen[:, i].any() else math.nan
                  for i, name in enumerate(names)}
    mse = float(errors.sum() / seen.sum()) if seen.any() else math.nan
    before = steps_before = None
    if continual:
        wrong = np.flatnonzero(~per_sequence)
        before = int(wrong[0]) if len(wrong) else len(per_sequence)
        flat = np.concatenate(correct_steps)
        wrong_steps = np.flatnonzero(~flat)
        steps_before = int(wrong_steps[0]) if len(wrong_steps) else len(flat)
    correct = int(per_sequence.sum())
    return TrialResult(trial, correct, len(per_sequence) - correct, correct / len(per_sequence), mse,
                       per_output, float(loss_per_step), before, steps_before)
