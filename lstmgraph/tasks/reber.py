"""Reber grammars: the 1997 embedded Reber grammar (ERG), the plain Reber grammar and the
2000 continual embedded Reber grammar (CERG).

Symbols are one-hot in the fixed order ``B, T, P, S, X, V, E`` (unit 0 = B ... unit 6 = E),
the order the 1997 paper lists them in; inputs and outputs use the same order.

The grammars are deterministic finite automata whose edges carry symbols; where a state has
two outgoing edges each is taken with probability 0.5 (1997, Exp. 1). Because every state's
outgoing symbols are distinct, the state after any prefix is unique, so "the symbols that may
legally come next" is a well-defined set (`Automaton.successors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from ..errors import shown
from ..success import SuccessTest
from .base import Sequence, Sequences, register

SYMBOLS: tuple[str, ...] = ("B", "T", "P", "S", "X", "V", "E")
INDEX: dict[str, int] = {symbol: i for i, symbol in enumerate(SYMBOLS)}

Edges = dict[str, tuple[tuple[str, str], ...]]


_IDENTITY = np.eye(len(SYMBOLS))


def one_hot(symbols: Iterable[str]) -> np.ndarray:
    """Rows of the one-hot code of ``symbols`` (order `SYMBOLS`)."""
    return _IDENTITY[[INDEX[s] for s in symbols]].reshape(-1, len(SYMBOLS))


@dataclass(frozen=True)
class Automaton:
    """A deterministic automaton over `SYMBOLS`; strings run from ``start`` to ``final``.

    Its edges are also numbered (``numbered``) and its states listed, so that a random string
    can be drawn as a list of edge numbers (`walk`) and encoded by indexing per-edge rows
    (``edge_symbols``, ``edge_successors``): a CERG trial draws millions of steps, and sampling
    through strings and state names took about 4 us a step, two thirds of it beyond the random
    draws (benchmarks/task_sampling.py)."""

    name: str
    start: str
    final: str
    edges: Edges
    _next: dict[tuple[str, str], str] = field(init=False, repr=False, compare=False)
    _successor_rows: dict[str, np.ndarray] = field(init=False, repr=False, compare=False)
    #: Every edge (state, symbol, next state); `walk` gives strings as positions in this tuple.
    numbered: tuple[tuple[str, str, str], ...] = field(init=False, repr=False, compare=False)
    #: Row e: the one-hot code of edge e's symbol.
    edge_symbols: np.ndarray = field(init=False, repr=False, compare=False)
    #: Row e: the multi-hot code of the symbols that may follow edge e (leave its next state).
    edge_successors: np.ndarray = field(init=False, repr=False, compare=False)
    # By state number: the edges leaving it as (edge number, next state number); the numbers
    # of ``start`` and ``final``.
    _leaving: tuple[tuple[tuple[int, int], ...], ...] = field(init=False, repr=False, compare=False)
    _start_number: int = field(init=False, repr=False, compare=False)
    _final_number: int = field(init=False, repr=False, compare=False)
    # The same as arrays for `walks`: per state its out-degree, its edges' numbers and next states.
    _degrees: np.ndarray = field(init=False, repr=False, compare=False)
    _edge_table: np.ndarray = field(init=False, repr=False, compare=False)
    _next_table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table: dict[tuple[str, str], str] = {}
        for state, out in self.edges.items():
            for symbol, target in out:
                if (state, symbol) in table:
                    raise ValueError(f"{self.name}: state {state!r} has two edges labelled {symbol!r}")
                table[(state, symbol)] = target
        object.__setattr__(self, "_next", table)
        states = list(dict.fromkeys([self.start, *self.edges, *table.values(), self.final]))
        rows = {state: np.zeros(len(SYMBOLS)) for state in states}
        for state, row in rows.items():
            row[[INDEX[symbol] for symbol in self.symbols_from(state)]] = 1.0
        object.__setattr__(self, "_successor_rows", rows)
        numbered = tuple((state, symbol, target) for state, out in self.edges.items() for symbol, target in out)
        edge_number = {edge: e for e, edge in enumerate(numbered)}
        state_number = {state: i for i, state in enumerate(states)}
        object.__setattr__(self, "numbered", numbered)
        object.__setattr__(self, "edge_symbols", one_hot(symbol for _, symbol, _ in numbered))
        object.__setattr__(self, "edge_successors", self.successor_rows(target for _, _, target in numbered))
        object.__setattr__(self, "_leaving", tuple(
            tuple((edge_number[(state, symbol, target)], state_number[target])
                  for symbol, target in self.edges.get(state, ()))
            for state in states))
        object.__setattr__(self, "_start_number", state_number[self.start])
        object.__setattr__(self, "_final_number", state_number[self.final])
        if any(len(out) > 2 for out in self._leaving):
            raise ValueError(f"{self.name}: a state has more than two edges; strings are drawn one "
                             f"bit per branch (each of two edges taken with probability 0.5)")
        degrees = np.array([len(out) for out in self._leaving], dtype=np.int64)
        tables = np.zeros((2, len(states), 2), dtype=np.int64)
        for number, out in enumerate(self._leaving):
            for choice, (edge, target) in enumerate(out):
                tables[:, number, choice] = edge, target
        object.__setattr__(self, "_degrees", degrees)
        object.__setattr__(self, "_edge_table", tables[0])
        object.__setattr__(self, "_next_table", tables[1])

    def successor_row(self, state: str) -> np.ndarray:
        """The multi-hot row of the symbols that may follow ``state`` (precomputed; do not write)."""
        return self._successor_rows[state]

    def successor_rows(self, states: Iterable[str]) -> np.ndarray:
        """Multi-hot rows of the symbols that may follow each state."""
        return np.array([self._successor_rows[state] for state in states])

    def walk(self, rng: np.random.Generator) -> list[int]:
        """One random string as the numbers of its edges (``numbered``): each edge of a
        branching state is equally likely, drawn by ``rng.integers(number of edges)``, the only
        call on ``rng`` (every result and checkpoint so far depends on exactly these draws)."""
        integers, leaving, final = rng.integers, self._leaving, self._final_number
        state, path = self._start_number, []
        while state != final:
            out = leaving[state]
            edge, state = out[int(integers(len(out)))] if len(out) > 1 else out[0]
            path.append(edge)
        return path

    def walks(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` random strings end to end as edge numbers, and their lengths: the strings
        and the generator state of ``count`` calls of `walk`, in compiled code
        (`draws.walk_strings`)."""
        from .draws import walk_strings
        from .pcg64 import draw_with

        return draw_with(rng, walk_strings, self._degrees, self._edge_table, self._next_table, self._start_number,
                         self._final_number, count)

    @property
    def tables(self) -> tuple:
        """What `draws.continual_rows` walks and codes before its count (the GPU's draws too):
        per state its out-degree, edges and next states; the start and final states; per edge
        its symbol's and legal successors' rows; the start's successors."""
        return (self._degrees, self._edge_table, self._next_table, self._start_number, self._final_number,
                self.edge_symbols, self.edge_successors, self.successor_row(self.start))

    @property
    def shortest(self) -> int:
        """The fewest symbols a string has (breadth first from ``start``): it bounds how many
        strings fit in a trial's rows on the GPU (`experiments.gpu_data`)."""
        reached, length = {self._start_number}, 0
        while self._final_number not in reached:
            reached = {target for state in reached for _, target in self._leaving[state]}
            length += 1
        return length

    def generate(self, rng: np.random.Generator) -> str:
        """One random string; each edge of a branching state is equally likely (`walk`)."""
        return "".join(self.numbered[edge][1] for edge in self.walk(rng))

    def states(self, string: Iterable[str]) -> list[str]:
        """The states visited reading ``string`` (start state first); ValueError if illegal."""
        state, visited = self.start, [self.start]
        for i, symbol in enumerate(string):
            try:
                state = self._next[(state, symbol)]
            except KeyError:
                raise ValueError(f"{self.name}: symbol {symbol!r} at position {i} is not allowed "
                                 f"there (allowed: {''.join(sorted(self.symbols_from(state)))})") from None
            visited.append(state)
        return visited

    def path(self, string: str) -> list[tuple[str, str, str]]:
        """The edges (state, symbol, next state) taken reading ``string``."""
        visited = self.states(string)
        return [(visited[i], symbol, visited[i + 1]) for i, symbol in enumerate(string)]

    def successors(self, prefix: str) -> frozenset[str]:
        """The symbols that may legally follow ``prefix`` (empty after a complete string)."""
        return frozenset(self.symbols_from(self.states(prefix)[-1]))

    def accepts(self, string: str) -> bool:
        """Whether ``string`` is a complete string of the grammar."""
        try:
            return self.states(string)[-1] == self.final
        except ValueError:
            return False

    def symbols_from(self, state: str) -> list[str]:
        """The symbols on the edges leaving ``state``."""
        return [symbol for symbol, _ in self.edges.get(state, ())]


def _reber_edges(prefix: str, exit_state: str) -> Edges:
    """The Reber automaton (1997 Fig. 3): nodes ``prefix0..prefix6``, leaving to ``exit_state``."""
    n = [f"{prefix}{k}" for k in range(7)]
    return {
        n[0]: (("B", n[1]),),
        n[1]: (("T", n[2]), ("P", n[3])),
        n[2]: (("S", n[2]), ("X", n[4])),
        n[3]: (("T", n[3]), ("V", n[5])),
        n[4]: (("X", n[3]), ("S", n[6])),
        n[5]: (("P", n[4]), ("V", n[6])),
        n[6]: (("E", exit_state),),
    }


def _embedded_edges(with_begin_end: bool) -> Edges:
    """The embedded Reber automaton (1997 Fig. 4): B, then T or P, a Reber string, the same
    T or P again, then E. Without begin/end only the outer B and E are dropped."""
    edges: Edges = {"open": (("T", "T0"), ("P", "P0"))}
    edges.update(_reber_edges("T", "Tclose"))
    edges.update(_reber_edges("P", "Pclose"))
    after = "end" if with_begin_end else "accept"
    edges["Tclose"] = (("T", after),)
    edges["Pclose"] = (("P", after),)
    if with_begin_end:
        edges["begin"] = (("B", "open"),)
        edges["end"] = (("E", "accept"),)
    return edges


REBER = Automaton("reber", "r0", "accept", _reber_edges("r", "accept"))
EMBEDDED_REBER = Automaton("embedded_reber", "begin", "accept", _embedded_edges(True))
EMBEDDED_REBER_WITHOUT_BEGIN_END = Automaton("embedded_reber_without_begin_end", "open", "accept",
                                             _embedded_edges(False))


TARGETS = ("next", "legal")


def prediction_sequence(automaton: Automaton, string: str, continual: bool, targets: str = "legal") -> Sequence:
    """Inputs: the symbols of ``string``; ``legal`` at each step: the legal next symbols
    (multi-hot); targets: the same (``targets="legal"``) or the one symbol that actually
    comes next (``"next"``).

    Independent strings stop before the final symbol (nothing follows it). In a continual
    stream the final symbol is an input too and its legal successors are the first symbols
    of the next string ("next" is not available there: the next string is not drawn yet).
    """
    legal = automaton.successor_rows(automaton.states(string)[1:])
    if continual:
        legal[-1] = automaton.successor_rows([automaton.start])[0]
        return Sequence(one_hot(string), legal)
    if targets == "next":
        return Sequence(one_hot(string[:-1]), one_hot(string[1:]), legal[:-1])
    return Sequence(one_hot(string[:-1]), legal[:-1])


def path_sequence(automaton: Automaton, path: list[int], continual: bool, targets: str = "legal") -> Sequence:
    """`prediction_sequence` of the string whose edge numbers are ``path`` (`Automaton.walk`),
    read from the automaton's per-edge rows: what `sample` uses, since strings and state names
    cost most of a CERG step's drawing time (benchmarks/task_sampling.py). `paths_sequences`
    codes many strings at once the same way; for one string its numpy calls would cost three
    times these (10 us against 3.4), so both are kept, and tests/tasks/test_tasks.py holds them
    equal."""
    edges = np.array(path)
    if continual:
        legal = automaton.edge_successors.take(edges, axis=0)
        legal[-1] = automaton.successor_row(automaton.start)
        return Sequence(automaton.edge_symbols.take(edges, axis=0), legal)
    inputs = automaton.edge_symbols.take(edges[:-1], axis=0)
    legal = automaton.edge_successors.take(edges[:-1], axis=0)
    if targets == "next":
        return Sequence(inputs, automaton.edge_symbols.take(edges[1:], axis=0), legal)
    return Sequence(inputs, legal)


def paths_sequences(automaton: Automaton, edges: np.ndarray, lengths: np.ndarray, targets: str = "legal") -> Sequences:
    """`prediction_sequence` of each independent string, laid end to end: ``edges`` the
    strings' edge numbers end to end, ``lengths`` their lengths (`Automaton.walks`). A continual
    stream is coded as it is drawn (`draws.continual_rows`)."""
    ends = np.cumsum(lengths)
    legal = automaton.edge_successors.take(edges, axis=0)
    read = np.ones(len(edges), dtype=bool)  # every symbol but each string's last is an input
    read[ends - 1] = False
    inputs, legal = automaton.edge_symbols.take(edges[read], axis=0), legal[read]
    if targets == "next":  # every symbol but each string's first is a target
        following = np.ones(len(edges), dtype=bool)
        following[ends - lengths] = False
        return Sequences(inputs, automaton.edge_symbols.take(edges[following], axis=0), legal, lengths - 1)
    return Sequences(inputs, legal, legal, lengths - 1)


class _GrammarTask:
    automaton: Automaton
    n_inputs = len(SYMBOLS)
    n_outputs = len(SYMBOLS)
    continual = False
    input_symbols = output_symbols = SYMBOLS  # the next symbol is predicted in the same code
    draws_in_threads = True  # `base.draws_in_threads`: the walks are compiled (`draws.walk_strings`)

    def successors(self, prefix: str) -> frozenset[str]:
        """The symbols that may legally follow ``prefix``."""
        return self.automaton.successors(prefix)

    def accepts(self, string: str) -> bool:
        """Whether ``string`` is a complete string of this task's grammar."""
        return self.automaton.accepts(string)

    def generate(self, rng: np.random.Generator) -> str:
        """One random string of the grammar (what `sample` encodes)."""
        return self.automaton.generate(rng)

    targets = "legal"

    def sample(self, rng: np.random.Generator) -> Sequence:
        """`prediction_sequence` of `generate`'s string, drawn and encoded as integers."""
        return path_sequence(self.automaton, self.automaton.walk(rng), self.continual, self.targets)

    def sample_many(self, rng: np.random.Generator, count: int) -> Sequences:
        """``count`` samples end to end, as ``count`` calls of `sample` draw them."""
        if self.continual:  # coded as drawn (`draws.continual_rows`), in room for strings of 13 symbols on average
            from .draws import draw_rows

            return draw_rows(rng, self.stream_rows, count, 13 * count, self.n_inputs, self.n_outputs)
        return paths_sequences(self.automaton, *self.automaton.walks(rng, count), self.targets)


class _IndependentGrammarTask(_GrammarTask):
    """A grammar task of independent strings, with the ``targets`` option (see `EmbeddedReber`)."""

    def __init__(self, targets: str = "next") -> None:
        if targets not in TARGETS:
            raise ValueError(f"targets must be one of {', '.join(map(repr, TARGETS))}, got {shown(targets)}")
        self.targets = targets


@register("embedded_reber")
class EmbeddedReber(_IndependentGrammarTask):
    """1997 Exp. 1, the embedded Reber grammar (ERG): predict the next symbol at every step.

    One sample is one ERG string ``B (T|P) <Reber string> (T|P, the same) E``, branch
    probability 0.5. Input at step t is symbol t (one-hot, order B,T,P,S,X,V,E); the string's
    final E is never an input, so T = len(string) - 1. Option ``targets``: ``"next"``
    (default) trains on the symbol that actually comes next, one-hot, as "predict the next
    symbol" reads; ``"legal"`` on the multi-hot set of symbols that may come next. Either way
    ``Sequence.legal`` holds that set, which the success test "the output units of the
    possible next symbols are the most active" judges by. With multi-hot targets the 1997 net
    did not learn the long lag in our runs (docs/results.md). Independent sequences
    (activations reset before each, as in 1997).
    """

    name = "embedded_reber"
    #: 1997 Exp. 1: the units of the possible next symbols the most active.
    success_test = SuccessTest("most_active")
    automaton = EMBEDDED_REBER


@register("reber")
class Reber(_IndependentGrammarTask):
    """The plain (non-embedded) Reber grammar ``B ... E``, same coding and options as ERG."""

    name = "reber"
    #: As the embedded Reber grammar of 1997.
    success_test = SuccessTest("most_active")
    automaton = REBER


@register("continual_embedded_reber")
class ContinualEmbeddedReber(_GrammarTask):
    """Gers et al. 2000, the continual embedded Reber grammar (CERG).

    The stream is the concatenation of independent ERG strings with no reset in between;
    each `sample` is one string. Unlike ERG every symbol, including the final E, is an input
    (T = len(string)); the target at the final E is the first symbol of the next string, B.
    Targets are multi-hot legal successors as in `EmbeddedReber`.

    ``without_begin_end=True`` is the paper's extra variant: the outer B and E of each ERG
    string are dropped (``(T|P) <Reber string> (T|P)``), so the closing T/P is followed by the
    next string's opening T/P (target {T, P}). The inner Reber string keeps its own B and E.
    Inputs and outputs stay 7 wide in both variants.
    """

    name = "continual_embedded_reber"
    #: 2000: every output on the right side of 0.5 (|error| < 0.49; catalogue.py says why).
    success_test = SuccessTest("tolerance", 0.49)
    continual = True

    @property
    def stream_rows(self):
        """How its stream is drawn in place (`draws.StreamRows`): the GPU's draws."""
        from .draws import StreamRows, continual_rows

        return StreamRows(continual_rows, self.automaton.tables, self.automaton.shortest, None, 1,
                          (self.name, self.automaton.name))

    def __init__(self, without_begin_end: bool = False) -> None:
        if not isinstance(without_begin_end, bool):
            raise ValueError(f"without_begin_end must be true or false, not {shown(without_begin_end)}")
        self.without_begin_end = without_begin_end
        self.automaton = EMBEDDED_REBER_WITHOUT_BEGIN_END if without_begin_end else EMBEDDED_REBER
