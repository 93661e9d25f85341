"""The stream protocol's driver on the GPU: each trial's streams, test phases and stopping rule
run on the device, its network on the chip, by the same per-lane code as the CPU's driver.

`advance_on_gpu` is `streams.StreamTrial._advance_all` for trials whose device is ``cuda``.
The trials' slots go to the device once (`GpuPopulation.from_slots`); the data each trial has
drawn (the same draws as on the CPU: `StreamData`) go there flattened, one array for all trials.
A kernel generated per program and layout (``drive``) runs, for every trial at once, the CPU
driver's loop: `stream_driver.lane_begin` (start a stream, or stop), the program's steps until
the trial's first error or the segment's end (`engine.gpu` ``step``), `stream_driver.lane_after`.
A trial whose data run out stops with `Status.NEED_TRAINING` or `NEED_TEST`; the host draws
more for it (the caller's ``refill``) and launches again. A trial's outcome does not depend on its
neighbours, nor on where the launches end, so it is the CPU driver's wherever the arithmetic is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..engine.compiled.interpreter import load_source
from ..engine.compiled.lanes import slot_rows
from ..engine.gpu import GpuPopulation
from ..engine.gpu.source import finish
from .counters import WORK, Status, StreamCounter as Counter

DRIVER_VERSION = "1"


def driver_source(engine_module: str, population: GpuPopulation) -> str:
    """The ``drive`` kernel for a population's program and layout."""
    from . import stream_driver
    from ..engine.compiled import lanes

    # The compiled functions the kernel calls, by a hash of their sources: a change to them gives
    # the kernel a new text, so a new name, and numba's cache never serves it compiled from the old.
    digests = ", ".join(f"{module.__name__} {hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]}"
                        for module in (stream_driver, lanes))
    text = _DRIVE.replace("#SOURCES", digests).replace("#ENGINE", engine_module).replace(
        "#COUNTERS", f"PHASE, TRAIN_POSITION, TEST_POSITION = {int(Counter.PHASE)}, {int(Counter.TRAIN_POSITION)}, "
                     f"{int(Counter.TEST_POSITION)}")
    text = text.replace("#DRIVER_DEVICE_CODE\n", _DRIVER_DEVICE_CODE)
    return finish(text, population.layout, population.program.n_slots, len(population.network.flat.runs))


def load_driver(population: GpuPopulation):
    text = driver_source(population.module.__name__, population)
    key = hashlib.sha256((DRIVER_VERSION + text).encode()).hexdigest()[:20]
    return load_source(f"lstmgraph_gpu_streams_{key}", text).drive


def flat_data(cuda, sources: list, planes: int) -> tuple:
    """The trials' data (`StreamData`) as the kernel reads them: inputs (rows, columns, 1),
    targets (rows, planes, columns, 1), sequence ends, counts, and per trial (first row, first
    count, rows); a spare row at the end, so that no array is empty."""
    inputs = np.concatenate([s.inputs for s in sources] + [np.zeros((1, sources[0].inputs.shape[1]))])
    targets = [np.stack([s.targets, s.judged][:planes], axis=1) for s in sources]
    targets = np.concatenate(targets + [np.zeros((1, planes, sources[0].targets.shape[1]))])
    ends = np.concatenate([s.ends for s in sources] + [np.zeros(1, dtype=np.bool_)])
    counts = np.concatenate([s.counts for s in sources])
    rows = np.cumsum([0] + [len(s.inputs) for s in sources])
    count_rows = np.cumsum([0] + [len(s.counts) for s in sources])
    at = np.stack([rows[:-1], count_rows[:-1], np.diff(rows)], axis=1).astype(np.int64)
    return (cuda.to_device(np.ascontiguousarray(inputs[:, :, None])),
            cuda.to_device(np.ascontiguousarray(targets[..., None])),
            cuda.to_device(ends), cuda.to_device(counts), cuda.to_device(at))


def advance_on_gpu(trials: list, rule, counters: np.ndarray, scores: np.ndarray, refill,
                   threads: int | None = None) -> None:
    """Run the stream ``trials`` on the GPU until each has stopped (ended, paused at its
    budget, or diverged); ``counters`` and ``scores`` as the CPU driver leaves them, and the
    networks and rates back in the trials' engines. ``refill(counters)`` draws more data for
    the trials that ran out (`streams.refill`). ``threads`` a trial: a warp on a GPU, one in
    numba's CUDA simulator (which runs each thread as a Python thread)."""
    from ..engine.gpu.population import cuda_module, simulated

    if threads is None:
        threads = 1 if simulated(cuda_module()) else 32

    engines = [trial.engine for trial in trials]
    network = engines[0].network
    slots = np.stack([engine.population.lanes[0].V[:, 0] for engine in engines], axis=1)
    rates = np.array([engine.rate for engine in engines], dtype=np.float64)
    population = GpuPopulation.from_slots(network, slots, rates, threads=threads)
    cuda = population.cuda
    drive = load_driver(population)
    count = len(trials)
    d_counters, d_scores = cuda.to_device(counters), cuda.to_device(scores)
    rows = cuda.to_device(slot_rows(network.program))
    scratch = (cuda.to_device(np.zeros(count)), cuda.to_device(np.zeros((count, 0, network.n_outputs))),
               cuda.to_device(np.zeros(count, dtype=np.bool_)))
    blocks = -(-count // population.layout.trials)
    while True:
        planes = 2 if any(trial.training.apart or trial.testing.apart for trial in trials) else 1
        train = flat_data(cuda, [trial.training for trial in trials], planes)
        test = flat_data(cuda, [trial.testing for trial in trials], planes)
        drive[blocks, population.layout.block_threads](
            population.R, population.V, population.rates, float(engines[0].training.momentum), float(rule.tolerance),
            float(rule.rate_decay), cuda.to_device(rule.settings), rows, *train, *test, d_counters, d_scores,
            *scratch, WORK)
        counters[:] = d_counters.copy_to_host()
        refill(counters)
        if not (counters[:, Counter.STATUS] == Status.RUNNING).any():
            break
        d_counters = cuda.to_device(counters)
    scores[:] = d_scores.copy_to_host()
    slots, rates = population.slots(), population.rate()
    for lane, engine in enumerate(engines):
        engine.population.lanes[0].V[:, 0] = slots[:, lane]
        engine.rate = float(rates[lane])



#: The CPU driver's per-lane functions as device code (`engine.gpu.device_code`).
_DRIVER_DEVICE_CODE = """from lstmgraph.engine.gpu.device_code import device_version
DEVICE = #DEVICE_WRAP
lane_begin, lane_after = device_version(lane_begin, DEVICE), device_version(lane_after, DEVICE)
"""

_DRIVE = '''"""Generated by lstmgraph (experiments/stream_driver_gpu.py) for one program and layout; do not edit."""
import numpy as np
from numba import cuda, float64, int64

from lstmgraph.experiments.stream_driver import lane_after, lane_begin  # sources: #SOURCES
from #ENGINE import step
#DRIVER_DEVICE_CODE
THREADS = #THREADS
TRIALS = #TRIALS
SLOTS = #SLOTS
#COUNTERS


@cuda.jit(cache=True)
def drive(R, V, rates, momentum, tolerance, rate_decay, settings, rows, train_inputs, train_targets, train_ends,
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
            room_box[b] = lane_begin(counter, settings, W, c, rows, n0, own_train_counts, n1, own_test_counts)
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
            step(R, W, c, g, lane, inputs, 0, targets, 0, first + t, rates, momentum, 1.0, tolerance, learning, sums,
                 record, wrong)
            steps = t + 1
            if wrong[g]:
                break
        #BARRIER
        if lane == 0:
            lane_after(counter, score, settings, steps, wrong[g], own_train_ends, own_train_counts, own_test_ends,
                       own_test_counts, W, c, rows, rates, g, rate_decay)
        #BARRIER
        done += steps
#LEAVE
'''
