"""Every registered task: the interface, determinism given a seed, option errors; and the
small recall_first task of the modern specs. Per-task rules: test_reber.py, test_adding.py,
test_temporal_order.py, test_periodic.py, test_spikes.py."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lstmgraph.success import FALLBACK_TEST
from lstmgraph.tasks import TASKS, RecallFirst, Sequences, TaskError, draw, make_task, task_success_test, unit_symbols


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
                ("temporal_order", {"variant": "6b"}),
                ("temporal_order", {"variant": "6b", "continual": True, "idle_target": 0}),
                ("temporal_order", {"variant": "6b", "continual": True, "idle_target": 0, "idle_judged": False}),
                ("measuring_spike_delays", {}), ("measuring_spike_delays", {"continual": False}),
                ("measuring_spike_delays", {"delays": list(range(11))}),
                ("generating_timed_spikes", {}), ("recall_first", {})]


def samples(task, seed, n=5):
    rng = np.random.default_rng(seed)
    return [task.sample(rng) for _ in range(n)]


def same(a, b):
    return len(a) == len(b) and all(
        x.inputs.shape == y.inputs.shape and np.array_equal(x.inputs, y.inputs)
        and np.array_equal(x.targets, y.targets, equal_nan=True) for x, y in zip(a, b))


@pytest.mark.parametrize("name, options", RANDOM_TASKS)
def test_seed_fixes_the_data(name, options):
    task = make_task(name, options)
    assert same(samples(task, 11), samples(make_task(name, options), 11))
    assert not same(samples(task, 11), samples(task, 12))


def test_periodic_function_is_the_same_for_every_seed():
    task = make_task("periodic_function", {"shape": "triangle", "period": 25})
    assert same(samples(task, 11), samples(task, 12))


@pytest.mark.parametrize("name, options", RANDOM_TASKS + [("generating_timed_spikes", {"cue": "delay"}),
                                                          ("generating_timed_spikes", {"cue": "spike", "delays": [0]}),
                                                          ("periodic_function", {"shape": "rectangle"}),
                                                          ("embedded_reber", {"targets": "legal"})])
def test_draw_gives_the_sequences_and_generator_state_of_as_many_sample_calls(name, options):
    """`draw` (a task's `sample_many`, where it has one) lays out exactly what `sample` draws,
    and leaves the generator where the calls would: the stream trials draw through it."""
    task = make_task(name, options)
    for seed in (0, 1):
        many, one_by_one = np.random.default_rng(seed), np.random.default_rng(seed)
        for count in (0, 1, 7, 300):
            got = draw(task, many, count)
            want = Sequences.of([task.sample(one_by_one) for _ in range(count)], task.n_inputs, task.n_outputs)
            for field in ("inputs", "targets", "judged", "lengths"):
                a, b = getattr(got, field), getattr(want, field)
                assert a.dtype == b.dtype and a.shape == b.shape, (field, count)
                assert np.array_equal(a, b, equal_nan=True), (field, count)
            assert many.bit_generator.state == one_by_one.bit_generator.state


@pytest.mark.parametrize("name", ["continual_embedded_reber", "temporal_order"])
def test_compiled_draws_on_another_generator_sample_one_by_one(name):
    """Compiled draws follow PCG64 (`tasks.pcg64`); on Philox `draw` samples as `sample` does."""
    task = make_task(name)
    many, one_by_one = (np.random.Generator(np.random.Philox(3)) for _ in range(2))
    got = draw(task, many, 20)
    want = Sequences.of([task.sample(one_by_one) for _ in range(20)], task.n_inputs, task.n_outputs)
    assert np.array_equal(got.inputs, want.inputs) and np.array_equal(got.lengths, want.lengths)
    assert np.array_equal(many.bit_generator.random_raw(4), one_by_one.bit_generator.random_raw(4))  # same place


#: Every registered task but the one that needs a file (tests/tasks/test_data_file.py).
GENERATED = sorted(set(TASKS) - {"data_file"})


def test_every_registered_task_has_the_interface():
    assert set(TASKS) == {"embedded_reber", "reber", "continual_embedded_reber", "adding",
                          "multiplication", "temporal_order", "periodic_function",
                          "measuring_spike_delays", "generating_timed_spikes", "recall_first", "data_file"}
    for name in GENERATED:
        task = make_task(name)
        assert task.name == name and isinstance(task.continual, bool)
        seq = task.sample(np.random.default_rng(0))
        assert seq.inputs.dtype == seq.targets.dtype == np.float64
        assert seq.inputs.shape[1] == task.n_inputs and seq.targets.shape[1] == task.n_outputs
        assert not np.isnan(seq.inputs).any()
        assert not np.isnan(seq.targets).all(axis=1).all()


def test_unit_symbols_name_each_unit_of_the_symbol_tasks_only():
    for name in GENERATED:
        task = make_task(name)
        inputs, outputs = unit_symbols(task)
        assert inputs is None or len(inputs) == task.n_inputs, name
        assert outputs is None or len(outputs) == task.n_outputs, name
    for name in ("reber", "embedded_reber", "continual_embedded_reber"):
        assert unit_symbols(make_task(name)) == (tuple("BTPSXVE"), tuple("BTPSXVE"))
    inputs, outputs = unit_symbols(make_task("temporal_order", {"variant": "6b"}))
    assert inputs == ("a", "b", "c", "d", "X", "Y", "E", "B")
    assert outputs == ("XXX", "XXY", "XYX", "XYY", "YXX", "YXY", "YYX", "YYY")
    assert unit_symbols(make_task("adding")) == (None, None)


def test_success_tests_come_from_the_task(monkeypatch):
    assert task_success_test("embedded_reber")[0].name == "most_active"
    assert task_success_test("adding")[0].tolerance == 0.04
    assert task_success_test("continual_embedded_reber") == (TASKS["continual_embedded_reber"].success_test,
                                                             "the continual_embedded_reber task's test")
    assert task_success_test(None)[0] == FALLBACK_TEST  # a data file
    monkeypatch.setitem(TASKS, "plain", type("Plain", (), {}))  # a task of the user's that declares no test
    test, basis = task_success_test("plain")
    assert test == FALLBACK_TEST and test.tolerance == 0.49 and "plain task declares no test" in basis
    with pytest.raises(TypeError, match=r"takes a task's name, not the task: task_success_test\('adding'\)"):
        task_success_test(make_task("adding"))  # (before: the fallback test, silently)


def test_a_misspelt_task_option_gets_the_closest_option():
    """As an unknown key elsewhere gets "did you mean": only an option not given already."""
    with pytest.raises(TaskError, match=r"no option 'lenght'; its options: length; did you mean 'length'\?$"):
        make_task("adding", {"lenght": 30})
    with pytest.raises(TaskError, match=r"did you mean 'period' for 'perod', 'shape' for 'shap'\?$"):
        make_task("periodic_function", {"perod": 10, "shap": "cosine"})
    for options in ({"zzz": 1}, {"length": 30, "lenght": 30}):
        with pytest.raises(TaskError) as caught:
            make_task("adding", options)
        assert "did you mean" not in str(caught.value)


def test_make_task_errors():
    with pytest.raises(TaskError, match=r"unknown task 'embeded_reber'.*did you mean 'embedded_reber'"):
        make_task("embeded_reber")
    with pytest.raises(TaskError, match=r"no option 'T'; its options: length"):
        make_task("adding", {"T": 100})
    with pytest.raises(TaskError, match=r"its options: shape, period, length"):
        make_task("periodic_function", {"frequency": 10})
    with pytest.raises(TaskError, match=r"its options: targets"):
        make_task("embedded_reber", {"reber_only": True})
    with pytest.raises(TaskError, match=r"targets must be one of 'next', 'legal'"):
        make_task("embedded_reber", {"targets": "probabilities"})
    with pytest.raises(TaskError, match=r"variant must be one of"):
        make_task("temporal_order", {"variant": "6c"})
    with pytest.raises(TaskError, match=r"shape must be one of"):
        make_task("periodic_function", {"shape": "sine"})
    with pytest.raises(TaskError, match=r"length .* >= 20"):
        make_task("adding", {"length": 10})
    with pytest.raises(TaskError, match=r"cannot exceed"):
        make_task("recall_first", {"n_classes": 5})
    with pytest.raises(TaskError, match=r"its options: variant, continual, idle_target, idle_judged"):
        make_task("temporal_order", {"noise": True})
    with pytest.raises(TaskError, match=r"its options: period, delays, continual$"):
        make_task("measuring_spike_delays", {"spikes": 100})
    with pytest.raises(TaskError, match=r"its options: period, delays, cue$"):
        make_task("generating_timed_spikes", {"spikes": 100})


def test_only_tasks_with_compiled_draws_are_drawn_in_threads():
    from lstmgraph.tasks.base import draws_in_threads

    threaded = {name for name in GENERATED if draws_in_threads(make_task(name, {}))}
    assert threaded == {"embedded_reber", "reber", "continual_embedded_reber", "adding", "multiplication",
                        "temporal_order", "measuring_spike_delays", "generating_timed_spikes"}


def test_a_population_draws_alike_or_with_its_trials_own_arguments_stacked():
    from lstmgraph.tasks.draws import StreamRows, population_rows, repeated_rows

    def rows(table, key, shared=7, per_trial=(0,), longest=5):
        return StreamRows(repeated_rows, (np.asarray(table, dtype=float), shared), 2, longest, 1, key, per_trial)

    one, same, other = rows([1, 2], "a"), rows([1, 2], "a"), rows([3, 4, 5], "b", longest=9)
    assert population_rows([one, same]) == one._replace(per_trial=())  # alike: nothing stacked
    stacked = population_rows([one, other])
    np.testing.assert_array_equal(stacked.arguments[0], [[1, 2, 0], [3, 4, 5]])  # each trial's own row, zeros past it
    assert stacked.arguments[1] == 7 and stacked.per_trial == (0,) and stacked.longest == 9
    assert stacked.key == ("a", "b")
    assert population_rows([one, rows([3], "b", shared=8)]) is None  # a shared argument differs
    assert population_rows([one, rows([3], "b", per_trial=())]) is None  # nothing of its own to stack


@pytest.mark.parametrize("task, options", [("adding", {"length": "[" * 5000}),
                                           ("recall_first", {"length": [[1] * 5000]}),
                                           ("temporal_order", {"variant": "x" * 5000}),
                                           ("adding", {"x" * 5000: 1}),
                                           ("x" * 5000, {})])
def test_a_task_option_s_error_echoes_the_value_cut_short(task, options):
    """Before: ``length: '[[[...'`` of 5,000 brackets was printed in full in the error."""
    with pytest.raises(TaskError) as raised:
        make_task(task, options)
    assert len(str(raised.value)) < 400, str(raised.value)
