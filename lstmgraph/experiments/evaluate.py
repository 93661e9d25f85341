"""Judge a trained run (`lstmgraph train`, or a `reproduce` trial) on fresh sequences of its task,
or on a held-out data file.

The run's weights (weights.npz, or the checkpoint's for an unfinished run; `load_run`) are run
forward by the numpy engine on ``sequences`` new sequences of the run's own task, or on the
sequences of a data file in order: the file given as ``data`` (held-out data, in the training
data format), else the run's own training data file (which is then not held out; `Evaluation.data`
says which). The activations are reset before each sequence as in training (a continual task's
stream runs on). Each sequence is judged by the test its task declares (``success_test``,
`lstmgraph.success`; the catalogue's rows on the task use the same). A `reproduce` trial (OUT/trials/SEED) is judged by its own
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
from typing import Any

import numpy as np

from ..engine.simulator import Simulator
from .. import success
from ..limits import MAX_EVALUATION_SEQUENCES, MAX_SEED, LimitError, check_count
from ..progress import Progress, ProgressReport
from ..training.trained import DataKind, load_run, sequence_source
from ..tasks import task_success_test
from ..training.trainer import training_section
from .catalogue import EXPERIMENTS
from .folder import ResultsConflict, ResultsFolder
from .folder_settings import PROTOCOL_SETTINGS
from .protocols import ProtocolError, protocol_from_settings

class EvaluationError(Exception):
    """A request that does not fit the run (no trial of that number, no sequences)."""


@dataclass(frozen=True)
class TestUsed:
    """The success test a run is judged by (`lstmgraph.success`), and where it comes from."""

    kind: str
    tolerance: float
    basis: str

    @classmethod
    def of(cls, test: success.SuccessTest, basis: str) -> "TestUsed":
        return cls(test.name, test.tolerance, basis)

    @property
    def test(self) -> success.SuccessTest:
        return success.SuccessTest(self.kind, self.tolerance)

    def describe(self) -> str:
        return f"{self.test.describe()} at every step with a target ({self.basis})"

    def steps_correct(self, outputs: np.ndarray, judged: np.ndarray) -> np.ndarray:
        """Per step: correct (steps without a target count as correct)."""
        return self.test.steps_correct(outputs, judged)


def trial_success_test(run_path: Path, task: str | None) -> TestUsed | None:
    """The test of the row a `reproduce` trial folder (OUT/trials/SEED) was run by: the
    protocol as OUT/experiment.json records it (``protocol_settings``; before it did, the row's
    with its recorded protocol options); None for any other run, or a row of another task or
    no longer in the catalogue. `EvaluationError` for a damaged file."""
    folder = ResultsFolder.of_trial(run_path)
    if folder is None:
        return None
    try:
        settings = folder.stored_settings()
    except ResultsConflict as error:
        raise EvaluationError(f"cannot read the trial's settings: {error}") from None
    name = settings.get("name") if settings is not None else None
    experiment = EXPERIMENTS.get(name) if isinstance(name, str) else None
    if experiment is None or experiment.task != task:
        return None
    options = settings.get("protocol_options", {})
    where = folder.file(folder.SETTINGS)
    if not isinstance(options, dict):
        raise EvaluationError(f"{where}: protocol_options: not a mapping of settings to values")
    try:  # the folder's own record of its protocol; before it kept one, the row's with its options
        protocol = (protocol_from_settings(settings[PROTOCOL_SETTINGS]) if PROTOCOL_SETTINGS in settings
                    else experiment.with_protocol_options(options).protocol)
    except ProtocolError as error:
        key = PROTOCOL_SETTINGS if PROTOCOL_SETTINGS in settings else "protocol_options"
        raise EvaluationError(f"{where}: {key}: {error}") from None
    shown = "".join(f", {key} {json.dumps(value)}" for key, value in options.items())
    return TestUsed.of(protocol.success_test, f"the test of {name}{shown}, as {where} records")


@dataclass(frozen=True)
class TrialResult:
    """One network's figures."""

    trial: int                           # `TrainedRun.trial_number`: a reproduce trial's seed
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
    success_test: TestUsed
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


#: Sequences judged between two progress reports.
REPORT_EVERY = 100


def evaluate_run(path: str | Path, sequences: int = 1000, seed: int = 0,
                 data: str | Path | None = None, progress: Progress | None = None,
                 test: success.SuccessTest | None = None) -> Evaluation:
    """Run every network of the run at ``path`` on ``sequences`` fresh sequences (drawn from
    ``numpy.random.default_rng(seed)``), or on those of the data file ``data`` (held-out data)
    or else of the run's own data file (in order, at most one pass), and judge them. Raises
    `TrainedRunError` (from `load_run`, `sequence_source`) for a directory that is not a run, a
    damaged file in it, or a data file that cannot be read or does not fit the network.
    ``progress`` hears every `REPORT_EVERY` sequences (2,560 of a 1997 row take a minute).
    ``test``: the success test to judge by instead of the task's (`lstmgraph.success`): a
    tolerance for regression data, whose right answer is no side of 0.5; ``most_active`` for a
    classifier's one-hot targets (its largest output the target's)."""
    try:
        check_count("sequences", sequences, MAX_EVALUATION_SEQUENCES)
        check_count("seed", seed, MAX_SEED, minimum=0)  # (None: a fresh draw at each call, not reproducible)
    except LimitError as error:
        raise EvaluationError(str(error)) from None
    run = load_run(path)
    training = training_section(run.plan)
    sim = Simulator(run.plan)
    origin = sequence_source(run, sim, seed, epochs=1, data=data)
    draw, continual, source = origin.draw, origin.continual, origin.source
    task = training.task.name if training.task is not None else None
    if test is not None:
        if not isinstance(test, success.SuccessTest):
            raise TypeError(f"test is a lstmgraph.success.SuccessTest, not a {type(test).__name__}")
        if test.name == "most_active" and run.plan.n_outputs < 2:
            raise EvaluationError(f"{run.plan.name} has one output, which most_active cannot compare with another; "
                                  "judge it by a tolerance")
        used = TestUsed.of(test, "as asked, not the task's")
    else:
        used = trial_success_test(run.path, task) or TestUsed.of(*task_success_test(task))
    fallback = (test is None and used.test == success.FALLBACK_TEST
                and task_success_test(task)[0] is success.FALLBACK_TEST)  # (no task's test, none asked)
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
            try:
                records, state = sim.run(run.weights, sequence.inputs, state)
            except LimitError as error:
                raise EvaluationError(f"{source}: sequence {index + 1}: {error}") from None
            y = np.stack([np.concatenate([r.y[u.name] for u in sim.outputs], axis=1) for r in records])
            outputs.append(y)  # (T, trials, n_outputs)
            judged.append(sequence.judged)
            targets.append(sequence.targets)
            losses.append(sum(sim.loss(r, t, training.loss) for r, t in zip(records, sequence.targets)))
            correct_steps.append(np.stack([used.steps_correct(y[:, k], sequence.judged)
                                           for k in range(run.trials)], axis=1))  # (T, trials)
            if progress is not None and (index + 1) % REPORT_EVERY == 0:
                progress(ProgressReport("sequences", index + 1, sequences, run.plan.name))
    if not outputs:
        raise EvaluationError(f"{source} holds no sequences")
    if fallback and not all(np.isin(t[~np.isnan(t)], (0.0, 1.0)).all() for t in targets):
        used = TestUsed(used.kind, used.tolerance, f"{used.basis}; these targets are not all 0 or 1, so the test says "
                        "little: give --tolerance X, or read the mean squared error")
    names = [f"{u.name}[{i}]" for u in sim.outputs for i in range(u.size)]
    steps = sum(len(t) for t in targets)
    results = [_trial_result(run.trial_number(k), [o[:, k] for o in outputs], targets,
                             [c[:, k] for c in correct_steps], sum(loss[k] for loss in losses) / steps, names,
                             continual)
               for k in range(run.trials)]
    return Evaluation(str(run.path), run.plan.name, run.weights_file, run.steps_trained, source, origin.kind,
                      len(outputs), steps, seed, reset, used, results)


def _trial_result(trial: int, outputs: list[np.ndarray], targets: list[np.ndarray],
                  correct_steps: list[np.ndarray], loss_per_step: float, names: list[str],
                  continual: bool) -> TrialResult:
    per_sequence = np.array([steps.all() for steps in correct_steps])
    y, t = np.concatenate(outputs), np.concatenate(targets)
    seen = ~np.isnan(t)
    with np.errstate(over="ignore"):  # (huge targets' errors overflow to inf, which the figures show)
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
