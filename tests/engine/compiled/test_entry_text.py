from lstmgraph.engine.compiled import entry_text
from lstmgraph.operations import OPERATION_KINDS
from lstmgraph.program.model import MINUS_ONE, ONE


def test_a_position_is_one_constant_plus_the_loop_terms_the_run_has():
    assert entry_text.position(704, 0, -176, 1, 2, width=4, lane=3) == "2819 + j * -704"
    assert entry_text.position(0, 1, 485, 2, 2, width=1) == "i + j * 485"
    assert entry_text.position(5, 1, 2, 3, 4, width=4, lane="l") == "20 + i * 4 + j * 8 + l"
    assert entry_text.position(7, 3, 1, 1, 1) == "7"  # one row, one column: no loop variable
    assert entry_text.position(0, 0, 0, 1, 1) == "0"


def test_a_column_reading_only_a_constant_slot_is_a_literal():
    assert entry_text.constant(ONE, 0, 0, 4, 7) == "1.0"
    assert entry_text.constant(MINUS_ONE, 5, 0, 1, 3) == "-1.0"  # its stride along i, but one row
    assert entry_text.constant(ONE, 1, 0, 2, 1) is None  # the second row reads another slot
    assert entry_text.constant(ONE + 10, 0, 0, 1, 1) is None


def test_a_product_has_no_factor_one():
    assert entry_text.without_unit_factors("v[2] += 1.0 * v[3] * 1.0") == "v[2] += v[3]"
    assert entry_text.without_unit_factors("h3 * -1.0 * v[1] * 1.05") == "h3 * -1.0 * v[1] * 1.05"
    kind = next(kind for kind in OPERATION_KINDS.values() if kind.term and "{c}" in kind.term)
    assert "1.0" not in entry_text.product(kind, ("v[1]", "1.0", "1.0"))
