"""Stage 4, the lowered program: a plan as one ordered list of operations over slots, with
every operation kind defined once in `lstmgraph.operations`."""

from ..operations import ACTIVATIONS, GATE_SIDES, LOSSES, PATTERNS
from .lower import lower
from .model import MINUS_ONE, ONE, Op, Program

__all__ = ["ACTIVATIONS", "GATE_SIDES", "LOSSES", "MINUS_ONE", "ONE", "Op",
           "PATTERNS", "Program", "lower"]
