"""Online training of a compiled plan by its spec's ``training`` section.

Per sequence: reset the activations and traces (unless the stream is continual), run every
step forward, and update the weights after every step (``update: online``, the papers) or once
per sequence; BPTT updates after each window or sequence. Checkpoints are written at sequence
boundaries once ``checkpoint_every`` steps have passed, holding the weights, optimiser state,
eligibility traces, activations, data position and counters, so that a resumed run ends
bit-identical to an uninterrupted one. Non-finite activations or weights stop the run with the
step and unit group named.

The steps themselves run in an engine (compiled_engine.py, numpy_engine.py; engines.py picks
one): the compiled executor for online (truncated or exact) RTRL, the numpy reference engine for
everything (BPTT, per-sequence updates). The loop, the data, the schedule's bookkeeping, metrics
and checkpoints are shared.
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.weights import Weights, initial_weights
from ..errors import Problem, UntrainableSpec
from ..plan import Plan, require_plan
from ..progress import Progress, ProgressReport
from ..limits import MAX_STEPS, MAX_TRIALS, check_count
from ..spec.models import TrainingSpec
from ..tasks import Sequence, make_task
from ..tasks.data_file import target_problem
from .data import DataError, DataFile, TaskStream
from .compiled_engine import CompiledEngine
from .engines import select_engine
from .numpy_engine import NumpyEngine
from .optim import Optimizer
from .rundir import RunDirectory


@dataclass(frozen=True)
class Summary:
    """What `Trainer.run` returns: steps and sequences trained, the mean loss per step over the
    last ``stop_window`` sequences and trials, and what stopped it (``steps``, ``epochs``,
    ``stop_loss``). Every sequence's loss is in a run directory's metrics (`trained.load_run(path).metrics`)."""

    steps: int
    sequences: int
    stop_window_loss_per_step: float
    stopped_by: str


def training_section(plan: Plan) -> TrainingSpec:
    """The plan's training settings; a `SpecError` if the spec has no training section."""
    require_plan(plan, "Trainer")
    if plan.training is None:
        raise UntrainableSpec([Problem(("training",), "the spec has no training section",
                                 expected="training: {learning_rate: ..., task: {name: ...}} "
                                          "(docs/spec.md in the lstmgraph source, Training)")], plan.source)
    return plan.training


def data_source(plan: Plan, training: TrainingSpec):
    """The task stream (seeded ``training.seed``) or data file of the training section."""
    if training.data is not None:  # joined to the spec's folder when the plan was compiled
        try:
            file = DataFile(Path(training.data), plan.n_inputs, plan.n_outputs,
                            training.epochs or (None if training.steps else 1))
            outputs = [unit for unit in plan.units if unit.role == "output"]
            if problem := target_problem(file.sequences, training.loss, outputs):
                raise DataError(f"{training.data}: {problem}")
            return file
        except DataError as error:  # where the file was named: the spec's line, or --data
            raise DataError(f"{plan.source.describe(('training', 'data'))}: {error}") from None
    # The task's name, options and sizes were checked when the spec was compiled.
    return TaskStream(make_task(training.task.name, training.task.options), training.seed)


def _check_memory(plan: Plan, trials: int) -> None:
    """Refuse before allocating when the weights and their gradients alone (a lower bound: the
    optimiser and the traces need more) would not fit in this machine's memory."""
    weights = sum(math.prod(connection.shape) for connection in plan.connections)
    needed = 2 * 8 * weights * trials
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if needed > memory:
        raise MemoryError(f"{trials} trials of {plan.name} need more than {needed / 2**30:,.1f} GiB; "
                          f"this machine has {memory / 2**30:,.1f} GiB (fewer --trials, or a smaller network)")


class Trainer:
    """Trains ``trials`` networks (initialisation seeds init.seed + i) on one data stream.
    `LimitError` for more than `MAX_TRIALS` trials (limits.py), before anything is allocated; the
    spec itself bounds a run's steps and epochs (`TrainingSpec`).

    ``engine``: ``auto`` (the compiled executor wherever it can train the spec, else numpy; the
    reason is in `engine_note`), ``compiled`` (`EngineError` where it cannot) or ``numpy``.
    ``device``: ``cpu``, or ``cuda`` for the compiled engine's GPU executor (`EngineError`
    where this machine has no GPU).
    """

    def __init__(self, plan: Plan, trials: int = 1, engine: str = "auto", device: str = "cpu"):
        self.plan = plan
        self.training = training = training_section(plan)
        if training.steps is None and training.epochs is None and training.data is None:
            raise UntrainableSpec([Problem(("training",), "no length for the run",
                                     expected="training.steps (or --steps)")], plan.source)
        self.trials = trials = check_count("trials", trials, MAX_TRIALS)
        _check_memory(plan, trials)
        self.engine, self.engine_note = select_engine(plan, training, engine, device)
        self.device = device
        weights = initial_weights(plan, [plan.init.seed + i for i in range(trials)])
        self.source = data_source(plan, training)
        self.reset_each_sequence = (training.reset == "sequence" if training.reset
                                    else not self.source.continual)
        self.optimizer = Optimizer.for_training(training)
        self.backend = (CompiledEngine(plan, training, trials, self.optimizer, weights, device=device)
                        if self.engine == "compiled" else NumpyEngine(plan, training, trials, self.optimizer, weights))
        self.steps = 0
        self.sequences = 0
        self.metric_rows = 0
        self.recent = deque(maxlen=training.stop_window)

    @property
    def length_note(self) -> str | None:
        """That the run's steps end it before its epochs of a data file do, where both are set (a
        spec's steps beside `train --epochs`): whichever ends first stops the run."""
        training, source = self.training, self.source
        if training.steps is None or training.epochs is None or not isinstance(source, DataFile):
            return None
        per_epoch = sum(len(sequence) for sequence in source.sequences)
        if training.steps >= training.epochs * per_epoch:
            return None
        total = training.epochs * per_epoch
        more = f"--steps {total} runs every epoch" if total <= MAX_STEPS else f"--steps takes at most {MAX_STEPS:,}"
        return (f"{training.epochs} epochs of {source.path.name} are {total:,} steps, but the run stops at its "
                f"{training.steps:,} steps (about {training.steps / per_epoch:,.1f} epochs): whichever ends first "
                f"stops it; {more}")

    @property
    def weights(self) -> Weights:
        """The weights, connection -> (trials, *shape) (a copy, with the compiled engine)."""
        return self.backend.weights

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The activations the next step reads through delay-1 connections."""
        return self.backend.state

    @property
    def learner(self):
        """The numpy engine's `RealTimeRecurrentLearning` (None for BPTT and the compiled engine)."""
        return self.backend.learner

    # -- one sequence ---------------------------------------------------------------------------
    def train_sequence(self, sequence: Sequence) -> np.ndarray:
        """Train on one sequence; returns its summed loss per trial."""
        with np.errstate(over="ignore", invalid="ignore"):  # non-finite values are reported instead
            if self.reset_each_sequence or self.sequences == 0:
                self.backend.reset()
            total = self.backend.train(sequence, self.steps)
            self.steps += len(sequence)
            self.optimizer.after("sequence")
            self.sequences += 1
            return total

    # -- the whole run --------------------------------------------------------------------------
    def run(self, run_dir: RunDirectory | None = None, progress: Progress | None = None) -> Summary:
        """Train until ``steps``, the end of the data or ``stop_loss``; with ``run_dir``, append
        metrics and write checkpoints (and a final one). After every sequence ``progress`` gets a
        `ProgressReport` of the steps trained (of ``steps``), the mean loss per step over the last
        ``stop_window`` sequences as its figure ``loss_per_step``."""
        if run_dir is not None and not isinstance(run_dir, RunDirectory):
            raise TypeError(f"run_dir is a RunDirectory (RunDirectory(path)) or None, not a {type(run_dir).__name__}"
                            + ("; progress is the second argument: run(progress=...)" if callable(run_dir) else ""))
        training = self.training
        budget = training.steps
        last_checkpoint = self.steps
        stopped_by = "steps"
        while budget is None or self.steps < budget:
            sequence = self.source.next()
            if sequence is None:
                stopped_by = "epochs"
                break
            total = self.train_sequence(sequence)
            per_step = total / max(len(sequence), 1)
            self.recent.append(per_step)
            row = {"sequence": self.sequences, "step": self.steps, "loss": float(total.mean()),
                   "loss_per_step": float(per_step.mean()), "learning_rate": self.optimizer.rate}
            if self.trials > 1:
                row["loss_trials"] = total.tolist()
            if run_dir is not None:
                run_dir.append_metrics(row)
            self.metric_rows += 1
            if progress is not None:
                progress(ProgressReport("steps", self.steps, budget, self.plan.name,
                                        {"loss_per_step": float(np.mean(self.recent))}))
            if (training.stop_loss is not None and len(self.recent) == self.recent.maxlen
                    and np.max(np.mean(self.recent, axis=0)) < training.stop_loss):
                stopped_by = "stop_loss"
                break
            if run_dir is not None and self.steps - last_checkpoint >= training.checkpoint_every:
                run_dir.save_checkpoint(self.checkpoint())
                last_checkpoint = self.steps
        if run_dir is not None:
            run_dir.save_checkpoint(self.checkpoint())
        final = float(np.mean(self.recent)) if self.recent else math.nan
        return Summary(self.steps, self.sequences, final, stopped_by)

    # -- checkpoints ----------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, np.ndarray]:
        """Everything needed to continue, in the same arrays for either engine."""
        arrays = self.backend.checkpoint()
        arrays["recent_losses"] = np.array(list(self.recent)).reshape(-1, self.trials)
        arrays["data_position"] = np.array(self.source.state())
        arrays["counters"] = np.array([self.steps, self.sequences, self.metric_rows, self.trials])
        return arrays

    def checkpoint_problems(self, arrays: dict[str, np.ndarray]) -> list[str]:
        """What keeps ``arrays`` from being restored here: measured against what this trainer's
        own `checkpoint` writes (so it follows any engine), every array must be present with
        that shape and kind of dtype, floats finite, and nothing unknown. The optimiser's
        per-weight arrays (velocities, Adam's moments) may be absent: they are written only
        after the first update. Its rate and counters must fit the counters and the spec's
        schedule (`Optimizer.state_problems`)."""
        expected = self.checkpoint()
        optional = {f"optimizer/{kind}/{slot.connection}": expected[f"weights/{slot.connection}"]
                    for slot in self.plan.parameters for kind in ("velocity", "adam_m", "adam_u")}
        problems = [f"missing array '{name}'" for name in expected
                    if name not in arrays and name not in optional]
        for name, array in arrays.items():
            model = expected.get(name, optional.get(name))
            if model is None:
                problems.append(f"unknown array '{name}' (a checkpoint of another network?)")
            elif array.dtype.kind != model.dtype.kind and not (array.dtype.kind in "iu" and model.dtype.kind in "iu"):
                problems.append(f"'{name}' holds {_KINDS.get(array.dtype.kind, array.dtype)}, "
                                f"expected {_KINDS.get(model.dtype.kind, model.dtype)}")
            elif not _shape_fits(name, array.shape, model.shape, self.training.stop_window):
                problems.append(f"'{name}' has shape {array.shape}, expected {model.shape}")
            elif array.dtype.kind == "f" and not np.isfinite(array).all():
                problems.append(f"'{name}' holds NaN or infinite values")
            elif name == "counters" and array.min() < 0:
                problems.append(f"'counters' is {array.tolist()}; expected integers >= 0 "
                                "(steps, sequences, metric rows, trials)")
        if not problems:  # every array there, of its shape and kind: the optimiser's values next
            steps, sequences = (int(v) for v in arrays["counters"][:2])
            state = {key[len("optimizer/"):]: arrays[key] for key in ("optimizer/rate", "optimizer/decays",
                                                                      "optimizer/updates")}
            problems += self.optimizer.state_problems(state, steps, sequences)
        return problems

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Continue from a checkpoint; `CheckpointError` if it does not fit (`checkpoint_problems`)."""
        problems = self.checkpoint_problems(arrays)
        if problems:
            raise CheckpointError("; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                                              if len(problems) > 5 else ""))
        self.steps, self.sequences, self.metric_rows, trials = (int(v) for v in arrays["counters"])
        if trials != self.trials or min(self.steps, self.sequences, self.metric_rows) < 0:
            raise CheckpointError(f"'counters' {arrays['counters'].tolist()} do not fit {self.trials} trials")
        self.backend.restore(arrays)
        self.recent.clear()
        self.recent.extend(np.array(row) for row in arrays["recent_losses"])
        try:
            self.source.restore(str(arrays["data_position"]))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:  # (nested too deep)
            raise CheckpointError(f"'data_position' is not a data position of this run ({error})") from None


_KINDS = {"f": "real numbers", "i": "integers", "u": "integers", "U": "a string", "b": "booleans"}


class CheckpointError(ValueError):
    """A checkpoint that does not fit the trainer it is restored into."""


def _shape_fits(name: str, shape: tuple, model: tuple, stop_window: int) -> bool:
    """Shapes match, except that ``recent_losses`` holds up to ``stop_window`` rows."""
    if name == "recent_losses":
        return len(shape) == 2 and shape[1] == model[1] and shape[0] <= stop_window
    return shape == model
