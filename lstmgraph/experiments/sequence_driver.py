"""The 1997 sequence protocol's loop in compiled code, for trials side by side (`drive`).

It does what `sequences.run_sequences_reference` does, sequence by sequence, for every lane of
a block of trials at once (the tests hold the two equal, and a trial run beside others equal to
the same trial run alone):

- every lane (trial) has its own training sequences, its own window of recent results and
  counters, for fixed sets (ERG) its own full checks of the training and test strings, and
  at its end its own frozen test set;
- the lanes run in lockstep through the compiled kernel in chunks of steps: a chunk ends where
  the first lane's sequence ends (each lane's state is reset before its next sequence);
- a lane's place is kept between calls: `drive` returns when every lane has stopped, one needs
  more sequences (`NEED_DATA`, `NEED_TEST`; the caller draws them and calls again) or about
  ``work`` lockstep steps are done.

The success tests and the squared error are those of `success.py`, the means summed pairwise
as numpy sums (`pairwise_mean`), so the rule "mean squared error below ``max_error``" decides
as the reference does, to the last bit.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba
import numpy as np

from .. import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)
from .. import success
from ..engine.compiled.bound import bind_kernel
from ..engine.compiled.lanes import LaneBlock, lane_finite, mark_running, reset_lane, stage
from ..success import NOT_JUDGED
from .counters import (CHECK_AFTER_RIGHT, SEQUENCE_COUNTERS, SequenceCounter as Counter, SequencePhase as Phase,
                       SequenceSetting as Setting, Status)

#: Per lane, sequences laid end to end (each field a typed list, one array per lane,
#: `lanes.LaneArrays`): inputs, targets, judged values and sequence ends.
LaneSequences = namedtuple("LaneSequences", "inputs targets judged ends")
#: The protocol as the driver reads it: the int64 `counters.SequenceSetting` array, the success
#: test's kernel tolerance (`lstmgraph.success`) and the stopping rule's mean squared error (NaN:
#: none).
Rule = namedtuple("Rule", "settings tolerance max_error")
#: Each lane's window of recent training results (lanes, window): right or not, squared error.
Window = namedtuple("Window", "right error")
#: The kernel call's scratch: staging, per lane running, learning, steps run, loss sums, recorded
#: outputs and first error, room for a window's or a sequence's squared errors, and the pairwise
#: sum's stacks (`pairwise_scratch`).
Scratch = namedtuple("Scratch", "inputs targets active learn steps_done sums record wrong errors tasks held")

#: The success test's scalar form (`lstmgraph.success`), compiled here.
_sequence_right = numba.njit(cache=True, nogil=True)(success.sequence_right)
_squared_differences = numba.njit(cache=True, nogil=True)(success.squared_differences)


@numba.njit(cache=True, nogil=True)
def _block_sum(values, start, n):
    """numpy's sum of at most 128 values: one by one below 8, else eight partial sums."""
    if n < 8:
        total = 0.0
        for i in range(n):
            total += values[start + i]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    i = 8
    while i < n - n % 8:
        r0 += values[start + i]
        r1 += values[start + i + 1]
        r2 += values[start + i + 2]
        r3 += values[start + i + 3]
        r4 += values[start + i + 4]
        r5 += values[start + i + 5]
        r6 += values[start + i + 6]
        r7 += values[start + i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += values[start + i]
        i += 1
    return total


def pairwise_scratch() -> tuple[np.ndarray, np.ndarray]:
    """The stacks `pairwise_sum` works on: tasks (192, 3) and sums (64,), enough for any count."""
    return np.empty((192, 3), dtype=np.int64), np.empty(64)


@numba.njit(cache=True, nogil=True)
def pairwise_sum(values, start, n, tasks, sums):
    """``values[start:start + n]`` summed as numpy sums a contiguous float64 array (blocks of
    at most 128 values, `_block_sum`; above that the two halves, the first a multiple of 8
    long, summed so and added), so that a mean here equals `numpy.mean` bit for bit
    (tests/experiments/test_sequence_driver.py). The halving runs on explicit stacks
    (`pairwise_scratch`: numba cannot cache a recursive function, and a GPU's device code
    allocates nothing): ``tasks`` rows (start, n, 1 = add the two sums on top), ``sums``."""
    tasks[0, 0], tasks[0, 1], tasks[0, 2] = start, n, 0
    pending, held = 1, 0
    while pending:
        pending -= 1
        first, count, add = tasks[pending, 0], tasks[pending, 1], tasks[pending, 2]
        if add:
            held -= 1
            sums[held - 1] = sums[held - 1] + sums[held]
        elif count <= 128:
            sums[held] = _block_sum(values, first, count)
            held += 1
        else:
            half = count // 2
            half -= half % 8
            tasks[pending, 0], tasks[pending, 1], tasks[pending, 2] = 0, 0, 1
            tasks[pending + 1, 0], tasks[pending + 1, 1], tasks[pending + 1, 2] = first + half, count - half, 0
            tasks[pending + 2, 0], tasks[pending + 2, 1], tasks[pending + 2, 2] = first, half, 0
            pending += 3
    return sums[0]


@numba.njit(cache=True, nogil=True)
def pairwise_mean(values, n, tasks, sums):
    return pairwise_sum(values, 0, n, tasks, sums) / n


@numba.njit(cache=True, nogil=True)
def _squared_error(outputs, targets, start, length, scratch, tasks, sums):
    """`success.squared_error` of a sequence, its mean summed as numpy sums (`pairwise_mean`)."""
    n = _squared_differences(outputs, targets, start, length, scratch)
    return pairwise_mean(scratch, n, tasks, sums) if n else 0.0


@numba.njit(cache=True, nogil=True)
def _sequence_end(ends, start):
    end = start
    while not ends[end]:
        end += 1
    return end + 1


@numba.njit(cache=True, nogil=True)
def _training_ended(counter, settings, max_error, right, error, recent_right, recent_error, V, column, scratch, tasks,
                    sums):
    """After a training sequence: the window, the counters, divergence, and the experiment's
    rule for "solved" (fixed sets: a full check is due; `sequences.run_sequences_reference`)."""
    window = settings[Setting.WINDOW]
    if counter[Counter.FILLED] == window:
        counter[Counter.WRONG] -= not recent_right[counter[Counter.HEAD]]
        slot = counter[Counter.HEAD]
        counter[Counter.HEAD] = (slot + 1) % window
    else:
        slot = (counter[Counter.HEAD] + counter[Counter.FILLED]) % window
        counter[Counter.FILLED] += 1
    recent_right[slot], recent_error[slot] = right, error
    counter[Counter.WRONG] += not right
    counter[Counter.SEQUENCES] += 1
    counter[Counter.STEPS] += counter[Counter.LENGTH]
    if not lane_finite(V, 0, V.shape[0], column):
        counter[Counter.STATUS] = Status.DIVERGED
        return
    full = counter[Counter.FILLED] == window
    if settings[Setting.FIXED]:
        since = counter[Counter.SEQUENCES] - counter[Counter.LAST_CHECK]
        if (full and counter[Counter.WRONG] == 0 and since >= CHECK_AFTER_RIGHT) or \
                since >= settings[Setting.EVALUATE_EVERY]:
            counter[Counter.LAST_CHECK] = counter[Counter.SEQUENCES]
            counter[Counter.PHASE], counter[Counter.FROZEN_POSITION] = Phase.CHECKING, 0
        return
    if full and counter[Counter.WRONG] <= settings[Setting.ALLOWED_WRONG]:
        if not math.isnan(max_error):
            for i in range(window):
                scratch[i] = recent_error[(counter[Counter.HEAD] + i) % window]
            if not pairwise_mean(scratch, window, tasks, sums) < max_error:
                return
        _training_over(counter, settings, Status.SOLVED)


@numba.njit(cache=True, nogil=True)
def _training_over(counter, settings, result):
    """Training ends (solved, or at a limit): the test set next, if the protocol has one."""
    if settings[Setting.TEST_SEQUENCES] > 0:
        counter[Counter.RESULT], counter[Counter.PHASE], counter[Counter.FROZEN_POSITION] = result, Phase.TESTING, 0
        counter[Counter.TESTED], counter[Counter.TEST_WRONG] = 0, 0
    else:
        counter[Counter.STATUS] = result


@numba.njit(cache=True, nogil=True)
def sequence_begin(counter, settings, V, column, rows, train_ends, frozen_ends):
    """Before a lane's next steps: its next sequence started (state and traces zeroed, column
    ``column`` of ``V``), or the lane stopped or paused; the steps left in its sequence, 0 where
    its data ran out (its status then says which), -1 where it is not running. Both drivers'
    (the CPU's `_drive`, the GPU's) per-lane step."""
    if counter[Counter.STATUS] != Status.RUNNING:
        return -1
    if counter[Counter.IN_SEQUENCE] == 0:
        if counter[Counter.PHASE] == Phase.TRAINING:
            if counter[Counter.SEQUENCES] >= settings[Setting.MAX_SEQUENCES] or (
                    counter[Counter.BUDGET] >= 0 and counter[Counter.STEPS] >= counter[Counter.BUDGET]):
                _training_over(counter, settings, Status.DONE)
            elif counter[Counter.PAUSE] >= 0 and counter[Counter.STEPS] >= counter[Counter.PAUSE]:
                counter[Counter.STATUS] = Status.PAUSED
            if counter[Counter.STATUS] != Status.RUNNING:
                return -1
        if counter[Counter.PHASE] == Phase.TRAINING:
            ends, start = train_ends, counter[Counter.POSITION]
            if start == len(ends):  # (the data hold whole sequences)
                counter[Counter.STATUS] = Status.NEED_TRAINING  # back to Python for more
                return 0
        else:
            ends, start = frozen_ends, counter[Counter.FROZEN_POSITION]
            if start == len(ends):
                counter[Counter.STATUS] = Status.NEED_TEST
                return 0
        counter[Counter.IN_SEQUENCE], counter[Counter.START], counter[Counter.DONE_STEPS] = 1, start, 0
        counter[Counter.LENGTH] = _sequence_end(ends, start) - start
        reset_lane(V, rows, column)
    return counter[Counter.LENGTH] - counter[Counter.DONE_STEPS]


@numba.njit(cache=True, nogil=True)
def sequence_after(counter, settings, tolerance, max_error, steps, outputs, train_targets, train_judged,
                   frozen_targets, frozen_judged, frozen_length, recent_right, recent_error, test_errors, V, column,
                   errors, tasks, sums):
    """After a running lane's ``steps`` (its outputs in its sequence so far in ``outputs``):
    where the sequence ended, its judgement, and the window, check or test set it counts in."""
    counter[Counter.DONE_STEPS] += steps
    if counter[Counter.DONE_STEPS] < counter[Counter.LENGTH]:
        return
    counter[Counter.IN_SEQUENCE] = 0
    start, length = counter[Counter.START], counter[Counter.LENGTH]
    if counter[Counter.PHASE] == Phase.TRAINING:
        right = _sequence_right(outputs, train_judged, start, length, tolerance)
        error = _squared_error(outputs, train_targets, start, length, errors, tasks, sums)
        counter[Counter.POSITION] = start + length
        _training_ended(counter, settings, max_error, right, error, recent_right, recent_error, V, column, errors,
                        tasks, sums)
        return
    right = _sequence_right(outputs, frozen_judged, start, length, tolerance)
    counter[Counter.FROZEN_POSITION] = start + length
    if counter[Counter.PHASE] == Phase.TESTING:
        test_errors[counter[Counter.TESTED]] = _squared_error(outputs, frozen_targets, start, length, errors, tasks,
                                                              sums)
        counter[Counter.TESTED] += 1
        counter[Counter.TEST_WRONG] += not right
        if counter[Counter.TESTED] == settings[Setting.TEST_SEQUENCES]:
            counter[Counter.STATUS] = counter[Counter.RESULT]
    elif not right:
        counter[Counter.PHASE] = Phase.TRAINING  # the full check failed at this string
    elif start + length == frozen_length:
        counter[Counter.STATUS] = Status.SOLVED


def drive(block: LaneBlock, momentum: float, rule: Rule, training: LaneSequences, frozen: LaneSequences,
          counters: np.ndarray, recent: Window, test_errors: np.ndarray, outputs: np.ndarray, stage_inputs: np.ndarray,
          stage_targets: np.ndarray, work: int) -> None:
    """Run the lanes of ``block`` (lane l is trial l, for l < len(counters)) until every lane
    has stopped (its ``STATUS`` not `Status.RUNNING`), or one needs sequences, or about ``work``
    lockstep steps are done. ``training``: per lane, its training sequences from its
    ``POSITION`` on; ``frozen``: what it runs frozen, its fixed training and test strings (fixed
    sets), else its test set (empty until the lane asks for it with `Status.NEED_TEST`).
    ``counters`` (lanes, `SEQUENCE_COUNTERS`), ``recent`` (`Window`) and ``test_errors``
    (lanes, test sequences: each test sequence's squared error) are updated in place;
    ``outputs`` (lanes, longest sequence, outputs): each lane's outputs so far in its sequence;
    ``stage_inputs`` (chunk, columns, lanes) and ``stage_targets`` (chunk, 1, columns, lanes):
    staging."""
    lanes = block.width
    assert counters.shape[1] == SEQUENCE_COUNTERS and len(training.inputs) == len(frozen.inputs) == counters.shape[0]
    errors = np.zeros(max(outputs.shape[1] * outputs.shape[2], rule.settings[Setting.WINDOW]))
    scratch = Scratch(stage_inputs, stage_targets, np.zeros(lanes, dtype=np.bool_), np.zeros(lanes, dtype=np.bool_),
                      np.zeros(lanes, dtype=np.int64), np.zeros(lanes),
                      np.zeros((lanes, stage_inputs.shape[0], outputs.shape[2])), np.zeros(lanes, dtype=np.bool_),
                      errors, *pairwise_scratch())
    bind_kernel(_drive, block.kernel)(block.for_driver(momentum), rule, training, frozen, counters, recent,
                                      test_errors, outputs, scratch, work)


# Compiled by `bind_kernel` with ``kernel`` bound in (cached on disk, once per kernel).
def _drive(kernel, block, rule, training, frozen, counters, recent, test_errors, outputs, scratch, work):
    V, rows, rates, momentum = block.V, block.rows, block.rates, block.momentum
    kind, phase, code, mode, run_start, run_stop, runs = block.program
    settings, tolerance, max_error = rule.settings, rule.tolerance, rule.max_error
    train_inputs, train_targets, train_judged, train_ends = training
    frozen_inputs, frozen_targets, frozen_judged, frozen_ends = frozen
    recent_right, recent_error = recent
    stage_inputs, stage_targets, active, learn, steps_done, sums, record, wrong, errors, tasks, held = scratch
    trials = counters.shape[0]
    done_work = 0
    while done_work < work:
        # Lanes between sequences start their next one (or stop); the chunk runs to the first
        # lane's sequence end.
        chunk = stage_inputs.shape[0]
        for lane in range(trials):
            room = sequence_begin(counters[lane], settings, V, lane, rows, train_ends[lane], frozen_ends[lane])
            if room == 0:  # its data ran out: back to Python for more
                return
            if room > 0:
                chunk = min(chunk, room)
        if mark_running(active, counters[:, Counter.STATUS]) == 0:
            return
        for lane in range(trials):
            if not active[lane]:
                continue
            counter = counters[lane]
            learn[lane] = counter[Counter.PHASE] == Phase.TRAINING
            position = counter[Counter.START] + counter[Counter.DONE_STEPS]
            if learn[lane]:
                stage(stage_inputs, lane, train_inputs[lane], position, chunk)
                stage(stage_targets[:, 0], lane, train_targets[lane], position, chunk)
            else:
                stage(stage_inputs, lane, frozen_inputs[lane], position, chunk)
                stage(stage_targets[:, 0], lane, frozen_targets[lane], position, chunk)
        # The kernel judges nothing; each sequence is judged at its end, below.
        # np.bool_: a bool, not a literal, so this call takes the kernel's signature that Python calls
        # compile (a literal compiles the kernel again, 10 s or more).
        kernel(kind, phase, code, mode, run_start, run_stop, runs, V, stage_inputs[:chunk], stage_targets[:chunk],
               rates, momentum, 1.0, NOT_JUDGED, learn, active, steps_done, sums, record, wrong, np.bool_(False))
        done_work += chunk
        # Each lane's outputs kept; a lane whose sequence ended is judged.
        for lane in range(trials):
            if not active[lane]:
                continue
            done = counters[lane, Counter.DONE_STEPS]
            for t in range(chunk):
                for k in range(outputs.shape[2]):
                    outputs[lane, done + t, k] = record[lane, t, k]
            sequence_after(counters[lane], settings, tolerance, max_error, chunk, outputs[lane], train_targets[lane],
                           train_judged[lane], frozen_targets[lane], frozen_judged[lane], len(frozen_ends[lane]),
                           recent_right[lane], recent_error[lane], test_errors[lane], V, lane, errors, tasks, held)
