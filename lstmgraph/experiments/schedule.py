"""Run an experiment's trials on workers: the schedule of pieces, stop signals, and the run.

A trial runs in pieces (`trial.Trial`): each piece (`piece.Piece`) is a task for a worker
(`workers.py`: local processes, or a Dask cluster) that starts from the trial's last checkpoint,
runs about ``checkpoint_seconds`` of work and sends back the new checkpoint, or at the end the
trial's row and trained weights. Only this process writes the results folder
(`folder.ResultsFolder`), so a lost worker or a killed run costs at most one piece of work.
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..engine.compiled.network import kernel_for
from ..files import BUNDLED_SPECS
from ..progress import Progress, ProgressReport
from ..limits import MAX_STEPS, check_count
from .catalogue import Experiment
from .figures import results_figure
from .folder import TRIAL_ARITHMETIC, ResultsConflict, ResultsFolder, check_trial_count, settings_digest
from .piece import Piece, PieceCheckpointError, PieceTrial, run_piece
from .summary import csv_text, results_of
from .trial import DeviceError, check_device
from .workers import ClusterError, Workers, workers_for

TrialDone = Callable[[dict[str, Any]], None]

#: Work per piece, and so the most a lost worker or a killed run can cost.
CHECKPOINT_SECONDS = 60.0
#: The longest piece a run may ask for (`reproduce --checkpoint-seconds`): a week.
MAX_CHECKPOINT_SECONDS = 7 * 24 * 3600.0
#: Training steps of a trial's first piece; later pieces are sized from the time it took.
FIRST_PIECE_STEPS = 20_000


def settings(experiment: Experiment, budget_steps: int | None, specs: Path, device: str = "cpu") -> dict[str, Any]:
    """What a run of ``experiment`` records in experiment.json: the row, the cap, the spec as
    run and the arithmetic; the device where it is not the CPU (a GPU's arithmetic may differ
    in the last bits, so its trials and the CPU's do not mix in one folder)."""
    data, _ = experiment.spec_data(specs)
    return {**experiment.describe(), "budget_steps": budget_steps, "spec_data": data,
            "arithmetic": TRIAL_ARITHMETIC, **({"device": device} if device != "cpu" else {})}


def check_run_device(experiment: Experiment, device: str, cluster: Any) -> None:
    """`trial.DeviceError` for a device the experiment's protocol has no driver on, or the GPU
    with a cluster; `GpuUnavailable` where no GPU is present (before anything is written)."""
    check_device(experiment.protocol, device)
    if device == "cuda":
        from ..engine.gpu import cuda_module

        if cluster is not None:
            raise DeviceError("a run on the GPU uses this machine's GPU: leave out --cluster")
        cuda_module()


def check_run_settings(trials: int, budget_steps: int | None, checkpoint_seconds: float, lanes: int) -> None:
    """`ValueError` (`limits.LimitError` for a count) naming a count or a time out of
    range, before anything is written."""
    check_trial_count(trials)
    if budget_steps is not None:
        check_count("a trial's step budget (--max-steps)", budget_steps, MAX_STEPS)
    if not 1 <= checkpoint_seconds <= MAX_CHECKPOINT_SECONDS:  # (NaN fails too)
        raise ValueError(f"checkpoint_seconds must be from 1 to {MAX_CHECKPOINT_SECONDS:,.0f}, not {checkpoint_seconds}")
    if not (type(lanes) is int and 1 <= lanes <= 64):
        raise ValueError(f"lanes must be a whole number from 1 to 64, not {lanes!r}")


# -- stop signals ----------------------------------------------------------------------------------
#: The signals that stop a run the way Ctrl-C does: a terminal's Ctrl-C, and the SIGTERM of
#: `kill`, `timeout` or a batch scheduler (SLURM sends it before its SIGKILL).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """The run was stopped by ``signal_number``: its workers are ended, its trials resume.
    ``results``: what `run_experiment` wrote for the trials that had finished (None if none)."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number
        self.results: dict[str, Any] | None = None


def _raise_stopped(signal_number: int, frame: object) -> None:
    raise Stopped(signal_number)


@contextmanager
def _stop_signals_handled_by(handler: Callable[[int, object], None]) -> Iterator[bool]:
    """``handler`` for the stop signals this process does not ignore (a shell script's `cmd &`
    ignores Ctrl-C) while the block runs; yields False, doing nothing, outside the main thread
    (only the main thread handles signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    heeded = [number for number in STOP_SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    former = {number: signal.signal(number, handler) for number in heeded}
    try:
        yield True
    finally:
        for number, handler in former.items():
            signal.signal(number, handler)


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """A stop signal raises `Stopped` in the main thread, so the run ends through its `finally`
    (workers terminated, nothing left behind) instead of dying where it stands."""
    with _stop_signals_handled_by(_raise_stopped):
        yield


@contextmanager
def _stops_deferred() -> Iterator[None]:
    """Hold a stop signal until the block ends, then raise it: a worker whose start is cut short
    reads half its start-up data and prints a traceback. The handler defers it in this process
    (any thread may receive the signal); the signal mask, which started workers inherit, keeps a
    terminal's Ctrl-C from reaching them before they ignore it."""
    caught: list[int] = []
    with _stop_signals_handled_by(lambda number, frame: caught.append(number)) as handled:
        if not handled:
            yield
            return
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if caught:
        raise Stopped(caught[0])




# -- the schedule ------------------------------------------------------------------------------------
class _Schedule:
    """The trials of a run: waiting, running (in one piece at a time, up to `lanes` trials to a
    piece) and their checkpoints (as the folder holds them, checked before the run writes)."""

    #: A piece whose worker was lost this many times is not tried again.
    LOSSES = 3

    def __init__(self, experiment: Experiment, spec_data: dict[str, Any], folder: ResultsFolder, digest: str,
                 checkpoints: dict[int, bytes | None], budget_steps: int | None, checkpoint_seconds: float,
                 lanes: int, device: str = "cpu"):
        self.experiment, self.spec_data, self.folder, self.digest = experiment, spec_data, folder, digest
        self.device = device
        self.budget_steps, self.checkpoint_seconds = budget_steps, checkpoint_seconds
        todo = list(checkpoints)
        self.ready = list(todo)  # not ended, not in a running piece; seeds in order
        # Up to `lanes` trials side by side in a piece (a block of lanes, `trial.advance_together`).
        self.lanes = lanes
        # Every piece of the run's trials on a worker shares one compilation of the specialised
        # kernel (results are bit-identical either way): worth it for long runs only.
        self.kernel = kernel_for(len(todo) * budget_steps) if budget_steps is not None else "specialised"
        self.checkpoints = dict(checkpoints)
        self.piece_steps = {seed: FIRST_PIECE_STEPS for seed in todo}
        self.losses = {seed: 0 for seed in todo}
        self.running: dict[Future, tuple[int, ...]] = {}
        self.reports: dict[int, ProgressReport] = {}

    def submit(self, workers: Workers, seeds: tuple[int, ...]) -> None:
        experiment = self.experiment
        piece = Piece(experiment.task, experiment.task_options, experiment.protocol, self.spec_data, seeds,
                      self.budget_steps, self.kernel,
                      min(self.piece_steps[seed] for seed in seeds), tuple(self.checkpoints[seed] for seed in seeds),
                      self.device)
        self.running[workers.submit(run_piece, piece)] = seeds

    def fill(self, workers: Workers) -> None:
        """Pieces for the ready trials on the free workers: the trials spread evenly, at most
        `lanes` to a piece (a trial that ended leaves its lane to the next one waiting)."""
        while self.ready and len(self.running) < workers.slots:
            size = min(self.lanes, -(-len(self.ready) // (workers.slots - len(self.running))))
            seeds, self.ready = tuple(self.ready[:size]), self.ready[size:]
            self.submit(workers, seeds)

    def progressed(self, result: PieceTrial, seconds: float) -> None:
        """A piece ended with this trial still running: keep its checkpoint, size its next."""
        seed = result.seed
        self.checkpoints[seed] = result.checkpoint
        self.folder.write_checkpoint(seed, result.checkpoint, self.digest)
        self.reports[seed] = result.report
        if result.steps > 0:
            scale = self.checkpoint_seconds / max(seconds, 1e-3)
            self.piece_steps[seed] = int(min(max(result.steps * min(scale, 10.0), 1000), 10**9))
        self.ready = sorted(self.ready + [seed])

    def finished(self, result: PieceTrial) -> None:
        """A trial ended: its run directory, its row in trials.jsonl, then no more checkpoint."""
        self.folder.save_trial(result.seed, self.spec_data, result.weights, result.row)
        self.folder.append_row(result.row)
        self.folder.remove_checkpoint(result.seed)
        self.reports.pop(result.seed, None)

    def report(self, done: int, total: int) -> ProgressReport:
        running = sorted(self.reports.items())
        label = "; ".join(report.describe() for _, report in running[:3]) + ("; ..." if len(running) > 3 else "")
        return ProgressReport("trials", done, total, label,
                              {"running": sum(map(len, self.running.values())), "waiting": len(self.ready)})


def run_experiment(experiment: Experiment, trials: int, jobs: int, out: Path, budget_steps: int | None = None,
                   specs: Path = BUNDLED_SPECS, trial_done: TrialDone = lambda row: None,
                   progress: Progress | None = None, cluster: Any = None,
                   checkpoint_seconds: float = CHECKPOINT_SECONDS, lanes: int = 1,
                   device: str = "cpu") -> dict[str, Any]:
    """Run trials with seeds 0..trials-1 (those already in ``out`` are kept, those with a
    checkpoint there resume from it) and summarise. ``jobs`` local worker processes, or
    ``cluster``: a Dask scheduler's address or a ``distributed.Client``. ``lanes``: stream
    trials side by side in one piece, at most (results are the same; one by default, which
    costs the least CPU on every row measured: docs/performance.md, "Whether side by side pays").
    ``device`` ``cuda``: every trial in one piece on the GPU (`trial.check_device`), one worker.
    Everything the folder holds is checked before anything is written: a refused run
    (`ResultsConflict`) leaves it as it was."""
    check_run_settings(trials, budget_steps, checkpoint_seconds, lanes)
    check_run_device(experiment, device, cluster)
    if device == "cuda":
        jobs, lanes = 1, trials
    experiment.plan(specs)  # a spec error located in its file, before any folder is made or worker started
    folder = ResultsFolder(out)
    with folder.locked():
        wanted = settings(experiment, budget_steps, specs, device)
        folder.check_settings(wanted, experiment.name)
        digest = settings_digest(wanted)
        stored, cut = folder.read_rows(experiment.protocol, experiment.protocol.limit)
        rows = [row for row in stored if row["seed"] < trials]
        done = {row["seed"] for row in rows}
        todo = [seed for seed in range(trials) if seed not in done]
        checkpoints = {}
        for seed in todo:
            found = folder.read_checkpoint(seed, experiment.protocol.kind, digest)
            checkpoints[seed] = found[0] if found is not None else None
        # Checked: now the folder is written.
        folder.write_settings(wanted)
        if cut:  # the line a kill cut: that trial runs again
            folder.write_rows(stored)
        for row in rows:
            folder.remove_checkpoint(row["seed"])  # ended after it
            trial_done(row)
        if todo:
            schedule = _Schedule(experiment, wanted["spec_data"], folder, digest, checkpoints, budget_steps,
                                 checkpoint_seconds, lanes, device)
            try:
                with _stopped_by_signals():
                    _run(schedule, workers_for(jobs, cluster), rows, trials, trial_done, progress)
            except Stopped as stop:  # the figures of the trials that finished, as the end writes them
                stop.results = write_results(folder, experiment, budget_steps, rows) if rows else None
                raise
        return write_results(folder, experiment, budget_steps, rows)


def write_results(folder: ResultsFolder, experiment: Experiment, budget_steps: int | None,
                  rows: list[dict[str, Any]]) -> dict[str, Any]:
    """results.json, trials.csv and results.png of the finished trials ``rows``: all of a run's
    at its end, those so far when it is stopped (the summary table marks such a row "N of M
    trials")."""
    results = results_of(experiment, budget_steps, rows)
    folder.write_results(results, csv_text(rows), results_figure(results))
    return results


def _run(schedule: _Schedule, workers: Workers, rows: list[dict[str, Any]], trials: int, trial_done: TrialDone,
         progress: Progress | None) -> None:
    try:
        with _stops_deferred():  # submitting starts the workers
            schedule.fill(workers)
        while schedule.running:
            finished, _ = wait(list(schedule.running), return_when=FIRST_COMPLETED)
            for future in finished:
                seeds = schedule.running.pop(future)
                try:
                    result = future.result()
                except PieceCheckpointError as error:
                    path = schedule.folder.checkpoint_path(error.seed)
                    raise ResultsConflict(f"{path}: not a checkpoint of this trial ({error.reason}); "
                                          "delete it to run that trial from the start") from None
                except BaseException as error:
                    if not workers.lost(error):
                        raise
                    if max(schedule.losses[seed] for seed in seeds) >= schedule.LOSSES:
                        raise ClusterError(f"trials {', '.join(map(str, seeds))}: their worker was lost "
                                           f"{schedule.LOSSES + 1} times ({type(error).__name__}); their checkpoints "
                                           "are kept: run the same command to resume") from None
                    for seed in seeds:  # their worker was lost: again from their last checkpoints
                        schedule.losses[seed] += 1
                    schedule.ready = sorted(schedule.ready + list(seeds))
                    continue
                for trial in result.trials:
                    if trial.row is None:
                        schedule.progressed(trial, result.seconds)
                    else:
                        schedule.finished(trial)
                        rows.append(trial.row)
                        trial_done(trial.row)
            schedule.fill(workers)
            if progress is not None:
                progress(schedule.report(len(rows), trials))
    finally:
        # The end, a stop signal or an error: stop the workers; finished trials are in trials.jsonl,
        # running ones resume from their checkpoints.
        workers.stop()
