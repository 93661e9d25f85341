"""Stage 5, training: optimiser, data sources, the online training loop and run directories."""

from .data import DataError, DataFile, TaskStream
from .optim import Optimizer
from .rundir import RunDirectory
from .trainer import Summary, Trainer, TrainingDiverged

__all__ = ["DataError", "DataFile", "Optimizer", "RunDirectory", "Summary", "TaskStream",
           "Trainer", "TrainingDiverged"]
