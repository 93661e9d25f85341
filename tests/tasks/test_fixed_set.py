"""`fixed_set.FixedSet`, the 1997 ERG rows' training source: its compiled draws pick the
strings `sample` picks, from the generator's same states."""

import numpy as np
import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.data import data_rng
from lstmgraph.experiments.sequences import _sequence_data
from lstmgraph.tasks import Sequences, make_task
from lstmgraph.tasks.base import draw
from lstmgraph.tasks.fixed_set import FixedSet


def fixed_set(seed: int, options: dict | None = None) -> FixedSet:
    experiment = find_experiment("hochreiter1997-erg-3x2-lr0.5")
    return _sequence_data(make_task("embedded_reber", options or {}), experiment.protocol, seed)[0]


@pytest.mark.parametrize("options, planes", [({}, 2), ({"targets": "legal"}, 1)],
                         ids=["next symbol, legal set judged", "legal set"])
def test_a_fixed_set_s_draws_are_its_sample_calls(options, planes):
    source = fixed_set(4, options)
    assert source.stream_rows.planes == planes and len(source.strings) == 256
    many, one_by_one = data_rng(4, 0), data_rng(4, 0)
    for count in (0, 1, 300):
        got = draw(source, many, count)
        want = Sequences.of([source.sample(one_by_one) for _ in range(count)], source.n_inputs, source.n_outputs)
        for field in ("inputs", "targets", "judged", "lengths"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
        assert many.bit_generator.state == one_by_one.bit_generator.state


def test_fixed_sets_of_other_seeds_draw_alike_only_when_their_strings_are_the_same():
    first, again, other = fixed_set(0), fixed_set(3), fixed_set(1)  # (the row's 3 data sets: seed % 3)
    assert first.stream_rows.key == again.stream_rows.key != other.stream_rows.key
    assert FixedSet(make_task("embedded_reber"), first.strings).stream_rows.key == first.stream_rows.key
