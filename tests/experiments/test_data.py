"""`data`: trials' data drawn side by side in threads are the data drawn one by one; a stream whose
sequences could not fit in memory is refused before it is drawn."""

from functools import partial

import numpy as np
import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.data import StreamData, data_rng, draw_all


def drawn(threads: int) -> list[StreamData]:
    experiment = find_experiment("gers2000-cerg-forget")
    task = experiment.trial(experiment.plan(), 0, 1, "interpreter", "cpu").task
    sources = [StreamData(task, data_rng(seed, 0)) for seed in range(6)]
    for _ in range(3):  # refills after the first, as the drivers ask for them
        for source in sources:
            source.position = len(source.inputs)
        draw_all([partial(source.ensure, 5_000, "steps") for source in sources], threads)
    return sources


def test_threads_draw_each_trial_s_data_as_one_thread_does():
    one, four = drawn(1), drawn(4)
    for a, b in zip(one, four):
        np.testing.assert_array_equal(a.inputs, b.inputs)
        np.testing.assert_array_equal(a.targets, b.targets)
        np.testing.assert_array_equal(a.ends, b.ends)
        assert a.rng.bit_generator.state == b.rng.bit_generator.state and a.anchors == b.anchors
    assert not np.array_equal(one[0].inputs[:100], one[1].inputs[:100])  # the seeds differ


def test_a_draw_s_error_reaches_the_caller():
    def broken():
        raise ValueError("no data")

    for threads in (1, 3):
        try:
            draw_all([lambda: None, broken], threads)
        except ValueError as error:
            assert str(error) == "no data"
        else:
            raise AssertionError("the error was lost")


def test_a_refill_that_could_exceed_the_stream_limit_is_refused_before_drawing():
    """MSD delays of 10^7 make 2,048 sequences (a refill) up to 458 GiB: a `LimitError` naming
    the sizes, not a worker killed for memory. The row's own delays draw as before."""
    from lstmgraph.limits import LimitError
    from lstmgraph.tasks import make_task
    huge = StreamData(make_task("measuring_spike_delays", {"period": 10, "delays": [0, 10**7]}), data_rng(0, 0))
    with pytest.raises(LimitError, match=r"2,048 sequences of up to 10,000,010 steps each needs up to 457.8 GiB"
                                         r".*give the task shorter sequences \(its options\)"):
        huge.ensure(2048, "sequences")
    assert huge.drawn == 0 and len(huge.inputs) == 0
    usual = StreamData(make_task("measuring_spike_delays", {"period": 10, "delays": [0, 1]}), data_rng(0, 0))
    usual.ensure(2048, "sequences")
    assert usual.available("sequences") >= 2048


def test_a_place_where_never_gives_is_refused_before_anything_is_drawn():
    """A checkpoint's data position comes from a folder anyone may hand over: one far after its
    anchor would redraw for ever, a state of another generator would fail deep in numpy."""
    source = drawn(1)[0]
    source.position = int(np.flatnonzero(source.ends)[300]) + 1  # a sequence's start
    place = source.where()
    assert 0 <= place["sequence"] - place["anchor"] <= StreamData.ANCHOR_EVERY
    again = StreamData(source.task, data_rng(5, 0))
    again.go_to(place)
    again.ensure(200, "steps")
    np.testing.assert_array_equal(again.inputs[:200], source.inputs[source.position:source.position + 200])
    for wrong in ({**place, "sequence": place["anchor"] + 10**15}, {**place, "anchor": place["sequence"] + 1},
                  {**place, "sequence": float(place["sequence"])}, {**place, "state": {"bit_generator": "MT19937"}},
                  {key: value for key, value in place.items() if key != "state"}, []):
        fresh = StreamData(source.task, data_rng(5, 0))
        with pytest.raises(ValueError, match="not a data position of this trial"):
            fresh.go_to(wrong)
        assert fresh.drawn == 0 and fresh.rng.bit_generator.state == data_rng(5, 0).bit_generator.state


def test_a_checkpoint_s_data_position_nested_too_deep_is_a_value_error():
    from lstmgraph.experiments.trial import from_json_array, json_array

    assert from_json_array(json_array({"sequence": 3, "anchor": 0})) == {"sequence": 3, "anchor": 0}
    with pytest.raises(ValueError, match="nested 100000 deep; expected at most 32"):
        from_json_array(np.array("[" * 100_000 + "]" * 100_000))


def test_a_data_file_too_long_to_draw_is_told_to_cut_its_sequences(tmp_path):
    """A data file's task has no option to shorten its sequences: its 'starts' do."""
    from lstmgraph.limits import LimitError
    from lstmgraph.tasks import make_task
    np.savez(tmp_path / "long.npz", inputs=np.zeros((300_000, 1)), targets=np.zeros((300_000, 1)))
    source = StreamData(make_task("data_file", {"path": str(tmp_path / "long.npz")}), data_rng(0, 0))
    with pytest.raises(LimitError, match=r"1,024 sequences of up to 300,000 steps .*cut the data file's long "
                                         r"sequences into shorter ones \(its 'starts'\)"):
        source.ensure(1024, "sequences")
