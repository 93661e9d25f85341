"""Stage 4, the engines: the numpy reference executor, BPTT and (truncated) RTRL."""

from .bptt import bptt_gradient
from .gradcheck import gradient_check
from .losses import LOSSES, loss_and_delta
from .simulator import Simulator, StepRecord
from .traces import RealTimeRecurrentLearning, TraceLayout
from .weights import (Weights, WeightsError, flatten, initial_weights, load_weights, save_weights,
                      unflatten)

__all__ = ["LOSSES", "RealTimeRecurrentLearning", "Simulator", "StepRecord", "TraceLayout",
           "Weights", "WeightsError", "bptt_gradient", "flatten", "gradient_check", "initial_weights",
           "load_weights", "loss_and_delta", "save_weights", "unflatten"]
