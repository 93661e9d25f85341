"""The operation kinds over a whole output group, for one trial: the softmax and the loss.

Each is a numba function of one column ``c`` of a slot array ``V`` (slots, columns) and one
trial ``g`` of the per-trial arrays, so every executor calls the same code: the CPU kernels in
a loop over their lanes (``c = g = lane``), the GPU kernel once per trial (its column of the
device or shared slot array, `lstmgraph.engine.gpu`). ``targets`` (steps, planes, outputs,
trials) is read at trial ``gt``: ``g``, or 0 where every trial shares one stream.
"""

from __future__ import annotations

import math

import numba

from ... import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)

#: The smallest positive normal float64: the log's floor in the cross-entropy loss.
_TINY = 2.2250738585072014e-308


@numba.njit(cache=True, nogil=True, inline="always")
def softmax_lane(r, R, V, c):
    """Run ``r`` of ``R``: out = softmax(a) over the group, in column ``c``."""
    n = R[r, 1]
    o0, os, a0, a_s = R[r, 2], R[r, 4], R[r, 5], R[r, 7]
    top = V[a0, c]
    for k in range(1, n):
        top = max(top, V[a0 + k * a_s, c])
    norm = 0.0
    for k in range(n):
        V[o0 + k * os, c] = math.exp(V[a0 + k * a_s, c] - top)
        norm += V[o0 + k * os, c]
    for k in range(n):
        V[o0 + k * os, c] /= norm


@numba.njit(cache=True, nogil=True, inline="always")
def loss_lane(code, mode, r, R, V, c, targets, gt, t, tolerance, wrong, sums, record, g, tr):
    """One output group's loss and dE/dnet from ``targets[t, 0]``; the success test (``wrong``)
    against ``targets[t, -1]``, the values judged: a second plane where a task judges other
    values than it trains on (`Sequence.legal`). NaN: no target, or not judged. The test: with
    ``tolerance`` > 0, every output within it (`success.within_tolerance`); with a negative
    ``tolerance`` (`MOST_ACTIVE`), the units judged 1 more active than every other unit of the
    group where the whole group is judged (`success.most_active_correct`); with 0, none.
    (One array with planes, not a second array: numba passes an array to a specialised
    kernel's section as a dozen scalars, and a second one cost the timing net's 4-lane kernel
    about 10 %.) The outputs go to row ``tr`` of ``record[g]`` where it has rows."""
    n = R[r, 1]
    o0, os, y0, ys, d0, ds, c0, cs = R[r, 2], R[r, 4], R[r, 5], R[r, 7], R[r, 8], R[r, 10], R[r, 11], R[r, 13]
    judged = targets.shape[1] - 1
    lowest_legal, highest_other, whole = math.inf, -math.inf, True
    for k in range(n):
        y = V[y0 + k * ys, c]
        value = targets[t, judged, c0 + k * cs, gt]
        if tolerance > 0.0 and abs(y - value) >= tolerance:  # (False for NaN)
            wrong[g] = True
        elif tolerance < 0.0:
            whole = whole and not math.isnan(value)
            if value > 0.5:
                lowest_legal = min(lowest_legal, y)
            else:
                highest_other = max(highest_other, y)
        if record.shape[1] > 0:
            record[g, tr, c0 + k * cs] = y
    if tolerance < 0.0 and whole and not lowest_legal > highest_other:
        wrong[g] = True
    present = 0
    if code != 0:
        for k in range(n):
            present += not math.isnan(targets[t, 0, c0 + k * cs, gt])
    if code == 0:
        dot = 0.0
        for k in range(n):
            target = targets[t, 0, c0 + k * cs, gt]
            y = V[y0 + k * ys, c]
            err = 0.0 if math.isnan(target) else y - target
            sums[g] += 0.5 * err * err
            if mode == 1:
                V[o0 + k * os, c] = err
                dot += err * y
            else:
                V[o0 + k * os, c] = V[d0 + k * ds, c] * err
        if mode == 1:
            for k in range(n):
                V[o0 + k * os, c] = V[y0 + k * ys, c] * (V[o0 + k * os, c] - dot)
    elif present == n:
        for k in range(n):
            target = targets[t, 0, c0 + k * cs, gt]
            y = V[y0 + k * ys, c]
            if mode == 1:
                sums[g] -= target * math.log(max(y, _TINY))
            else:
                sums[g] -= (target * math.log(max(y, _TINY)) + (1.0 - target) * math.log(max(1.0 - y, _TINY)))
            V[o0 + k * os, c] = y - target
    else:
        for k in range(n):
            V[o0 + k * os, c] = 0.0
