"""Run experiments' trials on workers: the schedule of pieces and the run (stop signals: `stops.py`).

A trial runs in pieces (`trial.Trial`): each piece (`piece.Piece`) is a task for a worker
(`workers.py`: local processes, or a Dask cluster) that starts from the trial's last checkpoint,
runs about ``checkpoint_seconds`` of work and sends back the new checkpoint, or at the end the
trial's row and trained weights. Only this process writes the results folder
(`folder.ResultsFolder`), so a lost worker or a killed run costs at most one piece of work.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from typing import Any, Callable

from ..files import BUNDLED_SPECS
from ..progress import Progress, ProgressReport
from .experiment import Experiment, trained_spec
from .folder import ResultsConflict, ResultsFolder
from .folder_run import FolderRun, TrialDone
from .stops import Stopped, stopped_by_signals, stops_deferred
from .run_checks import check_run
from .piece import Piece, PieceCheckpointError, PieceTrial, run_piece
from .workers import ClusterError, Workers, connected, workers_for

#: Work per piece, and so the most a lost worker or a killed run can cost.
CHECKPOINT_SECONDS = 60.0
#: The most runs (a sweep's settings) sharing a GPU piece: each holds its folder's lock, one open file.
GPU_RUNS = 256
#: Training steps of a trial's first piece; later pieces are sized from the time it took.
FIRST_PIECE_STEPS = 20_000


# -- the schedule ------------------------------------------------------------------------------------
class _Schedule:
    """The trials of some runs: waiting, running (in one piece at a time, up to `lanes` to a
    piece: one run's on the CPU, several runs' on the GPU) and their checkpoints (as the folders
    hold them, checked before a run's folder is written). Trials are taken in the runs' order,
    seeds in order, so every worker has work while any trial waits, and the runs end one after
    another."""

    #: A piece whose worker was lost this many times is not tried again.
    LOSSES = 3

    def __init__(self, runs: list[FolderRun], checkpoint_seconds: float, lanes: int, device: str):
        self.runs, self.device, self.checkpoint_seconds, self.lanes = runs, device, checkpoint_seconds, lanes
        # Up to `lanes` trials side by side in a piece (a block of lanes, `trial.advance_together`).
        self.ready = [(index, seed) for index, run in enumerate(runs) for seed in run.waiting]
        self.piece_steps: dict[tuple[int, int], int] = {}  # a trial's next piece (FIRST_PIECE_STEPS at first)
        self.losses: dict[tuple[int, int], int] = {}
        self.pieces_lost = 0  # pieces whose worker was lost (their trials queued again)
        self.running: dict[Future, tuple[tuple[int, int], ...]] = {}
        self.reports: dict[tuple[int, int], ProgressReport] = {}
        # What pieces compile (`compiles`): done by a piece that ended, or under way in one.
        self.compiled: set[tuple] = set()
        self.compiling: dict[Future, tuple] = {}

    def submit(self, workers: Workers, keys: tuple[tuple[int, int], ...]) -> Future:
        place = {index: at for at, index in enumerate(dict.fromkeys(index for index, _ in keys))}  # runs in order
        runs = tuple(self.runs[index].piece_run() for index in place)
        trials = tuple((place[index], seed) for index, seed in keys)
        piece = Piece(runs, trials, min(self.piece_steps.get(key, FIRST_PIECE_STEPS) for key in keys),
                      tuple(self.runs[index].checkpoints[seed] for index, seed in keys), self.device)
        future = workers.submit(run_piece, piece)
        self.running[future] = keys
        return future

    def compiles(self, keys: tuple[tuple[int, int], ...]) -> tuple:
        """What a piece of these trials compiles: its runs' kernels and drivers, for one trial or
        a block of lanes."""
        return len(keys) > 1, tuple(sorted({self.runs[index].compiles for index, _ in keys}))

    def compiled_by(self, future: Future) -> None:
        """A piece ended: what it compiled is in the kernel cache now."""
        compiled = self.compiling.pop(future, None)
        if compiled is not None:
            self.compiled.add(compiled)

    def open(self, index: int) -> None:
        """Open run ``index`` (`FolderRun.open`), its trials waiting as its folder now says; closed at
        once if none is left."""
        run = self.runs[index]
        run.open()
        waiting = run.waiting
        self.ready = sorted([key for key in self.ready if key[0] != index] + [(index, seed) for seed in waiting])
        if not waiting:
            run.close()

    def fill(self, workers: Workers) -> None:
        """Pieces for the ready trials on the free workers: the trials spread evenly, at most
        `lanes` to a piece (a trial that ended leaves its lane to the next one). A piece holds
        one run's trials; on the GPU, those of up to `GPU_RUNS` runs (a sweep's settings then
        share a population where their nets and protocols allow)."""
        while self.ready and len(self.running) < workers.slots:
            size = min(self.lanes, -(-len(self.ready) // (workers.slots - len(self.running))))
            keys = self._take(size, GPU_RUNS if self.device == "cuda" else 1)
            if not keys:
                continue
            compiles = self.compiles(keys)
            if not workers.shares_cache or compiles in self.compiled:
                self.submit(workers, keys)
            elif compiles in self.compiling.values():  # the piece compiling it goes first
                self.ready = sorted(self.ready + list(keys))
                return
            else:
                self.compiling[self.submit(workers, keys)] = compiles

    def _take(self, size: int, most_runs: int) -> tuple[tuple[int, int], ...]:
        """The first ``size`` ready trials at most, of ``most_runs`` runs at most, taken from
        the ready list; none where a run had to be opened first (its ready trials are then as
        its folder says)."""
        runs: set[int] = set()
        count = 0
        for index, _ in self.ready[:size]:
            if index not in runs:
                if len(runs) == most_runs:
                    break
                if not self.runs[index].opened:
                    self.open(index)
                    return ()
                runs.add(index)
            count += 1
        keys, self.ready = tuple(self.ready[:count]), self.ready[count:]
        return keys

    def progressed(self, index: int, result: PieceTrial, seconds: float) -> None:
        """A piece ended with this trial still running: keep its checkpoint, size its next."""
        run, key = self.runs[index], (index, result.seed)
        run.checkpoints[result.seed] = result.checkpoint
        run.folder.write_checkpoint(result.seed, result.checkpoint, run.digest)
        self.reports[key] = result.report
        if result.steps > 0:
            scale = self.checkpoint_seconds / max(seconds, 1e-3)
            self.piece_steps[key] = int(min(max(result.steps * min(scale, 10.0), 1000), 10**9))
        if not run.stopping:  # (a settled run's trial waits in its checkpoint)
            self.ready = sorted(self.ready + [key])

    def finished(self, index: int, result: PieceTrial) -> None:
        """A trial ended: its run directory, its row in trials.jsonl, then no more checkpoint;
        the run's results and lock when it was the run's last."""
        run = self.runs[index]
        run.folder.save_trial(result.seed, trained_spec(run.wanted["spec_data"], run.experiment.protocol),
                              result.weights, result.row)
        run.folder.append_row(result.row)
        run.folder.remove_checkpoint(result.seed)
        self.reports.pop((index, result.seed), None)
        run.rows.append(result.row)
        run.trial_done(result.row)
        if len(run.rows) == run.trials:
            run.close()
        elif not run.stopping and run.settled():
            run.stopping = True
            self.ready = [key for key in self.ready if key[0] != index]

    def close_settled(self) -> None:
        """Close each run settled early once none of its trials runs (`FolderRun.settled`)."""
        running = {index for keys in self.running.values() for index, _ in keys}
        for index, run in enumerate(self.runs):
            if run.stopping and run.final is None and index not in running:
                run.close()

    def report(self, workers: int | None = None) -> ProgressReport:
        """The run so far; ``workers``: how many a cluster has now, where counted (0: the trials wait)."""
        running = sorted(self.reports.items())
        label = "; ".join(self.runs[index].label + report.describe() for (index, _), report in running[:3]) \
            + ("; ..." if len(running) > 3 else "")
        done = sum(len(run.rows) for run in self.runs)
        figures = {"running": sum(map(len, self.running.values())), "waiting": len(self.ready)}
        if self.pieces_lost:  # pieces whose worker was lost, so far (their trials run again from their checkpoints)
            figures["lost"] = self.pieces_lost
        return ProgressReport("trials", done, sum(run.trials for run in self.runs), label,
                              figures if workers is None else {**figures, "workers": workers})


def run_experiment(experiment: Experiment, trials: int, jobs: int, out: Path, budget_steps: int | None = None,
                   specs: Path = BUNDLED_SPECS, trial_done: TrialDone = lambda row: None,
                   progress: Progress | None = None, cluster: Any = None,
                   checkpoint_seconds: float = CHECKPOINT_SECONDS, lanes: int = 1,
                   device: str = "cpu", until_settled: bool = False,
                   checks_passed: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Run trials with seeds 0..trials-1 (those already in ``out`` are kept, those with a
    checkpoint there resume from it) and summarise. ``jobs`` local worker processes, or
    ``cluster``: a Dask scheduler's address or a ``distributed.Client``. ``lanes``: stream
    trials side by side in one piece, at most (results are the same; one by default, which
    costs the least CPU on every row measured: docs/performance.md, "Whether side by side pays").
    ``device`` ``cuda``: every trial in one piece on the GPU (`trial.check_device`), one worker.
    ``until_settled``: no trial started once the verdict is settled (`FolderRun.settled`).
    Everything the folder holds is checked before anything is written: a refused run
    (`ResultsConflict`) leaves it as it was; ``checks_passed()`` is called once all checks pass."""
    try:
        return run_experiments([(experiment, out)], trials, jobs, budget_steps, specs,
                               lambda index, row: trial_done(row), progress, cluster, checkpoint_seconds, lanes,
                               device, until_settled=until_settled, checks_passed=checks_passed)[0]
    except Stopped as stop:
        stop.results = stop.results[0] if stop.results else None
        raise


def run_experiments(targets: list[tuple[Experiment, Path | ResultsFolder]], trials: int, jobs: int,
                    budget_steps: int | None = None, specs: Path = BUNDLED_SPECS,
                    trial_done: Callable[[int, dict[str, Any]], None] = lambda index, row: None,
                    progress: Progress | None = None, cluster: Any = None,
                    checkpoint_seconds: float = CHECKPOINT_SECONDS, lanes: int = 1,
                    device: str = "cpu", until_settled: bool = False,
                    checks_passed: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    """`run_experiment` for each (experiment, results folder) of ``targets`` at once, on one set
    of workers: a worker that ends one experiment's trials takes up the next's, so none waits
    while a trial runs on. Returns each target's results; ``trial_done(index, row)``. Every
    folder is checked before any is written; a stop (`Stopped`) carries in ``results`` each
    target's results so far (None where no trial has finished). ``checks_passed()``: called once, when every check
    has passed and nothing is written yet (the CLI prints the run's plan there)."""
    checked: set[str] = set()
    for experiment, out in targets:  # a folder given as a path is read here; each is checked again under its lock
        check_run(experiment, trials, budget_steps, specs, checkpoint_seconds, lanes, device, cluster, checked,
                  None if isinstance(out, ResultsFolder) else Path(out))
    checks_passed()
    with connected(cluster) as workers:  # a scheduler not reached: refused before a folder is made
        return run_checked(targets, trials, jobs, budget_steps, specs, trial_done, progress, workers,
                           checkpoint_seconds, lanes, device, None, until_settled)


def run_checked(targets: list[tuple[Experiment, Path | ResultsFolder]], trials: int, jobs: int,
                budget_steps: int | None, specs: Path, trial_done: Callable[[int, dict[str, Any]], None],
                progress: Progress | None, cluster: Any, checkpoint_seconds: float, lanes: int, device: str,
                labels: list[str] | None, until_settled: bool) -> list[dict[str, Any]]:
    """`run_experiments` once the caller has made its checks (`check_run`'s) on every target:
    `sweep_run.run_sweep`, whose `check_sweep` checks each setting, so each setting's plan is
    compiled and its program lowered once before the run. ``labels``: each target's name in
    the progress reports ("setting 3")."""
    if device == "cuda":  # every trial in one piece, of up to GPU_RUNS targets
        jobs, lanes = 1, trials * min(len(targets), GPU_RUNS)
    runs = [FolderRun(experiment, out if isinstance(out, ResultsFolder) else Path(out), trials, budget_steps, specs, device,
                 lambda row, index=index: trial_done(index, row), until_settled)
            for index, (experiment, out) in enumerate(targets)]
    for run, label in zip(runs, labels or []):
        run.label = f"{label}, "
    # Checked: now the folders are written, each as its turn comes (those with nothing to run at once).
    schedule = _Schedule(runs, checkpoint_seconds, lanes, device)
    try:
        for index, run in enumerate(runs):
            if not run.waiting:
                schedule.open(index)
        if schedule.ready:
            with stopped_by_signals():
                _run(schedule, workers_for(jobs, cluster), progress)
    except Stopped as stop:  # the trials finished, as the end writes them; a second signal is dropped
        with stops_deferred(drop=True):
            stop.results = [run.results() for run in runs]
        raise
    finally:
        for run in runs:
            run.release()
    return [run.results() for run in runs]


#: The longest a stop signal is held while pieces run (`_run`): a Ctrl-C ends the run this soon.
STOP_LATENCY_SECONDS = 0.2
#: A report this often at least, where no piece has finished since (a cluster's workers counted in it).
QUIET_REPORT_SECONDS = 30.0


def _run(schedule: _Schedule, workers: Workers, progress: Progress | None) -> None:
    try:
        with stops_deferred():  # submitting starts the workers
            schedule.fill(workers)
        reported = time.monotonic()
        while schedule.running:
            # A stop signal is held while the futures' locks may be held, and raised between waits:
            # raised inside `wait` it once left a future's lock taken, and the exit hung for ever.
            with stops_deferred():
                finished, _ = wait(list(schedule.running), timeout=STOP_LATENCY_SECONDS,
                                   return_when=FIRST_COMPLETED)
                for future in finished:
                    _collect(schedule, workers, future)
                if finished:
                    schedule.fill(workers)
                    if progress is not None:
                        progress(schedule.report())
                        reported = time.monotonic()
            if progress is not None and time.monotonic() - reported >= QUIET_REPORT_SECONDS:
                # (outside the deferral: a cluster's count may wait on its scheduler, and a Ctrl-C must not)
                progress(schedule.report(workers.present()))
                reported = time.monotonic()
    finally:
        # The end, a stop signal or an error: stop the workers; finished trials are in trials.jsonl,
        # running ones resume from their checkpoints.
        workers.stop()


def _collect(schedule: _Schedule, workers: Workers, future: Future) -> None:
    """A finished piece's trials into their folders; a piece whose worker was lost goes back to
    the queue (at most `_Schedule.LOSSES` times), its trials from their last checkpoints."""
    keys = schedule.running.pop(future)
    try:
        result = future.result()
    except PieceCheckpointError as error:
        path = schedule.runs[keys[error.position][0]].folder.checkpoint_path(error.seed)
        raise ResultsConflict(f"{path}: not a checkpoint of this trial ({error.reason}); "
                              "delete it to run that trial from the start") from None
    except BaseException as error:
        if (ended := workers.ended(error)) is not None:
            raise ended from None
        if not workers.lost(error):
            raise
        schedule.compiling.pop(future, None)  # a piece of its kind compiles it again, alone
        if max(schedule.losses.get(key, 0) for key in keys) >= schedule.LOSSES:
            seeds = ", ".join(str(seed) for _, seed in keys)
            raise ClusterError(f"trials {seeds}: their worker was lost {schedule.LOSSES + 1} times "
                               f"({type(error).__name__}); their checkpoints are kept: run the same "
                               "command to resume") from None
        schedule.pieces_lost += 1
        for key in keys:  # their worker was lost: again from their last checkpoints
            schedule.losses[key] = schedule.losses.get(key, 0) + 1
        schedule.ready = sorted(schedule.ready + list(keys))
        return
    schedule.compiled_by(future)
    for (index, _), trial in zip(keys, result.trials):
        if trial.row is None:
            schedule.progressed(index, trial, result.seconds)
        else:
            schedule.finished(index, trial)
    schedule.close_settled()
