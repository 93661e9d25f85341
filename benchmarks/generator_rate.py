"""How fast compiled code draws numpy's generator: numba's ``Generator.integers`` (a call into
numpy per draw) against `tasks.pcg64.integers` (numpy's algorithm inline), and a CERG walk.

    python benchmarks/generator_rate.py [--seconds 2]

Prints draws a second of ``integers(0, 2)`` each way (the same numbers: tests/tasks/test_pcg64.py)
and CERG edges a second of `tasks.draws.walk_strings` at 256 strings a call (a refill's batch)
and at 100,000 (docs/performance.md, "numpy's generator inline").
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from lstmgraph.tasks import make_task, pcg64
from lstmgraph.tasks.draws import walk_strings


@numba.njit
def _numba_bits(rng, count):
    total = 0
    for _ in range(count):
        total += rng.integers(0, 2)
    return total


@numba.njit
def _inline_bits(state, count):
    total = 0
    for _ in range(count):
        total += pcg64.integers(state, 0, 2)
    return total


def _rate(call, seconds: float) -> float:
    """Calls of ``call`` (which returns what it made) a second, after one to compile."""
    call()
    made, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        made += call()
    return made / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    seconds = parser.parse_args().seconds
    batch = 1_000_000
    rng = np.random.default_rng(0)
    state = pcg64.state_of(np.random.default_rng(0))
    print(f"integers(0, 2), numba's Generator: {_rate(lambda: _numba_bits(rng, batch) * 0 + batch, seconds) / 1e6:.1f} M draws/s")
    print(f"integers(0, 2), tasks.pcg64:       {_rate(lambda: _inline_bits(state, batch) * 0 + batch, seconds) / 1e6:.1f} M draws/s")
    automaton = make_task("continual_embedded_reber").automaton
    tables = (automaton._degrees, automaton._edge_table, automaton._next_table, automaton._start_number,
              automaton._final_number)
    for count in (256, 100_000):
        rate = _rate(lambda: len(walk_strings(state, *tables, count)[0]), seconds)
        print(f"walk_strings, {count:,} CERG strings a call: {rate / 1e6:.1f} M edges/s")


if __name__ == "__main__":
    main()
