"""Reber grammars (1997 Exp. 1, 2000 CERG): strings checked against the automaton and against
an independent regular expression, every transition used, targets = legal successors."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np
import pytest

from lstmgraph.tasks import ContinualEmbeddedReber, EmbeddedReber, Reber
from lstmgraph.tasks.reber import EMBEDDED_REBER, EMBEDDED_REBER_WITHOUT_BEGIN_END, REBER, Automaton, \
    prediction_sequence

from task_helpers import as_sets, decode

# The Reber grammar of 1997 Fig. 3 written as a regular expression by eliminating states,
# independently of the automaton in lstmgraph/tasks/reber.py: from the node after "BP" a
# string reads (T*VPX)* T*V then V or PS; after "BT" it reads S*X, then S, or X and the same.
FROM_P = r"(?:T*VPX)*T*V(?:V|PS)"
REBER_RE = rf"B(?:TS*X(?:S|X{FROM_P})|P{FROM_P})E"
EMBEDDED_RE = rf"(?:BT{REBER_RE}TE|BP{REBER_RE}PE)"
WITHOUT_BEGIN_END_RE = rf"(?:T{REBER_RE}T|P{REBER_RE}P)"


def test_known_strings_accepted_and_rejected():
    for good in ["BTSSXXTVVE", "BPVVE", "BTXXVPSE", "BPTVPXVVE"]:
        assert REBER.accepts(good) and re.fullmatch(REBER_RE, good)
    for good in ["BTBTXSETE", "BPBPVVEPE", "BTBPTVPSETE"]:
        assert EMBEDDED_REBER.accepts(good) and re.fullmatch(EMBEDDED_RE, good)
    for bad in ["BTBTXSEPE", "BPBPVVETE", "BTBTXSET", "TBTXSETE", "BTBTXSETEE", "BTBTSSETE", ""]:
        assert not EMBEDDED_REBER.accepts(bad) and not re.fullmatch(EMBEDDED_RE, bad)
    assert not REBER.accepts("BTXSXE")


def test_known_successors():
    task = EmbeddedReber()
    assert task.successors("") == {"B"}
    assert task.successors("B") == {"T", "P"}
    assert task.successors("BT") == {"B"}
    assert task.successors("BTB") == {"T", "P"}
    assert task.successors("BTBT") == {"S", "X"}
    assert task.successors("BTBTX") == {"X", "S"}
    assert task.successors("BPBPV") == {"P", "V"}
    assert task.successors("BTBTXSE") == {"T"}      # the long-lag prediction
    assert task.successors("BPBTXSE") == {"P"}
    assert task.successors("BPBTXSEP") == {"E"}
    assert task.successors("BPBTXSEPE") == frozenset()
    with pytest.raises(ValueError):
        task.successors("BX")


@pytest.mark.parametrize("task, automaton, pattern", [
    (EmbeddedReber(), EMBEDDED_REBER, EMBEDDED_RE),
    (Reber(), REBER, REBER_RE),
    (ContinualEmbeddedReber(without_begin_end=True), EMBEDDED_REBER_WITHOUT_BEGIN_END,
     WITHOUT_BEGIN_END_RE),
])
def test_generated_strings_accepted_and_every_transition_used(task, automaton, pattern):
    rng = np.random.default_rng(1)
    used = set()
    for _ in range(300):
        string = task.generate(rng)
        assert automaton.accepts(string)
        assert re.fullmatch(pattern, string), string
        used.update(automaton.path(string))
    assert used == set(automaton.numbered)
    # the automaton's transitions are exactly the Reber graph's 12 edges per copy, plus the frame
    frame = {EMBEDDED_RE: 6, REBER_RE: 0, WITHOUT_BEGIN_END_RE: 4}[pattern]
    copies = 1 if pattern == REBER_RE else 2
    assert len(automaton.numbered) == 12 * copies + frame


def test_branch_probability_one_half():
    rng = np.random.default_rng(2)
    seconds = Counter(EmbeddedReber().generate(rng)[1] for _ in range(4000))
    assert abs(seconds["T"] - 2000) < 150   # ~5 standard deviations


def test_erg_targets_are_the_next_symbol_and_legal_the_legal_successors():
    for targets in ("next", "legal"):
        seq = EmbeddedReber(targets=targets).sample(np.random.default_rng(4))
        string = decode(seq.inputs) + "E"
        assert as_sets(seq.judged) == [EmbeddedReber().successors(string[: t + 1]) for t in range(len(seq))]
        if targets == "next":
            assert (seq.targets.sum(axis=1) == 1).all() and decode(seq.targets) == string[1:]
        else:
            assert seq.legal is None  # the targets are the legal sets themselves


def test_erg_inputs_and_legal_outputs_are_the_string_and_its_legal_successors():
    task = EmbeddedReber(targets="legal")
    assert (task.n_inputs, task.n_outputs, task.continual) == (7, 7, False)
    rng = np.random.default_rng(3)
    observed_next: dict[str, set[str]] = defaultdict(set)
    target_of: dict[str, set[str]] = {}
    for _ in range(2000):
        seq = task.sample(rng)
        assert seq.inputs.dtype == seq.targets.dtype == np.float64
        assert not np.isnan(seq.targets).any()
        prefix = decode(seq.inputs)
        string = prefix + "E"                  # the final E is never an input
        assert EMBEDDED_REBER.accepts(string) and re.fullmatch(EMBEDDED_RE, string)
        sets = as_sets(seq.targets)
        for t in range(len(prefix)):
            assert sets[t] == task.successors(prefix[: t + 1])
            assert string[t + 1] in sets[t]
            observed_next[prefix[: t + 1]].add(string[t + 1])
            target_of[prefix[: t + 1]] = sets[t]
        # at the inner E only the second symbol may follow (the long lag); then only E
        assert prefix[-2] == "E" and sets[-2] == {string[1]}
        assert sets[-1] == {"E"}
    # independent of the automaton: every short prefix showed all of its targets in the data
    for prefix, nexts in observed_next.items():
        if len(prefix) <= 5:
            assert nexts == target_of[prefix], prefix


def test_cerg_stream_is_a_concatenation_of_erg_strings_with_boundary_targets():
    task = ContinualEmbeddedReber()
    assert task.continual and (task.n_inputs, task.n_outputs) == (7, 7)
    rng = np.random.default_rng(4)
    stream = ""
    for _ in range(300):
        seq = task.sample(rng)
        string = decode(seq.inputs)
        assert EMBEDDED_REBER.accepts(string)           # the whole string, final E included
        sets = as_sets(seq.targets)
        assert sets[-1] == {"B"}                        # the next string's B follows the E
        assert sets[:-1] == [set(task.successors(string[: t + 1])) for t in range(len(string) - 1)]
        stream += string
    assert re.fullmatch(rf"(?:{EMBEDDED_RE})+", stream)
    assert stream.count("EB") >= 299


def test_cerg_without_begin_end():
    task = ContinualEmbeddedReber(without_begin_end=True)
    assert task.continual and (task.n_inputs, task.n_outputs) == (7, 7)
    rng = np.random.default_rng(5)
    stream = ""
    for _ in range(300):
        seq = task.sample(rng)
        string = decode(seq.inputs)
        assert string[0] in "TP" and string[-1] == string[0]
        assert string[1] == "B" and string[-2] == "E"   # the inner Reber string keeps B and E
        assert REBER.accepts(string[1:-1])
        sets = as_sets(seq.targets)
        assert sets[-1] == {"T", "P"}
        assert sets[-2] == {string[0]}
        assert sets[:-1] == [set(task.successors(string[: t + 1])) for t in range(len(string) - 1)]
        stream += string
    assert re.fullmatch(rf"(?:{WITHOUT_BEGIN_END_RE})+", stream)


# `sample` draws and encodes strings as edge numbers (`Automaton.walk`, `path_sequence`) for speed;
# every result and checkpoint so far was drawn through state names and strings, so both must
# give the same arrays from the same calls on the generator.
GRAMMAR_TASKS = {
    "cerg": ContinualEmbeddedReber(),
    "cerg-without-begin-end": ContinualEmbeddedReber(without_begin_end=True),
    "erg-next": EmbeddedReber(targets="next"),
    "erg-legal": EmbeddedReber(targets="legal"),
    "reber-next": Reber(targets="next"),
    "reber-legal": Reber(targets="legal"),
}


class RecordingGenerator:
    """A numpy generator that records every method call made on it, in order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.calls: list[tuple[str, tuple, dict]] = []

    def __getattr__(self, name: str):
        method = getattr(self.rng, name)

        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return method(*args, **kwargs)

        return record


def generate_by_state_names(automaton: Automaton, rng) -> str:
    """`Automaton.generate` as written before `walk`, over state names and ``edges``."""
    state, out = automaton.start, []
    while state != automaton.final:
        edges = automaton.edges[state]
        symbol, state = edges[int(rng.integers(len(edges)))] if len(edges) > 1 else edges[0]
        out.append(symbol)
    return "".join(out)


@pytest.mark.parametrize("automaton", [REBER, EMBEDDED_REBER, EMBEDDED_REBER_WITHOUT_BEGIN_END],
                         ids=lambda automaton: automaton.name)
def test_generate_makes_the_same_calls_and_strings_as_the_state_name_walk(automaton):
    walked, named = RecordingGenerator(11), RecordingGenerator(11)
    for _ in range(2000):
        assert automaton.generate(walked) == generate_by_state_names(automaton, named)
    assert walked.calls == named.calls and {name for name, _, _ in walked.calls} == {"integers"}
    assert walked.rng.bit_generator.state == named.rng.bit_generator.state


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", GRAMMAR_TASKS)
def test_sample_is_prediction_sequence_of_generate_from_the_same_generator_state(name, seed):
    task = GRAMMAR_TASKS[name]
    fast, reference = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(2000):
        sequence = task.sample(fast)
        expected = prediction_sequence(task.automaton, task.automaton.generate(reference), task.continual,
                                       task.targets)
        for got, want in ((sequence.inputs, expected.inputs), (sequence.targets, expected.targets),
                          (sequence.legal, expected.legal)):
            assert (got is None) == (want is None)
            if want is not None:
                assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
                assert np.array_equal(got, want)
        assert fast.bit_generator.state == reference.bit_generator.state


def test_an_automaton_with_a_three_way_branch_is_refused():
    """`Automaton.walks` draws one bit per branch (the papers' grammars branch two ways, each
    edge with probability 0.5)."""
    with pytest.raises(ValueError, match="more than two edges"):
        Automaton("three-way", "a", "z", {"a": (("B", "z"), ("T", "z"), ("P", "z"))})
