"""Random strings of a grammar automaton in compiled code (`Automaton.walks`).

A CERG trial draws millions of strings; walking each in Python, one ``rng.integers(2)`` call
per branch, cost about 2 us a step, more than the compiled net's step. Here the branch
choices come in as a vector of bits drawn beforehand, and numba walks the automaton.
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def walk_strings(degree, edges, successors, start, final, bits, count, path, lengths):
    """Walk up to ``count`` strings from ``start`` to ``final``, reading one of ``bits`` (0 or
    1: which edge) at each state of ``degree`` 2 (``edges``/``successors``: per state, the
    numbers of its edges and their next states). Edge numbers go to ``path``, string lengths to
    ``lengths``. Stops before a string that would run past ``bits`` or ``path``; returns
    (strings walked, bits read, edges written)."""
    done = used = written = 0
    while done < count:
        state, read, wrote = start, used, written
        while state != final:
            choice = 0
            if degree[state] == 2:
                if read == bits.shape[0]:
                    return done, used, written
                choice = bits[read]
                read += 1
            if wrote == path.shape[0]:
                return done, used, written
            path[wrote] = edges[state, choice]
            wrote += 1
            state = successors[state, choice]
        lengths[done] = wrote - written
        done, used, written = done + 1, read, wrote
    return done, used, written
