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
    columns = np.asarray(columns, dtype=np.int64)
    starts, lengths = _lines(columns)
    if not len(starts):
        return np.zeros((0, 14), dtype=np.int64)
    # Per line: its base entry and its stride (the step after its first entry; none for one entry).
    bases = columns[:, starts].T.tolist()
    steps = np.zeros((len(starts), 4), dtype=np.int64)
    long = lengths > 1
    steps[long] = (columns[:, starts[long] + 1] - columns[:, starts[long]]).T
    strides = steps.tolist()
    lengths = lengths.tolist()
    runs = []
    k = 0
    while k < len(lengths):
        length, stride, base = lengths[k], strides[k], bases[k]
        rows, outer = 1, [0, 0, 0, 0]
        while k + rows < len(lengths):
            nxt = k + rows
            step = [x - y for x, y in zip(bases[nxt], bases[nxt - 1])]
            if lengths[nxt] != length or strides[nxt] != stride or (rows > 1 and step != outer):
                break
            outer = step
            rows += 1
        runs.append([rows, length] + [v for x in range(4) for v in (base[x], outer[x], stride[x])])
        k += rows
    return np.asarray(runs, dtype=np.int64).reshape(-1, 14)


def _lines(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries cut greedily into lines, each as long as its differences stay constant:
    (first entry, length) per line. A line of two or more takes the step after its first entry
    and every later entry whose step repeats it; the next line starts after its last."""
    count = columns.shape[1]
    if count == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    steps = np.diff(columns, axis=1)
    # repeats[k]: step k+1 equals step k; streak[k]: how many such repeats follow from k on.
    repeats = (steps[:, 1:] == steps[:, :-1]).all(axis=0) if count > 2 else np.zeros(0, dtype=bool)
    positions = np.arange(len(repeats) + 1)
    next_break = np.where(np.append(~repeats, True), positions, len(repeats))
    streak = (np.minimum.accumulate(next_break[::-1])[::-1] - positions).tolist()
    starts, lengths = [], []
    p = 0
    while p < count:
        length = 1 if p == count - 1 else 2 + streak[p]
        starts.append(p)
        lengths.append(length)
        p += length
    return np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
