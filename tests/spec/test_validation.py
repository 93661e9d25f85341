"""Schema validation: every error names its field path, line, expectation and a suggestion."""

from __future__ import annotations

import json

import lstmgraph
import pytest

from conftest import located


def test_misspelt_key_gives_path_line_and_did_you_mean(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y}
          - {from: x, to: y, dela: 1}
        """)
    ((path, line, message),) = located(error)
    assert (path, line, message) == ("connections[1].dela", 7, "unknown key 'dela'")
    text = error.format()
    assert "net.yaml:7:22: connections[1].dela" in text
    assert "did you mean 'delay'?" in text
    assert "expected: one of from, to, name, pattern, delay" in text


def test_misspelt_key_inside_a_memory_block_lists_that_kind_s_fields(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - name: mem
            kind: memory_block
            blocks: 2
            cels_per_block: 2
        """)
    ((path, line, message),) = located(error)
    assert (path, line) == ("groups[0].cels_per_block", 6)
    assert "cells_per_block" in error.format() and "did you mean 'cells_per_block'?" in error.format()


def test_wrong_type_and_range(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: two}
          - {name: y, kind: output, size: 0}
          - {name: z, kind: hidden, size: true}
        """)
    rows = located(error)
    assert ("groups[0].size", 3, "invalid value 'two' (a string)") in rows
    assert ("groups[1].size", 4, "invalid value 0") in rows
    assert ("groups[2].size", 5, "invalid value True (a boolean)") in rows
    assert "expected: greater than 0" in error.format()


def test_unknown_kind_and_activation_suggest_the_closest(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: inptu, size: 2}
          - {name: y, kind: output, size: 1, activation: sofmax}
        """)
    rows = located(error)
    assert ("groups[0].kind", 3, "unknown kind 'inptu'") in rows
    assert ("groups[1].activation", 4, "'sofmax' is not allowed") in rows
    text = error.format()
    assert "did you mean 'input'?" in text and "did you mean 'softmax'?" in text


def test_sigmoid_is_read_as_logistic(write_spec):
    path = write_spec("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: h, kind: hidden, size: 3, activation: sigmoid}
          - {name: m, kind: memory_block, blocks: 1, gate_activation: sigmoid}
          - {name: y, kind: output, size: 1, activation: sigmoid}
        connections:
          - {from: x, to: [h, m.cell_input, m.input_gate, m.output_gate]}
          - {from: [h, m.cell_output], to: y}
        """)
    plan = lstmgraph.compile_spec(path)
    activations = {unit.name: unit.activation for unit in plan.units}
    assert activations["h"] == activations["m.input_gate"] == activations["y"] == "logistic"
    # The validated spec (what a run directory's spec.yaml is written from) holds the name too.
    assert "sigmoid" not in json.dumps(lstmgraph.load_spec(path).spec.model_dump(mode="json"))


def test_misspelt_sigmoid_suggests_sigmoid(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: y, kind: output, size: 1, activation: sigmod}
        """)
    assert located(error) == [("groups[0].activation", 3, "'sigmod' is not allowed")]
    assert "did you mean 'sigmoid'?" in error.format()


def test_softmax_is_for_outputs_only(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: h, kind: hidden, size: 2, activation: softmax}
        """)
    ((path, line, _),) = located(error)
    assert (path, line) == ("groups[0].activation", 3)
    assert "softmax is for output groups only" in error.format()


def test_a_lone_value_where_a_mapping_belongs_names_the_keys_and_the_likely_mapping(spec_error):
    """Before: "expected: a valid dictionary or instance of TaskSpec" (our class names)."""
    error = spec_error("""
        version: 1
        init: [1]
        groups:
          - {name: x, kind: input, size: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y, init: 0.5}
        training: {learning_rate: 0.1, task: adding, optimizer: adam}
        """)
    shown = error.format()
    assert "instance of" not in shown and "Spec" not in shown.replace("spec", ""), shown
    assert "init: invalid value: a list\n  expected: a mapping with the keys uniform, seed" in shown
    assert "connections[0].init: invalid value 0.5" in shown and "write {constant: 0.5}" in shown
    assert "training.task: invalid value 'adding'" in shown and "write {name: adding}, with the task's" in shown
    assert "expected: a mapping with the keys name, beta1, beta2, epsilon\n  write {name: adam}\n" in shown


def test_missing_keys_are_located_at_their_mapping(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input}
          - {kind: output, size: 1}
          - {name: z, size: 1}
        """)
    rows = located(error)
    assert ("groups[0].size", 3, "missing required key 'size'") in rows
    assert ("groups[1].name", 4, "missing required key 'name'") in rows
    assert ("groups[2]", 5, "missing required key 'kind'") in rows
    missing = spec_error("groups:\n  - {name: x, kind: input, size: 1}\n")
    assert located(missing) == [("version", 1, "missing required key 'version'")]
    assert "begin the spec with version: 1" in missing.format()


def test_version_and_names(spec_error):
    error = spec_error("""
        version: 2
        groups:
          - {name: 2x, kind: input, size: 2}
        """)
    rows = located(error)
    assert rows[0][:2] == ("version", 1) and "unsupported spec version 2" in rows[0][2]
    assert ("groups[0].name", 3, "invalid name '2x'") in rows


def test_a_connection_s_name_cannot_look_like_another_pair(spec_error):
    """Before: a connection named 'h->reset' was accepted, and `sweep --vary init.h->reset=...`
    then set the real h->reset pair, never the connection so named."""
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y, name: "x->z"}
        """)
    assert located(error) == [("connections[0].name", 6, "invalid name 'x->z'")]
    assert "no spaces, slashes or '>'" in error.format()


def test_init_ranges_and_exclusive_choices(spec_error):
    error = spec_error("""
        version: 1
        init: {uniform: [0.5, -0.5]}
        groups:
          - {name: x, kind: input, size: 2}
        connections:
          - {from: x, to: x, init: {uniform: 0.1, constant: 1.0}}
        """)
    rows = located(error)
    messages = {(path, line): message for path, line, message in rows}
    assert "lower bound" in messages[("init", 2)]
    assert "exactly one" in messages[("connections[0].init", 6)]


def test_name_needs_one_source_and_target(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
        connections:
          - {from: x, to: [a, b], name: both}
        """)
    ((path, line, message),) = located(error)
    assert (path, line) == ("connections[0]", 5) and "'name'" in message


def test_a_quoted_number_says_it_is_a_string_and_how_to_fix_it(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: "2"}
        """)
    assert "groups[0].size: invalid value '2' (a string)" in error.format()
    assert "write it without quotes: 2" in error.format()


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a\x00b", "n" * 65, ".hidden", "a b"])
def test_network_names_that_could_become_paths_are_refused(spec_error, name):
    error = spec_error(f"version: 1\nname: {json.dumps(name)}\ngroups: [{{name: y, kind: output, size: 1}}]\n")
    ((path, line, message),) = located(error)
    assert (path, line) == ("name", 2) and message.startswith("invalid name")
    assert "becomes part of file names" in error.format()


def test_sizes_and_weights_are_bounded(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1000000000000}
          - {name: m, kind: memory_block, blocks: 1000, cells_per_block: 1000}
          - {name: h, kind: hidden, size: 5000}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: h, to: h}
        """)
    assert "groups[0].size: invalid value 1000000000000" in error.format()
    assert "less than or equal to 100000 (docs/spec.md in the lstmgraph source, Limits)" in error.format()
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: m, kind: memory_block, blocks: 1000, cells_per_block: 1000}
          - {name: h, kind: hidden, size: 5000}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: h, to: h}
        """)
    assert "1,000 blocks of 1,000 cells make 1,000,000 cells" in error.format()
    # h->h 5000x5000 and the block's four fixed one-to-one connections of 1,000,000 cells
    assert "the connections hold 29,000,000 weights" in error.format()


@pytest.mark.parametrize("size, valid", [(1413, True), (1415, False)])
def test_the_weight_limit_is_two_million(size, valid):
    data = {"version": 1, "groups": [{"name": "h", "kind": "hidden", "size": size},
                                     {"name": "y", "kind": "output", "size": 1}],
            "connections": [{"from": "h", "to": "h", "delay": 1}, {"from": "h", "to": "y"}]}
    if valid:
        assert lstmgraph.compile_plan(lstmgraph.spec_from_data(data)).n_parameters == size * size + size
        return
    with pytest.raises(lstmgraph.SpecError, match=r"the connections hold 2,003,640 weights\n.*at most 2,000,000"):
        lstmgraph.compile_plan(lstmgraph.spec_from_data(data))


def test_integer_task_options_are_bounded(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 2}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y}
        training: {learning_rate: 0.1, task: {name: adding, length: 1000000000000}}
        """)
    ((path, line, message),) = located(error)
    assert (path, line) == ("training.task.length", 7)  # (at the option)
    assert message == "option length: 1000000000000 is beyond 10,000,000 (docs/spec.md in the lstmgraph source, Limits)"


def test_an_init_range_whose_width_overflows_is_refused(spec_error):
    """numpy's uniform draw cannot span [-1e308, 1e308] (its width is inf): a located error, not
    an OverflowError at the first draw."""
    error = spec_error("""
        version: 1
        init: {uniform: 1e308}
        groups:
          - {name: x, kind: input, size: 2}
        connections:
          - {from: x, to: x, delay: 1, init: {uniform: [-1.0e308, 1.0e308]}}
        """)
    messages = {(path, line): message for path, line, message in located(error)}
    assert "overflows" in messages[("init", 2)] and "overflows" in messages[("connections[0].init", 6)]


def test_integers_inside_a_task_option_s_list_are_bounded(spec_error):
    """MSD's delays size every interval: 10^12 would allocate terabytes when the stream is drawn."""
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: y}
        training: {learning_rate: 0.1, task: {name: measuring_spike_delays, delays: [0, 1000000000000]}}
        """)
    ((path, line, message),) = located(error)
    assert (path, line) == ("training.task.delays", 7)  # (at the option)
    assert message == "option delays: 1000000000000 is beyond 10,000,000 (docs/spec.md in the lstmgraph source, Limits)"


def test_a_name_yaml_reads_as_a_boolean_says_to_quote_it(spec_error):
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: on, kind: hidden, size: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - {from: x, to: on}
          - {from: on, to: y}
        """)
    rows = located(error)
    assert [(path, line) for path, line, _ in rows] == [("groups[1].name", 4), ("connections[0].to", 7),
                                                        ("connections[1].from", 8)]
    assert error.format().count("YAML reads an unquoted on, yes or true as a boolean: quote a name so spelt") == 3


def test_a_softmax_over_one_unit_is_refused(spec_error):
    """Before: valid, and no weight learned (the output is always 1, its gradient 0)."""
    error = spec_error("""
        version: 1
        groups:
          - {name: x, kind: input, size: 1}
          - {name: y, kind: output, size: 1, activation: softmax}
        connections:
          - {from: x, to: y}
        """)
    assert located(error) == [("groups[1]", 4, "a softmax over one unit is always 1, so no weight before it "
                                               "would learn; use logistic for one output, or give the group a "
                                               "unit per class")]


def test_the_hints_for_a_lone_value_and_a_boolean_fit_the_field(spec_error):
    """A connection written as text is not told to become {name: ...}; a boolean in a text
    field is told to quote the text, and one in a list of numbers is told nothing of names."""
    error = spec_error("""
        version: 1
        description: yes
        groups:
          - {name: x, kind: input, size: 1}
          - {name: y, kind: output, size: 1}
        connections:
          - x->y
          - {from: x, to: y, init: {values: true}}
        """)
    shown = error.format()
    assert "description: invalid value True (a boolean)" in shown and "as a boolean: quote the text" in shown
    assert "write {name:" not in shown and "quote a name" not in shown, shown
