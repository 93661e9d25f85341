"""Squashing functions of the LSTM papers and their modern relatives.

Names are spelled out so a spec says exactly which function it means:
``four_logistic_minus_two`` is the 1997/2000 cell-input squashing g(x) = 4 sigma(x) - 2 (range
[-2, 2]); ``two_logistic_minus_one`` is the cell-output squashing h(x) = 2 sigma(x) - 1 (range
[-1, 1]) (papers.md section 1). ``softmax`` is allowed on output groups only.
"""

from __future__ import annotations

from typing import Literal, get_args

UnitActivation = Literal[
    "logistic", "tanh", "identity", "relu", "four_logistic_minus_two", "two_logistic_minus_one"]
OutputActivation = Literal[
    "logistic", "tanh", "identity", "relu", "four_logistic_minus_two", "two_logistic_minus_one",
    "softmax"]

UNIT_ACTIVATIONS: tuple[str, ...] = get_args(UnitActivation)
OUTPUT_ACTIVATIONS: tuple[str, ...] = get_args(OutputActivation)

#: Formula of each activation, as printed by `lstmgraph validate` and the renderer.
FORMULAS: dict[str, str] = {
    "logistic": "1/(1+e^-x)",
    "tanh": "tanh(x)",
    "identity": "x",
    "relu": "max(0,x)",
    "four_logistic_minus_two": "4 sigma(x) - 2",
    "two_logistic_minus_one": "2 sigma(x) - 1",
    "softmax": "softmax(x)",
}
