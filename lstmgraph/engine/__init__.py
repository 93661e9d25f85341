"""Stage 5, the numpy engine: the reference executor of the lowered program, BPTT and
(truncated) RTRL, with weights and states by name."""

from ..operations import LOSSES
from .bptt import bptt_gradient
from .gradcheck import gradient_check
from .simulator import Simulator, StepRecord
from .traces import RealTimeRecurrentLearning
from .weights import (Weights, WeightsError, flatten, initial_weights, load_weights, save_weights,
                      unflatten)

__all__ = ["LOSSES", "RealTimeRecurrentLearning", "Simulator", "StepRecord",
           "Weights", "WeightsError", "bptt_gradient", "flatten", "gradient_check", "initial_weights",
           "load_weights", "save_weights", "unflatten"]
