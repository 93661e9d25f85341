"""The numpy reference executor of a lowered program: each operation by its kind's numpy form.

Values live in one array ``V`` of shape (slots, trials); an operation reads and writes rows of
it by index (`lstmgraph.program.Op` says what each kind does). The numpy forms are the
registry's (`lstmgraph.operations.OPERATION_KINDS`), beside the compiled forms the compiled
executor (engine/compiled) is generated from; tests hold the two executors equal.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..operations import OPERATION_KINDS, NumpyStep
from ..program import MINUS_ONE, ONE, Op, Program

_NUMPY = {name: kind.numpy for name, kind in OPERATION_KINDS.items()}


def new_values(program: Program, trials: int) -> np.ndarray:
    """A zeroed slot array with its constants set."""
    values = np.zeros((program.n_slots, trials))
    values[ONE] = 1.0
    values[MINUS_ONE] = -1.0
    return values


def run_ops(ops: Sequence[Op], V: np.ndarray, x: np.ndarray | None = None, target: np.ndarray | None = None,
            rate: np.ndarray | float = 0.0, momentum: float = 0.0) -> np.ndarray:
    """Run operations on ``V`` in place. ``x``: the step's inputs (n_inputs, trials) or
    (n_inputs,); ``target``: its targets, likewise (NaN: no target). Returns the step's loss
    per trial."""
    step = NumpyStep(x, target, rate, momentum, np.zeros(V.shape[1]))
    for op in ops:
        _NUMPY[op.kind](op, V, step)
    return step.loss
