"""Every named experiment compiles to the paper's network and names its figures."""

from __future__ import annotations

import pytest

from lstmgraph.experiments import EXPERIMENTS, find_experiment

PAPER_WEIGHTS = {"hochreiter1997_erg": 276, "hochreiter1997_erg_4x1": 264, "hochreiter1997_adding": 93,
                 "hochreiter1997_temporal_order_6a": 156, "hochreiter1997_temporal_order_6b": 308,
                 "gers2000_cerg": 424, "gers2002_timing": 17}


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_an_experiment_builds_its_network_and_task(name):
    experiment = EXPERIMENTS[name]
    plan = experiment.plan()
    task = experiment.make_task()
    assert plan.training is not None
    n_inputs = sum(unit.size for unit in plan.units if unit.role == "input")
    n_outputs = sum(unit.size for unit in plan.units if unit.role == "output")
    assert (task.n_inputs, task.n_outputs) == (n_inputs, n_outputs)
    assert experiment.published and experiment.trials > 0
    if not experiment.variants:
        assert plan.n_parameters == PAPER_WEIGHTS[experiment.spec]


def test_variants_remove_what_they_name():
    standard = find_experiment("gers2000-cerg-standard").plan()
    assert standard.n_parameters == 424 - 4 * (7 + 8 + 1)  # no forget gates: 360
    assert not any("forget" in unit.name for unit in standard.units)
    decay = find_experiment("gers2000-cerg-state-decay").plan()
    [self_loop] = [c for c in decay.connections if c.name == "memory.state->memory.state"]
    assert self_loop.init.constant == 0.9
    assert find_experiment("gers2002-pfg-cos-f10-no-peephole").plan().n_parameters == 17 - 3
    [output] = [u for u in find_experiment("gers2002-pfg-cos-f10-peephole").plan().units if u.role == "output"]
    assert output.activation == "identity"


def test_the_2000_wiring_variants_add_and_cut_what_they_name():
    extension = find_experiment("hochreiter1997-erg-3x2-lr0.5-2000-wiring")
    plan = extension.plan()
    # 276 - 72 gate-to-cell/gate weights (6 gates x 12 targets) + 7 output biases + 49 shortcut weights
    assert plan.n_parameters == 276 - 72 + 7 + 49 == 260
    delayed_sources = {c.source for c in plan.connections if c.delay == 1 and c.source != c.target}
    assert delayed_sources == {"memory.cell_output"}
    assert {c.source for c in plan.connections if c.target == "prediction"} == {"memory.cell_output", "symbols",
                                                                                 "bias"}
    assert extension.make_task().targets == "legal"
    assert extension.table.startswith("Table 1 (our extension")


def test_the_paper_rows_are_all_there():
    names = set(EXPERIMENTS)
    assert {"hochreiter1997-erg-3x2-lr0.5", "gers2000-cerg-forget-decay", "gers2002-pfg-cos-f10-peephole",
            "hochreiter1997-adding-t1000", "hochreiter1997-temporal-order-6b"} <= names
    assert sum(e.table == "Table 1" for e in EXPERIMENTS.values()) == 5
    assert sum(e.table == "Table 2" for e in EXPERIMENTS.values()) == 5


def test_an_unknown_name_suggests_the_closest():
    with pytest.raises(KeyError, match="hochreiter1997-erg-3x2-lr0.5"):
        find_experiment("hochreiter1997-erg-3x2-lr05")
