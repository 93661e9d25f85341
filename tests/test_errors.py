"""`errors.shown`: the one place a value an error message echoes is cut short."""

from __future__ import annotations

from lstmgraph.errors import SHOWN_CHARACTERS, shown


def test_a_value_is_echoed_cut_short_whatever_it_is():
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    assert shown("abc") == "'abc'" and shown(3) == "3" and shown([1, 2]) == "[1, 2]"
    for value in ("x" * 5000, [1] * 5000, nested, 10**5000, {"k": "v" * 5000}):
        assert len(shown(value)) <= SHOWN_CHARACTERS

