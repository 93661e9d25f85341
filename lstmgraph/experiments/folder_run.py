"""One experiment's trials into one results folder while they run (`FolderRun`): what the folder
holds, its lock, checkpoints and rows, and its results written (`write_results`). The schedule
(`schedule.py`) runs several at once on one set of workers."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from ..arrays import npz_bytes
from ..engine.compiled.network import kernel_for
from ..files import OutputError, remove_made_folders
from ..training.engines import program_key
from .experiment import Experiment
from .figures import results_figure
from .folder import FINISHED_BEFORE, SETTINGS_KEY, ResultsConflict, ResultsFolder
from .folder_settings import checkpoint_digests, settings, settings_digest
from .piece import PieceRun
from .stops import stops_deferred
from .summary import csv_text, results_of
from .reference import with_reference
from .verdict import settled_outcome

TrialDone = Callable[[dict[str, Any]], None]


def trials_kernel(trials: int, budget_steps: int | None) -> str:
    """The kernel the pieces of ``trials`` trials of at most ``budget_steps`` steps ask for. They
    share one compilation of the specialised kernel (results are bit-identical either way), worth
    it for long runs only (`kernel_for`); a run without a cap is long."""
    return kernel_for(trials * budget_steps) if budget_steps is not None else "specialised"


class FolderRun:
    """One experiment's trials into one results folder, seeds 0..trials-1: what the folder holds
    (read and checked when made, nothing written), then, once opened, its lock, checkpoints and
    rows. Opened when its first piece is due and closed when its last trial ends, so a sweep of
    many settings holds the locks of the few running, not of all."""

    def __init__(self, experiment: Experiment, out: Path | ResultsFolder, trials: int, budget_steps: int | None, specs: Path,
                 device: str, trial_done: TrialDone, until_settled: bool = False):
        self.experiment, self.trials = experiment, trials
        self.folder = out if isinstance(out, ResultsFolder) else ResultsFolder(out)
        self.budget_steps, self.trial_done, self.until_settled = budget_steps, trial_done, until_settled
        self.stopping = False  # settled (`settled`): no more pieces, closed once none runs
        self.label = ""  # what the progress reports put before its trials' ("setting 3, ")
        self.wanted = settings(experiment, budget_steps, specs, device)
        self.folder.reach(create=True)  # (refused: a path that cannot be a folder, a link on the way)
        self.rows, self.todo = self._read()[2:]
        self.digest = settings_digest(self.wanted)  # what its checkpoints carry
        self.kernel = trials_kernel(len(self.todo), budget_steps)
        #: What its pieces compile (`schedule._Schedule.compiles`): its program's kernel and its protocol's driver.
        self.compiles = (program_key(Experiment.plan_of(self.wanted["spec_data"])), self.kernel, experiment.protocol.kind)
        self.checkpoints: dict[int, bytes | None] = {}
        self._lock: ExitStack | None = None
        self.final: dict[str, Any] | None = None  # its results, once closed

    def _read(self) -> tuple[list[dict[str, Any]], bool, list[dict[str, Any]], list[int]]:
        """The folder's rows as stored, whether a kill cut the last, those of seeds in range, and
        the seeds still to run; `ResultsConflict` for trials of other settings or damaged files."""
        self.folder.check_settings(self.wanted, self.experiment.name)
        stored, cut = self.folder.read_rows(self.experiment.protocol, self.experiment.protocol.limit)
        rows = [row for row in stored if row["seed"] < self.trials]
        done = {row["seed"] for row in rows}
        return stored, cut, rows, [seed for seed in range(self.trials) if seed not in done]

    def settled(self) -> bool:
        """With ``until_settled``: whether no outcome of the trials not finished can change the
        verdict of those finished against the published figures (`verdict.settled_outcome`)."""
        if not (self.until_settled and self.rows):
            return False
        results = with_reference(results_of(self.experiment, self.budget_steps, self.rows), self.folder.path,
                                 self.experiment.published)
        return settled_outcome(results, self.trials - len(self.rows), self.experiment.published,
                               self.experiment.trials) is not None

    @property
    def waiting(self) -> list[int]:
        """The seeds still to run: none once settled."""
        return [] if self.stopping or self.settled() else self.todo

    @property
    def opened(self) -> bool:
        return self._lock is not None

    def open(self) -> None:
        """Lock the folder, read it again (another run may have written it since), read the
        checkpoints of the trials to run (checked), then write: the settings, the rows without
        a line a kill cut, no checkpoint for a trial that ended after it."""
        self._lock = ExitStack()
        self._lock.enter_context(self.folder.locked())
        try:
            self._take_up()
        except OutputError:  # the disk refused the first writes: a folder this run made goes again
            self.release()
            remove_made_folders(self.folder.path, self.folder.made)
            raise

    def _take_up(self) -> None:
        stored, cut, self.rows, self.todo = self._read()
        # Its own digest, or an earlier form of it computed from the experiment.json rewritten below.
        digests, kind = checkpoint_digests(self.wanted, self.folder.stored_settings()), self.experiment.protocol.kind
        for seed in self.todo:
            found = self.folder.read_checkpoint(seed, kind, digests)
            self.checkpoints[seed] = found[0] if found is not None else None
            self._stamp(seed, found)
        for seed in self._kept_for_later():
            try:
                self._stamp(seed, self.folder.read_checkpoint(seed, kind, digests))
            except ResultsConflict:
                pass  # (damaged, or of other settings: the run that takes it up names it)
        self.folder.remove_temporaries()  # what killed writes left: locked, no write of ours is under way
        self.folder.write_settings(self.wanted)
        if cut:  # the line a kill cut: that trial runs again
            self.folder.write_rows(stored)
        for row in self.rows:
            self.folder.remove_checkpoint(row["seed"])  # ended after it
            self.trial_done({**row, FINISHED_BEFORE: True})

    def _stamp(self, seed: int, found: tuple[bytes, dict[str, Any]] | None) -> None:
        """A checkpoint read through an earlier form of the digest (`checkpoint_digests`, computed
        from the experiment.json `_take_up` rewrites) written again with the current one, so that
        a run stopped before the trial checkpoints anew still finds it."""
        if found is not None and str(found[1][SETTINGS_KEY]) != self.digest:
            arrays = {name: array for name, array in found[1].items() if name != SETTINGS_KEY}
            self.folder.write_checkpoint(seed, npz_bytes(arrays), self.digest)

    def _kept_for_later(self) -> list[int]:
        """Seeds beyond this run's whose trial folders may hold checkpoints (a later run with
        more trials takes them up)."""
        try:
            return [seed for seed in self.folder.trial_seeds() if seed >= self.trials]
        except OutputError:
            return []

    def piece_run(self) -> PieceRun:
        """What a worker needs of this run (`piece.PieceRun`)."""
        return PieceRun(self.experiment.task, self.experiment.task_options, self.experiment.protocol,
                        self.wanted["spec_data"], self.budget_steps, self.kernel)

    def results(self) -> dict[str, Any] | None:
        """The run's results: as its close wrote them; at a stop, those of the trials finished
        so far, written to the folder if the run had opened it (None if none finished)."""
        if self.final is not None:
            return self.final
        if not self.rows:
            return None
        if not self.opened:  # its folder is not ours to write: the figures only
            return results_of(self.experiment, self.budget_steps, self.rows)
        return write_results(self.folder, self.experiment, self.budget_steps, self.rows)

    def close(self) -> dict[str, Any]:
        """Every trial ended: the run's results written (a stop signal waits for them), its lock let go."""
        try:
            with stops_deferred():
                self.final = write_results(self.folder, self.experiment, self.budget_steps, self.rows)
            return self.final
        finally:
            self.release()

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()


def write_results(folder: ResultsFolder, experiment: Experiment, budget_steps: int | None,
                  rows: list[dict[str, Any]]) -> dict[str, Any]:
    """results.json, trials.csv and results.png of the finished trials ``rows``: all of a run's
    at its end, those so far when it is stopped (the summary table marks such a row "N of M
    trials")."""
    results = results_of(experiment, budget_steps, rows)
    folder.write_results(results, csv_text(rows), results_figure(results))
    return results
