"""A static model of the shared-memory traffic of a warp's step, without a GPU.

    python benchmarks/shared_banks.py [SPEC ...]

For each run the warp deals out (`engine.gpu.source.split`), each pass and each operand: the
32 lanes' 64-bit reads of the block's slot array, served as two half-warps, each taking as many
wavefronts as the busiest of 16 eight-byte banks holds distinct words (one word read by many
lanes is broadcast). It counts them for the slot array as the kernel lays it out now, (slots,
trials) row-major (C), and transposed, a trial's slots side by side (F), against the least
possible. A model, not a measurement: it leaves out the one-thread runs and the group kinds.
Measured 2026-11-29 (docs/gpu.md, "Registers"): the CERG net 1,980 (C), 1,595 (F), 1,477 at
least; 3 trials a block (ERG) are conflict-free either way.
"""

from __future__ import annotations

import argparse

from lstmgraph import compile_spec
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.compiled.entry_text import OPERANDS
from lstmgraph.engine.compiled.interpreter import _slots as kind_operands
from lstmgraph.engine.gpu.source import choose_layout, split
from lstmgraph.files import BUNDLED_SPECS
from lstmgraph.operations import KIND_CODE, OPERATION_KINDS

_KIND = {code: name for name, code in KIND_CODE.items()}


def wavefronts(slots: list[int], order: str, n_slots: int, trials: int, column: int = 1) -> int:
    """Wavefronts of one warp-wide read of ``slots`` (a lane each) by trial ``column``."""
    total = 0
    for half in (slots[:16], slots[16:]):
        words = {slot * trials + column if order == "C" else column * n_slots + slot for slot in half}
        banks: dict[int, int] = {}
        for word in words:
            banks[word % 16] = banks.get(word % 16, 0) + 1
        total += max(banks.values(), default=0)
    return total


def count(spec: str) -> dict[str, int]:
    network = CompiledNetwork(compile_spec(BUNDLED_SPECS / f"{spec}.yaml"), kernel="interpreter")
    flat, n_slots = network.flat, network.program.n_slots
    trials = choose_layout(n_slots, 32).trials
    totals = {"C": 0, "F": 0, "least": 0}
    for op in range(len(flat.kind)):
        kind = OPERATION_KINDS[_KIND[int(flat.kind[op])]]
        if kind.call:
            continue
        for row in flat.runs[int(flat.run_start[op]):int(flat.run_stop[op])]:
            ni, nj = int(row[0]), int(row[1])
            how = split(kind, row)
            if how == "one":
                continue
            items, inner = {"entries": (ni * nj, 1), "rows": (ni, nj), "columns": (nj, ni)}[how]
            for start in range(0, items, 32):
                lanes = range(start, min(items, start + 32))
                for m in range(inner):
                    for name in set(kind_operands(kind)) | {"out"}:
                        k = OPERANDS.index(name)
                        base, si, sj = (int(x) for x in row[2 + 3 * k:5 + 3 * k])
                        at = {"entries": lambda e: (e // nj, e % nj), "rows": lambda i: (i, m),
                              "columns": lambda j: (m, j)}[how]
                        slots = [base + at(x)[0] * si + at(x)[1] * sj for x in lanes]
                        for order in ("C", "F"):
                            totals[order] += wavefronts(slots, order, n_slots, trials)
                        totals["least"] += 1 if len(slots) <= 16 else 2
    return {"trials a block": trials, **totals}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=["gers2000_cerg", "hochreiter1997_adding", "gers2002_timing",
                                                     "hochreiter1997_erg"])
    for spec in parser.parse_args().specs:
        print(spec, count(spec), flush=True)


if __name__ == "__main__":
    main()
