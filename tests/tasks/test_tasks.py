"""The task generators: grammar, marker and class rules recomputed from the generated data."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from lstmgraph.tasks import (TASKS, Adding, ContinualEmbeddedReber, EmbeddedReber, Multiplication,
                             PeriodicFunction, RecallFirst, Reber, TaskError, TemporalOrder, make_task)
from lstmgraph.tasks.reber import EMBEDDED_REBER, REBER, SYMBOLS
from lstmgraph.tasks.temporal_order import SYMBOLS as TO_SYMBOLS, WINDOWS


def decode(rows: np.ndarray, symbols=SYMBOLS) -> str:
    assert np.all(rows.sum(axis=1) == 1) and set(np.unique(rows)) <= {0.0, 1.0}
    return "".join(symbols[i] for i in rows.argmax(axis=1))


def as_sets(targets: np.ndarray) -> list[set[str]]:
    return [{SYMBOLS[i] for i in np.flatnonzero(row == 1.0)} for row in targets]


# ---------------------------------------------------------------------- Reber grammars

def test_known_strings_accepted_and_rejected():
    for good in ["BTSSXXTVVE", "BPVVE", "BTXXVPSE", "BPTVPXVVE"]:
        assert REBER.accepts(good)
    for good in ["BTBTXSETE", "BPBPVVEPE", "BTBPTVPSETE"]:
        assert EMBEDDED_REBER.accepts(good)
    for bad in ["BTBTXSEPE", "BPBPVVETE", "BTBTXSET", "TBTXSETE", "BTBTXSETEE", "BTBTSSETE", ""]:
        assert not EMBEDDED_REBER.accepts(bad)
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


@pytest.mark.parametrize("task, automaton", [(EmbeddedReber(), EMBEDDED_REBER), (Reber(), REBER)])
def test_generated_strings_accepted_and_every_transition_used(task, automaton):
    rng = np.random.default_rng(1)
    used = set()
    for _ in range(2000):
        string = task.generate(rng)
        assert automaton.accepts(string)
        used.update(automaton.path(string))
    assert used == automaton.transitions


def test_branch_probability_one_half():
    rng = np.random.default_rng(2)
    seconds = Counter(EmbeddedReber().generate(rng)[1] for _ in range(4000))
    assert abs(seconds["T"] - 2000) < 150   # ~5 standard deviations


def test_erg_inputs_and_targets_are_the_string_and_its_legal_successors():
    task = EmbeddedReber()
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
        assert EMBEDDED_REBER.accepts(string)
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


def test_cerg_boundary_targets():
    task = ContinualEmbeddedReber()
    assert task.continual and (task.n_inputs, task.n_outputs) == (7, 7)
    rng = np.random.default_rng(4)
    stream = ""
    for _ in range(200):
        seq = task.sample(rng)
        string = decode(seq.inputs)
        assert EMBEDDED_REBER.accepts(string)           # the whole string, final E included
        sets = as_sets(seq.targets)
        assert sets[-1] == {"B"}                        # the next string's B follows the E
        assert sets[:-1] == [set(task.successors(string[: t + 1])) for t in range(len(string) - 1)]
        stream += string
    assert stream.count("EB") >= 199


def test_cerg_without_begin_end():
    task = ContinualEmbeddedReber(without_begin_end=True)
    rng = np.random.default_rng(5)
    for _ in range(200):
        seq = task.sample(rng)
        string = decode(seq.inputs)
        assert string[0] in "TP" and string[-1] == string[0]
        assert string[1] == "B" and string[-2] == "E"   # the inner Reber string keeps B and E
        assert REBER.accepts(string[1:-1])
        assert as_sets(seq.targets)[-1] == {"T", "P"}
        assert as_sets(seq.targets)[-2] == {string[0]}


# ---------------------------------------------------------------------- adding / multiplication

def check_marked_pairs(task, seq, low, high, neutral):
    T = task.length
    values, markers = seq.inputs[:, 0], seq.inputs[:, 1]
    L = len(seq)
    assert T <= L <= T + T // 10
    assert seq.inputs.shape == (L, 2) and seq.targets.shape == (L, 1)
    marked = np.flatnonzero(markers == 1.0)
    assert len(marked) == 2
    first, second = marked
    assert first < 10 and second < T // 2 - 1
    expected = np.zeros(L)
    expected[0] = expected[-1] = -1.0
    expected[marked] = 1.0
    np.testing.assert_array_equal(markers, expected)
    if first == 0:
        assert values[0] == neutral
    assert np.all((values >= low) & (values <= high))
    assert np.isnan(seq.targets[:-1]).all()
    return values[first], values[second], seq.targets[-1, 0], first == 0


@pytest.mark.parametrize("T", [100, 500])
def test_adding_rules(T):
    task = Adding(length=T)
    rng = np.random.default_rng(6)
    lengths, first_marked = set(), 0
    for _ in range(1000):
        seq = task.sample(rng)
        x1, x2, target, at_zero = check_marked_pairs(task, seq, -1.0, 1.0, 0.0)
        assert target == pytest.approx(0.5 + (x1 + x2) / 4)
        assert 0.0 <= target <= 1.0
        lengths.add(len(seq))
        first_marked += at_zero
    assert lengths == set(range(T, T + T // 10 + 1))
    assert first_marked > 50      # about 11 % of sequences mark the first pair


def test_multiplication_rules():
    task = Multiplication()
    assert (task.n_inputs, task.n_outputs, task.continual, task.length) == (2, 1, False, 100)
    rng = np.random.default_rng(7)
    first_marked = 0
    for _ in range(1000):
        seq = task.sample(rng)
        x1, x2, target, at_zero = check_marked_pairs(task, seq, 0.0, 1.0, 1.0)
        assert target == pytest.approx(x1 * x2)
        first_marked += at_zero
    assert first_marked > 50


# ---------------------------------------------------------------------- temporal order

@pytest.mark.parametrize("variant, n_classes", [("6a", 4), ("6b", 8)])
def test_temporal_order(variant, n_classes):
    task = TemporalOrder(variant=variant)
    assert (task.n_inputs, task.n_outputs, task.continual) == (8, n_classes, False)
    rng = np.random.default_rng(8)
    counts = Counter()
    n = 4000
    for _ in range(n):
        seq = task.sample(rng)
        string = decode(seq.inputs, TO_SYMBOLS)
        assert 100 <= len(string) <= 110
        assert string[0] == "E" and string[-1] == "B"
        relevant = [(t + 1, s) for t, s in enumerate(string) if s in "XY"]   # 1-based steps
        assert len(relevant) == len(WINDOWS[variant])
        for (step, _), (low, high) in zip(relevant, WINDOWS[variant]):
            assert low <= step <= high
        assert set(string[1:-1]) <= set("abcdXY")
        label = int("".join("0" if s == "X" else "1" for _, s in relevant), 2)
        assert np.isnan(seq.targets[:-1]).all()
        expected = np.zeros(n_classes)
        expected[label] = 1.0
        np.testing.assert_array_equal(seq.targets[-1], expected)
        counts[label] += 1
    assert set(counts) == set(range(n_classes))
    expected_count = n / n_classes
    spread = 5 * np.sqrt(expected_count)
    assert all(abs(c - expected_count) < spread for c in counts.values()), counts


def test_temporal_order_class_names_follow_paper_order():
    from lstmgraph.tasks.temporal_order import class_of
    assert [class_of(s) for s in ["XX", "XY", "YX", "YY"]] == [0, 1, 2, 3]
    assert class_of("XXY") == 1 and class_of("YXX") == 4 and class_of("YYY") == 7


# ---------------------------------------------------------------------- periodic functions

def test_periodic_cosine_formula_and_continuation():
    task = PeriodicFunction(shape="cosine", period=25, length=90)
    assert task.continual and task.length == 100 and (task.n_inputs, task.n_outputs) == (1, 1)
    rng = np.random.default_rng(9)
    a, b = task.sample(rng), task.sample(rng)
    stream = np.concatenate([a.targets[:, 0], b.targets[:, 0]])
    t = np.arange(1, 201)
    np.testing.assert_allclose(stream, (1 - np.cos(2 * np.pi * t / 25)) / 2, atol=1e-12)
    assert np.all(a.inputs == 0.0)


def test_periodic_triangle_and_rectangle():
    F = 10
    tri = PeriodicFunction(shape="triangle", period=F, length=20).sample(np.random.default_rng(0))
    rect = PeriodicFunction(shape="rectangle", period=F, length=20).sample(np.random.default_rng(0))
    # steps 1..20; step t is row t - 1
    np.testing.assert_allclose(tri.targets[:10, 0], [.2, .4, .6, .8, 1., .8, .6, .4, .2, 0.])
    np.testing.assert_array_equal(rect.targets[:10, 0], [0, 0, 0, 0, 0, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(tri.targets[:10], tri.targets[10:])
    for seq in (tri, rect):
        assert seq.targets.min() == 0.0 and seq.targets.max() == 1.0


# ---------------------------------------------------------------------- recall_first

def test_recall_first():
    task = RecallFirst(n_inputs=5, n_classes=3, length=6)
    assert (task.n_inputs, task.n_outputs, task.continual) == (5, 3, False)
    rng = np.random.default_rng(10)
    labels, later = Counter(), Counter()
    for _ in range(1500):
        seq = task.sample(rng)
        codes = seq.inputs.argmax(axis=1)
        assert np.all(seq.inputs.sum(axis=1) == 1) and len(seq) == 6
        assert codes[0] < 3
        assert np.isnan(seq.targets[:-1]).all()
        assert seq.targets[-1].argmax() == codes[0] and seq.targets[-1].sum() == 1
        labels[codes[0]] += 1
        later.update(codes[1:])
    assert set(labels) == {0, 1, 2} and set(later) == set(range(5))


# ---------------------------------------------------------------------- all tasks

RANDOM_TASKS = [("embedded_reber", {}), ("reber", {}), ("continual_embedded_reber", {}),
                ("continual_embedded_reber", {"without_begin_end": True}),
                ("adding", {}), ("multiplication", {}), ("temporal_order", {}),
                ("temporal_order", {"variant": "6b"}), ("recall_first", {})]


def draw(task, seed, n=5):
    rng = np.random.default_rng(seed)
    return [task.sample(rng) for _ in range(n)]


def same(a, b):
    return len(a) == len(b) and all(
        x.inputs.shape == y.inputs.shape and np.array_equal(x.inputs, y.inputs)
        and np.array_equal(x.targets, y.targets, equal_nan=True) for x, y in zip(a, b))


@pytest.mark.parametrize("name, options", RANDOM_TASKS)
def test_seed_fixes_the_data(name, options):
    task = make_task(name, options)
    assert same(draw(task, 11), draw(make_task(name, options), 11))
    assert not same(draw(task, 11), draw(task, 12))


def test_every_registered_task_has_the_interface():
    assert set(TASKS) == {"embedded_reber", "reber", "continual_embedded_reber", "adding",
                          "multiplication", "temporal_order", "periodic_function", "recall_first"}
    for name in TASKS:
        task = make_task(name)
        assert task.name == name and isinstance(task.continual, bool)
        seq = task.sample(np.random.default_rng(0))
        assert seq.inputs.dtype == seq.targets.dtype == np.float64
        assert seq.inputs.shape[1] == task.n_inputs and seq.targets.shape[1] == task.n_outputs
        assert not np.isnan(seq.inputs).any()
        assert not np.isnan(seq.targets).all(axis=1).all()


def test_make_task_errors():
    with pytest.raises(TaskError, match=r"unknown task 'embeded_reber'.*did you mean 'embedded_reber'"):
        make_task("embeded_reber")
    with pytest.raises(TaskError, match=r"no option 'T'; its options: length"):
        make_task("adding", {"T": 100})
    with pytest.raises(TaskError, match=r"its options: shape, period, length"):
        make_task("periodic_function", {"frequency": 10})
    with pytest.raises(TaskError, match=r"its options: none"):
        make_task("embedded_reber", {"reber_only": True})
    with pytest.raises(TaskError, match=r"variant must be one of"):
        make_task("temporal_order", {"variant": "6c"})
    with pytest.raises(TaskError, match=r"shape must be one of"):
        make_task("periodic_function", {"shape": "sine"})
    with pytest.raises(TaskError, match=r"length .* >= 20"):
        make_task("adding", {"length": 10})
    with pytest.raises(TaskError, match=r"cannot exceed"):
        make_task("recall_first", {"n_classes": 5})
