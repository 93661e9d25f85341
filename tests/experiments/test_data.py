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
    """MSD delays of 10^7 make 2,048 sequences (a refill: 2,816 with those drawn to the next
    anchor) up to 629 GiB: a `LimitError` naming the sizes, not a worker killed for memory. The row's own
    delays draw as before."""
    from lstmgraph.limits import LimitError
    from lstmgraph.tasks import make_task
    huge = StreamData(make_task("measuring_spike_delays", {"period": 10, "delays": [0, 10**7]}), data_rng(0, 0))
    with pytest.raises(LimitError, match=r"drawing 2,048 sequences of up to 10,000,010 steps each needs up to 629.4 GiB"
                                         r".*give the task shorter sequences \(its options\)"):
        huge.ensure(2048, "sequences")
    with pytest.raises(LimitError, match=r"drawing 1,000 steps, on to the end of a block of 256 sequences of up to 10,000,010 steps needs up "
                                         r"to 57.2 GiB"):
        huge.ensure(1000, "steps")  # (before: 1,000 steps checked, a block of 256 sequences drawn)
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
    with pytest.raises(LimitError, match=r"drawing 1,024 sequences of up to 300,000 steps .*cut the data file's long "
                                         r"sequences into shorter ones \(its 'starts'\)"):
        source.ensure(1024, "sequences")


def test_a_data_file_of_long_sequences_is_refilled_a_block_at_a_time_within_the_limit(tmp_path, monkeypatch):
    """Before: the 1997 drivers drew 1,024 sequences a refill whatever their length, so a data file
    of sequences over about 87,000 steps was refused under the 2 GiB limit (here scaled down)."""
    from lstmgraph.experiments import data
    from lstmgraph.limits import LimitError
    from lstmgraph.tasks import make_task
    monkeypatch.setattr(data, "MAX_STREAM_BYTES", 16 << 20)
    monkeypatch.setattr(data, "REFILL_BYTES", 4 << 20)
    starts = np.arange(0, 200_000, 2_000)  # 100 sequences of 2,000 steps: 48,000 bytes each
    np.savez(tmp_path / "long.npz", inputs=np.zeros((200_000, 1)), targets=np.zeros((200_000, 1)), starts=starts)
    source = StreamData(make_task("data_file", {"path": str(tmp_path / "long.npz")}), data_rng(0, 0))
    with pytest.raises(LimitError, match=r"drawing 1,024 sequences of up to 2,000 steps each needs up to 0.1 GiB, more than the limit of 0.015625 GiB"):
        source.ensure(1024, "sequences")  # (a quarter more, and on to the next anchor)
    source.refill(1024, "sequences")
    assert source.drawn == StreamData.ANCHOR_EVERY and source.inputs.nbytes == 256 * 2_000 * 8


@pytest.mark.parametrize("name,seed,changes,budget", [
    ("hochreiter1997-adding-t100", 1, dict(test_sequences=200), 40_000),  # refilled beyond 256 sequences
    ("gers2000-cerg-forget", 4, dict(train_limit=300, test_limit=200), 4000),
    ("gers2002-gts-peephole", 4, {}, 3000)])
def test_a_trial_refilled_one_unit_at_a_time_ends_as_with_the_usual_refills(name, seed, changes, budget,
                                                                          monkeypatch):
    """`StreamData.refill` may ask for fewer units; the draws still end at the same anchors."""
    from dataclasses import replace
    from lstmgraph.experiments import data
    experiment = find_experiment(name)
    experiment = replace(experiment, protocol=replace(experiment.protocol, **changes))
    rows = []
    for refill_bytes in (data.REFILL_BYTES, 1):
        monkeypatch.setattr(data, "REFILL_BYTES", refill_bytes)
        trial = experiment.trial(experiment.plan(), seed, budget)
        trial.run()
        rows.append({key: value for key, value in trial.row.items() if key != "seconds"})
    assert rows[0] == rows[1]


def test_a_test_set_too_large_to_lay_out_is_refused_when_the_trial_is_made(tmp_path, monkeypatch):
    """Before: a trial laid its 2,560 test sequences end to end after its training, whatever their
    length: 18 GiB for a data file of 300,000-step sequences (here the limit is scaled down)."""
    import yaml
    from lstmgraph.experiments import data
    from lstmgraph.experiments.sweep import subject_of
    from lstmgraph.limits import LimitError
    from conftest import SPECS
    monkeypatch.setattr(data, "MAX_STREAM_BYTES", 16 << 20)
    np.savez(tmp_path / "d.npz", inputs=np.zeros((200_000, 1)), targets=np.zeros((200_000, 1)),
             starts=np.arange(0, 200_000, 2_000))
    spec = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    spec["training"] = {"learning_rate": 0.1, "data": "d.npz"}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(spec))
    experiment = subject_of(str(tmp_path / "net.yaml"), 1).experiment
    with pytest.raises(LimitError, match=r"a test set of 2,560 sequences of up to 2,000 steps each needs up to "
                                         r"0.1 GiB.*test on fewer sequences \(the protocol option test_sequences\)"):
        experiment.trial(experiment.plan(), 0, 1000)
    fewer = experiment.with_protocol_options({"test_sequences": 100})  # 4.6 MiB
    assert fewer.trial(fewer.plan(), 0, 1000).protocol.test_sequences == 100
