"""`sweep_values`: the values of --vary, --task-option and --protocol-option, however large."""

from __future__ import annotations

import pytest

from lstmgraph.experiments.sweep_values import SweepError, parse_option, parse_vary, same_value


def test_integers_too_large_for_a_float_compare_without_overflow():
    """Before: same_value(10**400, 0.1) raised OverflowError (float(10**400)), a traceback from
    ``sweep --vary learning_rate=1000...0`` (400 digits) as the grid compared it with the row's."""
    huge = 10 ** 400
    assert not same_value(huge, 0.1) and not same_value(0.1, [huge]) and same_value(huge, 10 ** 400)
    assert same_value(2, 2.0) and same_value([0.5], 0.5) and not same_value(2 ** 53 + 1, float(2 ** 53))
    assert not same_value(True, 1)



def test_lists_and_mappings_compare_their_numbers_by_value_at_every_depth():
    """A user's forget_gate_bias=[1,2] against the spec's [1.0, 2.0] was a new setting, run twice
    beside the own one, the paired tests against that copy."""
    assert same_value([1, 2], [1.0, 2.0]) and same_value({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2.0}]})
    assert not same_value([1, 2], [1, 3]) and not same_value([1, 2], [1, 2, 3]) and not same_value([True, 1], [1, 1])
    assert not same_value({"a": 1}, {"b": 1})


def test_a_number_of_more_digits_than_python_reads_is_taken_as_text():
    """Before: json.loads refused 5,000 digits with a ValueError that is no JSONDecodeError, a
    traceback from --vary, --task-option and --protocol-option; now the value is text, as any
    value that is not JSON, for the key's check to refuse by name."""
    digits = "9" * 5000
    assert parse_vary(f"learning_rate={digits}") == ("learning_rate", [digits])
    assert parse_vary(f"delays=[0,{digits}]") == ("delays", [f"[0,{digits}]"])
    assert parse_option(f"window={digits}", "--protocol-option", "window=10") == ("window", digits)


def test_a_grid_built_from_python_refuses_a_value_twice_or_too_many_values():
    """Before: only `--vary` (parse_vary) checked these; sweep.grid ran both settings of 0.5."""
    from lstmgraph.experiments import find_experiment
    from lstmgraph.experiments.sweep import grid
    from lstmgraph.experiments.sweep_values import MAX_VALUES

    row = find_experiment("gers2002-gts-peephole")
    with pytest.raises(SweepError, match="learning_rate: the value 0.5 twice"):
        grid(row, [("learning_rate", [0.5, 0.5])])
    with pytest.raises(SweepError, match=f"more than {MAX_VALUES}"):
        grid(row, {"learning_rate": [0.001 * (k + 1) for k in range(MAX_VALUES + 1)]})
