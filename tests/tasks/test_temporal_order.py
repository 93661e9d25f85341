"""1997 Exp. 6a/6b and the 2000 paper's NTO/CNTO: structure, classes recomputed from the
inputs, and balance (chi-square at the 0.1 % level over a few thousand sequences, fixed seed)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lstmgraph.tasks import TaskError, TemporalOrder, make_task
from lstmgraph.tasks.temporal_order import SYMBOLS, WINDOWS

from task_helpers import CHI2_999, chi_square, decode, sampled_digest


def relevant_steps(string: str) -> list[tuple[int, str]]:
    """(1-based step, symbol) of every X or Y."""
    return [(t + 1, s) for t, s in enumerate(string) if s in "XY"]


@pytest.mark.parametrize("variant, n_classes", [("6a", 4), ("6b", 8)])
def test_structure_and_classes(variant, n_classes):
    task = TemporalOrder(variant=variant)
    assert (task.n_inputs, task.n_outputs, task.continual) == (8, n_classes, False)
    rng = np.random.default_rng(8)
    classes, lengths = Counter(), Counter()
    steps = [Counter() for _ in WINDOWS[variant]]
    letters = [Counter() for _ in WINDOWS[variant]]
    distractors = Counter()
    n = 4000
    for _ in range(n):
        seq = task.sample(rng)
        string = decode(seq.inputs, SYMBOLS)
        assert 100 <= len(string) <= 110
        assert string[0] == "E" and string[-1] == "B"
        assert set(string[1:-1]) <= set("abcdXY")
        relevant = relevant_steps(string)
        assert len(relevant) == len(WINDOWS[variant])
        for k, ((step, symbol), (low, high)) in enumerate(zip(relevant, WINDOWS[variant])):
            assert low <= step <= high
            steps[k][step] += 1
            letters[k][symbol] += 1
        label = task.output_symbols.index("".join(symbol for _, symbol in relevant))
        assert np.isnan(seq.targets[:-1]).all()
        expected = np.zeros(n_classes)
        expected[label] = 1.0
        np.testing.assert_array_equal(seq.targets[-1], expected)
        classes[label] += 1
        lengths[len(string)] += 1
        distractors.update(s for s in string[1:-1] if s in "abcd")
    # the classes are balanced
    assert set(classes) == set(range(n_classes))
    assert chi_square(classes, n / n_classes) < CHI2_999[n_classes - 1], classes
    # each relevant symbol is X or Y with probability 1/2, uniform over its 11 steps
    for k in range(len(WINDOWS[variant])):
        assert chi_square(letters[k], n / 2) < CHI2_999[1], letters[k]
        assert len(steps[k]) == 11 and chi_square(steps[k], n / 11) < CHI2_999[10], steps[k]
    assert len(lengths) == 11 and chi_square(lengths, n / 11) < CHI2_999[10], lengths
    assert chi_square(distractors, sum(distractors.values()) / 4) < CHI2_999[3], distractors


def test_class_names_follow_paper_order():
    assert TemporalOrder("6a").output_symbols == ("XX", "XY", "YX", "YY")
    classes = TemporalOrder("6b").output_symbols
    assert classes.index("XXY") == 1 and classes.index("YXX") == 4 and classes.index("YYY") == 7


def test_nto_is_6b_and_cnto_is_the_same_sequences_as_a_stream():
    nto = make_task("temporal_order", {"variant": "6b"})
    cnto = make_task("temporal_order", {"variant": "6b", "continual": True})
    assert (nto.n_inputs, nto.n_outputs) == (cnto.n_inputs, cnto.n_outputs) == (8, 8)
    assert not nto.continual and cnto.continual
    a, b = np.random.default_rng(14), np.random.default_rng(14)
    for _ in range(20):
        x, y = nto.sample(a), cnto.sample(b)
        np.testing.assert_array_equal(x.inputs, y.inputs)
        np.testing.assert_array_equal(x.targets, y.targets)


def test_idle_target_fills_the_steps_before_the_classification():
    quiet = TemporalOrder(variant="6b", continual=True, idle_target=0)
    plain = TemporalOrder(variant="6b", continual=True)
    a, b = np.random.default_rng(15), np.random.default_rng(15)
    for _ in range(20):
        x, y = quiet.sample(a), plain.sample(b)
        np.testing.assert_array_equal(x.inputs, y.inputs)            # the same draws
        assert np.all(x.targets[:-1] == 0.0)
        np.testing.assert_array_equal(x.targets[-1], y.targets[-1])
    for bad in (True, "0", float("nan"), [0]):
        with pytest.raises(TaskError, match="idle_target must be a finite number"):
            make_task("temporal_order", {"idle_target": bad})


def test_an_idle_target_not_judged_is_trained_on_but_judged_only_at_the_classification():
    apart = TemporalOrder(variant="6b", continual=True, idle_target=0, idle_judged=False)
    quiet = TemporalOrder(variant="6b", continual=True, idle_target=0)
    a, b = np.random.default_rng(16), np.random.default_rng(16)
    for _ in range(20):
        x, y = apart.sample(a), quiet.sample(b)
        np.testing.assert_array_equal(x.inputs, y.inputs)
        np.testing.assert_array_equal(x.targets, y.targets)          # the same training targets
        assert y.legal is None and np.isnan(x.judged[:-1]).all()     # judged only at the last step
        np.testing.assert_array_equal(x.judged[-1], x.targets[-1])
    with pytest.raises(TaskError, match="idle_judged: false needs an idle_target"):
        make_task("temporal_order", {"idle_judged": False})
    with pytest.raises(TaskError, match="idle_judged must be true or false"):
        make_task("temporal_order", {"idle_target": 0, "idle_judged": "no"})


def test_options_are_validated():
    with pytest.raises(TaskError, match=r"variant must be one of '6a', '6b'"):
        make_task("temporal_order", {"variant": "6c"})
    with pytest.raises(TaskError, match=r"continual must be true or false"):
        make_task("temporal_order", {"continual": "yes"})


@pytest.mark.parametrize("options, expected", [
    ({}, ["c310fce87c559400", "4e0416520efec797", "6f682cf372ad74d1"]),
    ({"variant": "6b"}, ["e5051a648b271689", "df4ee5f4a8fb10dc", "a2ec97248cbb5f0a"]),
    ({"variant": "6b", "continual": True, "idle_target": 0}, ["8763a4235e71feab", "c1e32d603b49799b", "23880bccdbdbf074"]),
])
def test_the_sequences_are_those_the_committed_results_were_drawn_with(options, expected):
    """The first 300 sequences of seeds 0-1-2 and the generator state after them, hashed: the
    digests come from the sampler before `sample_many` (2026-11-23), which docs/results' rows
    were drawn with; test_tasks.py holds `sample_many` to `sample`."""
    task = make_task("temporal_order", options)
    assert [sampled_digest(task, seed, 300) for seed in range(len(expected))] == expected
