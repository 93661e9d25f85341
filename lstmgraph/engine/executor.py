"""The numpy reference executor of a lowered program: each operation kind in plain numpy.

Values live in one array ``V`` of shape (slots, trials); an operation reads and writes rows of
it by index (`lstmgraph.program.Op` says what each kind does). The compiled executor
(engine/compiled) runs the same program; tests hold the two equal.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..operations import ACTIVATIONS, LOSSES
from ..program import MINUS_ONE, ONE, Op, Program

_ACTIVATION = list(ACTIVATIONS.values())
_TINY = np.finfo(np.float64).tiny


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
    trials = V.shape[1]
    loss = np.zeros(trials)
    for op in ops:
        kind = op.kind
        out, a, b, c = op.rows
        if kind == "mac":
            if op.distinct:
                V[out] += _take(V, a) * _take(V, b) * _take(V, c)
            else:
                _accumulate(op, V)
        elif kind == "zero":
            V[out] = 0.0
        elif kind == "copy":
            V[out] = _take(V, a)
        elif kind == "scale":
            V[out] *= _take(V, a)
        elif kind == "activate":
            V[op.out] = _ACTIVATION[op.code].apply(V[op.a])
        elif kind == "derive":
            V[op.out] = _ACTIVATION[op.code].derivative(V[op.a], V[op.b])
        elif kind == "softmax":
            V[op.out] = ACTIVATIONS["softmax"].apply(V[op.a])
        elif kind == "complement":
            V[op.out] = 1.0 - V[op.a]
        elif kind == "input":
            V[op.out] = _columns(x, trials)[op.a]
        elif kind == "loss":
            _loss(op, V, _columns(target, trials)[op.c], loss)
        elif kind == "update":
            V[op.a] = momentum * V[op.a] - np.asarray(rate) * V[op.b]
            V[op.out] += V[op.a]
        else:  # pragma: no cover - the program only holds the kinds above
            raise ValueError(f"unknown operation {kind!r}")
    return loss


def _take(V: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
    """V[rows]: a view for a slice, a gathered copy for an index array."""
    return V[rows] if isinstance(rows, slice) else np.take(V, rows, axis=0)


def _accumulate(op: Op, V: np.ndarray) -> None:
    """V[out] += V[a] V[b] V[c] where entries share slots: each slot's own value and then its
    entries, in entry order, summed by one `np.add.reduceat` (sequentially down the rows), so
    every sum is the one the compiled executor forms."""
    slots, starts, a, b, c = op.segments
    terms = np.take(V, a, axis=0)
    for factor in (b, c):
        if factor is not None:  # None: ONE in every row
            terms *= np.take(V, factor, axis=0)
    V[slots] = np.add.reduceat(terms, starts, axis=0)


def _columns(values: np.ndarray, trials: int) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return np.broadcast_to(values[:, None], (len(values), trials)) if values.ndim == 1 else values


def _loss(op: Op, V: np.ndarray, target: np.ndarray, loss: np.ndarray) -> None:
    """One output group: the loss, and dE/dnet into ``op.out``. (The success tests are the
    protocols', `experiments.success`, and the compiled kernels'.)"""
    y = V[op.a]
    missing = np.isnan(target)
    clean = np.where(missing, 0.0, target)
    if LOSSES[op.code] == "sum_of_squares":
        error = np.where(missing, 0.0, y - clean)
        loss += 0.5 * (error * error).sum(axis=0)
        if op.mode:  # softmax: dE/dnet_i = y_i (e_i - sum_j e_j y_j)
            V[op.out] = y * (error - (error * y).sum(axis=0))
        else:
            V[op.out] = V[op.b] * error
        return
    present = ~missing.any(axis=0)
    if op.mode:
        terms = clean * np.log(np.maximum(y, _TINY))
    else:
        terms = clean * np.log(np.maximum(y, _TINY)) + (1 - clean) * np.log(np.maximum(1 - y, _TINY))
    loss -= np.where(present, terms.sum(axis=0), 0.0)
    V[op.out] = np.where(present, y - clean, 0.0)
