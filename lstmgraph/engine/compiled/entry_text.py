"""How a generated kernel writes one entry of a run: its slot positions with the constants added
up, the constant slots ONE and MINUS_ONE as literals, and its products without factors 1.0.

Shared by the specialised CPU kernel (`specialised`) and the GPU kernel (`engine.gpu.source`).
Each rewrite leaves every result bit as it was: x * 1.0 is x and x * -1.0 is -x, exactly. They
only spare numba (and, on a GPU, the loads of a slot known to be 1) the work.
"""

from __future__ import annotations

import re as regex

from ...operations import OperationKind
from ...program.model import MINUS_ONE, ONE

#: An entry's operands, in the order of a run's columns.
OPERANDS = ("out", "a", "b", "c")

#: Entries of a register sum written out as statements, not a loop over j, at most: a loop of
#: two costs numba more work than its two statements.
WRITTEN_OUT = 2


def position(base: int, si: int, sj: int, ni: int, nj: int, width: int = 1, lane: int | str = 0) -> str:
    """Where an entry's slot base + i si + j sj is in a flat array (slot * width + lane), with
    the loop variables the run has: the constants added up, no term that is 0 and no factor 1
    (numba types every operation of the text; the position is the same)."""
    offset = base * width + (lane if isinstance(lane, int) else 0)
    parts = [str(offset)] if offset else []
    for name, count, stride in (("i", ni, si * width), ("j", nj, sj * width)):
        if count > 1 and stride:
            parts.append(name if stride == 1 else f"{name} * {stride}")
    if isinstance(lane, str) and lane:
        parts.append(lane)
    return " + ".join(parts) or "0"


def constant(base: int, si: int, sj: int, ni: int, nj: int) -> str | None:
    """'1.0' or '-1.0' where every entry of a column reads the constant slot ONE or MINUS_ONE;
    else None."""
    if not ((ni > 1 and si) or (nj > 1 and sj)) and base in (ONE, MINUS_ONE):
        return "1.0" if base == ONE else "-1.0"
    return None


def without_unit_factors(text: str) -> str:
    """A product's text with its factors 1.0 left out: x * 1.0 is x, bit for bit (LLVM drops
    the multiplication anyway, but numba types it first)."""
    return regex.sub(r"(^|= )1\.0 \* ", r"\1", regex.sub(r" \* 1\.0(?![\d.])", "", text))


def product(kind: OperationKind, values) -> str:
    """An accumulating kind's term of one entry, its operands' ``values`` (a, b, c) as text."""
    return without_unit_factors(kind.term.format(**dict(zip(OPERANDS[1:], values))))


def entry_lines(kind: OperationKind, activation, columns, ni: int, nj: int, read, trial: str, rate: str,
                replaced: dict[str, str] | None = None) -> list[str]:
    """One entry's lines from its kind's statement, its slots at the loop variables the run has:
    ``read(column)`` the text reading an operand's slot, an accumulating kind's constant slots as
    literals (`constant`) and its products without factors 1.0, ``replaced`` operands given as
    text, the input read from column ``trial`` of ``inputs`` and the rate as ``rate``."""
    operands = {name: read(column) for name, column in zip(OPERANDS, columns)}
    if kind.term:
        operands.update((name, constant(*column, ni, nj) or operands[name])
                        for name, column in zip(OPERANDS[1:], columns[1:]))
    operands.update(replaced or {})
    operands.update(input=f"inputs[t, {position(*columns[1], ni, nj)}, {trial}]", rate=rate)
    lines = kind.lines(activation, **operands)
    return [without_unit_factors(line) for line in lines] if kind.term else lines
