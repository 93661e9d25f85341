"""`run_piece`: a worker's side of a run (the trials of a piece, from the protocol it carries)."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest

from lstmgraph.arrays import npz_bytes
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.piece import Piece, PieceCheckpointError, PieceRun, run_piece


def test_a_piece_runs_the_protocol_it_carries_not_the_catalogue_of_its_worker():
    """A cluster's worker may have another lstmgraph, whose catalogue defines the row otherwise:
    the trial runs by the protocol in the piece (here 3 training streams at most, where the
    catalogue allows 30,000), as the client's experiment.json records it."""
    experiment = find_experiment("gers2000-cerg-standard")
    protocol = replace(experiment.protocol, max_streams=3)
    data, _ = experiment.spec_data()
    piece = Piece((PieceRun(experiment.task, experiment.task_options, protocol, data, None, "auto"),),
                  ((0, 0), (0, 1)), 10 ** 6, (None, None))
    rows = [trial.row for trial in run_piece(piece).trials]
    assert [(row["seed"], row["presented"], row["solved"]) for row in rows] == [(0, 3, False), (1, 3, False)]



def test_a_checkpoint_of_another_trial_is_refused_by_the_worker_with_its_seed():
    """The refusal crosses from a worker process to the run: it pickles with its seed."""
    experiment = find_experiment("gers2002-gts-peephole")
    data, _ = experiment.spec_data()
    plan = experiment.plan()
    trial = experiment.trial(plan, 1, 3000)
    trial.advance(500)
    checkpoint = npz_bytes(trial.checkpoint())
    piece = Piece((PieceRun(experiment.task, experiment.task_options, experiment.protocol, data, 3000, "auto"),),
                  ((0, 0),), 500, (checkpoint,))
    with pytest.raises(PieceCheckpointError) as refused:
        run_piece(piece)
    assert refused.value.seed == 0 and "trial 1's" in refused.value.reason
    again = pickle.loads(pickle.dumps(refused.value))
    assert (again.seed, again.reason) == (0, refused.value.reason)
    assert np.all(np.isfinite(trial.checkpoint()["trial/seconds"]))
