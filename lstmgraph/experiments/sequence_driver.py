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

import numba
import numpy as np

from .driver import mark_running, reset_lane, stage

#: A lane's status: running, or why it stopped.
RUNNING, DONE, PAUSED, SOLVED, DIVERGED, NEED_DATA, NEED_TEST = range(7)  # RUNNING = 0, as `driver`'s

#: A lane's counters (a row of ``counters``). The first four are what a checkpoint keeps
#: (with the window of recent results and the data's place). ``WRONG``: wrong sequences in the
#: window; ``HEAD``, ``FILLED``: the window's oldest entry and its length; ``PHASE``: training,
#: a full check (fixed sets) or the test set; ``FROZEN_POSITION``: the place in the check's
#: strings or the test set; ``RESULT``: `SOLVED` or `DONE`, while the test set runs;
#: ``BUDGET`` / ``PAUSE``: stop / pause before a training sequence once ``STEPS`` reaches it
#: (-1: never).
(SEQUENCES, STEPS, LAST_CHECK, WRONG, STATUS, PHASE, POSITION, FROZEN_POSITION, IN_SEQUENCE, START, LENGTH,
 DONE_STEPS, HEAD, FILLED, BUDGET, PAUSE, RESULT, TESTED, TEST_WRONG) = range(19)
COUNTERS = 19
SAVED = 4
TRAINING, CHECKING, TESTING = 0, 1, 2

#: Settings (``settings``, int64), in this order. ``MOST_ACTIVE``: the success test (1997 Exp. 1)
#: instead of the tolerance test; ``FIXED``: a fixed training set, with full checks;
#: ``TEST_SEQUENCES``: the test set's size (0: none).
MOST_ACTIVE, WINDOW, ALLOWED_WRONG, MAX_SEQUENCES, FIXED, EVALUATE_EVERY, TEST_SEQUENCES = range(7)

#: Fixed sets: after this many sequences all right online since the last full check, check again.
CHECK_AFTER_RIGHT = 50


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


@numba.njit(cache=True, nogil=True)
def pairwise_sum(values, start, n):
    """``values[start:start + n]`` summed as numpy sums a contiguous float64 array (blocks of
    at most 128 values, `_block_sum`; above that the two halves, the first a multiple of 8
    long, summed so and added), so that a mean here equals `numpy.mean` bit for bit
    (tests/experiments/test_sequence_driver.py). The halving runs on explicit stacks: numba
    cannot cache a recursive function."""
    tasks = np.empty((192, 3), dtype=np.int64)  # (start, n, 1 = add the two sums on top)
    sums = np.empty(64)
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
def pairwise_mean(values, n):
    return pairwise_sum(values, 0, n) / n


@numba.njit(cache=True, nogil=True)
def _sequence_right(outputs, judged, start, length, most_active, tolerance):
    """`success.most_active_correct` or `success.within_tolerance` at every step of a sequence
    (outputs[t] against judged[start + t]); NaN targets are not judged."""
    for t in range(length):
        row = judged[start + t]
        if most_active:
            lowest_legal, highest_other, present = np.inf, -np.inf, True
            for k in range(row.shape[0]):
                if math.isnan(row[k]):
                    present = False
            if not present:
                continue
            for k in range(row.shape[0]):
                if row[k] > 0.5:
                    lowest_legal = min(lowest_legal, outputs[t, k])
                else:
                    highest_other = max(highest_other, outputs[t, k])
            if not lowest_legal > highest_other:
                return False
        else:
            for k in range(row.shape[0]):
                if not math.isnan(row[k]) and not abs(outputs[t, k] - row[k]) < tolerance:
                    return False
    return True


@numba.njit(cache=True, nogil=True)
def _squared_error(outputs, targets, start, length, scratch):
    """`success.squared_error`: the mean over the judged entries (0 if none)."""
    n = 0
    for t in range(length):
        for k in range(targets.shape[1]):
            target = targets[start + t, k]
            if not math.isnan(target):
                difference = outputs[t, k] - target
                scratch[n] = difference * difference
                n += 1
    return pairwise_mean(scratch, n) if n else 0.0


@numba.njit(cache=True, nogil=True)
def _finite(V, lane):
    for slot in range(V.shape[0]):
        if not math.isfinite(V[slot, lane]):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _sequence_end(ends, start):
    end = start
    while not ends[end]:
        end += 1
    return end + 1


@numba.njit(cache=True, nogil=True)
def _training_ended(lane, counter, settings, max_error, right, error, recent_right, recent_error, V, scratch):
    """After a training sequence: the window, the counters, divergence, and the experiment's
    rule for "solved" (fixed sets: a full check is due; `sequences.run_sequences_reference`)."""
    window = settings[WINDOW]
    if counter[FILLED] == window:
        counter[WRONG] -= not recent_right[counter[HEAD]]
        slot = counter[HEAD]
        counter[HEAD] = (slot + 1) % window
    else:
        slot = (counter[HEAD] + counter[FILLED]) % window
        counter[FILLED] += 1
    recent_right[slot], recent_error[slot] = right, error
    counter[WRONG] += not right
    counter[SEQUENCES] += 1
    counter[STEPS] += counter[LENGTH]
    if not _finite(V, lane):
        counter[STATUS] = DIVERGED
        return
    full = counter[FILLED] == window
    if settings[FIXED]:
        since = counter[SEQUENCES] - counter[LAST_CHECK]
        if (full and counter[WRONG] == 0 and since >= CHECK_AFTER_RIGHT) or since >= settings[EVALUATE_EVERY]:
            counter[LAST_CHECK] = counter[SEQUENCES]
            counter[PHASE], counter[FROZEN_POSITION] = CHECKING, 0
        return
    if full and counter[WRONG] <= settings[ALLOWED_WRONG]:
        if not math.isnan(max_error):
            for i in range(window):
                scratch[i] = recent_error[(counter[HEAD] + i) % window]
            if not pairwise_mean(scratch, window) < max_error:
                return
        _training_over(counter, settings, SOLVED)


@numba.njit(cache=True, nogil=True)
def _training_over(counter, settings, result):
    """Training ends (solved, or at a limit): the test set next, if the protocol has one."""
    if settings[TEST_SEQUENCES] > 0:
        counter[RESULT], counter[PHASE], counter[FROZEN_POSITION] = result, TESTING, 0
        counter[TESTED], counter[TEST_WRONG] = 0, 0
    else:
        counter[STATUS] = result


def drive(kernel, program, V, rows, rates, momentum, tolerance, max_error, training, frozen, settings, counters,
          recent_right, recent_error, test_errors, outputs, stage_inputs, stage_targets, work):
    """Run the lanes of ``V`` (slots, lanes; lane l is trial l, for l < len(counters)) until
    every lane has stopped (its ``STATUS`` not `RUNNING`), or one needs data, or about ``work``
    lockstep steps are done. ``training`` and ``frozen``: per lane, the (inputs, targets,
    judged, ends) of its training sequences from its ``POSITION`` on, and of what it runs
    frozen: its fixed training and test strings (fixed sets), else its test set (empty until
    the lane asks for it with `NEED_TEST`). ``recent_right`` / ``recent_error`` (lanes,
    window): the windows; ``test_errors`` (lanes, test sequences): each test sequence's squared
    error; ``outputs`` (lanes, longest sequence, outputs): each lane's outputs so far in its
    sequence; ``stage_inputs`` (chunk, columns, lanes) and ``stage_targets`` (chunk, 1, columns,
    lanes: the kernel's one plane of targets): scratch.
    ``kernel``: the compiled ``run`` for blocks of ``V``'s width."""
    lanes = V.shape[1]
    scratch = np.zeros(max(outputs.shape[1] * outputs.shape[2], settings[WINDOW]))
    record = np.zeros((lanes, stage_inputs.shape[0], outputs.shape[2]))
    return _drive(kernel, program, V, rows, rates, momentum, tolerance, max_error, *training, *frozen, settings,
                  counters, recent_right, recent_error, test_errors, outputs, stage_inputs, stage_targets,
                  np.zeros(lanes, dtype=np.bool_), np.zeros(lanes, dtype=np.bool_), np.zeros(lanes, dtype=np.int64),
                  np.zeros(lanes), record, np.zeros(lanes, dtype=np.bool_), scratch, work)


# Compiled once per process, kernel and lane count, not cached (as `driver._drive`).
@numba.njit(nogil=True)
def _drive(kernel, program, V, rows, rates, momentum, tolerance, max_error,
           train_inputs, train_targets, train_judged, train_ends, frozen_inputs, frozen_targets, frozen_judged,
           frozen_ends, settings, counters, recent_right, recent_error, test_errors, outputs, stage_inputs,
           stage_targets, active, learn, steps_done, sums, record, wrong, scratch, work):
    kind, phase, code, mode, run_start, run_stop, runs = program
    trials = counters.shape[0]
    most_active = settings[MOST_ACTIVE] == 1
    done_work = 0
    while done_work < work:
        # Lanes between sequences start their next one (or stop); the chunk runs to the first
        # lane's sequence end.
        chunk = stage_inputs.shape[0]
        for lane in range(trials):
            counter = counters[lane]
            if counter[STATUS] != RUNNING:
                continue
            if counter[IN_SEQUENCE] == 0:
                if counter[PHASE] == TRAINING:
                    if counter[SEQUENCES] >= settings[MAX_SEQUENCES] or (
                            counter[BUDGET] >= 0 and counter[STEPS] >= counter[BUDGET]):
                        _training_over(counter, settings, DONE)
                    elif counter[PAUSE] >= 0 and counter[STEPS] >= counter[PAUSE]:
                        counter[STATUS] = PAUSED
                    if counter[STATUS] != RUNNING:
                        continue
                if counter[PHASE] == TRAINING:
                    ends, start = train_ends[lane], counter[POSITION]
                    if start == len(ends):  # (the data hold whole sequences)
                        counter[STATUS] = NEED_DATA  # back to Python for more
                        return
                else:
                    ends, start = frozen_ends[lane], counter[FROZEN_POSITION]
                    if start == len(ends):
                        counter[STATUS] = NEED_TEST
                        return
                counter[IN_SEQUENCE], counter[START], counter[DONE_STEPS] = 1, start, 0
                counter[LENGTH] = _sequence_end(ends, start) - start
                reset_lane(V, rows, lane)
            chunk = min(chunk, counter[LENGTH] - counter[DONE_STEPS])
        if mark_running(active, counters[:, STATUS]) == 0:
            return
        for lane in range(trials):
            if not active[lane]:
                continue
            counter = counters[lane]
            learn[lane] = counter[PHASE] == TRAINING
            position = counter[START] + counter[DONE_STEPS]
            if learn[lane]:
                stage(stage_inputs, lane, train_inputs[lane], position, chunk)
                stage(stage_targets[:, 0], lane, train_targets[lane], position, chunk)
            else:
                stage(stage_inputs, lane, frozen_inputs[lane], position, chunk)
                stage(stage_targets[:, 0], lane, frozen_targets[lane], position, chunk)
        # (Tolerance 0: the kernel judges nothing; each sequence is judged at its end, below.)
        kernel(kind, phase, code, mode, run_start, run_stop, runs, V, stage_inputs[:chunk], stage_targets[:chunk],
               rates, momentum, 1.0, 0.0, learn, active, steps_done, sums, record, wrong, False)
        done_work += chunk
        # Each lane's outputs kept; a lane whose sequence ended is judged.
        for lane in range(trials):
            if not active[lane]:
                continue
            counter = counters[lane]
            done = counter[DONE_STEPS]
            for t in range(chunk):
                for k in range(outputs.shape[2]):
                    outputs[lane, done + t, k] = record[lane, t, k]
            counter[DONE_STEPS] = done + chunk
            if counter[DONE_STEPS] < counter[LENGTH]:
                continue
            counter[IN_SEQUENCE] = 0
            start, length = counter[START], counter[LENGTH]
            if counter[PHASE] == TRAINING:
                right = _sequence_right(outputs[lane], train_judged[lane], start, length, most_active, tolerance)
                error = _squared_error(outputs[lane], train_targets[lane], start, length, scratch)
                counter[POSITION] = start + length
                _training_ended(lane, counter, settings, max_error, right, error, recent_right[lane],
                                recent_error[lane], V, scratch)
                continue
            right = _sequence_right(outputs[lane], frozen_judged[lane], start, length, most_active, tolerance)
            counter[FROZEN_POSITION] = start + length
            if counter[PHASE] == TESTING:
                test_errors[lane, counter[TESTED]] = _squared_error(outputs[lane], frozen_targets[lane], start,
                                                                    length, scratch)
                counter[TESTED] += 1
                counter[TEST_WRONG] += not right
                if counter[TESTED] == settings[TEST_SEQUENCES]:
                    counter[STATUS] = counter[RESULT]
            elif not right:
                counter[PHASE] = TRAINING  # the full check failed at this string
            elif start + length == len(frozen_ends[lane]):
                counter[STATUS] = SOLVED
