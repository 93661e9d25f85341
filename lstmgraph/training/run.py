"""A training run in a run directory: what `lstmgraph train` does, as two calls.

    run = start_run(plan, "runs/cerg", trials=3)    # or resume_run("runs/cerg")
    summary = run.train()                             # metrics, checkpoints, weights.npz, summary.json

`start_run` and `resume_run` check everything they can before anything is written: the run
directory, the spec, the data, the engine, and (on resume) run.json and the checkpoint's
counters. `TrainingRun.open` then writes spec.yaml and run.json, or restores the checkpoint and
cuts the metrics back to it; `train` opens the run if that has not been done, trains to the
run's end, and writes the final weights and ``summary.json``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import __version__, compile_spec
from ..engine.weights import save_weights
from ..plan import Plan
from ..progress import Progress
from .rundir import RunDirectory, RunDirectoryError, default_run_path
from .trainer import CheckpointError, Trainer


class RunExists(RunDirectoryError):
    """A new run was asked for in a directory that already holds one."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(f"{path} already holds a run")


@dataclass(frozen=True)
class RunSummary:
    """What ``summary.json`` holds: the run's length, why it stopped, and the mean loss per step
    over the first and the last ``window_sequences`` sequences (a tenth of them, 1 to 100)."""

    network: str
    steps: int
    sequences: int
    stopped_by: str
    window_sequences: int
    first_loss_per_step: float
    last_loss_per_step: float
    trials: int
    engine: str
    run_directory: str

    def as_dict(self) -> dict:
        return asdict(self)


class TrainingRun:
    """A `Trainer` and the run directory it trains in (`start_run`, `resume_run`)."""

    def __init__(self, plan: Plan, trainer: Trainer, directory: RunDirectory, info: dict,
                 checkpoint: dict[str, np.ndarray] | None = None):
        self.plan = plan
        self.trainer = trainer
        self.directory = directory
        #: run.json: how the run was started (lstmgraph version, spec, trials, engine).
        self.info = info
        self._checkpoint = checkpoint
        self._opened = False

    @property
    def path(self) -> Path:
        return self.directory.path

    @property
    def resumed(self) -> bool:
        return self._checkpoint is not None

    @property
    def notes(self) -> list[str]:
        """What the user may want to know before training starts: why ``auto`` chose the numpy
        engine, and that the compiled engine's interpreter was compiled on this installation."""
        trainer, notes = self.trainer, []
        if trainer.engine_note:
            notes.append(trainer.engine_note)
        if trainer.engine == "compiled" and not trainer.backend.network.compiled_before:
            notes.append("compiling the compiled engine (once per installation, about 10-30 s; "
                         f"cached in {trainer.backend.network.cache})")
        return notes

    def open(self) -> None:
        """A new run: create the directory with spec.yaml (the plan's resolved spec) and
        run.json. A resumed run: restore the checkpoint and cut the metrics files back to it;
        `RunDirectoryError` if the checkpoint does not fit the spec or the metrics are short."""
        if self._opened:
            return
        if self._checkpoint is None:
            self.directory.create(copy.deepcopy(self.plan.resolved_spec), self.info)
        else:
            try:
                self.trainer.restore(self._checkpoint)
            except CheckpointError as error:
                raise RunDirectoryError(f"{self.directory.checkpoint_path}: does not fit "
                                        f"{self.path / 'spec.yaml'}: {error}") from None
            self.directory.cut_metrics(self.trainer.metric_rows)
        self._opened = True

    def train(self, progress: Progress | None = None) -> RunSummary:
        """Train to the run's end (`Trainer.run`; ``progress`` gets its reports), then write
        ``weights.npz`` and ``summary.json``. `TrainingDiverged` leaves the last checkpoint."""
        self.open()
        try:
            summary = self.trainer.run(self.directory, progress)
        finally:
            self.directory.close()
        save_weights(self.path / "weights.npz", self.plan, self.trainer.weights)
        window, first, last = loss_windows(self.path / "metrics.jsonl")
        result = RunSummary(self.plan.name, summary.steps, summary.sequences, summary.stopped_by, window,
                            first, last, self.trainer.trials, self.trainer.engine, str(self.path))
        self.directory.write_json("summary.json", result.as_dict())
        return result


def start_run(plan: Plan, out: str | Path | None = None, trials: int = 1, engine: str = "auto",
              spec: str | Path | None = None) -> TrainingRun:
    """A new run of ``trials`` networks trained by the plan's training section, in ``out``
    (default ``runs/NAME-YYYYMMDD-HHMMSS``, UTC); nothing is written until it is opened.
    ``spec`` is what run.json names as the spec (default: the plan's file). Raises `RunExists`
    if ``out`` holds a run, and what `Trainer` raises (`SpecError`, `DataError`, `EngineError`)."""
    directory = RunDirectory(out if out is not None else default_run_path(plan.name))
    if directory.exists():
        raise RunExists(directory.path)
    info = {"lstmgraph": __version__, "spec": str(spec if spec is not None else plan.source.filename),
            "trials": trials}
    trainer = Trainer(plan, trials, engine=engine)
    info["engine"] = trainer.engine
    return TrainingRun(plan, trainer, directory, info)


def resume_run(path: str | Path) -> TrainingRun:
    """The run in ``path``, to continue from its last checkpoint as it was started: its
    spec.yaml, its number of trials and its engine (numpy if run.json names none). Raises
    `RunDirectoryError` for a directory without a run and checkpoint or with a damaged run.json
    or checkpoint, `SpecError` if its spec.yaml is not valid, and what `Trainer` raises."""
    directory = RunDirectory(path)
    if not directory.exists() or not directory.checkpoint_path.exists():
        raise RunDirectoryError(f"{directory.path} holds no run with a checkpoint to resume")
    info = directory.read_info()
    checkpoint = directory.load_checkpoint(info["trials"])
    plan = compile_spec(directory.path / "spec.yaml")
    trainer = Trainer(plan, info["trials"], engine=info.get("engine", "numpy"))  # numpy: runs from before the choice
    info["engine"] = trainer.engine
    return TrainingRun(plan, trainer, directory, info, checkpoint)


def loss_windows(metrics: Path) -> tuple[int, float, float]:
    """Mean loss per step over the first and the last tenth of a metrics.jsonl's sequences (at
    least 1 and at most 100 of them): (sequences per window, first, last); NaN for no rows."""
    with open(metrics, encoding="utf-8") as stream:
        losses = [json.loads(line)["loss_per_step"] for line in stream]
    if not losses:
        return 0, float("nan"), float("nan")
    window = max(1, min(100, len(losses) // 10))
    return window, float(np.mean(losses[:window])), float(np.mean(losses[-window:]))
