"""Stage 6, training: optimiser, data sources, the engines, the training loop, run directories
and training runs (`start_run`, `resume_run`: what `lstmgraph train` does)."""

from .data import DataError, DataFile, TaskStream
from .engines import ENGINES, EngineError, TrainingDiverged, select_engine
from .optim import Optimizer
from ..limits import LimitError
from .rundir import RunDirectory, RunDirectoryError, RunInUse
from .run import RunExists, RunSummary, TrainingRun, resume_run, start_run
from .trainer import CheckpointError, Summary, Trainer

__all__ = ["CheckpointError", "DataError", "DataFile", "ENGINES", "EngineError", "LimitError", "Optimizer",
           "RunDirectory", "RunDirectoryError", "RunExists", "RunInUse", "RunSummary", "Summary", "TaskStream",
           "Trainer", "TrainingDiverged", "TrainingRun", "resume_run", "select_engine", "start_run"]
