"""The sweep keys (`sweep_keys.KEYS`) and the --vary value parser."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings, strategies as st

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.sweep import grid
from lstmgraph.experiments.sweep_keys import KEYS, keys_in_words, keys_table, resolve, row_keys
from lstmgraph.experiments.sweep_values import SweepError, parse_vary

from conftest import REPO

GTS = find_experiment("gers2002-gts-peephole")
ERG = find_experiment("hochreiter1997-erg-3x2-lr0.5")


def test_lists_and_ranges_are_read_as_values():
    assert parse_vary("learning_rate=1e-5,1e-4") == ("learning_rate", [1e-5, 1e-4])
    assert parse_vary("forget_gate_bias=-2:2:5") == ("forget_gate_bias", [-2, -1, 0, 1, 2])
    assert parse_vary("learning_rate=0.1:0.5:5")[1] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert parse_vary("learning_rate=1e-5:1e-3:3:log")[1] == [1e-5, 1e-4, 1e-3]
    assert parse_vary("input_gate_bias=[-1,-2,-3],[-2,-4,-6]")[1] == [[-1, -2, -3], [-2, -4, -6]]
    assert parse_vary("cue=length,delay") == ("cue", ["length", "delay"])
    assert parse_vary("variant.forget_open=true,false")[1] == [True, False]


@pytest.mark.parametrize("argument, values", [
    ("task.length=100:1e3:3", [100, 550, 1000]), ("task.length=1:1e3:4:log", [1, 10, 100, 1000]),
    ("x=1:10:3:log", [1, 3.16227766017, 10]), ("x=0.0:1.0:3", [0.0, 0.5, 1.0]), ("x=1e-3:1:2", [0.001, 1.0])])
def test_a_range_s_whole_values_are_integers_where_its_ends_are_written_whole(argument, values):
    """An integer option (a task's length) takes a range written with exponents (1e3) or on a
    log scale; ends written with a point (0.0) or a fraction (1e-3) keep floats."""
    parsed = parse_vary(argument)[1]
    assert parsed == values and [type(value) for value in parsed] == [type(value) for value in values]


@pytest.mark.parametrize("argument, named", [
    ("learning_rate", "KEY=V1,V2"), ("=1,2", "KEY=V1,V2"), ("momentum=0.9,,0.99", "momentum"),
    ("learning_rate=0.1,0.1", "learning_rate"), ("learning_rate=1:2:0", "learning_rate"),
    ("learning_rate=-1:1:3:log", "learning_rate"), ("momentum=1:2:101", "momentum"),
    ("momentum=" + ",".join(map(str, range(101))), "momentum")])
def test_a_bad_vary_argument_names_the_key_or_the_form(argument, named):
    with pytest.raises(SweepError, match=re.escape(named)):
        parse_vary(argument)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=8, unique=True))
def test_a_list_of_numbers_reads_back_as_itself(numbers):
    numbers = [n for n in numbers if n != 0.0] or [1.0]  # (0.0 and -0.0 are the same value twice)
    key, values = parse_vary("learning_rate=" + ",".join(map(repr, numbers)))
    assert key == "learning_rate" and values == numbers


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_read_or_refused_by_name_never_anything_else(text):
    try:
        key, values = parse_vary("k=" + text)
    except SweepError as error:
        assert "k" in str(error) or "KEY" in str(error)
        return
    assert key == "k" and values


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.integers(2, 100))
def test_a_range_has_its_count_and_its_ends(low, high, count):
    if low == high:
        return
    try:
        _, values = parse_vary(f"x={low!r}:{high!r}:{count}")
    except SweepError as error:  # two values that round to the same 12 digits
        assert "twice" in str(error)
        return
    assert len(values) == count
    assert math.isclose(values[0], low, rel_tol=1e-11, abs_tol=1e-300)
    assert math.isclose(values[-1], high, rel_tol=1e-11, abs_tol=1e-300)


def test_keys_resolve_by_full_or_bare_name_and_an_unknown_one_is_named_with_a_suggestion():
    assert resolve(GTS, "task.cue")[0] == "task.cue"
    assert resolve(GTS, "cue")[0] == "task.cue"
    assert resolve(GTS, "test_streams")[0] == "protocol.test_streams"
    assert resolve(GTS, "forget_open")[0] == "variant.forget_open"
    assert resolve(GTS, "init.bias->memory.forget_gate")[2] == "bias->memory.forget_gate"
    with pytest.raises(SweepError, match=r"no_such_key.*no such key") as caught:
        resolve(GTS, "no_such_key")
    assert "task.NAME (period, delays, cue)" in str(caught.value)
    with pytest.raises(SweepError, match="did you mean learning_rate"):
        resolve(GTS, "learning_rat")
    with pytest.raises(SweepError, match="forget_gate_bias: the row's net has no bias -> forget_gate"):
        KEYS["forget_gate_bias"].apply(ERG, "", 1.0)  # the 1997 net has no forget gate


def test_each_key_reads_the_row_s_own_value():
    assert KEYS["learning_rate"].current(GTS, "") == 1e-5
    assert KEYS["momentum"].current(GTS, "") == 0.999
    assert KEYS["forget_gate_bias"].current(GTS, "") == -2.0
    assert KEYS["init.range"].current(ERG, "") == 0.2
    assert KEYS["input_gate_bias"].current(ERG, "") is None  # drawn at random
    assert KEYS["output_gate_bias"].current(ERG, "") == [-1.0, -2.0, -3.0]
    assert KEYS["task.NAME"].current(GTS, "cue") == "length"
    assert KEYS["protocol.NAME"].current(GTS, "test_streams") == 1  # seed 002, line 258
    assert KEYS["learning_rule"].current(GTS, "") == "truncated_rtrl"
    assert KEYS["variant.NAME"].current(find_experiment("gers2002-gts-no-peephole"), "without_peepholes") is True


def test_the_keys_change_the_net_as_they_say():
    data = KEYS["forget_gate_bias"].apply(GTS, "", 1.5).spec_data()[0]
    (bias,) = [c for c in data["connections"] if c["from"] == "bias" and c["to"] == "memory.forget_gate"]
    assert bias["init"] == {"constant": 1.5}
    data = KEYS["init.range"].apply(ERG, "", 0.5).spec_data()[0]
    assert data["init"]["uniform"] == 0.5
    assert KEYS["learning_rate"].apply(GTS, "", 3e-5).plan().training.learning_rate == 3e-5
    peepholes = [c for c in KEYS["variant.NAME"].apply(GTS, "without_peepholes", True).spec_data()[0]["connections"]
                 if c.get("pattern") == "peephole"]
    assert peepholes == []
    back = KEYS["variant.NAME"].apply(find_experiment("gers2002-gts-no-peephole"), "without_peepholes", False)
    assert back.spec_data()[0] == GTS.spec_data()[0]


def test_the_state_decay_key_replaces_the_row_s_constant_and_keeps_it_in_its_bounds():
    decaying = find_experiment("gers2000-cerg-state-decay")
    assert KEYS["state_decay"].current(decaying, "") == 0.9  # the catalogue's constant (seed 000 gives none)
    assert KEYS["state_decay"].current(find_experiment("gers2000-cerg-standard"), "") == 1.0
    changed = KEYS["state_decay"].apply(decaying, "", 0.99)
    assert [v.description for v in changed.variants] == ["without forget gates (standard 1997 LSTM)",
                                                         "cell states decay by 0.99 per step"]
    (memory,) = [g for g in changed.spec_data()[0]["groups"] if g["kind"] == "memory_block"]
    assert memory["state_decay"] == 0.99
    (self_loop,) = [c for c in changed.plan().connections if c.name.startswith("memory.state->memory.state")]
    assert self_loop.init.constant == 0.99
    for bad in (0, 1.5, "x"):
        with pytest.raises(SweepError, match="state_decay takes a finite number > 0 and <= 1"):
            KEYS["state_decay"].apply(decaying, "", bad)


def test_every_row_key_resolves_and_the_grid_of_one_value_each_is_the_row_itself():
    for typed in row_keys(GTS):
        full, key, name = resolve(GTS, typed)
        assert full == typed
    varied = [(typed, [KEYS[resolve(GTS, typed)[1].name].current(GTS, resolve(GTS, typed)[2])])
              for typed in ("learning_rate", "momentum", "forget_gate_bias", "task.cue", "protocol.test_streams",
                            "variant.forget_open")]
    (setting,) = grid(GTS, varied)
    assert setting.own and setting.experiment is GTS


def test_the_grid_is_every_combination_with_the_own_setting_added_where_missing():
    settings = grid(GTS, [("learning_rate", [1e-4, 1e-3]), ("forget_gate_bias", [-1, 1])])
    assert [s.values for s in settings[:4]] == [
        {"learning_rate": 1e-4, "forget_gate_bias": -1}, {"learning_rate": 1e-4, "forget_gate_bias": 1},
        {"learning_rate": 1e-3, "forget_gate_bias": -1}, {"learning_rate": 1e-3, "forget_gate_bias": 1}]
    assert settings[4].added and settings[4].own and settings[4].experiment is GTS
    assert settings[4].values == {"learning_rate": 1e-5, "forget_gate_bias": -2.0}
    assert len(grid(GTS, [("learning_rate", [1e-4])], add_own=False)) == 1
    # A key given one value is fixed for the sweep: the own setting has it, with the row's other values.
    fixed = grid(GTS, [("forget_gate_bias", [-2, 2]), ("protocol.max_streams", [1000])])
    assert [s.own for s in fixed] == [True, False] and fixed[0].experiment.protocol.max_streams == 1000
    assert fixed[0].experiment.variants == GTS.variants and fixed[0].experiment.name.endswith("[protocol.max_streams=1000]")
    with pytest.raises(SweepError, match="learning_rate: given twice"):
        grid(GTS, [("learning_rate", [1e-4]), ("learning_rate", [1e-3])])
    with pytest.raises(SweepError, match="more than 1,000"):
        grid(GTS, [("learning_rate", list(range(1, 41))), ("momentum", [i / 100 for i in range(40)])])


def test_docs_sweeps_holds_the_keys_table_of_the_registry():
    assert keys_table() in (REPO / "docs" / "sweeps.md").read_text(encoding="utf-8")
    assert json.dumps([key.name for key in KEYS.values()])  # (every key has a name to list)


def test_a_variant_or_a_value_that_changes_nothing_in_the_net_is_refused():
    """A net with no peepholes has none to drop: the sweep would run the subject again under
    another name. The listed variants are those that change the net (or that it has)."""
    erg = find_experiment("hochreiter1997-erg-3x2-lr0.5")  # the 1997 net: no peepholes
    names = [name for name in row_keys(erg) if name.startswith("variant.")]
    assert "variant.without_peepholes" not in names
    assert "variant.output_biases" in names
    with pytest.raises(SweepError, match="no such key"):
        grid(erg, [("variant.without_peepholes", [True])])
    timing = find_experiment("gers2002-pfg-cos-f10-peephole")
    assert grid(timing, [("variant.without_peepholes", [True])])[0].experiment.variants[-1].description == \
        "without peephole connections"


def test_a_variant_the_net_cannot_take_or_that_rewrites_it_unchanged_is_not_listed():
    """A net without forget gates has none to drop, though its spec's text would be rewritten; a
    net with output biases or a shortcut cannot take them twice; an adding net cannot take 8
    symbols. Each was listed, then ran the net unchanged under the variant's name or was refused."""
    adding = [name for name in row_keys(find_experiment("hochreiter1997-adding-t100")) if name.startswith("variant.")]
    assert "variant.without_forget_gate" not in adding and "variant.eight_symbols" not in adding
    assert "variant.input_shortcut" in adding
    cerg = [name for name in row_keys(find_experiment("gers2000-cerg-forget")) if name.startswith("variant.")]
    assert "variant.output_biases" not in cerg and "variant.input_shortcut" not in cerg
    assert "variant.without_forget_gate" in cerg
    # Not listed, but taken where another value of the setting makes the net valid.
    order = find_experiment("hochreiter1997-temporal-order-6a")
    assert "variant.eight_symbols" not in row_keys(order)
    (setting,) = grid(order, [("task.variant", ["6b"]), ("variant.eight_symbols", [True])], add_own=False)
    assert setting.experiment.plan().n_inputs == 8


@pytest.mark.parametrize("key, value", [
    ("learning_rate", 10 ** 400), ("momentum", 10 ** 400), ("init.range", -10 ** 400), ("state_decay", 10 ** 400),
    ("input_gate_bias", 10 ** 400), ("input_gate_bias", [0, 10 ** 400]), ("init.bias->memory.input_gate", 10 ** 400)],
    ids=["rate", "momentum", "range", "decay", "bias", "biases", "init"])
def test_an_integer_too_large_for_a_float_is_refused_by_its_key(key, value):
    """Before: math.isfinite(10**400) raised OverflowError, a traceback from --vary KEY=1000...0."""
    with pytest.raises(SweepError, match=re.escape(f"{key} takes a finite number")):
        grid(find_experiment("hochreiter1997-adding-t100"), [(key, [value])])


def test_a_gate_bias_key_is_listed_only_for_a_net_with_that_gate():
    """Before: the 1997 nets (no forget gates) listed forget_gate_bias among their keys, in `--keys`
    and in the unknown-key error, and varying it was then refused."""
    no_forget, forget = find_experiment("hochreiter1997-temporal-order-6a"), find_experiment("gers2000-cerg-forget")
    assert "forget_gate_bias" not in row_keys(no_forget) and "forget_gate_bias" not in keys_in_words(no_forget)
    assert {"input_gate_bias", "output_gate_bias"} <= set(row_keys(no_forget))
    assert "forget_gate_bias" in row_keys(forget) and "forget_gate_bias" in keys_in_words(forget)
    with pytest.raises(SweepError, match="the row's net has no bias -> forget_gate connection"):
        grid(no_forget, {"forget_gate_bias": [1.0]})


def test_a_connection_is_keyed_by_the_name_its_spec_gives_it_too(tmp_path):
    """`validate` lists a named connection by its name; `--vary init.NAME` took only FROM->TO."""
    from lstmgraph.experiments.sweep import subject_of
    spec = tmp_path / "named.yaml"
    spec.write_text("""version: 1
groups:
  - {name: x, kind: input, size: 2}
  - {name: h, kind: hidden, size: 2, activation: tanh}
  - {name: y, kind: output, size: 1}
connections:
  - {from: x, to: h}
  - {from: h, to: h, name: loop, delay: 1}
  - {from: h, to: y}
training: {learning_rate: 0.1, task: {name: adding, length: 20}}
""")
    row = subject_of(str(spec)).experiment
    assert resolve(row, "init.loop")[::2] == ("init.h->h", "h->h")  # (one connection, one key)
    (setting,) = grid(row, [("init.loop", [0.5])], add_own=False)
    assert setting.values == {"init.h->h": 0.5}
    assert [c.get("init") for c in setting.experiment.spec_data()[0]["connections"] if c.get("name") == "loop"] == [
        {"constant": 0.5}]
    with pytest.raises(SweepError, match="given twice"):
        grid(row, [("init.h->h", [0.5]), ("init.loop", [0.3])])
    with pytest.raises(SweepError, match="no such key"):
        resolve(row, "init.lop")


def test_a_pair_the_spec_joins_twice_is_keyed_by_each_connection_s_name_only():
    """gru_torch joins bias->reset twice (PyTorch's b_ir and b_hr): init.bias->reset set the first
    entry, and init.b_hr set b_ir too, under the label init.bias->reset, without a word."""
    row = find_experiment("gers2000-cerg-forget")  # (every pair joined once: listed by pair)
    assert "init.bias->memory.input_gate" in row_keys(row)
    from lstmgraph.experiments.sweep import subject_of
    gru = subject_of("gru_torch").experiment
    assert {"init.b_ir", "init.b_hr"} <= set(row_keys(gru)) and "init.bias->reset" not in row_keys(gru)
    with pytest.raises(SweepError, match=r"the spec joins bias->reset 2 times \(connections 2, 3\); name one: "
                                         r"init.b_ir, init.b_hr"):
        grid(gru, [("init.bias->reset", [0.5])], add_own=False)
    (setting,) = grid(gru, [("init.b_hr", [0.5])], add_own=False)
    joined = {c.get("name"): c.get("init") for c in setting.experiment.spec_data()[0]["connections"]}
    assert joined["b_hr"] == {"constant": 0.5} and joined["b_ir"] is None
    assert setting.values == {"init.b_hr": 0.5}
