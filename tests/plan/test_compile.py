"""Compiled plans of the bundled specs: exact parameter counts, step order, layout, flags."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import lstmgraph
from lstmgraph.plan.summary import summarize

from conftest import SPECS

LSTM_1997 = ("memory.input_gate", "memory.cell_input", "memory.state", "memory.output_gate",
             "memory.squashed_state", "memory.cell_output")
LSTM_2000 = ("memory.forget_gate",) + LSTM_1997
MODERN = tuple(name.replace("memory.", "lstm.") for name in LSTM_2000)

BUNDLED = {
    "hochreiter1997_erg": (276, LSTM_1997 + ("prediction",)),
    "hochreiter1997_erg_4x1": (264, LSTM_1997 + ("prediction",)),
    "hochreiter1997_adding": (93, LSTM_1997 + ("sum",)),
    "hochreiter1997_temporal_order_6a": (156, LSTM_1997 + ("class",)),
    "hochreiter1997_temporal_order_6b": (308, LSTM_1997 + ("class",)),
    "gers2000_cerg": (424, LSTM_2000 + ("prediction",)),
    "gers2000_cerg_no_shortcut": (375, LSTM_2000 + ("prediction",)),
    "gers2002_timing": (17, LSTM_2000 + ("target",)),
    "modern_lstm": (443, MODERN + ("class",)),
    "gru": (339, ("reset", "update", "candidate", "h", "class")),
    "gru_torch": (363, ("reset", "update", "candidate", "h", "class")),
    "rnn": (131, ("h", "class")),
    "textbook_single_forget_gate": (72, ("forget", "candidate", "h", "output_gate", "squashed", "y")),
    "textbook_multiple_forget_gates": (144, ("forget_1", "forget_2", "forget_3", "candidate_2",
                                             "candidate_3", "h", "output_gate", "squashed", "y")),
}


def test_every_bundled_spec_is_listed_here():
    assert {path.stem for path in SPECS.glob("*.yaml")} == set(BUNDLED)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_spec_parameters_and_order(name):
    plan = lstmgraph.compile_spec(SPECS / f"{name}.yaml")
    parameters, order = BUNDLED[name]
    assert plan.n_parameters == parameters
    assert plan.execution_order == order
    assert plan.name == name


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_parameter_slots_tile_one_flat_vector(name):
    plan = lstmgraph.compile_spec(SPECS / f"{name}.yaml")
    offset = 0
    for slot in plan.parameters:
        assert slot.offset == offset and slot.size == math.prod(slot.shape)
        assert plan.connection[slot.connection].trainable
        offset += slot.size
    assert offset == plan.n_parameters


def test_cerg_shapes_follow_rows_receiving_columns_sending():
    plan = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    shapes = {slot.connection: slot.shape for slot in plan.parameters}
    assert shapes["symbols->memory.cell_input"] == (8, 7)
    assert shapes["memory.cell_output->memory.input_gate"] == (4, 8)
    assert shapes["symbols->prediction"] == (7, 7)
    assert shapes["bias->memory.forget_gate"] == (4, 1)
    groups = {"cell inputs": 0, "gates": 0, "outputs": 0}
    for slot in plan.parameters:
        role = plan.unit[plan.connection[slot.connection].target].role
        key = "outputs" if role == "output" else "cell inputs" if role == "cell_input" else "gates"
        groups[key] += slot.size
    assert groups == {"cell inputs": 120, "gates": 192, "outputs": 112}


def test_the_1997_truncation_is_the_default_and_can_be_overridden():
    cerg = lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")
    carries = {c.name: c.gradient for c in cerg.connections}
    assert not carries["memory.cell_output->memory.input_gate"]
    assert not carries["memory.cell_output->memory.cell_input"]
    assert carries["memory.cell_output->prediction"] and carries["symbols->memory.cell_input"]
    assert carries["memory.state->memory.state"]
    modern = lstmgraph.compile_spec(SPECS / "modern_lstm.yaml")
    assert all(c.gradient for c in modern.connections)


def test_peepholes_read_the_state_the_2002_way():
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    peepholes = {c.target: (c.delay, c.gradient, c.shape) for c in plan.connections
                 if c.pattern == "peephole"}
    assert peepholes == {"memory.input_gate": (1, False, (1, 1)),
                         "memory.forget_gate": (1, False, (1, 1)),
                         "memory.output_gate": (0, False, (1, 1))}


def test_peephole_shape_is_blocks_by_cells(write_spec):
    plan = lstmgraph.compile_spec(write_spec("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: m, kind: memory_block, blocks: 3, cells_per_block: 2, gates: [input, output]}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: [m.cell_input, m.input_gate, m.output_gate]}
          - {from: m.state, to: [m.input_gate, m.output_gate], pattern: peephole}
          - {from: m.cell_output, to: y}
        """))
    assert plan.connection["m.state->m.input_gate"].shape == (3, 2)
    assert plan.n_parameters == 6 + 3 + 3 + 6 + 6 + 6


def test_delayed_sources_and_incoming():
    plan = lstmgraph.compile_spec(SPECS / "hochreiter1997_erg.yaml")
    assert plan.delayed_sources == ("memory.input_gate", "memory.state", "memory.output_gate",
                                    "memory.cell_output")
    assert [c.source for c in plan.incoming["memory.state"]] == ["memory.cell_input", "memory.state"]


def test_summary_is_plain_data():
    import json
    summary = summarize(lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml"))
    assert json.loads(json.dumps(summary)) == summary
    assert summary["parameters"] == 17
    assert sum(summary["parameters_per_connection"].values()) == 17


def test_spec_from_data_compiles_without_a_file():
    from lstmgraph import compile_plan, spec_from_data
    import yaml
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    assert compile_plan(spec_from_data(data)).n_parameters == 131


def test_the_plan_carries_the_settings_resolved(tmp_path, monkeypatch):
    """What later stages need of the spec comes with the plan, resolved; the document does not."""
    import numpy as np
    import yaml
    monkeypatch.chdir(tmp_path)
    (tmp_path / "somewhere" / "inputs").mkdir(parents=True)
    for path in ("somewhere/inputs/data.npz", "abs.npz"):  # (validation reads a data file)
        np.savez(tmp_path / path, inputs=np.zeros((2, 4)), targets=np.full((2, 3), 1 / 3))
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["init"] = {"seed": 7, "uniform": 0.2}
    data["training"].pop("task")
    data["training"]["data"] = "inputs/data.npz"
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data, "somewhere/rnn.yaml"))
    assert not hasattr(plan, "document")
    assert (plan.init.seed, plan.init.uniform) == (7, (-0.2, 0.2))
    assert plan.training.seed == 7                                  # the data seed defaults to init.seed
    assert plan.training.data == str(Path("somewhere/inputs/data.npz").absolute())  # joined to the spec's folder
    assert plan.source.filename == "somewhere/rnn.yaml"
    assert plan.resolved_spec["training"]["data"] == str(Path("somewhere/inputs/data.npz").absolute())
    assert "seed" not in plan.resolved_spec["training"]             # as written: spec.yaml keeps the default
    data["training"].update(seed=3, data=str(tmp_path / "abs.npz"))
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data(data, "somewhere/rnn.yaml"))
    assert (plan.training.seed, plan.training.data) == (3, str(tmp_path / "abs.npz"))
    assert lstmgraph.compile_plan(lstmgraph.spec_from_data({**data, "training": None})).training is None


def test_a_task_keeps_its_options_in_the_resolved_spec():
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    assert plan.resolved_spec["training"]["task"] == {"name": "periodic_function", "shape": "cosine", "period": 10}
    assert "$schema" not in plan.resolved_spec
    again = lstmgraph.compile_plan(lstmgraph.spec_from_data(plan.resolved_spec))
    assert again.resolved_spec == plan.resolved_spec


def _imported_names(path: Path, package: Path):
    """(absolute module, names) of each import in the module at ``path``, relative ones resolved:
    ``import lstmgraph.spec`` gives ("lstmgraph.spec", {"*"})."""
    import ast
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    here = parts[:-1]  # (the package a relative import starts from, for a module and an __init__ alike)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, {"*"}
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield module, {alias.name for alias in node.names}


def test_nothing_after_the_plan_imports_the_spec_stage():
    """Engines, training, rendering and experiments read the plan; of lstmgraph.spec they may
    name only the settings models the plan carries (plan.init, plan.training and its parts, its
    learning rules among them). The catalogue and the sweep build spec data; training runs, their
    folders and `load_run` read a run's spec.yaml. Every form of import counts: relative or
    absolute, a module of lstmgraph.spec or the names the lstmgraph package re-exports from it."""
    import lstmgraph.spec as spec_stage
    allowed = {"InitDefaults", "TrainingSpec", "LearningRateDecay", "OptimizerSpec", "TaskSpec", "LEARNING_RULES"}
    package = Path(lstmgraph.__file__).parent
    from_the_package = {name for name in vars(lstmgraph) if getattr(spec_stage, name, None) is not None
                        and getattr(lstmgraph, name) is getattr(spec_stage, name)} | {"compile_spec", "spec"}
    makers = {package / "experiments" / "experiment.py": {"read_spec_file", "document_of", "spec_from_data"},
              package / "experiments" / "sweep.py": {"read_spec_file"},  # a user's spec as a row
              package / "training" / "run.py": {"parse_spec_bytes", "document_of"},  # a run's spec.yaml
              package / "training" / "rundir.py": {"parse_json", "JsonSyntaxError"},
              package / "training" / "run_identity.py": {"parse_spec_bytes", "parse_json", "JsonSyntaxError"},
              package / "render" / "plots.py": {"load_spec"}}
    found = {}
    for folder in ("program", "engine", "training", "render", "experiments"):
        for path in (package / folder).rglob("*.py"):
            for module, names in _imported_names(path, package):
                if module == "lstmgraph.spec" or module.startswith("lstmgraph.spec."):
                    names = names - allowed
                elif module == "lstmgraph":
                    names = names & from_the_package
                else:
                    continue
                names -= makers.get(path, set())
                if names:
                    found.setdefault(str(path.relative_to(package)), set()).update(names)
    assert found == {}


def test_the_spec_stage_check_sees_every_form_of_import(tmp_path):
    """The check above resolves relative imports and sees the package's re-exports."""
    package = tmp_path / "lstmgraph"
    (package / "engine").mkdir(parents=True)
    module = package / "engine" / "sneaky.py"
    module.write_text("from .. import load_spec\nfrom ..spec.models import TrainingSpec\nimport lstmgraph.spec\n"
                      "from lstmgraph.spec.loader import read_spec_file\n")
    assert list(_imported_names(module, package)) == [
        ("lstmgraph", {"load_spec"}), ("lstmgraph.spec.models", {"TrainingSpec"}), ("lstmgraph.spec", {"*"}),
        ("lstmgraph.spec.loader", {"read_spec_file"})]


@pytest.mark.parametrize("given, words", [({"version": 1}, "not a dict: compile_plan(spec_from_data(data))"),
                                          ("gru", "not a str: compile_plan(load_spec(path)), or compile_spec(path)")])
def test_compile_plan_of_anything_but_a_document_says_which_call_makes_one(given, words):
    with pytest.raises(TypeError, match=re.escape(words)):
        lstmgraph.compile_plan(given)


def test_every_stage_after_the_plan_refuses_a_document_or_a_name_and_says_how_to_compile_it(tmp_path):
    """Before: an AttributeError from deep inside ('SpecDocument' object has no attribute 'init')."""
    from lstmgraph.engine import Simulator, gradient_check, initial_weights
    from lstmgraph.program import lower
    from lstmgraph.render import render_plan, to_dot
    from lstmgraph.training import Trainer, start_run
    document = lstmgraph.load_spec("gru")
    calls = {"initial_weights": initial_weights, "Simulator": Simulator, "lower": lower, "Trainer": Trainer,
             "start_run": lambda plan: start_run(plan, tmp_path / "run"), "gradient_check": gradient_check,
             "to_dot": to_dot, "render_plan": lambda plan: render_plan(plan, tmp_path / "gru.svg")}
    for name, call in calls.items():
        for given, kind in ((document, "a SpecDocument"), ("gru", "a str")):
            with pytest.raises(TypeError, match=re.escape(f"{name} takes a compiled Plan, not {kind}: "
                                                          "lstmgraph.compile_spec(path)")):
                call(given)
    assert not (tmp_path / "run").exists() and not (tmp_path / "gru.svg").exists()


def test_the_plan_s_networkx_graph_is_as_api_md_describes_it():
    """docs/api.md names plan.network.graph and its node and edge attributes."""
    import networkx as nx
    plan = lstmgraph.compile_spec("gers2000_cerg")
    graph = plan.network.graph
    assert isinstance(graph, nx.MultiDiGraph) and set(graph.nodes) == {unit.name for unit in plan.units}
    assert graph.nodes["memory.state"]["unit"] == plan.unit["memory.state"]
    cec = graph.edges["memory.state", "memory.state", "memory.state->memory.state"]
    assert (cec["kind"], cec["delay"], cec["connection"]) == ("weight", 1, plan.connection["memory.state->memory.state"])
    assert graph.edges["memory.forget_gate", "memory.state", "memory.state->memory.state gate"]["kind"] == "gate"


@pytest.mark.parametrize("rule, unlearned", [
    ("truncated_rtrl", {"x->h1", "bias->h1", "x->dead_end"}),
    ("bptt", {"x->h1", "bias->h1", "x->dead_end"}),
    ("rtrl", {"x->dead_end"}),
])
def test_the_connections_said_not_to_learn_are_those_whose_weights_training_leaves_unchanged(
        write_spec, tmp_path, rule, unlearned):
    """A stack read through a truncated delay (h1), a group no output reads (dead_end): the
    plan's static answer against the weights after training (each other matrix changes)."""
    import numpy as np

    from lstmgraph.engine import initial_weights
    from lstmgraph.training import Trainer

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", inputs=rng.uniform(-1, 1, (60, 2)), targets=rng.uniform(0, 1, (60, 1)),
             starts=np.arange(0, 60, 6))
    update = "sequence" if rule == "bptt" else "online"
    plan = lstmgraph.compile_spec(write_spec(f"""
        version: 1
        groups:
          - {{name: x, kind: input, size: 2}}
          - {{name: h1, kind: hidden, size: 3, activation: tanh}}
          - {{name: g, kind: gate, size: 1}}
          - {{name: h2, kind: hidden, size: 3, activation: tanh}}
          - {{name: dead_end, kind: hidden, size: 2}}
          - {{name: y, kind: output, size: 1}}
        connections:
          - {{from: x, to: [h1, g, dead_end]}}
          - {{from: h1, to: h2, delay: 1}}
          - {{from: x, to: h2, gated_by: g}}
          - {{from: h2, to: h2, delay: 1, gradient: true}}
          - {{from: [h2, bias], to: y}}
          - {{from: bias, to: [h1, h2]}}
        training: {{learning_rule: {rule}, update: {update}, learning_rate: 0.5, data: d.npz, epochs: 2}}
        """))
    assert set(plan.unlearned_connections) == unlearned
    trainer = Trainer(plan, 1, engine="numpy")
    trainer.run()
    before = initial_weights(plan, [plan.init.seed])
    for c in plan.connections:
        if c.trainable:
            changed = not np.array_equal(trainer.weights[c.name], before[c.name])
            assert changed == (c.name not in unlearned), (c.name, changed)


def test_the_resolved_spec_is_a_copy_a_caller_may_change():
    """Before: plan.resolved_spec was the plan's own dict, so a caller building a variant from
    it without a deep copy changed what a later run of the plan wrote as its spec.yaml."""
    plan = lstmgraph.compile_spec(SPECS / "rnn.yaml")
    changed = plan.resolved_spec
    changed["groups"][1]["size"] = 16
    assert plan.resolved_spec["groups"][1]["size"] == 8 and plan.resolved_spec is not plan.resolved_spec
