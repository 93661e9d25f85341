"""What a results folder holds, read without running a trial (`lstmgraph reproduce --status`).

A row at the papers' trial counts can take many sittings (docs/results.md, "Not run yet"), and
between them, or while a run writes it, its folder says how far it got: the finished trials'
figures and verdict so far (as `reproduce` prints them at the end, from the same rows), each
checkpointed trial's place (units presented and steps trained, CPU time so far), the trials not
started, whether the same command would resume the folder or refuse it (naming the setting
that differs), and whether a run holds the folder now (its lock tried, not taken). The folder is
only read, through `folder.ResultsFolder`: its files are written atomically, so a run may be
writing it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import BUNDLED_SPECS
from .experiment import Experiment
from .folder import ResultsConflict, ResultsFolder
from .folder_settings import checkpoint_digests, run_settings, settings
from .summary import no_verdict_reason, results_of, verdict_words
from .trial import checkpoint_place
from .reference import with_reference
from .verdict import REFERENCE, not_judged_yet, settled_verdict, trials_left_note


class FolderError(Exception):
    """The folder is not a results folder (missing, or no run has recorded its settings there)."""


class OtherExperiment(ResultsConflict):
    """The folder holds another experiment's trials: none of them is judged as this one's."""


@dataclass(frozen=True)
class Checkpointed:
    """A trial that has started and not ended: where its last checkpoint stands."""

    seed: int
    presented: int
    steps: int
    seconds: float


@dataclass(frozen=True)
class FolderStatus:
    """``results``: results.json's content for the finished trials (``trials`` wanted);
    ``conflict``: why the same command would refuse the folder, None if it resumes it;
    ``limit``: the most units a trial presents (the protocol's); ``holder``: the run writing
    the folder now (its lock's text), None if none is."""

    out: Path
    trials: int
    results: dict[str, Any]
    checkpointed: list[Checkpointed]
    waiting: list[int]
    conflict: str | None
    limit: int
    holder: str | None = None

    @property
    def all_finished(self) -> bool:
        """Every trial is finished: the same command runs none (it writes the summary files again)."""
        return not self.checkpointed and not self.waiting

    @property
    def settled(self) -> str | None:
        """The verdict if no outcome of the trials not finished can change it, else None (and
        None for a run that gets none: `no_verdict_reason`)."""
        if no_verdict_reason(self.results, self.trials):
            return None
        return settled_verdict(self.results, self.trials - len(self.results["trials"]))

    @property
    def verdict_so_far(self) -> str:
        """The verdict so far, and whether the trials not finished can change it; or why a run
        of fewer trials than the paper's, or one a cap stopped, gets none."""
        now = verdict_words(self.results, self.trials)  # (the trials asked, not those finished: a line above counts them)
        if now.startswith("none for a run of"):
            return now
        left = trials_left_note(self.results, self.trials - len(self.results["trials"]))
        if left and self.settled is None:  # as the results tables say it (`results_table.folder_verdict`)
            return not_judged_yet(now, left)
        return f"{now}; {left}" if left else now

    def as_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "trials": self.trials, "resumes": self.conflict is None,
                "conflict": self.conflict, "limit": self.limit, "in_use_by": self.holder,
                "checkpointed": [vars(trial) for trial in self.checkpointed], "waiting": self.waiting,
                "verdict": self.verdict_so_far, "settled_verdict": self.settled,
                "results": {key: value for key, value in self.results.items() if key != REFERENCE}}


def folder_status(experiment: Experiment, trials: int, out: str | Path, budget_steps: int | None = None,
                  specs: Path = BUNDLED_SPECS) -> FolderStatus:
    """The state of ``out`` for a run of ``trials`` trials of ``experiment`` (seeds 0..trials-1)
    with ``budget_steps`` and the specs in ``specs``: what the run would find there."""
    out = Path(out)
    folder = ResultsFolder(out)
    if not out.is_dir():
        raise FolderError(f"{out}: no such folder; nothing has run there")
    stored = folder.stored_settings()
    if stored is None:
        raise FolderError(f"{out}: no experiment.json, so no `lstmgraph reproduce` has run there")
    wanted = settings(experiment, budget_steps, specs)
    if run_settings(stored).get("name") != run_settings(wanted).get("name"):  # (a varied file by its digest)
        name = stored.get("name")
        shown = json.dumps(name)[:200] if isinstance(name, str) else "an experiment without a name"
        raise OtherExperiment(f"{out} holds trials of {shown}, not of {experiment.name}, so it says nothing "
                              f"of {experiment.name} (no verdict); name the experiment it holds, or the folder "
                              f"that holds {experiment.name}'s trials")
    try:
        folder.check_settings(wanted, experiment.name)
        conflict = None
    except ResultsConflict as refused:
        conflict = str(refused)
    protocol = experiment.protocol
    try:
        rows, checkpointed, waiting = _trials(folder, protocol, trials, checkpoint_digests(stored))
    except ResultsConflict as damaged:  # a damaged file, named first; then why this command would not run there
        if conflict is not None:
            raise ResultsConflict(f"{damaged} (besides, this command would not run there: {conflict})") from None
        raise
    ran_with = stored.get("budget_steps")  # (the folder's cap judges its trials, not this command's)
    budget = ran_with if type(ran_with) is int and ran_with > 0 else None
    results = with_reference(results_of(experiment, budget, rows), out, experiment.published)
    return FolderStatus(out, trials, results, checkpointed, waiting, conflict, protocol.limit, folder.holder())


def _trials(folder: ResultsFolder, protocol, trials: int,
            digests: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[Checkpointed], list[int]]:
    """The rows of the finished trials among seeds 0..trials-1, the checkpointed trials (their
    checkpoints checked against the folder's settings, ``digests``) and the trials not started."""
    rows = [row for row in folder.read_rows(protocol, protocol.limit)[0] if row["seed"] < trials]
    ended = {row["seed"] for row in rows}
    checkpointed, waiting = [], []
    for seed in range(trials):
        if seed in ended:
            continue
        found = folder.read_checkpoint(seed, protocol.kind, digests)
        if found is None:
            waiting.append(seed)
            continue
        try:
            checkpointed.append(Checkpointed(seed, *checkpoint_place(found[1])))
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ResultsConflict(f"{folder.checkpoint_path(seed)}: not a trial's checkpoint (no {error}); delete "
                                  "it to run that trial from the start") from None
    return rows, checkpointed, waiting


def seed_ranges(seeds: list[int]) -> str:
    """Sorted seeds as ranges, e.g. [1, 2, 3, 7] -> "1-3, 7"."""
    runs: list[list[int]] = []
    for seed in seeds:
        if runs and seed == runs[-1][1] + 1:
            runs[-1][1] = seed
        else:
            runs.append([seed, seed])
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)
