"""An operation's entries: the index columns an `Op` holds (`index_array`) and the order of a
multiply-accumulate's entries (`by_slot`, bounded by `MAX_RUNS_GROWTH`), which decides the
affine runs (`runs.affine_runs`) an executor walks."""

from __future__ import annotations

import numpy as np

from .runs import affine_runs


def index_array(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


#: Sorting an operation's entries by slot is kept only where it multiplies the operation's affine
#: runs by at most this. It multiplies no other bundled spec's by more than 2.7; the GRU's gated
#: sums alternate two patterns, and sorting would multiply them by 13.8 (gru) to 112 (gru_torch),
#: each run a kernel line or more (docs/performance.md, "A sum's terms together only where its
#: runs stay few").
MAX_RUNS_GROWTH = 4


def by_slot(out: list[int], *reads: list[int]) -> tuple[np.ndarray, ...]:
    """A multiply-accumulate's entries ordered by the slot they add into, each slot's entries
    in their own order (a stable sort). Where no entry reads a slot the operation writes, every
    slot gets the same sum, added in the same order; a slot's entries then stand together, and
    an executor keeps its sum in a register (a sensitivity's sum over the sources, exact RTRL:
    the specialised kernel's step 3 times faster, docs/performance.md). Else, or where sorting
    breaks the entries into many more affine runs (`MAX_RUNS_GROWTH`), as given."""
    columns = [index_array(column) for column in (out, *reads)]
    if set(columns[0].tolist()) & set(np.concatenate(columns[1:]).tolist()):
        return tuple(columns)
    order = np.argsort(columns[0], kind="stable")
    ordered = tuple(column[order] for column in columns)
    if _run_count(ordered) > MAX_RUNS_GROWTH * _run_count(columns):
        return tuple(columns)
    return ordered


def _run_count(columns) -> int:
    """How many affine runs an executor walks for these entries (columns out, a, b, c; absent
    ones read as slot 0, as `interpreter.flatten` writes them)."""
    padded = np.zeros((4, len(columns[0])), dtype=np.int64)
    padded[:len(columns)] = columns
    return len(affine_runs(padded))
