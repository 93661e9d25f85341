"""`Simulator`: what a forward run keeps is bounded before the network runs."""

from __future__ import annotations

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import Simulator
from lstmgraph.engine.weights import initial_weights
from lstmgraph.limits import MAX_RECORD_BYTES, LimitError

from conftest import SPECS


def test_a_run_that_would_keep_too_many_values_is_refused_before_it_runs(monkeypatch):
    """Each step's record holds every slot (weights included): 1,000,000 steps of 200 GRUs would
    keep 1.8 TiB, refused by its size; a run at the limit passes."""
    sim = Simulator(lstmgraph.compile_spec("gru"))
    slots = sim.forward_program.n_slots
    with pytest.raises(LimitError, match=r"1,000,000 steps of 200 networks of gru would keep 1,858.2 GiB .*"
                                         r"more than the limit of 4 GiB \(lstmgraph/limits.py\)"):
        sim.check_records(1_000_000, 200)
    sim.check_records(MAX_RECORD_BYTES // (8 * slots), 1)
    monkeypatch.setattr("lstmgraph.engine.simulator.MAX_RECORD_BYTES", 8 * slots * 3)
    calls = []
    monkeypatch.setattr("lstmgraph.engine.simulator.run_ops", lambda *args, **kwargs: calls.append(1))
    weights = initial_weights(sim.plan)
    assert len(sim.run(weights, np.zeros((3, 4)))[0]) == 3
    with pytest.raises(LimitError, match="4 steps of 1 network of gru"):
        sim.run(weights, np.zeros((4, 4)))
    assert len(calls) == 6  # the three steps of the first run, two phases each: none of the refused run


def test_inputs_weights_and_state_that_do_not_fit_name_what_was_expected():
    """Before: IndexError, KeyError or a broadcasting ValueError from inside the executor."""
    import re
    from lstmgraph.engine import WeightsError
    plan = lstmgraph.compile_spec("gers2000_cerg")
    sim, weights = Simulator(plan), initial_weights(plan, [0, 1])
    wrong = {"inputs of a step have shape (3,); gers2000_cerg expects (7,) or (2, 7)": np.zeros((4, 3)),
             "inputs have shape (7,); expected (steps, 7) or (steps, trials, 7)": np.zeros(7),
             "inputs of a step have shape (3, 7); gers2000_cerg expects (7,) or (2, 7)": np.zeros((4, 3, 7))}
    for message, inputs in wrong.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            sim.run(weights, inputs)
    with pytest.raises(ValueError, match=re.escape("state['memory.state'] has shape (1, 8), expected (2, 8)")):
        sim.run(weights, np.zeros((4, 7)), state={"memory.state": np.zeros((1, 8))})
    with pytest.raises(WeightsError, match="the weights do not fit network 'gers2000_cerg'; missing: "):
        sim.run(initial_weights(lstmgraph.compile_spec("gru")), np.zeros((4, 7)))
    record, _ = sim.step(weights, sim.zero_state(2), np.zeros(7))
    with pytest.raises(ValueError, match=re.escape("targets of a step have shape (3,)")):
        sim.loss(record, np.zeros(3))


def test_a_state_with_a_group_missing_or_unknown_is_refused():
    """Before: an unknown group (a typo) was ignored and a missing one started from zero, silently."""
    import re
    plan = lstmgraph.compile_spec("gers2000_cerg")
    sim, weights = Simulator(plan), initial_weights(plan, [0, 1])
    state = sim.zero_state(2)
    expected = re.escape("gers2000_cerg expects ['memory.cell_output', 'memory.state']")
    for wrong in ({"memory.state": state["memory.state"]}, {**state, "memory.States": state["memory.state"]}):
        with pytest.raises(ValueError, match=expected):
            sim.run(weights, np.zeros((2, 7)), state=wrong)
        with pytest.raises(ValueError, match=expected):
            sim.step(weights, wrong, np.zeros(7))
    assert len(sim.run(weights, np.zeros((2, 7)), state=state)[0]) == 2


def test_no_networks_or_no_records_are_refused_with_what_is_expected():
    """Before: zero_state(0) and RealTimeRecurrentLearning(sim, 0) were taken (empty arrays), and
    signals([]) raised numpy's 'need at least one array to stack'."""
    from lstmgraph.engine.traces import RealTimeRecurrentLearning

    sim = Simulator(lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml"))
    for trials in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="trials must be a whole number >= 1"):
            sim.zero_state(trials)
    with pytest.raises(ValueError, match="trials must be a whole number >= 1"):
        RealTimeRecurrentLearning(sim, 0)
    with pytest.raises(ValueError, match="no records"):
        sim.signals([])
