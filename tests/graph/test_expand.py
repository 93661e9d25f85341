"""Name resolution and per-connection checks made while memory blocks are expanded."""

from __future__ import annotations

import numpy as np
import pytest

import lstmgraph
from lstmgraph.errors import SpecError

from conftest import MINIMAL, located

HEAD = """
version: 1
groups:
  - {name: x, kind: input, size: 2}
  - name: mem
    kind: memory_block
    blocks: 2
    cells_per_block: 3
    gates: [input, output]
  - {name: y, kind: output, size: 1}
  - {name: h, kind: hidden, size: 4}
  - {name: g, kind: gate, size: 2}
connections:
  - {from: x, to: [mem.cell_input, mem.input_gate, mem.output_gate, h, g]}
  - {from: mem.cell_output, to: y}
  - {from: h, to: y, gated_by: g}
"""


def test_a_memory_block_expands_into_ports_and_gated_internal_connections(write_spec):
    plan = lstmgraph.compile_spec(write_spec(MINIMAL))
    assert [unit.name for unit in plan.units if unit.group == "mem"] == [
        "mem.forget_gate", "mem.input_gate", "mem.cell_input", "mem.state", "mem.output_gate",
        "mem.squashed_state", "mem.cell_output"]
    assert plan.unit["mem.input_gate"].size == 2 and plan.unit["mem.state"].size == 6
    internal = {c.name: (c.gate, c.delay, c.gradient, c.trainable)
                for c in plan.connections if c.internal}
    assert internal == {
        "mem.cell_input->mem.state": ("mem.input_gate", 0, True, False),
        "mem.state->mem.state": ("mem.forget_gate", 1, True, False),
        "mem.state->mem.squashed_state": (None, 0, True, False),
        "mem.squashed_state->mem.cell_output": ("mem.output_gate", 0, True, False),
    }
    assert plan.connection["mem.state->mem.state"].is_cec


def test_unknown_unit_suggests_the_closest_port(spec_error):
    error = spec_error(HEAD + "  - {from: x, to: mem.input_gat}\n")
    ((path, line, message),) = located(error)
    assert (path, line, message) == ("connections[3].to", 16, "memory block 'mem' has no port 'input_gat'")
    assert "did you mean 'mem.input_gate'?" in error.format()


def test_unknown_source_in_a_list_is_located_at_its_item(spec_error):
    error = spec_error(HEAD + "  - {from: [x, hh], to: y}\n")
    ((path, line, message),) = located(error)
    assert (path, line, message) == ("connections[3].from[1]", 16, "unknown unit 'hh'")
    assert "did you mean 'h'?" in error.format()


def test_memory_block_needs_a_port_and_only_has_its_gates(spec_error):
    error = spec_error(HEAD + "  - {from: mem, to: mem.forget_gate}\n")
    rows = located(error)
    assert ("connections[3].from", 16, "'mem' is a memory block; name one of its ports") in rows
    assert ("connections[3].to", 16, "memory block 'mem' has no forget gate") in rows
    assert "add 'forget' to groups[1].gates" in error.format()


def test_inputs_and_cell_internals_cannot_receive(spec_error):
    error = spec_error(HEAD + "  - {from: h, to: [x, mem.state, mem.cell_output]}\n")
    rows = [row[0] for row in located(error)]
    assert rows == ["connections[3].to[0]", "connections[3].to[1]", "connections[3].to[2]"]
    assert "'x' is an input group and cannot receive connections" in error.format()


def test_one_to_one_needs_equal_sizes(spec_error):
    error = spec_error(HEAD + "  - {from: x, to: h, pattern: one_to_one, name: x_to_h}\n")
    ((path, _, message),) = located(error)
    assert path == "connections[3].to"
    assert "one_to_one needs equal sizes" in message and "'x' has 2 units" in message


def test_peephole_must_come_from_a_state_and_go_to_the_same_block_s_gate(spec_error):
    error = spec_error(HEAD + "  - {from: mem.cell_output, to: mem.input_gate, pattern: peephole}\n"
                       "  - {from: mem.state, to: h, pattern: peephole}\n")
    rows = located(error)
    assert rows[0][0] == "connections[3].from" and "must come from a memory block's cell states" in rows[0][2]
    assert rows[1][0] == "connections[4].to" and "must go to a gate of the same block" in rows[1][2]


def test_gated_by_must_name_a_gate(spec_error):
    error = spec_error(HEAD + "  - {from: mem.cell_output, to: y, gated_by: h, name: a}\n"
                       "  - {from: h, to: y, gated_by: mem.output_gate, name: b}\n"
                       "  - {from: x, to: y, gated_by: g, name: c}\n")
    # A memory block's gate port may gate other connections too: only the hidden group is wrong.
    ((path, line, message),) = located(error)
    assert (path, line) == ("connections[3].gated_by", 16)
    assert message == "'h' is a hidden group, not a gate"


def test_an_entry_s_problem_of_its_own_is_said_once_and_a_pair_s_names_the_pair(spec_error):
    """Before: an entry of two sources said its gated_by problem twice, word for word, and
    each pair's count of init values the same way, neither naming its pair."""
    error = spec_error(HEAD + "  - {from: [mem.cell_output, x], to: y, gated_by: h, init: {values: [1, 2, 3]}}\n")
    messages = [message for *_, message in located(error)]
    assert messages.count("'h' is a hidden group, not a gate") == 1, messages
    assert "3 values for the 1x6 weight mem.cell_output->y" in messages, messages


def test_gate_size_must_divide_the_source(spec_error):
    error = spec_error(HEAD.replace("{name: g, kind: gate, size: 2}", "{name: g, kind: gate, size: 4}")
                       + "  - {from: mem.cell_output, to: y, gated_by: g, name: odd}\n")
    ((path, _, message),) = located(error)
    assert path == "connections[3].gated_by" and "cannot split the 6 units" in message


def test_init_values_count_must_match_the_rows(spec_error):
    error = spec_error(HEAD + "  - {from: bias, to: mem.input_gate, init: {values: [1, 2, 3]}}\n")
    ((path, line, message),) = located(error)
    assert (path, line) == ("connections[3].init.values", 16)
    assert message == "3 values for the 2x1 weight bias->mem.input_gate"


def test_duplicate_names_and_reserved_bias(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: x, kind: hidden, size: 2}
          - {name: bias, kind: input, size: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y}
          - {from: [x, bias], to: y}
        """)
    rows = located(error)
    assert ("groups[1].name", 4, "a group named 'x' already exists (groups[0])") in rows
    assert ("groups[2].name", 5, "'bias' is reserved") in rows
    assert ("connections[1].to", 9, "a connection named 'x->y' already exists (connections[0])") in rows
    assert "give one of them a distinct `name`" in error.format()


def test_a_target_listed_twice_in_one_entry_says_so_not_to_name_one(spec_error):
    """Before: "already exists ... give one of them a distinct `name`", which an entry of
    several targets cannot take."""
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: [y, y]}
        """)
    assert located(error) == [("connections[0]", 6, "'x' to 'y' twice in this entry")]
    assert "drop the repeated name" in error.format() and "distinct" not in error.format()



def test_state_decay_sets_the_fixed_self_connection_of_the_cell_state(write_spec):
    from lstmgraph.engine import Simulator, initial_weights
    plan = lstmgraph.compile_spec(write_spec(HEAD.replace("gates: [input, output]",
                                                          "gates: [input, output]\n    state_decay: 0.9")))
    weights = initial_weights(plan, [0])
    assert (weights["mem.state->mem.state"] == 0.9).all()
    # with zero input the cell input g(0) is 0, so the state only decays: 1 -> 0.9
    sim = Simulator(plan)
    state = sim.zero_state(1)
    state["mem.state"][:] = 1.0
    record, _ = sim.step(weights, state, np.zeros(2))
    np.testing.assert_allclose(record.y["mem.state"], 0.9, rtol=1e-12)


def test_a_state_decay_above_one_is_a_located_error(write_spec):
    path = write_spec(HEAD.replace("gates: [input, output]", "gates: [input, output]\n    state_decay: 1.5"))
    with pytest.raises(SpecError) as caught:
        lstmgraph.compile_spec(path)
    [(field, line, message)] = located(caught.value)
    assert field.endswith("state_decay") and line == 9 and "1" in message
