"""The papers' experiments: protocols (registered classes whose trials run in pieces), the
catalogue of named table rows, results folders, and the schedule of pieces on workers behind
`lstmgraph reproduce` (figures in docs/results.md)."""

from .protocols import PROTOCOLS, Protocol, ProtocolError, protocol_kind
from .sequences import SequenceProtocol  # (each protocol module registers its class)
from .streams import StreamProtocol
from .catalogue import EXPERIMENTS, find_experiment
from .experiment import Experiment
from .trial import Trial, new_trial, run_trial, trial_engine

__all__ = ["EXPERIMENTS", "Experiment", "PROTOCOLS", "Protocol", "ProtocolError", "SequenceProtocol",
           "StreamProtocol", "Trial", "find_experiment", "new_trial", "protocol_kind", "run_trial", "trial_engine"]
