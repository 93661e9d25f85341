"""A training run read back for use: its compiled spec, weights and metrics (`load_run`), and
the sequences to run it on (`sequence_source`). `lstmgraph plot` draws it, `lstmgraph evaluate`
judges it.

`load_run` reads a run directory (`lstmgraph train --out DIR`, or a `reproduce` trial's
OUT/trials/SEED) as a resume reads it (`rundir`): every kind of damage is a `TrainedRunError`
naming the file, and no link is followed out of the folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

import numpy as np

from ..arrays import ArrayFileError, numbers, read_npz
from ..engine.weights import Weights, WeightsError, load_weights, misfit
from ..files import TOO_LONG, NotAFile, name_too_long, own_file_exists
from ..layouts import RESULTS_FOLDER, SWEEP_FOLDER
from ..plan import Plan
from ..tasks import Sequence as TaskSequence
from ..tasks import TaskError, make_task, unit_symbols
from ..tasks.data_file import DATA_FILE, DataFileTask
from .data import DataError, DataFile
from .metrics_files import MetricsFileError, read_metric_rows
from .rundir import RunDirectory, RunDirectoryError
from .run import compile_spec_bytes, name_at_start
from .trainer import training_section

if TYPE_CHECKING:
    from ..engine.simulator import Simulator


class TrainedRunError(Exception):
    """A folder that is not a readable training run, or data that does not fit it."""


#: Where traced or judged sequences come from: the run's task (fresh draws from a seed), the
#: run's own training data file, or a data file given for the purpose (held out).
DataKind = Literal["task", "training data", "held-out data"]


@dataclass(frozen=True)
class SequenceSource:
    """`sequence_source`'s answer: ``draw()`` gives the next sequence (None after a data
    file's last), whether they form one continual stream, the task's name or the data file,
    which kind of data it is, and the task's `unit_symbols` ((None, None) for a file)."""

    draw: Callable[[], TaskSequence | None]
    continual: bool
    source: str
    kind: DataKind
    symbols: tuple


def describe_data(kind: DataKind, source: str, seed: int, count: int, unit: str) -> str:
    """``count`` ``unit``s (e.g. 200 steps) of the data, in words that say which data it is."""
    if kind == "task":
        return f"{count} fresh {unit} of {source} (seed {seed})"
    if kind == "training data":
        return f"{count} {unit} of the run's training data {source} (not held out)"
    return f"{count} {unit} of held-out data {source}"


@dataclass(frozen=True)
class Metrics:
    """The metric rows of a run (metrics.jsonl), one per trained sequence."""

    sequence: np.ndarray        # (rows,)
    step: np.ndarray            # (rows,) steps trained at the end of the sequence
    loss: np.ndarray            # (rows,) summed over the sequence, mean over the trials
    loss_per_step: np.ndarray   # (rows,)
    loss_trials: np.ndarray | None  # (rows, trials) summed loss of each trial; None for one

    def __len__(self) -> int:
        return len(self.step)

    def curves(self, per_step: bool = True) -> np.ndarray:
        """Loss per row and trial (rows, trials): per step, or summed over the sequence."""
        values = self.loss[:, None] if self.loss_trials is None else self.loss_trials
        if not per_step:
            return values
        lengths = np.diff(np.concatenate([[0], self.step])) if len(self.step) else self.step
        return values / np.maximum(lengths, 1)[:, None]


@dataclass(frozen=True)
class TrainedRun:
    """A run directory, read: the compiled resolved spec, its weights and metrics."""

    path: Path
    plan: Plan
    weights: Weights            # connection -> (trials, *shape)
    weights_file: str           # RunDirectory.WEIGHTS, or its CHECKPOINT for an unfinished run
    steps_trained: int
    metrics: Metrics
    #: A `reproduce` trial folder's seed (OUT/trials/SEED holds that trial's one network), else None.
    seed: int | None = None

    @property
    def trials(self) -> int:
        return next(iter(self.weights.values())).shape[0]

    def trial_number(self, index: int) -> int:
        """The number output gives the run's network ``index``: a reproduce trial's seed, as
        `reproduce` and its folder name it; a trained run's place (``train --trials``)."""
        return self.seed if self.seed is not None else index



# -- reading a run --------------------------------------------------------------------------------
def load_run(path: str | Path) -> TrainedRun:
    """Read a run directory. `TrainedRunError` naming the file if it is not one, or a file is
    missing, a symbolic link, damaged, of another network or holds NaN or infinite weights;
    `SpecError` if its spec.yaml does not compile."""
    path = Path(path)
    if name_too_long(path):
        raise TrainedRunError(f"{path}: {TOO_LONG}")
    if not path.is_dir():
        raise TrainedRunError(f"{path}: is a file, not a run directory (a run's folder: 'lstmgraph train --out "
                              "DIR', or OUT/trials/SEED of 'lstmgraph reproduce')" if path.exists()
                              else f"{path}: no such run directory")
    directory = RunDirectory(path)
    if not _own_file(path / RunDirectory.SPEC):
        if os.path.lexists(path / RunDirectory.CHECKPOINT) and not os.path.lexists(path / RunDirectory.INFO):
            raise TrainedRunError(f"{path} holds a checkpoint.npz but no spec.yaml: a reproduce trial not finished "
                                  "(still running, or stopped), whose spec.yaml and weights.npz are written when it "
                                  "ends; run the same lstmgraph reproduce again to finish it")
        trial_spec = f"{RESULTS_FOLDER.member('*')}/{RunDirectory.SPEC}"
        for layout, pattern in ((RESULTS_FOLDER, trial_spec), (SWEEP_FOLDER, f"{SWEEP_FOLDER.member('*')}/{trial_spec}")):
            if any(os.path.lexists(path / mark.rstrip("/")) for mark in layout.marks):
                found = sorted(path.glob(pattern))  # (a committed folder may keep none)
                where = f"e.g. {found[0].parent}" if found else f"this one keeps none ({pattern.rsplit('/', 1)[0]})"
                raise TrainedRunError(f"{path} is a {layout.what}, not a run directory: each trial's network is one, "
                                      f"{where}")
        raise TrainedRunError(f"{path} is not a run directory (no spec.yaml; 'lstmgraph train SPEC --out DIR' "
                              f"writes one, 'lstmgraph reproduce' and 'lstmgraph sweep' one per trial in "
                              f"OUT/trials/SEED and OUT/settings/INDEX/trials/SEED)")
    try:
        spec_bytes = directory.read_spec()
    except RunDirectoryError as error:
        raise TrainedRunError(str(error)) from None
    # A data_file task's file is read where its sequences are (`sequence_source`): a run moved
    # without it is still judged on held-out data (--data), as a run trained on `data:` is.
    plan = compile_spec_bytes(path / RunDirectory.SPEC, spec_bytes, data_files=False, name=_name_at_start(directory))
    if _own_file(path / RunDirectory.WEIGHTS):
        try:
            weights = load_weights(path / RunDirectory.WEIGHTS, plan)
        except WeightsError as error:
            raise TrainedRunError(str(error)) from None
        weights_file = RunDirectory.WEIGHTS
    elif _own_file(directory.checkpoint_path):
        weights = _checkpoint_weights(directory.checkpoint_path, plan)
        weights_file = RunDirectory.CHECKPOINT
    else:
        raise TrainedRunError(f"{path} holds no weights.npz or checkpoint.npz: the run has saved no weights yet")
    # A reproduce trial keeps no learning curve, only its result row (summary.json).
    metrics_file = path / RunDirectory.METRICS_JSONL
    trials = next(iter(weights.values())).shape[0]
    metrics = read_metrics(metrics_file, trials) if _own_file(metrics_file) else read_metrics(None)
    summary = _summary(directory)
    seed = summary.get("seed") if summary is not None else None
    seed = seed if type(seed) is int and trials == 1 and path.name == str(seed) else None
    return TrainedRun(path, plan, weights, weights_file, _steps_trained(path, summary, metrics), metrics, seed)


def _name_at_start(directory: RunDirectory) -> str | None:
    """The name run.json gives a run whose spec.yaml gives none (`name_at_start`: an older
    lstmgraph's run); None for a folder without a readable run.json (a reproduce trial's), whose
    net is judged all the same (a name is only shown)."""
    try:
        return name_at_start(directory.read_info()) if _own_file(directory.path / RunDirectory.INFO) else None
    except (RunDirectoryError, TrainedRunError):
        return None


def _own_file(path: Path) -> bool:
    """Whether ``path``, a file of a run directory, exists; a symbolic link (never followed out
    of the folder) or anything but a regular file (a FIFO would block a reader) is refused."""
    try:
        return own_file_exists(path)
    except NotAFile as refused:
        raise TrainedRunError(f"{path}: {refused.strerror}") from None
    except OSError as error:
        raise TrainedRunError(f"{path}: cannot read it ({error.strerror or error})") from None


def read_metrics(path: str | Path | None, trials: int | None = None) -> Metrics:
    """Read metrics.jsonl (None: no rows), each row checked as a resume checks it
    (`metrics_files.read_metric_rows`; ``trials``, if known, is how many losses a row holds); a last
    line cut short by a running trainer is skipped. `TrainedRunError` naming the file and line."""
    try:
        rows = read_metric_rows(Path(path), trials) if path is not None else []
    except MetricsFileError as error:
        raise TrainedRunError(str(error)) from None
    columns = [[row[key] for row in rows] for key in ("sequence", "step", "loss", "loss_per_step")]
    per_trial = [row.get("loss_trials") for row in rows]
    loss_trials = (np.array(per_trial, dtype=np.float64)
                   if per_trial and all(t is not None for t in per_trial) else None)
    return Metrics(np.array(columns[0], dtype=np.int64), np.array(columns[1], dtype=np.int64),
                   np.array(columns[2], dtype=np.float64), np.array(columns[3], dtype=np.float64),
                   loss_trials)


def _checkpoint_weights(path: Path, plan: Plan) -> Weights:
    try:
        stored = {name[len("weights/"):]: array for name, array in read_npz(  # (the rest stays packed)
            path, select=lambda declared: [name for name in declared if name.startswith("weights/")]).items()}
    except ArrayFileError as error:
        raise TrainedRunError(str(error)) from None
    missing = [c.name for c in plan.connections if c.name not in stored]
    if missing:
        raise TrainedRunError(f"{path}: does not fit {misfit(plan, missing)}")
    try:  # real and finite, as `load_weights` reads a weights file
        weights = {c.name: numbers(path, f"'{c.name}'", stored[c.name]) for c in plan.connections}
    except ArrayFileError as error:
        raise TrainedRunError(str(error)) from None
    if len({values.shape[0] if values.ndim else 0 for values in weights.values()}) != 1:
        raise TrainedRunError(f"{path}: its weight arrays disagree on the number of trials")
    for connection in plan.connections:
        if weights[connection.name].shape[1:] != connection.shape:
            raise TrainedRunError(f"{path}: '{connection.name}' has shape {weights[connection.name].shape}, "
                            f"expected (trials, {', '.join(map(str, connection.shape))})")
    return weights


def _summary(directory: RunDirectory) -> dict | None:
    """summary.json (a finished run's, or a reproduce trial's row), read with the run
    directory's bounds; None without one."""
    if not _own_file(directory.path / RunDirectory.SUMMARY):
        return None
    try:
        summary = directory.read_json(RunDirectory.SUMMARY)
    except RunDirectoryError as error:
        raise TrainedRunError(str(error)) from None
    return summary if isinstance(summary, dict) else {}


def _steps_trained(path: Path, summary: dict | None, metrics: Metrics) -> int:
    """The steps ``summary`` says were trained; without one, the last metrics row's."""
    if summary is None:
        return int(metrics.step[-1]) if len(metrics) else 0
    steps = summary.get("steps")
    if type(steps) is not int or steps < 0:
        raise TrainedRunError(f"{path / RunDirectory.SUMMARY}: 'steps' is missing or not an integer >= 0; "
                              "expected the steps trained (restore the file, or delete it to count the steps from "
                              "metrics.jsonl)")
    return steps



# -- the sequences to run it on --------------------------------------------------------------------
def sequence_source(run: TrainedRun, sim: "Simulator", seed: int, epochs: int | None = None,
                    data: str | Path | None = None) -> SequenceSource:
    """Where a run's sequences come from: the file ``data`` if given (held-out data, in the
    training data format, unless run.json's sha256 says it is the run's own file), else fresh sequences of the run's task from
    ``numpy.random.default_rng(seed)`` (a ``data_file`` task's: its held-out file's where it has one),
    else the run's own training data file. A file's
    sequences come in order from its start, ``epochs`` passes (None for no end; `draw` returns
    None after the last). `TrainedRunError` for a file that cannot be read or does not fit the net."""
    training = training_section(run.plan)
    if data is None and training.task is not None:
        try:
            task = make_task(training.task.name, training.task.options)
        except TaskError as error:
            raise TrainedRunError(f"{run.path / RunDirectory.SPEC}: {error}") from None
        rng = np.random.default_rng(seed)
        if (task.n_inputs, task.n_outputs) != (sim.n_inputs, sim.n_outputs):  # (not checked when compiled)
            raise TrainedRunError(f"{run.path / RunDirectory.SPEC}: task '{task.name}' has {task.n_inputs} inputs and "
                                  f"{task.n_outputs} outputs, the network {sim.n_inputs} and {sim.n_outputs}")
        if isinstance(task, DataFileTask):  # its held-out sequences, else the run's own, drawn at random
            drawn, kind = (task.held_out, "held-out data") if task.held_out is not None else (task, "training data")
            if drawn is task:
                _unchanged(run, task.sha256, task.path)
            if drawn.deterministic and epochs is not None:  # one sequence: once a pass, as in a file of it
                passes = iter([drawn.sample(rng)] * epochs)
                return SequenceSource(lambda: next(passes, None), False, drawn.path, kind, (None, None))
            return SequenceSource(lambda: drawn.sample(rng), False, drawn.path, kind, (None, None))
        return SequenceSource(lambda: task.sample(rng), task.continual, task.name, "task", unit_symbols(task))
    # The run's own file was joined to the folder of its spec.yaml when that was compiled.
    path, kind = (Path(data), "held-out data") if data is not None else (Path(training.data), "training data")
    try:
        file = DataFile(path, sim.n_inputs, sim.n_outputs, epochs=epochs)
    except DataError as error:
        raise TrainedRunError(str(error)) from None
    if data is not None and file.digest == _training_data_digest(run):
        kind = "training data"  # the run's own file, under whatever name: not held out
    elif data is None:
        _unchanged(run, file.digest, path)
    continual = file.continual
    if training.task is not None and training.task.name != DATA_FILE:  # a stream if the task's is one
        try:
            continual = make_task(training.task.name, training.task.options).continual
        except TaskError as error:
            raise TrainedRunError(f"{run.path / RunDirectory.SPEC}: {error}") from None
    return SequenceSource(file.next, continual, str(path) if data is not None else path.name, kind, (None, None))


def _unchanged(run: TrainedRun, digest: str, path: str | Path) -> None:
    """`TrainedRunError` where the run's own data file ``path`` now holds other bytes than those
    it trained on (run.json's sha256): judged on them, the run would be called right or wrong
    on sequences it never saw, as its training data."""
    recorded = _training_data_digest(run)
    if recorded is not None and digest != recorded:
        raise TrainedRunError(f"{path}: its sha256 is {digest}, not {recorded} as {run.path / RunDirectory.INFO} "
                              "records from the run's start: the data changed; restore the run's own file, or "
                              "judge other data with --data FILE")


def _training_data_digest(run: TrainedRun) -> str | None:
    """The sha256 of the data file the run trained on, as its run.json records it (None for a
    run of a task, a reproduce trial's folder, or a run from before the digest was recorded)."""
    training = training_section(run.plan)
    on_file = training.data is not None or (training.task is not None and training.task.name == DATA_FILE)
    if not on_file or not _own_file(run.path / RunDirectory.INFO):
        return None
    try:
        return RunDirectory(run.path).read_info().get("data_sha256")
    except RunDirectoryError as error:
        raise TrainedRunError(str(error)) from None
