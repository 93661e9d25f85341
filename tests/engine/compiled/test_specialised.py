"""The specialised kernel against the interpreter: bit for bit (np.array_equal), not to a tolerance.

Each case compiles one kernel (seconds; numba's cache keeps it), so the cases are few and small:
truncated and exact RTRL, both losses, a softmax output, exact RTRL in lanes on the timing net (the
CERG, ERG and adding nets' kernels, one trial or lanes, truncated, exact or BPTT, take 10-60 s each
to compile: they run with LSTMGRAPH_FULL_AGREEMENT=1), one trial and populations (trials side
by side in lanes: the interpreter's block of any width, the specialised kernel's blocks of
`specialised.WIDTH` with idle lanes in the last), learning with momentum and rate decay, the success tests (tolerance, most active) stopping lanes, recorded outputs, and
the stream protocol's compiled loop.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace

import numpy as np
import pytest

import lstmgraph
from lstmgraph.engine import initial_weights
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.compiled import specialised
from lstmgraph.success import MOST_ACTIVE
from lstmgraph.experiments import find_experiment

from conftest import EXPERIMENT_NETS, SPECS, experiment_plan
from engine.compiled.test_network import FULL_AGREEMENT, _stream


def _everything(population) -> list[np.ndarray]:
    out = [population.rate()]
    for part in (population.weights(), population.velocity(), population.state(), population.traces()):
        out += [part[key] for key in sorted(part)]
    return out


def _train(plan, kernel: str, seeds: list[int], full: bool, loss: str, inputs, targets, rate: float):
    network = CompiledNetwork(plan, full_gradient=full, loss=loss, kernel=kernel, threads=1)
    population = network.population(initial_weights(plan, seeds), rate)
    results = []
    outputs = np.zeros((len(seeds), len(inputs), network.n_outputs))
    results += population.run(inputs, targets, 0.9, 0.9999, outputs=outputs)
    results.append(outputs.copy())
    results += population.run(inputs[:50], targets[:50], learn=False)
    results += population.run(inputs[:80], targets[:80], 0.9, learn=np.arange(len(seeds)) % 3 == 1)  # some lanes
    population.reset()
    results += population.run(inputs, targets, 0.5, tolerance=0.4)  # lanes stop at their first error
    population.reset()
    population.set_rate(10 * rate * np.array([0, 0.5, 1, 2, 4, 8])[:len(seeds)])
    results += population.run(inputs, targets, 0.5, tolerance=0.55)  # ...at different steps (timing: 300, 10, 9)
    results += _everything(population)  # a stopped lane's state and traces as its last step left them
    population.reset()
    judged = np.where(np.arange(len(targets))[:, None] % 7 == 3, targets, np.nan)  # judged at some steps only
    results += population.run(inputs, targets, 0.5, tolerance=0.4, judged=judged)
    results += _everything(population)
    population.reset()
    results += population.run(inputs, targets, 0.5, tolerance=MOST_ACTIVE, judged=judged)  # most active judged
    return population.kernel, results + _everything(population)


LANES = [0, 1, 2, 3, 4, 5]  # lanes: a full block, a padded one
#: The experiment nets whose four-lane kernels take 15-60 s each to compile from an empty cache:
#: they run with LSTMGRAPH_FULL_AGREEMENT=1 (tests/engine/compiled/test_network.py).
SLOW = pytest.mark.skipif(not FULL_AGREEMENT, reason="a kernel that compiles for a minute: LSTMGRAPH_FULL_AGREEMENT=1")


def _gru_2_units() -> lstmgraph.Plan:
    """gru.yaml with 2 units a group, not 8 (51 weights)."""
    import yaml

    data = yaml.safe_load((SPECS / "gru.yaml").read_text())
    for group in data["groups"]:
        group["size"] = 2 if group["size"] == 8 else group["size"]
    return lstmgraph.compile_plan(lstmgraph.spec_from_data(data))


@pytest.mark.parametrize("name,full,loss,seeds", [
    ("gers2002_timing", False, "sum_of_squares", [0]),
    ("gers2002_timing", False, "sum_of_squares", LANES),
    ("rnn", True, "cross_entropy", [0]),  # softmax outputs
    # a gate's complement (1 - z: the only -1.0 factors whose effect is not zero), compiled in seconds
    ("gru_2_units", True, "cross_entropy", [0]),
    # exact RTRL in lanes (the exact-rtrl sweeps), a linear output
    pytest.param("pfg-peephole", True, "sum_of_squares", LANES, id="pfg-peephole-rtrl-lanes"),
    *[pytest.param(key, full, "sum_of_squares", seeds, marks=SLOW,
                   id=f"{key}-{'rtrl' if full else 'truncated'}-{'lanes' if len(seeds) > 1 else 'one'}")
      for key in ("cerg-forget", "cerg-state-decay", "erg-3x2", "adding") for full in (False, True)
      for seeds in ([0], LANES)],
    # sums left in their given order (entries.MAX_RUNS_GROWTH), softmax outputs
    *[pytest.param(name, True, "cross_entropy", seeds, marks=SLOW, id=f"{name}-{'lanes' if len(seeds) > 1 else 'one'}")
      for name in ("gru", "gru_torch") for seeds in ([0], LANES)],
])
def test_the_specialised_kernel_is_bit_identical_to_the_interpreter(name, full, loss, seeds):
    plan = (_gru_2_units() if name == "gru_2_units" else experiment_plan(name) if name in EXPERIMENT_NETS
            else lstmgraph.compile_spec(SPECS / f"{name}.yaml"))
    inputs, targets = _stream(plan, 300)
    rate = 0.002 if name == "rnn" else 0.05
    kernel, expected = _train(plan, "interpreter", seeds, full, loss, inputs, targets, rate)
    assert kernel == "interpreter"
    kernel, got = _train(plan, "specialised", seeds, full, loss, inputs, targets, rate)
    assert kernel == "specialised"
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert np.array_equal(a, b)


def test_the_exact_rtrl_case_reads_unchanging_operands_once_before_a_loop():
    """The bit-identical case of rnn.yaml's exact RTRL runs register sums whose operands that
    stay the same along the rows are read into locals first (`_accumulate_hoisted`)."""
    network = CompiledNetwork(lstmgraph.compile_spec(SPECS / "rnn.yaml"), full_gradient=True, kernel="interpreter")
    text = specialised.source(network.flat, 1)
    assert len(re.findall(r"^ +h\d+ = v\[\d+\]$", text, re.M)) >= 10


def test_an_operation_longer_than_a_section_is_cut_between_its_runs():
    """rnn.yaml's exact RTRL has one operation of 176 runs (about 940 lines, which numba took
    12 s to compile as one function): it is cut into sections of at most SECTION_LINES."""
    network = CompiledNetwork(lstmgraph.compile_spec(SPECS / "rnn.yaml"), full_gradient=True, kernel="interpreter")
    bodies = re.findall(r"^def section_\d+\(.*\):\n((?:    .*\n|\s*\n)*)", specialised.source(network.flat, 1), re.M)
    lengths = [len([line for line in body.splitlines() if line.strip()]) for body in bodies]
    assert len(lengths) > 5 and max(lengths) <= specialised.SECTION_LINES
    # each section has a statement (a comment alone would not compile), and the text compiles
    assert all(any(line.strip() and not line.strip().startswith("#") for line in body.splitlines()) for body in bodies)
    compile(specialised.source(network.flat, specialised.WIDTH), "kernel", "exec")


def test_the_text_has_no_operation_that_changes_nothing():
    """numba types every operation of the text: positions are one constant plus the loop terms,
    a product reads no factor 1.0 (x * 1.0 is x, bit for bit), and a sum of two entries is not a
    loop (`entry_text`)."""
    network = CompiledNetwork(lstmgraph.compile_spec(SPECS / "rnn.yaml"), full_gradient=True, kernel="interpreter")
    for width in (1, specialised.WIDTH):
        text = specialised.source(network.flat, width)
        assert not re.search(r"\* 1\.0\b|(?<![-\d.])1\.0 \*|\[0 \+ | \+ 0\]|\* 1\]", text)
        assert not re.search(r"for j in range\(2\):\n +acc", text)  # a register sum of two: two statements


def test_a_run_is_hoisted_only_where_its_rows_are_consecutive_and_its_reads_unwritten():
    #          rows, entries; out: base, i, j; a: base, i, j; b; c
    row = np.array([4, 2, 10, 1, 0, 30, 0, 1, 0, 0, 0, 40, 1, 4])
    assert specialised._hoistable(row)
    assert not specialised._hoistable(np.array([4, 2, 10, 1, 0, 12, 0, 1, 0, 0, 0, 40, 1, 4]))  # reads slot 12 it writes
    assert not specialised._hoistable(np.array([4, 2, 10, 2, 0, 30, 0, 1, 0, 0, 0, 40, 1, 4]))  # out every other slot
    assert not specialised._hoistable(np.array([4, 2, 10, 1, 0, 30, 0, 1, 0, 0, 0, 40, 3, 4]))  # c every third


def test_an_operand_steady_along_a_row_is_read_once_unless_the_run_writes_it():
    #                     rows, entries; out: base, i, j; a: base, i, j; b; c
    scale = np.array([4, 312, 6592, 312, 1, 64, 1, 0, 0, 0, 0, 0, 0, 0])  # a row times its unit's f'
    assert specialised._steady_operands(scale) == ("a",)  # b and c read the constant ONE
    assert specialised._steady_operands(np.array([2, 3, 10, 3, 1, 12, 1, 0, 0, 0, 0, 0, 0, 0])) == ()  # a written
    assert specialised._steady_operands(np.array([4, 1, 10, 1, 0, 64, 1, 0, 0, 0, 0, 0, 0, 0])) == ()  # no loop


def test_auto_takes_the_specialised_kernel_only_once_it_is_compiled(tmp_path, monkeypatch):
    monkeypatch.setenv("LSTMGRAPH_CACHE", str(tmp_path))
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml")
    flat = CompiledNetwork(plan).flat
    # A fresh module, so that numba keeps its machine code in tmp_path (a process loads a
    # kernel's module once).
    monkeypatch.delitem(sys.modules, specialised._name(specialised.source(flat)), raising=False)
    assert not specialised.cached(flat)
    assert CompiledNetwork(plan).population(initial_weights(plan, [0]), 0.1).kernel == "interpreter"
    population = CompiledNetwork(plan, kernel="specialised").population(initial_weights(plan, [0]), 0.1)
    assert not population.network.specialised().compiled_before
    population.run(np.zeros((2, 1)), np.zeros((2, 1)))  # compiles it into tmp_path
    assert specialised.cached(flat)
    assert CompiledNetwork(plan).population(initial_weights(plan, [0]), 0.1).kernel == "specialised"
    with pytest.raises(ValueError, match="kernel must be one of"):
        CompiledNetwork(plan, kernel="fast")


def test_the_stream_loop_runs_either_kernel_to_the_same_result():
    experiment = find_experiment("gers2002-gts-peephole")
    experiment = replace(experiment, protocol=replace(experiment.protocol, max_streams=2000))
    plan = experiment.plan()
    rows, weights = [], []
    for kernel in ("interpreter", "specialised"):
        trial = experiment.trial(plan, 4, kernel=kernel)
        assert trial.engine.population.kernel == kernel
        row = trial.run()
        row.pop("seconds")
        rows.append(row)
        weights.append(trial.engine.weights)
    assert rows[0] == rows[1] and rows[0]["presented"] > 0
    for key in weights[0]:
        assert np.array_equal(weights[0][key], weights[1][key])


def _train_segments(plan, kernel: str, loss: str, inputs, targets, rate: float, seeds: list[int], full: bool):
    """Calls of a BPTT population (each one segment): learning with momentum and a decay, a
    segment over the call's steps, a frozen call stopped by the success test."""
    network = CompiledNetwork(plan, full_gradient=full, loss=loss, kernel=kernel, threads=1, segments=True)
    population = network.population(initial_weights(plan, seeds), rate)
    results = []
    for start in range(0, len(inputs), 37):  # segments of 37 steps (a window), the state carried
        outputs = np.zeros((len(seeds), 37, network.n_outputs))
        results += population.run(inputs[start:start + 37], targets[start:start + 37], 0.9, 0.999, outputs=outputs)
        results.append(outputs.copy())
    weights = initial_weights(plan, seeds)
    assert not all(np.array_equal(population.weights()[key], values) for key, values in weights.items())
    population.reset()
    results += population.run(inputs, targets, tolerance=0.4, learn=False)
    return population.kernel, results + _everything(population)


@pytest.mark.parametrize("name,loss,seeds", [
    ("rnn", "cross_entropy", [0]),
    # Full BPTT on the 1997 rows' exact-gradient sweeps (adding, 6b). (BPTT's specialised kernel
    # runs one lane: trials side by side run the interpreter's, `uses_specialised`.)
    *[pytest.param(key, "sum_of_squares", [0], marks=SLOW, id=f"{key}-full-bptt-one")
      for key in ("adding", "temporal-order-6b")],
])
def test_the_specialised_bptt_kernel_is_bit_identical_to_the_interpreter(name, loss, seeds):
    """The recurrent net of rnn.yaml (softmax outputs, cross-entropy; its kernel compiles in
    about 20 s); the adding and 6b nets, every edge carrying (LSTMGRAPH_FULL_AGREEMENT=1)."""
    plan = experiment_plan(name) if name in EXPERIMENT_NETS else lstmgraph.compile_spec(SPECS / f"{name}.yaml")
    inputs, targets = _stream(plan, 600)
    kernel_i, interpreted = _train_segments(plan, "interpreter", loss, inputs, targets, 0.05, seeds, True)
    kernel_s, specialised_ = _train_segments(plan, "specialised", loss, inputs, targets, 0.05, seeds, True)
    assert (kernel_i, kernel_s) == ("interpreter", "specialised")
    assert len(interpreted) == len(specialised_)
    for a, b in zip(interpreted, specialised_):
        assert np.array_equal(a, b)
