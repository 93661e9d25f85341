"""The protocol drivers on the GPU: each trial's sequences or streams, test phases and stopping
rule run on the device, its network on the chip, by the per-lane code of the CPU's drivers.

`advance_on_gpu` (streams) and `advance_sequences_on_gpu` (the 1997 sequences) are the trials'
``_advance_all`` for trials whose device is ``cuda``. The trials' slots go to the device once
(`GpuPopulation.from_slots`); each trial's data, the CPU's draws from its seed, are drawn there
(`gpu_data`) or staged from the host, one array for all trials. A kernel generated per program,
layout and protocol (``drive``) runs for every trial at once the CPU driver's loop: its per-lane
begin function (`stream_driver.lane_begin`, `sequence_driver.sequence_begin`: the next stream or
sequence, or stop), the program's steps (`engine.gpu` ``step``), its per-lane after function
(`lane_after`, `sequence_after`: scores, windows, test sets, success). A trial whose data run
out stops with `Status.NEED_TRAINING` or `NEED_TEST`; more are drawn for it (on the device, or
the caller's ``refill`` on the host) and the kernel is launched again. A trial's outcome depends neither on its neighbours nor on where the launches
end, so it is the CPU driver's wherever the arithmetic is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..engine.compiled.interpreter import load_source
from ..engine.compiled.lanes import slot_rows
from ..engine.gpu import GpuPopulation
from ..engine.gpu.population import launching
from ..engine.gpu.source import finish
from ..success import NOT_JUDGED
from ..tasks.base import test_task
from .counters import WORK, SequenceCounter, SequencePhase, SequenceSetting, Status, StreamCounter
from .data import longest_sequence
from .gpu_staging import Staged, staged_rows

DRIVER_VERSION = "7"


def _population(trials: list, threads: int | None) -> GpuPopulation:
    """The trials' networks side by side on the device, ``threads`` a trial (None: the
    population's default split)."""
    engines = [trial.engine for trial in trials]
    slots = np.stack([engine.population.lanes[0].V[:, 0] for engine in engines], axis=1)
    rates = np.array([engine.rate for engine in engines], dtype=np.float64)
    return GpuPopulation.from_slots(engines[0].network, slots, rates, threads=threads)


def _momenta(cuda, trials: list):
    """Each trial's momentum on the device: a sweep's settings may differ in it (the rates are
    the population's own)."""
    return cuda.to_device(np.array([trial.engine.training.momentum for trial in trials], dtype=np.float64))


def _give_back(population: GpuPopulation, trials: list) -> None:
    """Each trial's network and rate back from the device into its engine."""
    slots, rates = population.slots(), population.rate()
    for lane, trial in enumerate(trials):
        trial.engine.population.lanes[0].V[:, 0] = slots[:, lane]
        trial.engine.rate = float(rates[lane])


def _load(population: GpuPopulation, template: str, driver_module, counters: dict[str, int], name: str):
    """The ``drive`` kernel of ``template`` for a population's program and layout. Its text
    carries a hash of the driver sources it calls: a change to them gives it a new name, so
    numba's cache never serves it compiled from the old."""
    from ..engine.compiled import lanes

    digests = ", ".join(f"{module.__name__} {hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]}"
                        for module in (driver_module, lanes))
    text = (template.replace("#SOURCES", digests).replace("#ENGINE", population.module.__name__)
            .replace("#COUNTERS", "".join(f"{key} = {value}\n" for key, value in counters.items())))
    text = finish(text, population.layout, population.program.n_slots, len(population.network.flat.runs))
    key = hashlib.sha256((DRIVER_VERSION + text).encode()).hexdigest()[:20]
    return load_source(f"lstmgraph_gpu_{name}_{key}", text).drive


def _laid(source) -> tuple:
    """A `StreamData`'s arrays as `gpu_staging.staged_rows` takes them."""
    return source.inputs, source.targets, source.judged, source.ends, source.counts


def advance_on_gpu(trials: list, rules: list, counters: np.ndarray, scores: np.ndarray, refill,
                   threads: int | None = None, draws_on_device: bool = True) -> None:
    """Run the stream ``trials`` on the GPU until each has stopped (ended, paused at its
    budget, or diverged), each by its own ``rules`` entry (`stream_driver.Rule`: a sweep's
    settings may differ in their protocols); ``counters`` and ``scores`` as the CPU driver
    leaves them, and the networks and rates back in the trials' engines. The trials' data are
    drawn on the device where their task allows it (`gpu_data`, unless ``draws_on_device`` is
    false), else ``refill(counters)`` draws more on the host for the trials that ran out
    (`streams.refill`)."""
    from . import stream_driver
    from .gpu_data import DeviceStreams, device_rows

    population = _population(trials, threads)
    cuda = population.cuda
    drive = _load(population, _STREAM_DRIVE, stream_driver, {
        "PHASE": int(StreamCounter.PHASE), "TRAIN_POSITION": int(StreamCounter.TRAIN_POSITION),
        "TEST_POSITION": int(StreamCounter.TEST_POSITION)}, "streams")
    count = len(trials)
    d_scores = cuda.to_device(scores)
    scratch = (cuda.to_device(np.zeros(count)), cuda.to_device(np.zeros((count, 0, population.network.n_outputs))),
               cuda.to_device(np.zeros(count, dtype=np.bool_)))
    blocks = -(-count // population.layout.trials)
    settings = cuda.to_device(np.stack([rule.settings for rule in rules]))
    tolerances = cuda.to_device(np.array([rule.tolerance for rule in rules], dtype=np.float64))
    rate_decays = cuda.to_device(np.array([rule.rate_decay for rule in rules], dtype=np.float64))
    momenta = _momenta(cuda, trials)
    training, testing = Staged(cuda), Staged(cuda)
    draws, device_sources = device_rows([trial.training for trial in trials]) if draws_on_device else None, []
    if draws is not None:  # each source at its cursor, its rows on the device from there
        units = [trial.protocol.unit for trial in trials]
        device_sources = [(DeviceStreams(cuda, [getattr(trial, which) for trial in trials], draws, units), need, column)
                          for which, need, column in (("training", Status.NEED_TRAINING, StreamCounter.TRAIN_POSITION),
                                                      ("testing", Status.NEED_TEST, StreamCounter.TEST_POSITION))]
        counters[:, [StreamCounter.TRAIN_POSITION, StreamCounter.TEST_POSITION]] = 0
    status = counters[:, StreamCounter.STATUS]
    while True:
        if device_sources:
            data = device_sources[0][0].arrays() + device_sources[1][0].arrays()
        else:
            planes = 2 if any(trial.training.apart or trial.testing.apart for trial in trials) else 1
            data = tuple(array for staged, which in ((training, "training"), (testing, "testing"))
                         for array in staged_rows(staged, [_laid(getattr(trial, which)) for trial in trials], planes))
        d_counters = cuda.to_device(counters)
        with launching(population.layout):
            drive[blocks, population.layout.block_threads](
                population.R, population.V, population.rates, momenta, tolerances, rate_decays, settings,
                cuda.to_device(slot_rows(population.program)), *data, d_counters, d_scores, *scratch, WORK)
        counters[:] = d_counters.copy_to_host()
        if not device_sources:
            refill(counters)
        for source, need, column in device_sources:
            wanted = status == need
            if wanted.any():
                counters[:, column] = source.refill(wanted, counters[:, column])
                status[wanted] = Status.RUNNING
        if not (status == Status.RUNNING).any():
            break
    for source, _, column in device_sources:
        source.give_back(counters[:, column])  # the host's sources at the cursors, with empty arrays
        counters[:, column] = 0
    scores[:] = d_scores.copy_to_host()
    _give_back(population, trials)


def advance_sequences_on_gpu(trials: list, rule, counters: np.ndarray, recent, test_errors: np.ndarray,
                             frozen: list, refill, threads: int | None = None, draws_on_device: bool = True) -> None:
    """Run the 1997 sequence ``trials`` on the GPU until each has stopped or paused; the
    counters, windows (``recent``) and test errors as the CPU driver leaves them, and the
    networks and rates back in the engines. ``frozen``: each trial's fixed strings or test set
    (as `sequences._advance_all` keeps them). The training sequences, and the test sets, are
    drawn on the device where every trial's source draws in place and its sequences' length is
    bounded (`gpu_data`, unless ``draws_on_device`` is false); ``refill(training, tests)`` draws
    on the host what the trials asked for of the others."""
    from . import sequence_driver
    from .gpu_data import DeviceStreams, device_rows

    population = _population(trials, threads)
    cuda = population.cuda
    drive = _load(population, _SEQUENCE_DRIVE, sequence_driver, {
        "PHASE": int(SequenceCounter.PHASE), "START": int(SequenceCounter.START),
        "DONE_STEPS": int(SequenceCounter.DONE_STEPS), "TRAINING": int(SequencePhase.TRAINING)}, "sequences")
    count, n_outputs = len(trials), population.network.n_outputs
    tasks, held = sequence_driver.pairwise_scratch()
    d_recent = (cuda.to_device(recent.right), cuda.to_device(recent.error))
    tests = test_errors.shape[1]  # (a column at least on the device: no empty array)
    d_test_errors = cuda.to_device(np.zeros((count, max(tests, 1))))
    scratch = (cuda.to_device(np.repeat(tasks[None], count, axis=0)), cuda.to_device(np.repeat(held[None], count, axis=0)),
               cuda.to_device(np.zeros(count)), cuda.to_device(np.zeros(count, dtype=np.bool_)))
    blocks = -(-count // population.layout.trials)
    status = counters[:, SequenceCounter.STATUS]
    momenta = _momenta(cuda, trials)
    staged_training, staged_frozen = Staged(cuda), Staged(cuda)
    # Sources drawn on the device (`DeviceStreams`): each with the status that asks for more and
    # its cursor's counter. A test set runs whole within a call: its source starts anew, once a
    # trial asks for it.
    device = {}
    draws = device_rows([trial.training for trial in trials]) if draws_on_device else None
    if draws is not None and draws.longest is not None:
        device["training"] = (DeviceStreams(cuda, [trial.training for trial in trials], draws, ["sequences"] * count),
                              Status.NEED_TRAINING, SequenceCounter.POSITION)
        counters[:, SequenceCounter.POSITION] = 0  # (no rows yet: each trial asks for them)
    test_draws = draws if device and tests > 0 else None
    if test_draws is not None and any(test_task(trial.task) is not trial.task for trial in trials):
        test_draws = device_rows([trial.test_source() for trial in trials])  # (held out: maybe longer sequences)
    tests_on_device = test_draws is not None and test_draws.longest is not None
    while True:
        refill("training" not in device, not tests_on_device)
        longest = [draws.longest] if device else [longest_sequence(trial.training.ends) for trial in trials]
        longest += [test_draws.longest] if tests_on_device else []
        longest = max(longest + [longest_sequence(data[3]) for data in frozen])
        data = []
        for name, staged in (("training", staged_training), ("tests", staged_frozen)):
            if name in device:
                inputs, targets, ends, _, at = device[name][0].arrays()
                data += [inputs, targets, ends, at]
            else:  # (the 1997 kernel reads no sequence counts: a source's first four arrays)
                data += staged_rows(staged, frozen if name == "tests" else
                                    [_laid(trial.training)[:4] for trial in trials])
        d_counters = cuda.to_device(counters)
        errors = cuda.to_device(np.zeros((count, max(longest * n_outputs, int(rule.settings[SequenceSetting.WINDOW])))))
        with launching(population.layout):
            drive[blocks, population.layout.block_threads](
                population.R, population.V, population.rates, momenta,
                float(rule.tolerance), float(rule.max_error), NOT_JUDGED, cuda.to_device(rule.settings),
                cuda.to_device(slot_rows(population.program)), *data, d_counters, *d_recent, d_test_errors,
                cuda.to_device(np.zeros((count, longest, n_outputs))), errors, *scratch, WORK)
        counters[:] = d_counters.copy_to_host()
        if tests_on_device and "tests" not in device and (status == Status.NEED_TEST).any():
            sources = [trial.test_source() for trial in trials]
            device["tests"] = (DeviceStreams(cuda, sources, test_draws, ["sequences"] * count),
                               Status.NEED_TEST, SequenceCounter.FROZEN_POSITION)
        for source, need, column in device.values():
            wanted = status == need
            if wanted.any():
                counters[:, column] = source.refill(wanted, counters[:, column])
                status[wanted] = Status.RUNNING
        if not np.isin(status, (Status.RUNNING, Status.NEED_TRAINING, Status.NEED_TEST)).any():
            break
    if "training" in device:
        device["training"][0].give_back(counters[:, SequenceCounter.POSITION])  # the host's at the cursors
        counters[:, SequenceCounter.POSITION] = 0
    recent.right[:], recent.error[:] = d_recent[0].copy_to_host(), d_recent[1].copy_to_host()
    test_errors[:] = d_test_errors.copy_to_host()[:, :tests]
    _give_back(population, trials)


#: The CPU drivers' per-lane functions as device code (`engine.gpu.device_code`).
_HEADER = '''"""Generated by lstmgraph (experiments/gpu_drivers.py) for one program and layout; do not edit."""
import math

import numpy as np
from numba import cuda, float64, int64

from lstmgraph.engine.gpu.device_code import device_version
from #ENGINE import step
#IMPORT  # sources: #SOURCES
DEVICE = #DEVICE_WRAP
#DEVICE_FUNCTIONS
THREADS = #THREADS
TRIALS = #TRIALS
SLOTS = #SLOTS
ARITHMETIC = "#ARITHMETIC"
#COUNTERS
'''

_STREAM_DRIVE = _HEADER.replace("#IMPORT", "from lstmgraph.experiments.stream_driver import lane_after, lane_begin").replace(
    "#DEVICE_FUNCTIONS", "lane_begin, lane_after = device_version(lane_begin, DEVICE), device_version(lane_after, DEVICE)") + '''

@cuda.jit(cache=True)
def drive(R, V, rates, momenta, tolerances, rate_decays, settings, rows, train_inputs, train_targets, train_ends,
          train_counts, train_at, test_inputs, test_targets, test_ends, test_counts, test_at, counters, scores, sums,
          record, wrong, work):
    """The CPU stream driver's loop for trial g until it stops or has run ``work`` steps:
    its stream begun (`lane_begin`, by the trial's first thread), its steps until its first
    error or the segment's end, its stream's place after them (`lane_after`)."""
#ENTER
    counter = counters[g]
    score = scores[g]
    room_box = cuda.shared.array(TRIALS, int64)
    r0, c0, n0 = train_at[g, 0], train_at[g, 1], train_at[g, 2]
    r1, c1, n1 = test_at[g, 0], test_at[g, 1], test_at[g, 2]
    own_train_ends, own_train_counts = train_ends[r0:r0 + n0], train_counts[c0:c0 + n0 + 1]
    own_test_ends, own_test_counts = test_ends[r1:r1 + n1], test_counts[c1:c1 + n1 + 1]
    done = 0
    while done < work:
        if lane == 0:
            room_box[b] = lane_begin(counter, settings[g], W, c, rows, n0, own_train_counts, n1, own_test_counts)
            wrong[g] = False
        #BARRIER
        room = room_box[b]
        if room <= 0:
            break
        learning = counter[PHASE] == 0
        if learning:
            inputs, targets, first = train_inputs, train_targets, r0 + counter[TRAIN_POSITION]
        else:
            inputs, targets, first = test_inputs, test_targets, r1 + counter[TEST_POSITION]
        steps = 0
        for t in range(room):
            step(R, W, c, g, lane, inputs, 0, targets, 0, first + t, rates, momenta[g], 1.0, tolerances[g], learning,
                 sums, record, wrong, 0#LANE_OF)
            steps = t + 1
            if wrong[g]:
                break
        #BARRIER
        if lane == 0:
            lane_after(counter, score, settings[g], steps, wrong[g], own_train_ends, own_train_counts, own_test_ends,
                       own_test_counts, W, c, rows, rates, g, rate_decays[g])
        #BARRIER
        done += steps
#LEAVE
'''

_SEQUENCE_DRIVE = _HEADER.replace(
    "#IMPORT", "from lstmgraph.experiments.sequence_driver import sequence_after, sequence_begin").replace(
    "#DEVICE_FUNCTIONS", "sequence_begin, sequence_after = device_version(sequence_begin, DEVICE), "
                         "device_version(sequence_after, DEVICE)") + '''

@cuda.jit(cache=True)
def drive(R, V, rates, momenta, tolerance, max_error, not_judged, settings, rows, train_inputs, train_targets,
          train_ends, train_at, frozen_inputs, frozen_targets, frozen_ends, frozen_at, counters, recent_right,
          recent_error, test_errors, outputs, errors, tasks, held, sums, wrong, work):
    """The CPU sequence driver's loop for trial g until it stops or has run ``work`` steps: its
    sequence begun (`sequence_begin`, by the trial's first thread), the sequence's steps, its
    outputs in ``outputs[g]``, then its judgement (`sequence_after`: what is judged is the last
    target plane)."""
#ENTER
    counter = counters[g]
    room_box = cuda.shared.array(TRIALS, int64)
    r0, n0 = train_at[g, 0], train_at[g, 2]
    r1, n1 = frozen_at[g, 0], frozen_at[g, 2]
    judged0, judged1 = train_targets.shape[1] - 1, frozen_targets.shape[1] - 1
    done = 0
    while done < work:
        if lane == 0:
            room_box[b] = sequence_begin(counter, settings, W, c, rows, train_ends[r0:r0 + n0],
                                         frozen_ends[r1:r1 + n1])
        #BARRIER
        room = room_box[b]
        if room <= 0:
            break
        learning = counter[PHASE] == TRAINING
        offset = counter[DONE_STEPS]
        if learning:
            inputs, targets, first = train_inputs, train_targets, r0 + counter[START] + offset
        else:
            inputs, targets, first = frozen_inputs, frozen_targets, r1 + counter[START] + offset
        for t in range(room):
            step(R, W, c, g, lane, inputs, 0, targets, 0, first + t, rates, momenta[g], 1.0, not_judged, learning, sums,
                 outputs, wrong, offset + t#LANE_OF)
        #BARRIER
        if lane == 0:
            sequence_after(counter, settings, tolerance, max_error, room, outputs[g], train_targets[r0:r0 + n0, 0, :, 0],
                           train_targets[r0:r0 + n0, judged0, :, 0], frozen_targets[r1:r1 + n1, 0, :, 0],
                           frozen_targets[r1:r1 + n1, judged1, :, 0], n1, recent_right[g], recent_error[g],
                           test_errors[g], W, c, errors[g], tasks[g], held[g])
        #BARRIER
        done += room
#LEAVE
'''
