"""Stage 5, training: optimiser, data sources, the engines, the training loop and run directories."""

from .data import DataError, DataFile, TaskStream
from .engines import ENGINES, EngineError, TrainingDiverged, select_engine
from .optim import Optimizer
from .rundir import RunDirectory, RunDirectoryError
from .trainer import CheckpointError, Summary, Trainer

__all__ = ["CheckpointError", "DataError", "DataFile", "ENGINES", "EngineError", "Optimizer", "RunDirectory",
           "RunDirectoryError", "Summary", "TaskStream", "Trainer", "TrainingDiverged", "select_engine"]
