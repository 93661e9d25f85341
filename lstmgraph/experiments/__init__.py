"""The papers' experiments: success tests, protocols, the catalogue of named table rows and
the runner behind `lstmgraph reproduce` (figures in docs/results.md)."""

from .catalogue import EXPERIMENTS, Experiment, find_experiment
from .protocols import SequenceProtocol, StreamProtocol, run_trial

__all__ = ["EXPERIMENTS", "Experiment", "SequenceProtocol", "StreamProtocol", "find_experiment", "run_trial"]
