"""A training run in a run directory: what `lstmgraph train` does, as two calls.

    run = start_run(plan, "runs/cerg", trials=3)    # or resume_run("runs/cerg")
    summary = run.train()                             # metrics, checkpoints, weights.npz, summary.json

`start_run` and `resume_run` check everything they can before anything is written: the run
directory, the spec, the data, the engine, and (on resume) run.json, spec.yaml, the checkpoint
(its counters, its arrays, and that it is this run's: `run_identity.run_identity`) and the metrics
files. A refused resume leaves the directory as it was. `TrainingRun.open` then writes spec.yaml
and run.json, or cuts the metrics back to the restored checkpoint; `train` opens the run if that
has not been done, trains to the run's end, and writes the final weights and ``summary.json``.

One process at a time trains in a run directory: `resume_run` takes its lock (`RunInUse` names
the process that holds it), `open` takes it for a new run, and `train` (or `close`) gives it up.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from ..engine.weights import save_weights
from ..folder_lock import FolderInUse
from ..plan import Plan, compile_plan, require_plan
from ..plan.summary import unlearned_note
from ..progress import Progress
from ..spec import document_of
from ..limits import MAX_NAME_LENGTH, MAX_TRIALS, NAME_PATTERN, check_count
from ..spec.loader import parse_spec_bytes
from .rundir import RunDirectory, RunDirectoryError, RunInUse, default_run_path, spec_file_bytes
from .run_identity import run_identity
from .trainer import CheckpointError, Trainer


class RunExists(RunDirectoryError):
    """A new run was asked for in a directory that already holds one (which `resume_run` continues)."""

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
                 checkpoint: dict[str, np.ndarray] | None = None, metrics: dict[str, bytes] | None = None,
                 resumed: bool = False):
        self.plan = plan
        self.trainer = trainer
        self.directory = directory
        #: run.json: how the run was started (lstmgraph version, spec, trials, engine).
        self.info = info
        self._checkpoint = checkpoint  # None for a resumed run that stopped before its first checkpoint
        self._resumed = resumed or checkpoint is not None
        self._restored = False
        self._metrics = metrics  # a resumed run's metrics files, cut back to its checkpoint
        self._opened = False
        self._created = False  # this object wrote spec.yaml and run.json (a new run)
        #: A resumed run of an older lstmgraph on a data file: why the data is not checked.
        self.data_note: str | None = None

    @property
    def path(self) -> Path:
        return self.directory.path

    @property
    def resumed(self) -> bool:
        return self._resumed

    @property
    def notes(self) -> list[str]:
        """What the user may want to know before training starts: weights that never learn
        (`unlearned_note`), why ``auto`` chose the numpy engine, that the compiled engine's
        interpreter was compiled on this installation, that a resumed run's data file goes
        unchecked (an older run.json records no digest), and that its steps end it before its
        epochs do."""
        from ..engine.compiled.interpreter import first_compile_note  # numba: only for a run

        trainer, notes = self.trainer, [note] if (note := unlearned_note(self.plan)) else []
        if trainer.engine_note:
            notes.append(trainer.engine_note)
        if trainer.engine == "compiled" and (note := first_compile_note()):
            notes.append(note)
        if self.data_note:
            notes.append(self.data_note)
        if trainer.length_note:
            notes.append(trainer.length_note)
        return notes

    def open(self) -> None:
        """A new run: take the directory (`RunInUse` if another process trains there, `RunExists`
        if a run appeared in it meanwhile) and create it with spec.yaml (the plan's resolved spec)
        and run.json. A resumed run: restore the checkpoint (`RunDirectoryError` if it does not
        fit the spec) and cut the metrics files back to it (to no row where there is none yet)."""
        if self._opened:
            return
        directory = self.directory
        try:
            if not self._resumed:
                directory.acquire()
                if directory.exists():
                    raise RunExists(self.path)
                spec_data = self.plan.resolved_spec  # (a copy)
                directory.identity = run_identity(self.plan, self.trainer.trials, self.trainer.engine,
                                                  spec_file_bytes(spec_data, self.path), self.trainer.device)
                self._created = True
                directory.create(spec_data, self.info)
            else:
                self._restore()
                directory.acquire()
                if self._metrics is None:
                    self._metrics = directory.metrics_kept(self.trainer.metric_rows, self.trainer.trials)
                directory.write_metrics(self._metrics)
                self._metrics = None
        except BaseException:
            self._discard_if_unstarted()
            directory.release()
            raise
        self._opened = True

    def _discard_if_unstarted(self) -> None:
        """A new run that fails before its first metric row (a task too large to draw, a full
        disk) leaves nothing of value: what it created is removed (`RunDirectory.discard`), so
        the same command can be run again. A run with rows keeps them (docs/training.md)."""
        if (self._created and self.trainer.metric_rows == 0
                and not os.path.lexists(self.directory.checkpoint_path)):
            self._created = False
            try:
                self.directory.discard()
            except OSError:
                pass  # the failure that got here is the one to report

    def _restore(self) -> None:
        if self._restored or self._checkpoint is None:  # (no checkpoint: the fresh trainer is step 0)
            return
        try:
            self.trainer.restore(self._checkpoint)
        except CheckpointError as error:
            raise RunDirectoryError(f"{self.directory.checkpoint_path}: does not fit "
                                    f"{self.path / RunDirectory.SPEC}: {error}; restore this run's own checkpoint, "
                                    "or start a new run (lstmgraph train SPEC --out ANOTHER_FOLDER)") from None
        self._restored = True

    def close(self) -> None:
        """Give the run directory up (`train` does at its end); another process may then train in it."""
        try:
            self.directory.close()
        finally:
            self.directory.release()

    def __enter__(self) -> "TrainingRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def train(self, progress: Progress | None = None) -> RunSummary:
        """Train to the run's end (`Trainer.run`; ``progress`` gets its reports), then write
        ``weights.npz`` and ``summary.json`` and give the directory up. `TrainingDiverged`
        leaves the last checkpoint."""
        try:
            self.open()
            try:
                summary = self.trainer.run(self.directory, progress)
            finally:
                self.directory.close()
            save_weights(self.path / RunDirectory.WEIGHTS, self.plan, self.trainer.weights)
            window, first, last = loss_windows(self.directory, self.trainer.trials)
            result = RunSummary(self.plan.name, summary.steps, summary.sequences, summary.stopped_by, window,
                                first, last, self.trainer.trials, self.trainer.engine, str(self.path))
            self.directory.write_json(RunDirectory.SUMMARY, result.as_dict())
            return result
        except BaseException:
            self._discard_if_unstarted()
            raise
        finally:
            self.directory.release()


def start_run(plan: Plan, out: str | Path | None = None, trials: int = 1, engine: str = "auto",
              spec: str | Path | None = None, device: str = "cpu") -> TrainingRun:
    """A new run of ``trials`` networks trained by the plan's training section, in ``out``
    (default ``runs/NAME-YYYYMMDD-HHMMSS``, UTC), on ``device`` (run.json records ``cuda``;
    a resume runs on it again); run.json records a data file's sha256 (``data_sha256``); nothing
    is written until it is opened.
    ``spec`` is what run.json names as the spec (default: the plan's file). Raises `RunInUse`
    if another process trains in ``out``, `RunExists` if ``out`` holds a run, `LimitError` for
    more than `MAX_TRIALS` trials, and what `Trainer` raises (`SpecError`, `DataError`,
    `EngineError`)."""
    require_plan(plan, "start_run")
    check_count("trials", trials, MAX_TRIALS)
    directory = RunDirectory(out if out is not None else default_run_path(plan.name))
    if directory.exists():
        holder = directory.holder()
        if holder is not None:
            raise RunInUse(FolderInUse(directory.path, holder, directory.lock.suggestion))
        raise RunExists(directory.path)
    problem = directory.not_a_run()
    if problem is not None:
        raise RunDirectoryError(problem)
    info = {"lstmgraph": __version__, "spec": str(spec if spec is not None else plan.source.filename),
            "trials": trials}
    trainer = Trainer(plan, trials, engine=engine, device=device)
    info["engine"] = trainer.engine
    if device != "cpu":
        info["device"] = device
    digest = getattr(trainer.source, "digest", None)
    if digest is not None:  # a data file: a resume on other data is refused (`resume_run`)
        info["data_sha256"] = digest
    return TrainingRun(plan, trainer, directory, info)


def resume_run(path: str | Path) -> TrainingRun:
    """The run in ``path``, to continue from its last checkpoint as it was started: its
    spec.yaml, its number of trials, its engine (numpy if run.json names none) and its device.
    A run that stopped before its first checkpoint (killed, a full disk) starts again from step 0
    with those settings, so it ends as an uninterrupted run. Takes the directory (`RunInUse` if
    another process trains in it) and checks everything before returning: run.json, spec.yaml,
    the checkpoint (this run's, its arrays fitting the spec, all finite), the data file (the
    bytes whose digest run.json records) and the metrics rows up to it. Raises
    `RunDirectoryError` naming the file and what is wrong, `SpecError` if spec.yaml is not
    valid, and what `Trainer` raises; a refused resume leaves the directory as it was (and gives it up)."""
    directory = RunDirectory(path)
    if not directory.exists():
        raise RunDirectoryError(f"{directory.path} holds no run to resume (no run.json); start one with "
                                f"lstmgraph train SPEC --out {directory.path}")
    directory.acquire()
    try:
        info = directory.read_info()
        spec_bytes = directory.read_spec()
        plan = compile_spec_bytes(directory.path / RunDirectory.SPEC, spec_bytes, name=name_at_start(info))
        engine = info.get("engine", "numpy")  # numpy: runs from before the choice
        device = info.get("device", "cpu")
        identity = run_identity(plan, info["trials"], engine, spec_bytes, device)
        checkpoint = (directory.load_checkpoint(info["trials"], identity)
                      if os.path.lexists(directory.checkpoint_path) else None)
        trainer = Trainer(plan, info["trials"], engine=engine, device=device)
        info["engine"] = trainer.engine
        _check_data(directory, info, trainer)
        directory.identity = identity
        run = TrainingRun(plan, trainer, directory, info, checkpoint, resumed=True)
        if "data_sha256" not in info and getattr(trainer.source, "digest", None) is not None:
            run.data_note = (f"{directory.path / RunDirectory.INFO} records no digest of the data file (a run started "
                             f"by an older lstmgraph), so that {trainer.source.path} is unchanged is not checked")
        run._restore()
        run._metrics = directory.metrics_kept(trainer.metric_rows, trainer.trials)
    except BaseException:
        directory.release()
        raise
    return run


def _check_data(directory: RunDirectory, info: dict, trainer: Trainer) -> None:
    """A run trained on a data file continues only on the same bytes: `RunDirectoryError` if
    its digest is not the one run.json recorded at the start (older runs record none)."""
    recorded, current = info.get("data_sha256"), getattr(trainer.source, "digest", None)
    if recorded is not None and current != recorded:
        data = getattr(trainer.source, "path", "the run's data file")
        raise RunDirectoryError(f"{data}: its sha256 is {current}, but {directory.path / RunDirectory.INFO} records "
                                f"{recorded} from the run's start: the data changed, so the run cannot continue "
                                "as it began; restore that file, or start a new run in another folder (--out)")


def compile_spec_bytes(path: Path, content: bytes, data_files: bool = True, name: str | None = None) -> Plan:
    """The plan of spec.yaml's ``content`` (read once: the bytes the identity digests are the
    bytes compiled), its problems located in ``path``; ``data_files``: `validate_spec_data`;
    ``name``: the network's where spec.yaml gives none (`name_at_start`)."""
    data, source = parse_spec_bytes(content, str(path))
    if name is not None and isinstance(data, dict) and "name" not in data:
        data = {**data, "name": name}
    return compile_plan(document_of(data, source, data_files))


def name_at_start(info: dict) -> str | None:
    """The name a run's network had when it started, from the spec run.json names: an older
    lstmgraph wrote no name into spec.yaml for a spec without one, which read back is 'spec'.
    Its rule: the file's stem as it is, ``network`` for a spec built in Python (``<dict>``);
    None where that is no valid name (such a run cannot resume)."""
    spec = info.get("spec")
    if not isinstance(spec, str) or not spec:
        return None
    stem = Path(spec).stem
    name = "network" if stem.startswith("<") else stem
    return name if len(name) <= MAX_NAME_LENGTH and re.fullmatch(NAME_PATTERN, name) else None


def loss_windows(directory: RunDirectory, trials: int | None = None) -> tuple[int, float, float]:
    """Mean loss per step over the first and the last tenth of a run directory's metrics rows
    (at least 1 and at most 100 sequences): (sequences per window, first, last); NaN for no
    rows. The rows are checked (`RunDirectoryError` naming the file and line)."""
    losses = [row["loss_per_step"] for row in directory.read_metrics(trials)]
    if not losses:
        return 0, float("nan"), float("nan")
    window = max(1, min(100, len(losses) // 10))
    return window, float(np.mean(losses[:window])), float(np.mean(losses[-window:]))

