"""What a lowered program is (`lstmgraph.program.model`): operations, their index forms, slots."""

from __future__ import annotations

import numpy as np

from lstmgraph import compile_spec
from lstmgraph.program import ONE, Op, lower
from lstmgraph.program.model import Slots

from conftest import SPECS


def test_rows_are_slices_where_the_slots_are_consecutive_else_the_indices():
    op = Op("mac", "forward", np.array([5, 6, 7]), np.array([9, 3, 4]), np.array([0, 0, 0]), np.array([2]))
    out, a, b, c = op.rows
    assert out == slice(5, 8) and c == slice(2, 3)
    assert isinstance(a, np.ndarray) and a.tolist() == [9, 3, 4]
    assert isinstance(b, np.ndarray) and b.tolist() == [0, 0, 0]  # a repeated slot is not a range


def test_segments_sum_each_slot_s_entries_in_entry_order_after_its_own_value():
    rng = np.random.default_rng(0)
    out = np.array([7, 3, 7, 3, 7])
    a, b = np.array([10, 11, 12, 13, 14]), np.array([15, 16, 17, 18, 19])
    op = Op("mac", "forward", out, a, b, np.full(5, ONE))
    V = rng.normal(size=20)
    V[ONE] = 1.0
    slots, starts, sa, sb, sc = op.segments
    assert slots.tolist() == [3, 7] and sc is None  # c is ONE in every row: left out
    ends = [*starts[1:], len(sa)]
    for slot, start, end in zip(slots, starts, ends):
        total = 0.0
        for row in range(start, end):  # the first row is the slot's own value times ONE
            total += V[sa[row]] * V[sb[row]]
        expected = V[slot]
        for k in np.flatnonzero(out == slot):  # the entries in their order
            expected += V[a[k]] * V[b[k]]
        assert total == expected


def test_slots_are_allocated_as_consecutive_named_regions_after_the_constants():
    slots = Slots()
    assert slots.region("y", "x", 3) == 2 and slots.region("y", "h", 4) == 5
    assert slots.size == 9 and slots.regions[("y", "h")] == 5


def test_a_program_s_phases_keep_the_order_of_its_operations():
    program = lower(compile_spec(SPECS / "gers2002_timing.yaml"))
    position = {id(op): k for k, op in enumerate(program.ops)}
    forward, update = program.phase("forward"), program.phase("update")
    assert forward and update and all(op.phase == "forward" for op in forward)
    both = [position[id(op)] for op in program.phase("update", "forward")]  # asked in another order
    assert both == sorted(both) and len(both) == len(forward) + len(update)
    assert max(position[id(op)] for op in forward) < min(position[id(op)] for op in update)
