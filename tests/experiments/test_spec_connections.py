"""`spec_connections`: a spec's connections by FROM->TO pair, as the sweep keys change them."""

from __future__ import annotations

import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.spec_connections import connection_pairs, set_connection_init
from lstmgraph.experiments.sweep_keys import KEYS
from lstmgraph.experiments.sweep_values import SweepError

ERG = find_experiment("hochreiter1997-erg-3x2-lr0.5")


def test_a_connection_of_a_multi_target_entry_is_split_out_in_the_order_the_graph_expands():
    for target in ("symbols->memory.input_gate", "memory.input_gate->memory.output_gate"):
        data = ERG.spec_data()[0]
        pairs = connection_pairs(data)
        set_connection_init(data, target, {"constant": 0.25})
        assert connection_pairs(data) == pairs
        (entry,) = [c for c in data["connections"] if f"{c['from']}->{c['to']}" == target]
        assert entry["init"] == {"constant": 0.25}
    changed = KEYS["init.FROM->TO"].apply(ERG, "memory.input_gate->memory.output_gate", 0.25).plan()
    assert [c.name for c in changed.connections] == [c.name for c in ERG.plan().connections]
    with pytest.raises(SweepError, match="no connection nothing->here"):
        set_connection_init(data, "nothing->here", {"constant": 0})
