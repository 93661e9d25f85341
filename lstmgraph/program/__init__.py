"""Stage 4, the lowered program: a plan as one ordered list of operations over slots, with
every operation kind defined once in `registry`."""

from .lower import FORWARD_STEP, LEARNING_STEP, MINUS_ONE, ONE, Op, Program, lower
from ..operations import ACTIVATIONS, GATE_SIDES, LOSSES, PATTERNS

__all__ = ["ACTIVATIONS", "FORWARD_STEP", "GATE_SIDES", "LEARNING_STEP", "LOSSES", "MINUS_ONE", "ONE", "Op",
           "PATTERNS", "Program", "lower"]
