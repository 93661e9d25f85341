"""Stage 5, training: optimiser, data sources, the engines, the training loop and run directories."""

from .data import DataError, DataFile, TaskStream
from .engines import ENGINES, EngineError, TrainingDiverged, select_engine
from .optim import Optimizer
from .rundir import RunDirectory
from .trainer import Summary, Trainer

__all__ = ["DataError", "DataFile", "ENGINES", "EngineError", "Optimizer", "RunDirectory", "Summary",
           "TaskStream", "Trainer", "TrainingDiverged", "select_engine"]
