"""Initialisation from the spec, populations of seeds, and .npz weights files."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import WeightsError, initial_weights, load_weights, save_weights
from lstmgraph.engine.weights import flatten, unflatten

from conftest import SPECS


@pytest.fixture(scope="module")
def cerg():
    return lstmgraph.compile_spec(SPECS / "gers2000_cerg.yaml")


def test_initialisation_follows_the_spec(cerg):
    weights = initial_weights(cerg)
    np.testing.assert_array_equal(weights["bias->memory.input_gate"][0, :, 0], [-0.5, -1.0, -1.5, -2.0])
    np.testing.assert_array_equal(weights["bias->memory.forget_gate"][0, :, 0], [0.5, 1.0, 1.5, 2.0])
    np.testing.assert_array_equal(weights["memory.state->memory.state"], np.ones((1, 8)))
    other = weights["symbols->memory.cell_input"]
    assert other.shape == (1, 8, 7) and np.abs(other).max() <= 0.2 and np.abs(other).min() > 0
    assert np.array_equal(initial_weights(cerg)["symbols->prediction"], weights["symbols->prediction"])


def test_a_population_draws_each_trial_from_its_own_seed(cerg):
    together = initial_weights(cerg, [7, 8])
    for index, seed in enumerate([7, 8]):
        alone = initial_weights(cerg, [seed])
        assert all(np.array_equal(together[k][index], alone[k][0]) for k in alone)
    assert not np.array_equal(together["symbols->prediction"][0], together["symbols->prediction"][1])


def test_flatten_round_trip_follows_the_parameter_layout(cerg):
    weights = initial_weights(cerg, [1, 2])
    vector = flatten(cerg, weights)
    assert vector.shape == (2, 424)
    slot = cerg.parameters[3]
    np.testing.assert_array_equal(vector[1, slot.offset:slot.offset + slot.size],
                                  weights[slot.connection][1].ravel())
    back = unflatten(cerg, vector, weights)
    assert all(np.array_equal(back[k], weights[k]) for k in weights)


def test_save_and_load_without_pickle(cerg, tmp_path):
    weights = initial_weights(cerg)
    path = save_weights(tmp_path / "w.npz", cerg, weights)
    with np.load(path, allow_pickle=False) as archive:
        assert archive["symbols->memory.cell_input"].shape == (8, 7)
    loaded = load_weights(path, cerg)
    assert all(np.array_equal(loaded[k], weights[k]) for k in weights)
    population = initial_weights(cerg, [1, 2, 3])
    again = load_weights(save_weights(tmp_path / "p.npz", cerg, population), cerg)
    assert again["symbols->prediction"].shape == (3, 7, 7)


def test_weights_that_do_not_fit_are_refused(cerg, tmp_path):
    timing = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    path = save_weights(tmp_path / "timing.npz", timing, initial_weights(timing))
    with pytest.raises(WeightsError, match="does not fit network 'gers2000_cerg'; missing"):
        load_weights(path, cerg)
    with pytest.raises(WeightsError, match="no such file"):
        load_weights(tmp_path / "absent.npz", cerg)
    bad = {name: values[0] for name, values in initial_weights(cerg).items()}
    bad["symbols->prediction"] = bad["symbols->prediction"][:, :3]
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(WeightsError, match="has shape"):
        load_weights(tmp_path / "bad.npz", cerg)


def test_save_weights_refuses_weights_of_another_network(cerg, tmp_path):
    """Before: written without a word, to be refused only when loaded."""
    timing = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    with pytest.raises(WeightsError, match="the weights do not fit network 'gers2000_cerg'; missing: .*; unknown: "):
        save_weights(tmp_path / "w.npz", cerg, initial_weights(timing))
    short = initial_weights(cerg, [0, 1])
    short["symbols->prediction"] = short["symbols->prediction"][:1]
    with pytest.raises(WeightsError, match=re.escape("'symbols->prediction' have shape (1, 7, 7), expected (2, 7, 7)")):
        save_weights(tmp_path / "w.npz", cerg, short)
    assert not (tmp_path / "w.npz").exists()


def test_a_damaged_meta_record_is_refused_by_name(cerg, tmp_path):
    """Before: '__meta__' nested deeper than Python recurses ended in a RecursionError traceback,
    and a 'trials' of 2.7 or 1e30 was taken as int(trials), so the shapes were blamed instead."""
    arrays = {name: values[0] for name, values in initial_weights(cerg).items()}
    for meta in ("[" * 100_000 + "]" * 100_000, '{"trials": 2.7}', '{"trials": 1e30}', '{"trials": true}',
                 '{"trials": 0}'):
        np.savez(tmp_path / "w.npz", __meta__=np.array(meta), **arrays)
        with pytest.raises(WeightsError, match="'__meta__'"):
            load_weights(tmp_path / "w.npz", cerg)



def test_a_weights_archive_s_member_names_and_sizes_are_checked_before_it_is_unpacked(cerg, tmp_path, monkeypatch):
    """Before: an archive declaring up to 2 GiB was unpacked whole before its names were compared
    with the network's, so a member 'huge' of 1.9 GiB of zeros was inflated only to be refused."""
    import io
    import zipfile

    monkeypatch.setattr("lstmgraph.engine.weights.MAX_TRIALS", 1)  # a connection's member: 64 KiB and its values
    members = {}
    for name, values in initial_weights(cerg).items():
        buffer = io.BytesIO()
        np.save(buffer, values[0])
        members[f"{name}.npy"] = buffer.getvalue()
    for extra, problem in ((("huge.npy", bytes(100_000)), "unknown: huge"),
                           (("symbols->prediction.npy", bytes(100_000)), "'symbols->prediction' unpacks to 100,000")):
        with zipfile.ZipFile(tmp_path / "bad.npz", "w", zipfile.ZIP_DEFLATED) as archive:
            for name, content in {**members, extra[0]: extra[1]}.items():
                archive.writestr(name, content)
        with monkeypatch.context() as patch:
            patch.setattr("lstmgraph.arrays.np.load", lambda *a, **k: pytest.fail("unpacked before it was checked"))
            with pytest.raises(WeightsError, match=re.escape(problem)):
                load_weights(tmp_path / "bad.npz", cerg)


def test_a_file_without_the_fixed_connections_gets_their_constants(tmp_path):
    """Before: a left-out CEC was filled with 1, not with the spec's state_decay."""
    plan = lstmgraph.compile_plan(lstmgraph.spec_from_data({
        "version": 1, "groups": [{"name": "x", "kind": "input", "size": 1},
                                 {"name": "mem", "kind": "memory_block", "blocks": 2, "state_decay": 0.9},
                                 {"name": "y", "kind": "output", "size": 1}],
        "connections": [{"from": "x", "to": ["mem.input_gate", "mem.output_gate", "mem.cell_input"]},
                        {"from": "mem.cell_output", "to": "y"}]}))
    weights = initial_weights(plan, [0, 1])
    trainable = {c.name: weights[c.name] for c in plan.connections if c.trainable}
    np.savez(tmp_path / "hand.npz", __meta__=np.array('{"trials": 2}'), **trainable)
    loaded = load_weights(tmp_path / "hand.npz", plan)
    assert all(np.array_equal(loaded[k], weights[k]) for k in weights)
    np.testing.assert_array_equal(loaded["mem.state->mem.state"], np.full((2, 2), 0.9))


def test_bad_seeds_vectors_and_weights_are_refused_by_what_they_are(cerg):
    """Before: numpy's own messages ('need at least one array to stack', 'expected non-negative
    integer') and a KeyError or IndexError from inside flatten and unflatten."""
    for seeds, kind, words in (([], ValueError, "got 0 seeds"), (-1, ValueError, "got -1"),
                               ([0, 1.5], ValueError, "got 1.5"), (1.5, TypeError, "not a float"),
                               ("1", TypeError, "not a str")):
        with pytest.raises(kind, match=words):
            initial_weights(cerg, seeds)
    assert initial_weights(cerg, range(2))["symbols->prediction"].shape == (2, 7, 7)
    weights = initial_weights(cerg, [0, 1])
    with pytest.raises(WeightsError, match="missing: symbols->memory.cell_input"):
        flatten(cerg, {})
    with pytest.raises(WeightsError, match=re.escape("have shape (8, 7), expected (2, 8, 7)")):
        flatten(cerg, {**weights, "symbols->memory.cell_input": weights["symbols->memory.cell_input"][0]})
    for vector in (np.zeros(424), np.zeros((2, 5))):
        with pytest.raises(ValueError, match=re.escape("expected (trials, 424)")):
            unflatten(cerg, vector, weights)


def test_a_population_written_by_hand_without_meta_loads_with_its_trials(tmp_path):
    """Before: a file without __meta__ was read as one network, so (trials, *shape) arrays were
    refused as misshapen although the doc calls __meta__ optional."""
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    weights = initial_weights(plan, [1, 2, 3])
    trainable = {slot.connection: weights[slot.connection] for slot in plan.parameters}
    np.savez(tmp_path / "three.npz", **trainable)
    loaded = load_weights(tmp_path / "three.npz", plan)
    assert all(np.array_equal(loaded[name], weights[name]) for name in weights)
    np.savez(tmp_path / "one.npz", **{name: values[0] for name, values in trainable.items()})
    assert all(values.shape[0] == 1 for values in load_weights(tmp_path / "one.npz", plan).values())
    mixed = {**trainable, plan.parameters[0].connection: trainable[plan.parameters[0].connection][0]}
    np.savez(tmp_path / "mixed.npz", **mixed)
    with pytest.raises(WeightsError, match="has shape"):
        load_weights(tmp_path / "mixed.npz", plan)
