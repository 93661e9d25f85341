"""The order of a multiply-accumulate's entries (`entries.by_slot`)."""

from __future__ import annotations

import numpy as np

from lstmgraph.program.entries import by_slot


def test_entries_are_grouped_by_the_slot_they_add_into_each_slot_s_in_their_order():
    out, a, b = by_slot([5, 3, 5, 3, 7], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24])
    assert out.tolist() == [3, 3, 5, 5, 7]
    assert a.tolist() == [11, 13, 10, 12, 14]
    assert b.tolist() == [21, 23, 20, 22, 24]


def test_entries_that_read_a_slot_the_operation_writes_keep_their_order():
    """Slot 3 is read by the first entry and written by the second: moving the second first
    would change the first's sum."""
    out, a = by_slot([5, 3], [3, 7])
    assert out.tolist() == [5, 3] and a.tolist() == [3, 7]


def test_entries_that_sorting_would_scatter_into_many_more_runs_keep_their_order():
    """out[k] += a[s, k] * b[p(s), k] over 16 sources s and 8 slots k, p a shuffle of the sources
    (a GRU's reset-gated terms): source by source, 8 affine runs; slot by slot, p breaks each
    slot's sum into runs of its own (48), more than `MAX_RUNS_GROWTH` times as many."""
    shuffle = np.array([3, 0, 6, 1, 7, 2, 5, 4, 11, 8, 14, 9, 15, 10, 13, 12])
    source, slot = np.repeat(np.arange(16), 8), np.tile(np.arange(8), 16)
    columns = (10 + slot, 100 + 8 * source + slot, 300 + 8 * shuffle[source] + slot)
    for given, got in zip(columns, by_slot(*columns)):
        assert got.tolist() == given.tolist()
    in_order = by_slot(*columns[:2])  # without the shuffled operand, sorting keeps one run
    assert in_order[0].tolist() == sorted(columns[0].tolist())
