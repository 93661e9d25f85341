"""Data drawn on the device (`gpu_data`), streams and 1997 sequences, against the host's
`StreamData`: the same rows, sequence counts, anchors and generator states after every refill,
in more rows where a trial's run out, and the host's place after a run (what checkpoints save)."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph.engine.gpu import population
from lstmgraph.engine.gpu.population import GpuUnavailable, cuda_module
from lstmgraph.experiments import find_experiment, gpu_data
from lstmgraph.experiments.data import StreamData, data_rng
from lstmgraph.experiments.gpu_data import DeviceStreams, device_rows
from lstmgraph.experiments.sequences import _sequence_data
from lstmgraph.tasks.fixed_set import FixedSet
from lstmgraph.tasks import make_task
from lstmgraph.tasks.pcg64 import state_of

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]

AMOUNTS = {"steps": 300, "sequences": 300}  # (300 sequences: more than one anchor's)


@pytest.fixture(autouse=True)
def small_refills(monkeypatch):
    """Refills of `AMOUNTS`, the device's anchors as far apart as the host's (so its rows are
    laid out as the host's `StreamData.ensure` lays them out)."""
    monkeypatch.setattr(gpu_data, "DEVICE_REFILL", AMOUNTS)
    anchors_every(monkeypatch, StreamData.ANCHOR_EVERY)


def anchors_every(monkeypatch, sequences: int, on_the_device: int | None = None) -> None:
    monkeypatch.setattr(StreamData, "ANCHOR_EVERY", sequences)
    monkeypatch.setattr(gpu_data, "DEVICE_ANCHOR_EVERY", on_the_device or sequences)


def sources(task, seeds):
    return [StreamData(task, data_rng(seed, 0)) for seed in seeds]


def assert_as_host(device: DeviceStreams, trial: int, host: StreamData) -> None:
    """Trial ``trial``'s rows, counts, place and anchors on the device are ``host``'s."""
    at = device.at.copy_to_host()[trial]
    rows = int(at[2])
    assert rows == len(host.inputs)
    inputs, targets = device.inputs.copy_to_host(), device.targets.copy_to_host()
    np.testing.assert_array_equal(inputs[at[0]:at[0] + rows, :, 0], host.inputs)
    np.testing.assert_array_equal(targets[at[0]:at[0] + rows, 0, :, 0], host.targets)
    np.testing.assert_array_equal(targets[at[0]:at[0] + rows, -1, :, 0], host.judged)
    np.testing.assert_array_equal(device.ends.copy_to_host()[at[0]:at[0] + rows], host.ends)
    np.testing.assert_array_equal(device.counts.copy_to_host()[at[1]:at[1] + rows + 1], host.counts)
    assert device.first.copy_to_host()[trial] == host.first and device.drawn.copy_to_host()[trial] == host.drawn
    anchors = int(device.anchors.copy_to_host()[trial])
    assert device.anchor_sequences.copy_to_host()[trial, :anchors].tolist() == [seq for seq, _ in host.anchors]
    for state, (_, want) in zip(device.anchor_states.copy_to_host()[trial, :anchors], host.anchors):
        mirror = np.random.default_rng(0)
        mirror.bit_generator.state = want
        assert state.tolist() == state_of(mirror).tolist()
    assert device.states.copy_to_host()[trial].tolist() == state_of(host.rng).tolist()


def refill_both(device, hosts, units, positions):
    """One refill of every trial at its cursor row, on the device and on the hosts' copies."""
    moved = device.refill(np.ones(len(hosts), dtype=bool), np.array(positions))
    for host, unit, position in zip(hosts, units, positions):
        host.position = position
        host.ensure(AMOUNTS[unit], unit)
    assert moved.tolist() == [host.position for host in hosts]
    return moved


CERG, CNTO = ("continual_embedded_reber", {}), ("temporal_order", dict(variant="6b", continual=True, idle_target=0,
                                                                      idle_judged=False))


GTS, MSD, PFG = (("generating_timed_spikes", {}), ("measuring_spike_delays", {"delays": [0, 3, 7]}),
                 ("periodic_function", {"shape": "triangle", "period": 25}))
ADDING, MULTIPLICATION = ("adding", {"length": 20}), ("multiplication", {"length": 20})  # (1997 sequences)


@pytest.mark.parametrize("task, rows, anchors", [(CERG, None, None), (CERG, 100, None), (CERG, None, 1),
                                                 (CNTO, None, None), (GTS, None, None), (MSD, None, None),
                                                 (PFG, None, None), (ADDING, None, None),
                                                 (MULTIPLICATION, None, None)],
                         ids=["CERG", "CERG, rows grown", "CERG, anchors grown", "CNTO, judged apart", "GTS", "MSD",
                              "PFG", "adding", "multiplication"])
def test_device_refills_lay_out_the_host_s_rows_and_anchors(task, rows, anchors, monkeypatch):
    """Trials counted in steps and in sequences; cursors part way, at the end, and where enough
    is left (no refill). With 100 rows a trial, or room for one anchor, they run out and grow.
    CNTO's second target plane holds what is judged (`Sequence.legal`). Its sequences of about
    105 steps, PFG's of 100 and the 1997 marked pairs' of 20-22 come anchored 8 apart, 30 a
    refill (the simulator runs each thread in Python)."""
    if task in (CNTO, PFG, ADDING, MULTIPLICATION):
        anchors_every(monkeypatch, 8)
        monkeypatch.setitem(AMOUNTS, "sequences", 30)
    cuda = cuda_module()
    task, seeds, units = make_task(*task), [3, 8], ["steps", "sequences"]
    device = DeviceStreams(cuda, sources(task, seeds), task.stream_rows, units, stride=rows)
    if anchors is not None:
        for name in ("anchor_sequences", "anchor_states"):
            setattr(device, name, cuda.to_device(np.ascontiguousarray(getattr(device, name).copy_to_host()[:, :anchors])))
        device.capacity = anchors
    hosts = sources(task, seeds)
    positions = [0, 0]
    for step in range(3):
        positions = refill_both(device, hosts, units, positions)
        for trial, host in enumerate(hosts):
            assert_as_host(device, trial, host)
        # The next cursors: within the last amount (a refill; the second trial's first at an
        # anchor's sequence, the case where the anchor before it is dropped), then where enough is left.
        steps, sequences = hosts
        at_anchor = int(np.searchsorted(sequences.counts, sequences.anchors[-1][0] - sequences.first))
        positions = [len(steps.inputs) - 7, at_anchor if step == 0 else int(np.searchsorted(
            sequences.counts, sequences.counts[-1] - 3))] if step < 2 else [5, 5]
    if rows is not None:
        assert device.stride > rows
    if anchors is not None:
        assert device.capacity > anchors


def test_trials_pick_from_their_own_fixed_sets_on_the_device_as_on_the_host(monkeypatch):
    """1997 ERG: each trial picks strings from its own fixed set (seed % 3), passed to the refill
    kernel stacked, a trial's set its row (`draws.population_rows`)."""
    anchors_every(monkeypatch, 8)
    monkeypatch.setitem(AMOUNTS, "sequences", 30)
    experiment, seeds, units = find_experiment("hochreiter1997-erg-3x2-lr0.5"), [4, 5], ["sequences"] * 2
    sets = [_sequence_data(experiment.make_task(), experiment.protocol, seed)[0] for seed in seeds]
    placed = [StreamData(fixed, data_rng(seed, 0)) for fixed, seed in zip(sets, seeds)]
    draws = device_rows(placed)
    assert draws.function.__name__ == "picked_rows" and draws.per_trial == (0, 1, 2)
    device = DeviceStreams(cuda_module(), placed, draws, units)
    hosts = [StreamData(fixed, data_rng(seed, 0)) for fixed, seed in zip(sets, seeds)]
    positions = [0, 0]
    for _ in range(2):
        positions = refill_both(device, hosts, units, positions)
        for trial, host in enumerate(hosts):
            assert_as_host(device, trial, host)
        positions = [int(np.searchsorted(host.counts, host.counts[-1] - 3)) for host in hosts]
    assert not np.array_equal(hosts[0].inputs[:50], hosts[1].inputs[:50])


@pytest.mark.parametrize("device_anchors", [256, 5], ids=["the host's anchors", "anchors of its own"])
def test_after_a_run_each_host_source_is_at_its_cursor_as_a_checkpoint_says(monkeypatch, device_anchors):
    """With anchors of its own, the device's rows lie otherwise than the host's; the sequences
    from each cursor on, and the host's place after the run, are the same."""
    anchors_every(monkeypatch, StreamData.ANCHOR_EVERY, device_anchors)
    cuda = cuda_module()
    task, seeds = make_task("continual_embedded_reber"), [1, 2]
    placed = sources(task, seeds)
    device, hosts = DeviceStreams(cuda, placed, task.stream_rows, ["steps"] * 2), sources(task, seeds)
    positions = device.refill(np.ones(2, dtype=bool), np.zeros(2, dtype=np.int64))
    for host in hosts:
        host.ensure(AMOUNTS["steps"], "steps")
    inputs, at = device.inputs.copy_to_host(), device.at.copy_to_host()
    for trial, host in enumerate(hosts):  # from the cursor on, as many rows as both hold
        rows = min(int(at[trial, 2]) - positions[trial], len(host.inputs))
        np.testing.assert_array_equal(inputs[at[trial, 0] + positions[trial]:][:rows, :, 0], host.inputs[:rows])
    if device_anchors == 256:
        positions = refill_both(device, hosts, ["steps"] * 2, [len(host.inputs) - 3 for host in hosts])
    cursors = [11, 250]  # rows into the arrays: sequences past an anchor or two
    device.give_back(np.array(cursors))
    for source, host, cursor in zip(placed, hosts, cursors):
        host.position = cursor
        want = host.where()
        assert source.where()["sequence"] == want["sequence"] and len(source.inputs) == 0
        host.go_to(want)
        assert source.rng.bit_generator.state == host.rng.bit_generator.state


def test_trials_draw_on_the_device_where_every_task_draws_alike_in_place():
    class Trial:  # (a trial's training source: its task's draws)
        def __init__(self, name, options=None):
            self.task = make_task(name, options)

    def rows(*sources):
        draws = device_rows(list(sources))
        return None if draws is None else draws.function.__name__

    assert rows(Trial(*CERG), Trial(*CERG)) == "continual_rows"
    assert rows(Trial(*CNTO), Trial(*CNTO)) == "temporal_order_rows"
    assert rows(Trial(*CERG), Trial("continual_embedded_reber", {"without_begin_end": True})) is None
    assert rows(Trial(*CNTO), Trial("temporal_order", {"variant": "6b", "continual": True})) is None
    assert rows(Trial(*GTS), Trial(*GTS)) == "interval_rows"
    assert rows(Trial(*GTS), Trial(*MSD)) is None
    assert rows(Trial(*PFG)) == "repeated_rows"
    assert rows(Trial("adding"), Trial("adding")) == "marked_pairs_rows"
    assert rows(Trial("adding"), Trial("adding", {"length": 500})) is None
    fixed = Trial("embedded_reber")
    fixed.task = FixedSet(fixed.task, [fixed.task.sample(np.random.default_rng(0))])  # 1997 ERG's fixed set
    assert rows(fixed, fixed) == "picked_rows"


def test_streams_the_device_has_no_room_for_are_refused_before_allocating(monkeypatch):
    """A clear `GpuUnavailable` (the CLI's exit 2), not the device's out-of-memory error."""
    task = make_task(*CERG)
    monkeypatch.setattr(population, "free_bytes", lambda cuda: 10**5)
    refused = r"drawing 2 trials' streams on the GPU needs \d\.\d MB more, and 0\.1 MB is free"
    with pytest.raises(GpuUnavailable, match=refused):
        DeviceStreams(cuda_module(), sources(task, [0, 1]), task.stream_rows, ["steps"] * 2)
