"""Run an experiment's trials on workers and summarise them beside the paper's figures.

A trial runs in pieces (`trial.Trial`): each piece is a task for a worker (`workers.py`: local
processes, or a Dask cluster) that starts from the trial's last checkpoint, runs about
``checkpoint_seconds`` of work and sends back the new checkpoint, or at the end the trial's
result row and trained weights. Only this process writes the output folder, so a cluster needs
no shared filesystem, and a lost worker or a killed run costs at most one piece of work:

- ``experiment.json``: the settings, the spec and the arithmetic (`TRIAL_ARITHMETIC`) as run;
  a rerun with other settings, or by a version of other arithmetic, is refused;
- ``trials.jsonl``: one line per finished trial, appended (and synced) as each ends;
- ``trials/SEED/checkpoint.npz`` while a trial runs; ``trials/SEED/`` then holds the trained
  network as a run directory for `lstmgraph plot` (``spec.yaml``, ``weights.npz``,
  ``summary.json``);
- ``results.json`` / ``trials.csv``, written atomically at the end;
- ``.lock``: held while a run writes the folder (a second run on it is refused, naming the
  first; the lock of a dead run is taken over).
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import signal
import socket
import statistics
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import yaml

from ..arrays import ArrayFileError, npz_arrays, npz_bytes, read_npz
from ..engine.compiled.network import kernel_for
from ..files import BUNDLED_SPECS, OutputError, make_folder, write_atomically
from ..plan import Plan
from ..progress import Progress, ProgressReport
from .catalogue import Experiment
from .protocols import Protocol, task_trial
from .trial import advance_together
from .verdict import verdict_rows
from .workers import Workers, workers_for

TrialDone = Callable[[dict[str, Any]], None]

#: Work per piece, and so the most a lost worker or a killed run can cost.
CHECKPOINT_SECONDS = 60.0
#: Training steps of a trial's first piece; later pieces are sized from the time it took.
FIRST_PIECE_STEPS = 20_000


class ResultsConflict(Exception):
    """The output folder holds trials run with other settings, or is in use."""


class TrialCheckpointError(Exception):
    """A trial's checkpoint that does not fit its trial (written by hand, or by another version)."""

    def __init__(self, seed: int, reason: str):
        super().__init__(seed, reason)
        self.seed, self.reason = seed, reason


# -- one piece of some trials, on a worker --------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """What a worker needs to run part of some trials of one experiment side by side: its task,
    protocol and spec as data, the seeds, the caps, and each trial's last checkpoint (an .npz
    file's bytes; None to start). The piece carries the protocol itself, not the experiment's
    name: a cluster's workers may have another version of lstmgraph, whose catalogue may define
    the row otherwise (the CERG test streams went from 10^5 to 10^6 symbols), and the trials must
    run as the client's `experiment.json` records."""

    task: str
    task_options: dict[str, Any]
    protocol: Protocol
    spec_data: dict[str, Any]
    seeds: tuple[int, ...]
    budget_steps: int | None
    kernel: str
    steps: int
    checkpoints: tuple[bytes | None, ...]


@dataclass(frozen=True)
class TrialResult:
    seed: int
    report: ProgressReport
    steps: int                      # training steps it ran in the piece
    checkpoint: bytes | None = None  # while the trial goes on
    row: dict[str, Any] | None = None  # when it has ended, with the trained weights
    weights: bytes | None = None


@dataclass(frozen=True)
class PieceResult:
    seconds: float  # wall time of the piece, to size the next
    trials: tuple[TrialResult, ...]


_PLANS: dict[str, Plan] = {}


def run_piece(piece: Piece) -> PieceResult:
    """Run one piece of some trials (in a worker), side by side where their protocol runs so."""
    from ..engine.weights import weights_file_bytes

    start = time.perf_counter()
    key = json.dumps(piece.spec_data, sort_keys=True)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = Experiment.plan_of(piece.spec_data)
    trials = []
    for seed, checkpoint in zip(piece.seeds, piece.checkpoints):
        trial = task_trial(plan, piece.task, piece.task_options, piece.protocol, seed, piece.budget_steps,
                           piece.kernel)
        if checkpoint is not None:
            try:
                trial.restore(npz_arrays(checkpoint))
            except (KeyError, ValueError, TypeError) as error:
                raise TrialCheckpointError(seed, f"{type(error).__name__}: {error}") from None
        trials.append(trial)
    steps_before = [trial.steps_trained() for trial in trials]
    reports = advance_together(trials, piece.steps)
    results = []
    for trial, report, before in zip(trials, reports, steps_before):
        steps = trial.steps_trained() - before
        if trial.row is not None:
            trial.row.setdefault("class", None)
            results.append(TrialResult(trial.seed, report, steps, row=trial.row,
                                       weights=weights_file_bytes(plan, trial.engine.weights)))
        else:
            results.append(TrialResult(trial.seed, report, steps, checkpoint=npz_bytes(trial.checkpoint())))
    return PieceResult(time.perf_counter() - start, tuple(results))


# -- the output folder -----------------------------------------------------------------------------
@contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` (an advisory lock the system drops when its holder dies, however)."""
    path = out / ".lock"
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise OutputError(path, error) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(descriptor, 200, 0).decode(errors="replace").strip() or "another process"
            raise ResultsConflict(f"{out} is in use by {owner}; wait for it to end, or choose another --out") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"lstmgraph reproduce, process {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)


def save_trial(folder: Path, spec_data: dict[str, Any], weights: bytes, row: dict[str, Any]) -> None:
    """A trained trial as a run directory `lstmgraph plot` reads: ``spec.yaml`` (the network as
    run, with the experiment's rate and momentum), ``weights.npz`` (final weights) and
    ``summary.json`` (its result row)."""
    write_atomically(folder / "spec.yaml", yaml.safe_dump(spec_data, sort_keys=False).encode())
    write_atomically(folder / "weights.npz", weights)
    write_atomically(folder / "summary.json", (json.dumps(row, indent=2) + "\n").encode())


#: The arithmetic trials run with, as a number raised whenever a change makes a trial take
#: another path (chaotic trials part at a changed last bit). A results folder records it, and
#: a run refuses to add trials to a folder of another arithmetic: a row never mixes them.
#: 1: libm's tanh in the compiled kernels (until 2026-11-22); 2: the kernels' own vectorised
#: tanh (`engine/compiled/vector_math.py`).
TRIAL_ARITHMETIC = 2


def settings(experiment: Experiment, budget_steps: int | None, specs: Path) -> dict[str, Any]:
    data, _ = experiment.spec_data(specs)
    return {**experiment.describe(), "budget_steps": budget_steps, "spec_data": data,
            "arithmetic": TRIAL_ARITHMETIC}


def checked_settings(experiment: Experiment, budget_steps: int | None, specs: Path, out: Path) -> dict[str, Any]:
    """The settings a run of ``experiment`` records in ``out``; `ResultsConflict` if the folder
    holds trials run with others (or by a version of other arithmetic), which it would mix."""
    wanted = settings(experiment, budget_steps, specs)
    settings_path = out / "experiment.json"
    stored = _stored_settings(settings_path) if settings_path.exists() else None
    expected = json.loads(json.dumps(wanted))  # as read back from the file
    if stored is not None and stored != expected:
        if isinstance(stored, dict) and {**stored, "arithmetic": TRIAL_ARITHMETIC} == expected:
            raise ResultsConflict(
                f"{out} holds trials of {experiment.name} run by an earlier version of lstmgraph whose "
                f"arithmetic differs in the last bits (its trials would not be those run now); "
                f"choose another --out or delete it")
        raise ResultsConflict(f"{out} holds trials of {experiment.name} run with other settings; "
                              f"choose another --out or delete it")
    return wanted


def finished_rows(out: Path, trials: int) -> list[dict[str, Any]]:
    """The rows of ``out``'s finished trials among seeds 0..trials-1."""
    return [row for row in _read_rows(out / "trials.jsonl") if row["seed"] < trials]


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in _read_text(path).splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break  # a line cut by a kill: that trial runs again
        if not isinstance(row, dict) or type(row.get("seed")) is not int:
            raise ResultsConflict(f"{path}: a line is not a trial's row; delete the file to run "
                                  "the trials again, or choose another --out")
        rows.append(row)
    return rows


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ResultsConflict(f"{path}: cannot read it ({error}); delete it or choose another --out") from None


def _stored_settings(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError:
        raise ResultsConflict(f"{path}: not JSON; delete it or choose another --out") from None


def stored_checkpoint(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a trial's checkpoint from an earlier run; `ResultsConflict` naming the file
    if it is no readable .npz archive."""
    try:
        return read_npz(path)
    except ArrayFileError as error:  # its message names the file
        raise ResultsConflict(f"{error}; delete it to run that trial from the start") from None
    except OSError as error:
        raise _unreadable_checkpoint(path, error) from None


def _stored_checkpoint(path: Path) -> bytes | None:
    """A trial's checkpoint from an earlier run as the bytes a piece carries, checked to be a
    readable .npz archive."""
    if not path.exists():
        return None
    stored_checkpoint(path)
    try:
        return path.read_bytes()
    except OSError as error:
        raise _unreadable_checkpoint(path, error) from None


def _unreadable_checkpoint(path: Path, error: OSError) -> ResultsConflict:
    return ResultsConflict(f"{path}: cannot read it ({error.strerror or error}); delete it to run that trial "
                           "from the start")


def _append_row(path: Path, row: dict[str, Any]) -> None:
    try:
        with path.open("a") as stream:
            stream.write(json.dumps(row) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
    except OSError as error:
        raise OutputError(path, error) from None


# -- the run ---------------------------------------------------------------------------------------
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


class _Schedule:
    """The trials of a run: waiting, running (in one piece at a time, up to `lanes` trials to a
    piece) and their checkpoints."""

    #: A piece whose worker was lost this many times is not tried again.
    LOSSES = 3

    def __init__(self, experiment: Experiment, spec_data: dict[str, Any], out: Path, todo: list[int],
                 budget_steps: int | None, checkpoint_seconds: float, lanes: int):
        self.experiment, self.spec_data, self.out = experiment, spec_data, out
        self.budget_steps, self.checkpoint_seconds = budget_steps, checkpoint_seconds
        self.ready = list(todo)  # not ended, not in a running piece; seeds in order
        # Up to `lanes` trials side by side in a piece (a block of lanes, `trial.advance_together`).
        self.lanes = lanes
        # Every piece of the run's trials on a worker shares one compilation of the specialised
        # kernel (results are bit-identical either way): worth it for long runs only.
        self.kernel = kernel_for(len(todo) * budget_steps) if budget_steps is not None else "specialised"
        self.checkpoints = {seed: _stored_checkpoint(self.folder(seed) / "checkpoint.npz") for seed in todo}
        self.piece_steps = {seed: FIRST_PIECE_STEPS for seed in todo}
        self.losses = {seed: 0 for seed in todo}
        self.running: dict[Future, tuple[int, ...]] = {}
        self.reports: dict[int, ProgressReport] = {}

    def folder(self, seed: int) -> Path:
        return self.out / "trials" / str(seed)

    def submit(self, workers: Workers, seeds: tuple[int, ...]) -> None:
        experiment = self.experiment
        piece = Piece(experiment.task, experiment.task_options, experiment.protocol, self.spec_data, seeds,
                      self.budget_steps, self.kernel,
                      min(self.piece_steps[seed] for seed in seeds), tuple(self.checkpoints[seed] for seed in seeds))
        self.running[workers.submit(run_piece, piece)] = seeds

    def fill(self, workers: Workers) -> None:
        """Pieces for the ready trials on the free workers: the trials spread evenly, at most
        `lanes` to a piece (a trial that ended leaves its lane to the next one waiting)."""
        while self.ready and len(self.running) < workers.slots:
            size = min(self.lanes, -(-len(self.ready) // (workers.slots - len(self.running))))
            seeds, self.ready = tuple(self.ready[:size]), self.ready[size:]
            self.submit(workers, seeds)

    def progressed(self, result: TrialResult, seconds: float) -> None:
        """A piece ended with this trial still running: keep its checkpoint, size its next."""
        seed = result.seed
        self.checkpoints[seed] = result.checkpoint
        write_atomically(self.folder(seed) / "checkpoint.npz", result.checkpoint)
        self.reports[seed] = result.report
        if result.steps > 0:
            scale = self.checkpoint_seconds / max(seconds, 1e-3)
            self.piece_steps[seed] = int(min(max(result.steps * min(scale, 10.0), 1000), 10**9))
        self.ready = sorted(self.ready + [seed])

    def finished(self, result: TrialResult, rows_path: Path) -> None:
        """A trial ended: its run directory, its row in trials.jsonl, then no more checkpoint."""
        folder = self.folder(result.seed)
        save_trial(folder, self.spec_data, result.weights, result.row)
        _append_row(rows_path, result.row)
        (folder / "checkpoint.npz").unlink(missing_ok=True)
        self.reports.pop(result.seed, None)

    def report(self, done: int, total: int) -> ProgressReport:
        running = sorted(self.reports.items())
        label = "; ".join(report.describe() for _, report in running[:3]) + ("; ..." if len(running) > 3 else "")
        return ProgressReport("trials", done, total, label,
                              {"running": sum(map(len, self.running.values())), "waiting": len(self.ready)})


def run_experiment(experiment: Experiment, trials: int, jobs: int, out: Path, budget_steps: int | None = None,
                   specs: Path = BUNDLED_SPECS, trial_done: TrialDone = lambda row: None,
                   progress: Progress | None = None, cluster: Any = None,
                   checkpoint_seconds: float = CHECKPOINT_SECONDS, lanes: int = 1) -> dict[str, Any]:
    """Run trials with seeds 0..trials-1 (those already in ``out`` are kept, those with a
    checkpoint there resume from it) and summarise. ``jobs`` local worker processes, or
    ``cluster``: a Dask scheduler's address or a ``distributed.Client``. ``lanes``: stream
    trials side by side in one piece, at most (results are the same; one by default, which
    costs the least CPU on every row measured: docs/performance.md, "Whether side by side pays")."""
    make_folder(out)
    with _locked(out):
        wanted = checked_settings(experiment, budget_steps, specs, out)
        write_atomically(out / "experiment.json", json.dumps(wanted, indent=2).encode())
        rows_path = out / "trials.jsonl"
        rows = finished_rows(out, trials)
        done = {row["seed"] for row in rows}
        write_atomically(rows_path, "".join(json.dumps(row) + "\n" for row in rows).encode())
        for row in rows:
            (out / "trials" / str(row["seed"]) / "checkpoint.npz").unlink(missing_ok=True)  # ended after it
            trial_done(row)
        todo = [seed for seed in range(trials) if seed not in done]
        if todo:
            schedule = _Schedule(experiment, wanted["spec_data"], out, todo, budget_steps, checkpoint_seconds, lanes)
            try:
                with _stopped_by_signals():
                    _run(schedule, workers_for(jobs, cluster), rows, rows_path, trials, trial_done, progress)
            except Stopped as stop:  # the figures of the trials that finished, as the end writes them
                stop.results = _write_results(experiment, budget_steps, rows, out) if rows else None
                raise
        return _write_results(experiment, budget_steps, rows, out)


def _write_results(experiment: Experiment, budget_steps: int | None, rows: list[dict[str, Any]],
                   out: Path) -> dict[str, Any]:
    """results.json and trials.csv of the finished trials ``rows``: all of a run's at its end,
    those so far when it is stopped (the summary table marks such a row "N of M trials")."""
    results = results_of(experiment, budget_steps, rows)
    write_atomically(out / "results.json", json.dumps(results, indent=2).encode())
    write_atomically(out / "trials.csv", _csv(rows).encode())
    return results


def results_of(experiment: Experiment, budget_steps: int | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What results.json holds for the finished trials ``rows`` (sorted by seed in place)."""
    rows.sort(key=lambda row: row["seed"])
    return {"experiment": experiment.describe(), "budget_steps": budget_steps,
            "summary": summarise(experiment, rows), "trials": rows}


def _run(schedule: _Schedule, workers: Workers, rows: list[dict[str, Any]], rows_path: Path, trials: int,
         trial_done: TrialDone, progress: Progress | None) -> None:
    try:
        with _stops_deferred():  # submitting starts the workers
            schedule.fill(workers)
        while schedule.running:
            finished, _ = wait(list(schedule.running), return_when=FIRST_COMPLETED)
            for future in finished:
                seeds = schedule.running.pop(future)
                try:
                    result = future.result()
                except TrialCheckpointError as error:
                    path = schedule.folder(error.seed) / "checkpoint.npz"
                    raise ResultsConflict(f"{path}: not a checkpoint of this trial ({error.reason}); "
                                          "delete it to run that trial from the start") from None
                except BaseException as error:
                    if not workers.lost(error) or max(schedule.losses[seed] for seed in seeds) >= schedule.LOSSES:
                        raise
                    for seed in seeds:  # their worker was lost: again from their last checkpoints
                        schedule.losses[seed] += 1
                    schedule.ready = sorted(schedule.ready + list(seeds))
                    continue
                for trial in result.trials:
                    if trial.row is None:
                        schedule.progressed(trial, result.seconds)
                    else:
                        schedule.finished(trial, rows_path)
                        rows.append(trial.row)
                        trial_done(trial.row)
            schedule.fill(workers)
            if progress is not None:
                progress(schedule.report(len(rows), trials))
    finally:
        # The end, a stop signal or an error: stop the workers; finished trials are in trials.jsonl,
        # running ones resume from their checkpoints.
        workers.stop()


def summarise(experiment: Experiment, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Our figures in the published figures' terms."""
    solved = [row["to_success"] for row in rows if row["solved"]]
    summary: dict[str, Any] = {
        "trials": len(rows),
        "success_percent": 100.0 * len(solved) / len(rows) if rows else None,
        "mean_to_success": statistics.fmean(solved) if solved else None,
        "std_to_success": statistics.stdev(solved) if len(solved) > 1 else None,
        "range": f"{min(solved):,}-{max(solved):,}" if solved else None,
        "diverged": sum(bool(row.get("diverged")) for row in rows),
        "seconds_total": round(sum(row["seconds"] for row in rows), 1),
        "steps_total": sum(row["steps"] for row in rows),
    }
    if experiment.unit == "training streams":
        for label in ("perfect", "good", "rest"):
            summary[f"{label}_percent"] = (100.0 * sum(row.get("class") == label for row in rows) / len(rows)
                                           if rows else None)
        summary["mean_test_score"] = statistics.fmean(row["score"] for row in rows) if rows else None
    tested = [row for row in rows if "test_wrong" in row]
    if tested:
        summary["test_wrong"] = statistics.fmean(row["test_wrong"] for row in tested)
        summary["test_mse"] = statistics.fmean(row["test_mse"] for row in tested)
    return summary


def _csv(rows: list[dict[str, Any]]) -> str:
    columns = sorted({key for row in rows for key in row}, key=lambda key: (key != "seed", key))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def comparison(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, ours, published) rows for the table `lstmgraph reproduce` prints."""
    summary, published = results["summary"], results["experiment"]["published"]
    unit = results["experiment"]["unit"]

    def show(value: Any, digits: int = 0) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:,.{digits}f}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    rows = [("trials", show(summary["trials"]), show(results["experiment"]["trials"]))]
    if unit == "training streams":
        rows.append(("% perfect", show(summary["perfect_percent"]), show(published.get("perfect_percent"))))
        rows.append(("% good", show(summary["good_percent"]), show(published.get("good_percent"))))
        rows.append(("% rest", show(summary["rest_percent"]), show(published.get("rest_percent"))))
        rows.append(("mean test stream length", show(summary["mean_test_score"], 1), "-"))
    else:
        rows.append(("% solved", show(summary["success_percent"]), show(published.get("success_percent"))))
    rows.append((f"mean {unit} to success", show(summary["mean_to_success"]), show(published.get("mean_to_success"))))
    rows.append((f"std {unit} to success", show(summary["std_to_success"]), "-"))
    rows.append(("range", show(summary["range"]), show(published.get("range"))))
    if "test_wrong" in summary:
        rows.append(("test sequences wrong (of 2,560)", show(summary["test_wrong"], 1), show(published.get("test_wrong"))))
        rows.append(("test MSE", show(summary["test_mse"], 4), show(published.get("test_mse"), 4)))
    if "finding" in published:
        rows.append(("published finding", "", published["finding"]))
    rows.extend(verdict_rows(results))
    rows.append(("diverged trials", show(summary["diverged"]), "-"))
    rows.append(("CPU time (s, all trials)", show(summary["seconds_total"], 1), "-"))
    return rows
