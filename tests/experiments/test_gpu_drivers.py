"""The protocol drivers on the GPU against the CPU's: each trial ends with the same row, run in
pieces with checkpoints between them as a results folder runs it, and the same weights: bit for
bit in numba's CUDA simulator (whose arithmetic is the CPU's), within 1e-12 on a GPU (on an H200
a few weights differed in the last place, the rows not at all: docs/gpu.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

from lstmgraph.arrays import npz_arrays, npz_bytes
from lstmgraph.experiments import find_experiment, gpu_data, gpu_drivers, sequences
from lstmgraph.experiments.experiment import Experiment
from lstmgraph.experiments.data import StreamData
from lstmgraph.experiments.sweep_keys import KEYS
from lstmgraph.experiments.trial import DeviceError, advance_together

from conftest import SIMULATED, SPECS, invoke


pytestmark = [pytest.mark.gpu,  # (the simulator's numpy scalars warn where PCG64 wraps around on the device)
              pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]


@pytest.fixture(autouse=True)
def small_device_refills(monkeypatch):
    """Data drawn on the device (`gpu_data`) a few steps at a time, anchored 5 sequences apart
    there and 8 on the host (a refill draws to the next anchor): the simulator runs each thread
    in Python. Where the rows and anchors lie does not change a trial (what these tests check)."""
    monkeypatch.setattr(gpu_data, "DEVICE_REFILL", {"steps": 64, "sequences": 8})
    monkeypatch.setattr(gpu_data, "DEVICE_ANCHOR_EVERY", 5)
    monkeypatch.setattr(StreamData, "ANCHOR_EVERY", 8)

# Streams counted in sequences with test phases (GTS, PFG), and counted in steps with the rate
# decay (CERG: a small budget, the simulator runs each step in Python); 1997 sequences with a
# test set (adding), with fixed sets and full checks (ERG), with a stopping rule on the error
# (temporal order).
CASES = [("hochreiter1997-adding-t100", 1, dict(window=3, allowed_wrong=2, tolerance=2.0, test_sequences=4), 600),
         ("hochreiter1997-erg-3x2-lr0.5", 2, dict(evaluate_every=10), 100),
         ("hochreiter1997-temporal-order-6a", 3, dict(window=4, max_error=10.0, tolerance=2.0, test_sequences=3), 500),
         ("gers2002-gts-peephole", 4, {}, 200),
         ("gers2002-pfg-cos-f10-peephole", 0, {}, 600),
         ("gers2000-cerg-forget-decay", 4, dict(train_limit=20, test_limit=12, rate_decay=0.9), 60),
         ("gers2000-cerg-forget-decay", 4, dict(train_limit=20, test_limit=12, rate_decay=0.9, rate_decay_every=3), 60)]


def rows_and_weights(trials):
    rows = [dict(trial.row) for trial in trials]
    for row in rows:
        row.pop("seconds")
    return rows, [trial.engine.weights for trial in trials]


def run_on(device: str, name: str | Experiment, seeds: list[int], changes: dict, budget: int, piece: int | None,
           rule: str | None = None, task_options: dict | None = None):
    experiment = find_experiment(name) if isinstance(name, str) else name
    if task_options is not None:
        experiment = replace(experiment, task_options={**experiment.task_options, **task_options})
    if rule is not None:  # (another learning rule: a sweep key's change)
        experiment = KEYS["learning_rule"].apply(experiment, "learning_rule", rule)
    experiment = replace(experiment, protocol=replace(experiment.protocol, **changes))
    plan = experiment.plan()
    trials = [experiment.trial(plan, seed, budget, "interpreter", device) for seed in seeds]
    while not all(trial.done for trial in trials):
        advance_together(trials, piece)
        for index, trial in enumerate(trials):
            if not trial.done:  # through a checkpoint, as a worker takes a piece up
                saved = npz_arrays(npz_bytes(trial.checkpoint()))
                trials[index] = experiment.trial(plan, seed=seeds[index], budget_steps=budget, kernel="interpreter",
                                                 device=device)
                trials[index].restore(saved)
    return rows_and_weights(trials)


def assert_equal_weights(gpu: np.ndarray, cpu: np.ndarray, key: str) -> None:
    """Equal in the simulator; on a GPU within 1e-12 (its last bits differ: docs/gpu.md)."""
    if SIMULATED or cpu.dtype.kind != "f":
        np.testing.assert_array_equal(gpu, cpu, err_msg=key)
    else:
        np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-12, err_msg=key)


def assert_same(one, other):
    assert one[0] == other[0]
    for weights, others in zip(one[1], other[1]):
        for key in weights:
            assert_equal_weights(np.asarray(others[key]), np.asarray(weights[key]), key)


@pytest.mark.parametrize("name,seed,changes,budget", CASES)
def test_trials_on_the_gpu_end_as_on_the_cpu(name, seed, changes, budget):
    seeds = [seed, seed + 1]
    assert_same(run_on("cpu", name, seeds, changes, budget, None),
                run_on("cuda", name, seeds, changes, budget, budget // 3))


@pytest.mark.parametrize("name,seed,changes,budget", [CASES[0][:3] + (200,), CASES[3]], ids=["sequences", "streams"])
def test_exact_rtrl_trials_on_the_gpu_end_as_on_the_cpu(name, seed, changes, budget):
    """Exact RTRL (`learning_rule=rtrl`, a sweep key) is another program: the stream rows' exact
    sweeps (issue 38, run on the CPU) run on a GPU as on the CPU."""
    seeds = [seed, seed + 1]
    exact = run_on("cpu", name, seeds, changes, budget, None, "rtrl")
    assert_same(exact, run_on("cuda", name, seeds, changes, budget, budget // 3, "rtrl"))
    truncated = run_on("cpu", name, seeds, changes, budget, None)[1][0]
    assert any(not np.array_equal(exact[1][0][key], truncated[key]) for key in truncated)  # another rule ran


def test_a_warp_a_trial_drives_as_the_cpu(monkeypatch):
    monkeypatch.setattr(gpu_drivers, "advance_on_gpu", partial(gpu_drivers.advance_on_gpu, threads=32))
    # A few steps: the simulator runs 32 Python threads a trial.
    short = dict(train_limit=2, test_limit=2)
    assert_same(run_on("cpu", "gers2002-gts-peephole", [4], short, 3, None),
                run_on("cuda", "gers2002-gts-peephole", [4], short, 3, None))


ADDING_TESTS = (CASES[0][0], CASES[0][1], {**CASES[0][2], "test_sequences": 20}, CASES[0][3])


@pytest.mark.parametrize("case, advance", [(CASES[-1], "advance_on_gpu"), (ADDING_TESTS, "advance_sequences_on_gpu"),
                                           (CASES[1], "advance_sequences_on_gpu")],
                         ids=["CERG streams", "1997 adding and its test set", "1997 ERG fixed sets"])
def test_trials_end_alike_with_their_data_drawn_on_the_device_or_on_the_host(monkeypatch, case, advance):
    """CERG streams, 1997 adding sequences and their test sets (20 sequences: refilled 8 at a
    time), and ERG strings picked from fixed sets are drawn on the device (`gpu_data`): every
    refill there, none on the host; drawn on the host instead (``draws_on_device=False``), the
    trials end the same."""
    name, seed, changes, budget = case
    refills = []
    monkeypatch.setattr(gpu_data.DeviceStreams, "refill",
                        lambda self, *args, real=gpu_data.DeviceStreams.refill: refills.append(1) or real(self, *args))
    host_ensure, host_test_set = StreamData.ensure, sequences._test_set
    monkeypatch.setattr(StreamData, "ensure", lambda *args: pytest.fail("drawn on the host"))
    monkeypatch.setattr(sequences, "_test_set", lambda *args: pytest.fail("a test set drawn on the host"))
    on_device = run_on("cuda", name, [seed], changes, budget, budget // 2)
    assert refills
    monkeypatch.setattr(StreamData, "ensure", host_ensure)
    monkeypatch.setattr(sequences, "_test_set", host_test_set)
    monkeypatch.setattr(gpu_drivers, advance, partial(getattr(gpu_drivers, advance), draws_on_device=False))
    before = len(refills)
    assert_same(on_device, run_on("cuda", name, [seed], changes, budget, budget // 2))
    assert len(refills) == before


def test_cnto_trials_drawn_on_the_device_end_as_on_the_cpu(monkeypatch):
    """CNTO (temporal order) draws on the device too, its judged values a second plane where
    outputs between classifications are not judged."""
    name, apart = "gers2000-cnto-forget", {"idle_judged": False}
    short = dict(train_limit=1, test_limit=1, test_streams=2)
    refills = []
    monkeypatch.setattr(gpu_data.DeviceStreams, "refill",
                        lambda self, *args, real=gpu_data.DeviceStreams.refill: refills.append(1) or real(self, *args))
    assert_same(run_on("cpu", name, [5], short, 300, None, task_options=apart),
                run_on("cuda", name, [5], short, 300, 150, task_options=apart))
    assert refills


def test_1997_trials_judged_apart_from_their_targets_end_as_on_the_cpu():
    """A 1997 row whose outputs between classifications have a target (5, out of a unit's
    reach) but are not judged: what is judged is a second target plane, drawn on the device
    for training and staged from the host for the test set. Judged by the targets, no training
    sequence would be right (tolerance 2) and all 3 test sequences would be wrong."""
    name, apart = "hochreiter1997-temporal-order-6a", {"idle_target": 5.0, "idle_judged": False}
    changes = dict(window=4, max_error=20.0, tolerance=2.0, test_sequences=3)
    cpu = run_on("cpu", name, [3, 4], changes, 500, None, task_options=apart)
    assert_same(cpu, run_on("cuda", name, [3, 4], changes, 500, 250, task_options=apart))
    assert [(row["solved"], row["presented"], row["test_wrong"]) for row in cpu[0]] == [(True, 4, 0)] * 2


def test_an_unknown_device_is_refused():
    experiment = find_experiment("hochreiter1997-adding-t100")
    with pytest.raises(DeviceError, match="device must be one of cpu, cuda"):
        experiment.trial(experiment.plan(), 0, 100, device="tpu")


def test_reproduce_on_the_gpu_records_the_device(tmp_path):
    code, output = invoke("reproduce", "gers2002-gts-peephole", "--trials", 2, "--max-steps", 200, "--device", "cuda",
                          "--out", tmp_path / "gpu")
    assert code == 0, output
    assert "this machine's GPU" in output
    settings = json.loads((tmp_path / "gpu" / "experiment.json").read_text())
    assert settings["device"] == "cuda"
    code, output = invoke("reproduce", "gers2002-gts-peephole", "--trials", 2, "--max-steps", 200,
                          "--out", tmp_path / "gpu")
    assert code == 2 and "device" in output  # CPU trials do not join a GPU folder


def test_a_sweep_on_the_gpu_runs_each_setting_there(tmp_path):
    code, output = invoke("sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.5", "--trials", 2,
                          "--max-steps", 100, "--device", "cuda", "--no-own-setting", "--out", tmp_path)
    assert code == 0, output
    assert json.loads((tmp_path / "settings" / "0" / "experiment.json").read_text())["device"] == "cuda"
    code, output = invoke("sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.5", "--device", "cuda",
                          "--cluster", "tcp://127.0.0.1:1", "--out", tmp_path / "other")
    assert code == 2 and "leave out --cluster" in output
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("name,varied", [
    ("gers2002-gts-peephole", [("learning_rate", [0.5, 0.1]), ("momentum", [0.0, 0.9])]),
    # stream protocols that differ: each trial's settings, tolerance and rate decay on the device
    ("gers2000-cerg-forget-decay", [("protocol.test_streams", [1, 3]), ("protocol.rate_decay", [0.9, 0.5])]),
])
def test_a_sweep_s_settings_of_one_net_share_one_population_each_ending_as_on_the_cpu(monkeypatch, name, varied):
    """Four settings of one net, two trials each, in one piece: on the GPU one population of
    eight trials (rates, momenta and stream protocols per trial), every trial ending with the
    row and weights it ends with on the CPU."""
    from lstmgraph.experiments.piece import Piece, PieceRun, run_piece
    from lstmgraph.experiments.sweep import grid

    experiment = find_experiment(name)
    if name.startswith("gers2000"):  # short streams: the simulator runs each step in Python
        experiment = replace(experiment, protocol=replace(experiment.protocol, train_limit=12, test_limit=8))
    settings = grid(experiment, varied, add_own=False)
    runs = tuple(PieceRun(s.experiment.task, s.experiment.task_options, s.experiment.protocol,
                          s.experiment.spec_data()[0], 100, "interpreter") for s in settings)
    trials = tuple((index, seed) for index in range(len(runs)) for seed in (0, 1))
    sizes = []
    population = gpu_drivers._population
    monkeypatch.setattr(gpu_drivers, "_population", lambda group, threads: sizes.append(len(group)) or
                        population(group, threads))
    ended = {device: run_piece(Piece(runs, trials, 10 ** 6, (None,) * len(trials), device)).trials
             for device in ("cuda", "cpu")}
    assert sizes and set(sizes) == {8}
    for gpu, cpu in zip(ended["cuda"], ended["cpu"]):
        assert gpu.row is not None and {**gpu.row, "seconds": 0} == {**cpu.row, "seconds": 0}
        assert npz_arrays(gpu.weights).keys() == npz_arrays(cpu.weights).keys()
        for key, values in npz_arrays(cpu.weights).items():
            assert_equal_weights(npz_arrays(gpu.weights)[key], values, key)
    outcomes = [json.dumps([gpu.row["presented"], gpu.row["score"] if "score" in gpu.row else None])
                for gpu in ended["cuda"]]
    assert len(set(outcomes)) > 1  # the settings did differ


def test_a_sweep_of_a_spec_on_a_data_file_runs_on_the_gpu_as_on_the_cpu(tmp_path):
    """The data_file task's sequences are picked on the device as `FixedSet`'s on the host."""
    import yaml

    from lstmgraph.experiments.sweep import subject_of

    rng = np.random.default_rng(0)
    inputs = rng.uniform(-1, 1, (40, 1))
    np.savez(tmp_path / "d.npz", inputs=inputs, targets=(inputs > 0) * 1.0, starts=[0, 3, 10, 14, 22, 30])
    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    data["training"] = {"learning_rate": 0.5, "data": "d.npz"}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(data))
    experiment = subject_of(str(tmp_path / "net.yaml"), 2).experiment
    changes = dict(window=3, test_sequences=4)
    assert_same(run_on("cpu", experiment, [0, 1], changes, 200, None),
                run_on("cuda", experiment, [0, 1], changes, 200, 70))


def test_a_held_out_file_of_longer_sequences_is_tested_on_the_gpu_as_on_the_cpu(tmp_path):
    """The test set drawn on the device from ``test_path``, whose sequences are longer than any
    of the training file's (the device's buffers sized by both)."""
    import yaml

    from lstmgraph.experiments.sweep import subject_of

    rng = np.random.default_rng(0)
    inputs = rng.uniform(-1, 1, (40, 1))
    np.savez(tmp_path / "d.npz", inputs=inputs, targets=(inputs > 0) * 1.0, starts=[0, 3, 10, 14, 22, 30])
    inputs = rng.uniform(-1, 1, (60, 1))
    np.savez(tmp_path / "held.npz", inputs=inputs, targets=(inputs > 0) * 1.0, starts=[0, 25])
    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    data["training"] = {"learning_rate": 0.5, "task": {"name": "data_file", "path": "d.npz", "test_path": "held.npz"}}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(data))
    experiment = subject_of(str(tmp_path / "net.yaml"), 2).experiment
    changes = dict(window=3, test_sequences=4)
    assert_same(run_on("cpu", experiment, [0, 1], changes, 200, None),
                run_on("cuda", experiment, [0, 1], changes, 200, 70))
