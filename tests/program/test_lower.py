"""The lowering's order of a multiply-accumulate's entries (`lower._by_slot`)."""

from __future__ import annotations

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine.compiled.interpreter import flatten
from lstmgraph.program import lower
from lstmgraph.program.lower import _by_slot

from conftest import SPECS


def test_entries_are_grouped_by_the_slot_they_add_into_each_slot_s_in_their_order():
    out, a, b = _by_slot([5, 3, 5, 3, 7], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24])
    assert out.tolist() == [3, 3, 5, 5, 7]
    assert a.tolist() == [11, 13, 10, 12, 14]
    assert b.tolist() == [21, 23, 20, 22, 24]


def test_entries_that_read_a_slot_the_operation_writes_keep_their_order():
    """Slot 3 is read by the first entry and written by the second: moving the second first
    would change the first's sum."""
    out, a = _by_slot([5, 3], [3, 7])
    assert out.tolist() == [5, 3] and a.tolist() == [3, 7]


def test_entries_that_sorting_would_scatter_into_many_more_runs_keep_their_order():
    """out[k] += a[s, k] * b[p(s), k] over 16 sources s and 8 slots k, p a shuffle of the sources
    (a GRU's reset-gated terms): source by source, 8 affine runs; slot by slot, p breaks each
    slot's sum into runs of its own (48), more than `MAX_RUNS_GROWTH` times as many."""
    shuffle = np.array([3, 0, 6, 1, 7, 2, 5, 4, 11, 8, 14, 9, 15, 10, 13, 12])
    source, slot = np.repeat(np.arange(16), 8), np.tile(np.arange(8), 16)
    columns = (10 + slot, 100 + 8 * source + slot, 300 + 8 * shuffle[source] + slot)
    for given, got in zip(columns, _by_slot(*columns)):
        assert got.tolist() == given.tolist()
    in_order = _by_slot(*columns[:2])  # without the shuffled operand, sorting keeps one run
    assert in_order[0].tolist() == sorted(columns[0].tolist())


@pytest.mark.parametrize("spec,most", [("gru.yaml", 700), ("gru_torch.yaml", 700), ("gers2000_cerg.yaml", 250)])
def test_no_bundled_program_breaks_into_thousands_of_runs(spec, most):
    """Sorting every sum by slot took the GRU nets' programs from 549 to 3,093 runs and from 574
    to 22,021, each a kernel line or more (docs/gpu.md, "Kernels too long to compile")."""
    flat = flatten(lower(lstmgraph.compile_spec(SPECS / spec)))
    assert len(flat.runs) <= most


def test_exact_rtrl_sensitivities_add_each_slot_s_terms_together():
    """In the CERG net's exact-RTRL program every sensitivity and gradient sum is one stretch
    of entries, so the specialised kernel keeps it in a register."""
    program = lower(lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml"), full_gradient=True)
    summed = [op for op in program.ops if op.kind == "mac" and op.phase in ("propagate", "contract")]
    shared = {op.what for op in summed if not op.distinct}  # sums of several entries
    assert "dE/dw += dE/dy(t-1) T(t-1)" in shared
    assert sum("via memory.cell_output->" in what for what in shared) == 4  # the gates and cell inputs: the cell outputs fed back
    for op in summed:
        assert (np.diff(op.out) >= 0).all(), op.what


def _dense_rnn(size: int) -> "lstmgraph.Plan":
    """A hidden group fully recurrent through a carrying delay: exact RTRL's sensitivities grow as
    size^3 and their propagation as size^4."""
    return lstmgraph.compile_plan(lstmgraph.spec_from_data({
        "version": 1, "name": "dense",
        "groups": [{"name": "x", "kind": "input", "size": 2},
                   {"name": "h", "kind": "hidden", "size": size, "activation": "tanh"},
                   {"name": "y", "kind": "output", "size": 1}],
        "connections": [{"from": "x", "to": "h"}, {"from": "h", "to": "h", "delay": 1}, {"from": "h", "to": "y"}]}))


def test_exact_rtrl_on_a_net_too_dense_for_its_program_is_refused_before_it_is_built():
    import pytest

    from lstmgraph.limits import LimitError

    plan = _dense_rnn(100)  # 10,300 weights: 10^6 sensitivities, 10^8 multiply-adds a step
    with pytest.raises(LimitError, match="exact RTRL's traces would need more than 10,000,000 multiply-adds a step.*"
                                         "learning_rule: bptt"):
        lower(plan, full_gradient=True)
    assert not lower(plan).trace_entries  # truncated: the delay carries no gradient, so nothing is traced


def test_sensitivities_past_the_limit_stop_the_analysis_as_they_grow(monkeypatch):
    import pytest

    import importlib

    from lstmgraph.limits import LimitError

    lowering = importlib.import_module("lstmgraph.program.lower")  # the module, not the function it exports

    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    exact = lower(plan, full_gradient=True)
    monkeypatch.setattr(lowering, "MAX_TRACE_TERMS", sum(len(u) for u, _ in exact.trace_entries.values()))
    with pytest.raises(LimitError, match="would need more than [0-9,]+ sensitivities dy/dw"):
        lower(plan, full_gradient=True)
    lower(plan)  # the truncated traces are far fewer
