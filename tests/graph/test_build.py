"""Whole-graph checks: same-step cycles, idle gates, unreached groups, missing outputs; layering."""

from __future__ import annotations

import lstmgraph

from conftest import located


def test_same_step_cycle_names_its_units_and_the_connection_to_delay(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: a, kind: hidden, size: 2}
          - {name: b, kind: hidden, size: 2}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: a}
          - {from: a, to: b}
          - {from: b, to: a}
          - {from: b, to: y}
        """)
    ((path, line, message),) = located(error)
    assert message == "same-step cycle: a -> b -> a"
    assert (path, line) == ("connections[1]", 9)
    assert "delay: 1" in error.format()


def test_peephole_into_the_input_gate_without_delay_is_a_cycle(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: m, kind: memory_block, blocks: 1, gates: [input, output]}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: [m.cell_input, m.input_gate, m.output_gate]}
          - {from: m.state, to: m.input_gate, pattern: peephole, delay: 0}
          - {from: m.cell_output, to: y}
        """)
    ((path, line, message),) = located(error)
    assert message == "same-step cycle: m.input_gate -> m.state -> m.input_gate"
    assert (path, line) == ("connections[1]", 8)


def test_self_loop_without_delay_is_a_cycle(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: h, kind: hidden, size: 3}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: h}
          - {from: h, to: [h, y]}
        """)
    ((path, _, message),) = located(error)
    assert message == "same-step cycle: h -> h" and path == "connections[1]"


def test_gate_that_gates_nothing_and_groups_that_receive_nothing(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: g, kind: gate, size: 1}
          - {name: m, kind: memory_block, blocks: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: [g, m.cell_input]}
          - {from: m.cell_output, to: y}
        """)
    rows = located(error)
    assert ("groups[1]", 4, "gate 'g' gates no connection") in rows
    assert ("groups[2]", 5, "memory block 'm': 'm.input_gate' receives no connection") in rows
    assert ("groups[2]", 5, "memory block 'm': 'm.output_gate' receives no connection") in rows
    assert "gated_by: g" in error.format()


def test_a_spec_needs_an_output_group(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: h, kind: hidden, size: 1}
        connections:
          - {from: x, to: h}
        """)
    ((path, _, message),) = located(error)
    assert (path, message) == ("groups", "the spec has no output group")


def test_graph_has_weight_and_gate_edges(write_spec):
    from conftest import SPECS
    plan = lstmgraph.compile_spec(SPECS / "gru.yaml")
    graph = plan.network.graph
    kinds = {key: data["kind"] for _, _, key, data in graph.edges(keys=True, data=True)}
    assert kinds["h->candidate"] == "weight"
    assert kinds["h->candidate gate"] == "gate"
    assert graph.has_edge("reset", "candidate") and graph.has_edge("update", "h")
    assert plan.connection["candidate->h"].gate_complement


def test_the_graph_stage_imports_no_task_or_training_code():
    """Layering: the structure reads the spec alone (the training section is checked at validation)."""
    import ast
    from pathlib import Path

    import lstmgraph.graph

    for path in Path(lstmgraph.graph.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                assert not {"tasks", "training"} & set(module.split(".")), f"{path.name} imports {module}"
