"""The papers' experiments: success tests, protocols, the catalogue of named table rows and
the runner behind `lstmgraph reproduce` (figures in docs/results.md)."""

from .catalogue import EXPERIMENTS, Experiment, find_experiment
from .network import OnlineNetwork
from .protocols import SequenceProtocol, StreamProtocol, run_trial

__all__ = ["EXPERIMENTS", "Experiment", "OnlineNetwork", "SequenceProtocol", "StreamProtocol", "find_experiment",
           "run_trial"]
