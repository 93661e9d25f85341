"""One piece of some trials, run on a worker (`workers.py`): the worker's side of a run.

A `Piece` carries what a worker needs to run part of some trials side by side: per experiment
(`PieceRun`) the task, protocol and spec as data and the cap; per trial its experiment, seed
and last checkpoint (an .npz archive's bytes; None to start). `run_piece` restores the
trials, advances them together (`trial.advance_together`) and returns per trial a
`PieceTrial`: the new checkpoint, or the row and the trained weights. The schedule
(`schedule.py`) sends pieces and keeps what they return.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from ..arrays import npz_arrays, npz_bytes
from ..plan import Plan
from ..progress import ProgressReport
from .experiment import Experiment
from .protocols import Protocol
from .trial import CheckpointMismatch, advance_together, new_trial


class PieceCheckpointError(CheckpointMismatch):
    """A trial's checkpoint that its trial cannot take (written by hand, or by another version);
    it crosses from the worker to the run as the trial's seed, its place in the piece and the
    reason."""

    def __init__(self, seed: int, reason: str, position: int = 0):
        super().__init__(seed, reason, position)
        self.seed, self.reason, self.position = seed, reason, position


@dataclass(frozen=True)
class PieceRun:
    """What a worker needs of one experiment to run its trials. It carries the protocol itself,
    not the experiment's name: a cluster's workers may have another version of lstmgraph, whose
    catalogue may define the row otherwise (the CERG test streams went from 10^5 to 10^6
    symbols), and the trials must run as the client's ``experiment.json`` records."""

    task: str
    task_options: dict[str, Any]
    protocol: Protocol
    spec_data: dict[str, Any]
    budget_steps: int | None
    kernel: str


@dataclass(frozen=True)
class Piece:
    """Some trials, each ``(index in runs, seed)``, about ``steps`` training steps each, from
    their last checkpoints (None: from the start). On the CPU a piece holds one run's trials;
    on the GPU it may hold several runs' (a sweep's settings), which share a population where
    their nets and protocols allow (`trial.advance_together`)."""

    runs: tuple[PieceRun, ...]
    trials: tuple[tuple[int, int], ...]
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
    """Run one piece of some trials (in a worker), side by side where their protocol runs so;
    the results in the piece's order of trials."""
    from ..engine.weights import weights_file_bytes

    start = time.perf_counter()
    plans = [_plan(run.spec_data) for run in piece.runs]
    trials = []
    for position, ((index, seed), checkpoint) in enumerate(zip(piece.trials, piece.checkpoints)):
        run = piece.runs[index]
        trial = new_trial(plans[index], run.task, run.task_options, run.protocol, seed, run.budget_steps, run.kernel,
                          piece.device)
        if checkpoint is not None:
            try:
                trial.restore(npz_arrays(checkpoint))
            except (KeyError, ValueError, TypeError) as error:  # CheckpointMismatch too
                raise PieceCheckpointError(seed, f"{type(error).__name__}: {error}", position) from None
        trials.append(trial)
    steps_before = [trial.steps_trained() for trial in trials]
    reports = advance_together(trials, piece.steps)
    results = []
    for (index, _), trial, report, before in zip(piece.trials, trials, reports, steps_before):
        steps = trial.steps_trained() - before
        if trial.row is not None:
            trial.row.setdefault("class", None)
            results.append(PieceTrial(trial.seed, report, steps, row=trial.row,
                                      weights=weights_file_bytes(plans[index], trial.engine.weights)))
        else:
            results.append(PieceTrial(trial.seed, report, steps, checkpoint=npz_bytes(trial.checkpoint())))
    return PieceResult(time.perf_counter() - start, tuple(results))


def _plan(spec_data: dict[str, Any]) -> Plan:
    """The plan of ``spec_data``, compiled once per worker process."""
    key = json.dumps(spec_data, sort_keys=True)
    if key not in _PLANS:
        _PLANS[key] = Experiment.plan_of(spec_data)
    return _PLANS[key]
