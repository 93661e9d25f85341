"""A program's entries as affine runs: the shape every executor walks and the lowering weighs.

An operation's entries are columns of slot indices (out, a, b, c). Where consecutive entries
step by constant strides they form a run, and an executor computes the indices of a run instead
of loading them (`affine_runs`). The lowering counts runs to choose an operation's entry order
(`entries.by_slot`); the executors flatten the program into them.
"""

from __future__ import annotations

import numpy as np


def affine_runs(columns: np.ndarray) -> np.ndarray:
    """The entries of an operation, columns (4, n) of slot indices, as runs: rows
    ``(n_i, n_j, out0, out_i, out_j, a0, a_i, a_j, b0, b_i, b_j, c0, c_i, c_j)``, run r
    standing for the entries ``index = base + i * stride_i + j * stride_j`` taken in order
    i = 0..n_i-1, j = 0..n_j-1. Consecutive entries with constant differences form a line;
    consecutive lines of one length, stride and base step form a run. A dense matrix-vector
    product is one run, and an executor computes its indices instead of loading them."""
    count = columns.shape[1]
    lines = []  # (start, length, stride vector)
    if count:
        steps = np.diff(columns, axis=1)
        same = np.zeros(max(count - 1, 0) + 1, dtype=bool)
        if count > 2:
            same[1:count - 1] = (steps[:, 1:] == steps[:, :-1]).all(axis=0)
        streak = np.zeros(len(same) + 1, dtype=np.int64)
        for k in range(len(same) - 1, -1, -1):
            streak[k] = streak[k + 1] + 1 if same[k] else 0
        p = 0
        while p < count:
            if p == count - 1:
                lines.append((p, 1, np.zeros(4, dtype=np.int64)))
                break
            length = 2 + streak[p + 1]
            lines.append((p, length, steps[:, p]))
            p += length
    runs = []
    k = 0
    while k < len(lines):
        start, length, stride = lines[k]
        base = columns[:, start]
        rows, outer = 1, np.zeros(4, dtype=np.int64)
        while k + rows < len(lines):
            other, other_length, other_stride = lines[k + rows]
            step = columns[:, other] - columns[:, lines[k + rows - 1][0]]
            if other_length != length or not (other_stride == stride).all() or (rows > 1 and not (step == outer).all()):
                break
            outer = step
            rows += 1
        runs.append([rows, length] + [v for x in range(4) for v in (base[x], outer[x], stride[x])])
        k += rows
    return np.asarray(runs, dtype=np.int64).reshape(-1, 14)
