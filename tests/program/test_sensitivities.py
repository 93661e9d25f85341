"""The sensitivities' phases and limits (`sensitivities`): the contract and propagate sums by
slot, exact RTRL refused where its traces are over `MAX_TRACE_TERMS`."""

from __future__ import annotations

import numpy as np

import lstmgraph
from lstmgraph.program import lower

from conftest import SPECS


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

    from lstmgraph.limits import LimitError
    from lstmgraph.program import sensitivities

    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    exact = lower(plan, full_gradient=True)
    monkeypatch.setattr(sensitivities, "MAX_TRACE_TERMS", sum(len(u) for u, _ in exact.trace_entries.values()))
    with pytest.raises(LimitError, match="would need more than [0-9,]+ sensitivities dy/dw"):
        lower(plan, full_gradient=True)
    lower(plan)  # the truncated traces are far fewer
