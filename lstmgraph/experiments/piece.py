"""One piece of some trials, run on a worker (`workers.py`): the worker's side of a run.

A `Piece` carries what a worker needs to run part of some trials of one experiment side by side:
the task, protocol and spec as data, the seeds, the caps and each trial's last checkpoint (an
.npz archive's bytes; None to start). `run_piece` restores the trials, advances them together
(`trial.advance_together`) and returns per trial a `PieceTrial`: the new checkpoint, or the row
and the trained weights. The schedule (`schedule.py`) sends pieces and keeps what they return.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from ..arrays import npz_arrays, npz_bytes
from ..plan import Plan
from ..progress import ProgressReport
from .catalogue import Experiment
from .protocols import Protocol
from .trial import CheckpointMismatch, advance_together, new_trial


class PieceCheckpointError(CheckpointMismatch):
    """A trial's checkpoint that its trial cannot take (written by hand, or by another version);
    it crosses from the worker to the run as the trial's seed and the reason."""

    def __init__(self, seed: int, reason: str):
        super().__init__(seed, reason)
        self.seed, self.reason = seed, reason


@dataclass(frozen=True)
class Piece:
    """The piece carries the protocol itself, not the experiment's name: a cluster's workers may
    have another version of lstmgraph, whose catalogue may define the row otherwise (the CERG
    test streams went from 10^5 to 10^6 symbols), and the trials must run as the client's
    ``experiment.json`` records."""

    task: str
    task_options: dict[str, Any]
    protocol: Protocol
    spec_data: dict[str, Any]
    seeds: tuple[int, ...]
    budget_steps: int | None
    kernel: str
    steps: int
    checkpoints: tuple[bytes | None, ...]
    device: str = "cpu"


@dataclass(frozen=True)
class PieceTrial:
    """One trial after a piece: its checkpoint while it goes on, or its row and trained weights."""

    seed: int
    report: ProgressReport
    steps: int                      # training steps it ran in the piece
    checkpoint: bytes | None = None
    row: dict[str, Any] | None = None
    weights: bytes | None = None


@dataclass(frozen=True)
class PieceResult:
    seconds: float  # wall time of the piece, to size the next
    trials: tuple[PieceTrial, ...]


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
        trial = new_trial(plan, piece.task, piece.task_options, piece.protocol, seed, piece.budget_steps, piece.kernel,
                          piece.device)
        if checkpoint is not None:
            try:
                trial.restore(npz_arrays(checkpoint))
            except (KeyError, ValueError, TypeError) as error:  # CheckpointMismatch too
                raise PieceCheckpointError(seed, f"{type(error).__name__}: {error}") from None
        trials.append(trial)
    steps_before = [trial.steps_trained() for trial in trials]
    reports = advance_together(trials, piece.steps)
    results = []
    for trial, report, before in zip(trials, reports, steps_before):
        steps = trial.steps_trained() - before
        if trial.row is not None:
            trial.row.setdefault("class", None)
            results.append(PieceTrial(trial.seed, report, steps, row=trial.row,
                                      weights=weights_file_bytes(plan, trial.engine.weights)))
        else:
            results.append(PieceTrial(trial.seed, report, steps, checkpoint=npz_bytes(trial.checkpoint())))
    return PieceResult(time.perf_counter() - start, tuple(results))
