"""Every named experiment compiles to the paper's network and names its figures; a
deterministic task's experiment runs one test stream per test phase, with the same result."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lstmgraph.experiments import EXPERIMENTS, find_experiment, run_trial, trial_engine
from lstmgraph.experiments.data import StreamData, data_rng
from lstmgraph.experiments.streams import run_streams_reference, stream_score

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


@pytest.mark.parametrize("paper_row", ["gers2002-msd-f10-peephole", "gers2002-pfg-cos-f10-peephole",
                                       "gers2002-pfg-cos-f10-no-peephole"])
def test_a_forget_open_row_changes_only_the_forget_gate_s_initial_bias(paper_row):
    paper, extension = find_experiment(paper_row), find_experiment(f"{paper_row}-forget-open")
    paper_plan, extension_plan = paper.plan(), extension.plan()
    assert extension_plan.n_parameters == paper_plan.n_parameters
    assert [u.activation for u in extension_plan.units] == [u.activation for u in paper_plan.units]
    paper_inits = {c.name: c.init for c in paper_plan.connections}
    changed = {c.name: (paper_inits[c.name], c.init) for c in extension_plan.connections
               if c.init != paper_inits[c.name]}
    assert list(changed) == ["bias->memory.forget_gate"]
    [(paper_init, extension_init)] = changed.values()
    assert list(paper_init.values) == [-2.0] and extension_init.constant == 2.0
    assert (extension.protocol, extension.task_options, extension.published, extension.learning_rate,
            extension.momentum) == (paper.protocol, paper.task_options, paper.published, paper.learning_rate,
                                    paper.momentum)
    assert extension.table == "text (our extension, not a paper row)" and paper_row in extension.note


def test_the_paper_rows_are_all_there():
    names = set(EXPERIMENTS)
    assert {"hochreiter1997-erg-3x2-lr0.5", "gers2000-cerg-forget-decay", "gers2002-pfg-cos-f10-peephole",
            "hochreiter1997-adding-t1000", "hochreiter1997-temporal-order-6b"} <= names
    assert sum(e.table == "Table 1" for e in EXPERIMENTS.values()) == 5
    assert sum(e.table == "Table 2" for e in EXPERIMENTS.values()) == 5


def test_an_unknown_name_suggests_the_closest():
    with pytest.raises(KeyError, match="hochreiter1997-erg-3x2-lr0.5"):
        find_experiment("hochreiter1997-erg-3x2-lr05")


def test_deterministic_tasks_run_one_test_stream_and_say_so():
    deterministic = {name for name, e in EXPERIMENTS.items() if e.deterministic}
    pfg = {"gers2002-pfg-cos-f10-peephole", "gers2002-pfg-cos-f10-no-peephole", "gers2002-pfg-cos-f25-peephole",
           "gers2002-pfg-tri-f10-peephole", "gers2002-pfg-rec-f10-peephole"}
    f25 = {"gers2002-pfg-tri-f25-peephole", "gers2002-pfg-rec-f25-peephole"}
    assert pfg | f25 | {f"{name}-forget-open" for name in pfg} == deterministic
    for name, experiment in EXPERIMENTS.items():
        if experiment.protocol.kind != "streams":
            continue
        if name in deterministic:
            assert experiment.protocol.test_streams == 1
            assert "then 1 frozen test stream of" in experiment.describe()["protocol"]
            assert "deterministic_task" in experiment.describe()
        elif experiment.paper.startswith("Gers, Schraudolph"):  # seed 002, line 258: one test a training stream
            assert experiment.protocol.test_streams == 1 and "deterministic_task" not in experiment.describe()
        else:
            assert experiment.protocol.test_streams == 10 and "deterministic_task" not in experiment.describe()
    # replace() keeps it so
    assert replace(find_experiment("gers2002-pfg-cos-f10-peephole"), trials=2).protocol.test_streams == 1


def test_every_row_judges_by_its_task_s_declared_test():
    """The success test is declared once, by the task (`lstmgraph.success`); each row's protocol
    sets the same (a `--protocol-option` may change it for a run)."""
    for name, experiment in EXPERIMENTS.items():
        assert experiment.protocol.success_test == experiment.make_task().success_test, name


def test_a_deterministic_task_s_test_streams_are_the_same_stream():
    """What makes one test stream enough: every test stream starts at a sequence start from a
    zero state with frozen weights, and a deterministic task's data from any sequence start on
    are the same; so the scores are equal (here after some training, each test stream running
    several steps before its first error)."""
    experiment = find_experiment("gers2002-pfg-cos-f10-peephole")
    plan = experiment.plan()
    network = trial_engine(plan, 3)
    protocol = replace(experiment.protocol, tolerance=0.51, test_limit=50, max_streams=300)
    run_streams_reference(network, experiment.make_task(), protocol, 3)
    testing = StreamData(experiment.make_task(), data_rng(3, 1))
    scores, windows = [], []
    for _ in range(10):
        testing.ensure(protocol.test_limit, protocol.unit)
        windows.append((testing.inputs[testing.position:testing.position + 500].copy(),
                        testing.targets[testing.position:testing.position + 500].copy()))
        scores.append(stream_score(network, testing, protocol, protocol.test_limit, learn=False))
    assert len(set(scores)) == 1, scores
    assert 1 < scores[0][1] < protocol.test_limit * 10, scores  # (periods right, steps run)
    for inputs, targets in windows[1:]:
        np.testing.assert_array_equal(inputs, windows[0][0])
        np.testing.assert_array_equal(targets, windows[0][1])


@pytest.mark.parametrize("tolerance, solved", [(0.3, False), (0.51, True)])
def test_a_pfg_trial_s_row_is_the_same_with_1_and_10_test_streams(tolerance, solved):
    experiment = find_experiment("gers2002-pfg-cos-f10-peephole")
    plan = experiment.plan()
    rows = []
    for streams in (1, 10):
        protocol = replace(experiment.protocol, test_streams=streams, tolerance=tolerance, test_limit=20,
                           max_streams=1000)
        row = run_trial(trial_engine(plan, 3), experiment.make_task(), protocol, 3)
        row.pop("seconds")
        rows.append(row)
    assert rows[0] == rows[1] and rows[0]["solved"] is solved


def test_the_2002_rows_follow_seed_002():
    """Seed 002: one test stream after each training stream (line 258); NMSD one interval a
    training stream from a reset state (line 286), momentum 0.99 (line 265); F in {10, 25} for the
    PFG waves (line 408); no MSD figure, so the MSD row is not judged."""
    rows = {name: e for name, e in EXPERIMENTS.items() if e.paper.startswith("Gers, Schraudolph")}
    assert all(e.protocol.test_streams == 1 for e in rows.values())
    for name in ("gers2002-nmsd-f10-peephole", "gers2002-nmsd-f10-no-peephole"):
        nmsd = rows[name]
        assert (nmsd.protocol.train_limit, nmsd.protocol.reset_each_sequence, nmsd.momentum) == (1, True, 0.99)
        assert nmsd.make_task().continual is False and nmsd.protocol.max_streams == 100_000_000
    assert {"gers2002-pfg-tri-f25-peephole", "gers2002-pfg-rec-f25-peephole"} <= set(rows)
    assert rows["gers2002-pfg-rec-f25-peephole"].task_options == {"shape": "rectangle", "period": 25, "length": 25}
    assert "perfect_percent" not in rows["gers2002-msd-f10-peephole"].published
    assert "perfect_percent" not in rows["gers2002-msd-f10-peephole-forget-open"].published


def test_a_committed_folder_is_judged_by_the_row_as_the_catalogue_reads_it_now():
    """A run records the published figures of its day; the tables judge by the catalogue's (the
    NTO findings were read as figures after their folders ran), but never a spec's trials that
    only bear a row's name (a printed spec swept as a spec: before, judged against the paper)."""
    from lstmgraph.experiments.catalogue import with_current_reading

    row = find_experiment("gers2000-nto-forget-bias1")
    recorded = {"experiment": {"name": row.name, "paper": row.paper, "table": row.table, "trials": 3,
                               "published": {"finding": "about 3 times slower than standard LSTM"}}}
    now = with_current_reading(recorded)["experiment"]
    assert now["published"] == row.published and now["trials"] == 10
    assert now["published"]["mean_ratio"] == 3 and recorded["experiment"]["trials"] == 3
    gone = {"experiment": {"name": "no-longer-a-row", "trials": 3, "published": {}}}
    assert with_current_reading(gone) is gone
    spec = {"experiment": {**recorded["experiment"], "paper": "your spec", "table": "specs/x.yaml", "published": {}}}
    assert with_current_reading(spec) is spec
