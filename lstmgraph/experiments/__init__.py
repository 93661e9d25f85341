"""The papers' experiments: success tests, protocols (trials that run in pieces), the catalogue
of named table rows and the runner behind `lstmgraph reproduce` (figures in docs/results.md)."""

from .catalogue import EXPERIMENTS, Experiment, find_experiment
from .protocols import SequenceProtocol, StreamProtocol, make_trial, run_trial, trial_engine
from .trial import Trial

__all__ = ["EXPERIMENTS", "Experiment", "SequenceProtocol", "StreamProtocol", "Trial", "find_experiment",
           "make_trial", "run_trial", "trial_engine"]
