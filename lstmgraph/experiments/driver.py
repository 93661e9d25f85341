"""The stream protocol's loop in compiled code (`drive`), for `streams.run_streams`.

A trial of the 2000/2002 protocols is up to 10^7 training streams, each followed by test
streams, most a few steps long while a net is still learning; in Python each stream cost about
0.2 ms of overhead, so the whole loop runs in numba, calling the compiled kernel (the
interpreter or the specialised kernel, whichever the trial's `Population` runs) for each
stream and returning to Python only to draw more data or report progress. It does what
`streams.run_streams_reference` does, stream by stream; the tests hold the two equal.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..engine.compiled.interpreter import load as load_interpreter
from ..engine.compiled.network import block_kernel
from .streams import REPORT_EVERY

DONE, SOLVED, DIVERGED, NEED_TRAINING, NEED_TEST, REPORT = range(6)
STREAMS, STEPS, TRAIN_POSITION, TEST_POSITION, PHASE = range(5)  # the driver's counters


@numba.njit(cache=True, nogil=True)
def _next_start(ends, position):
    while position > 0 and not ends[position - 1]:
        position += 1
    return position


@numba.njit(cache=True, nogil=True)
def _wrong(record, step, targets, row, tolerance):
    for k in range(targets.shape[1]):
        target = targets[row, k]
        if not math.isnan(target) and abs(record[0, step, k] - target) >= tolerance:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _finite(values):
    for value in values:
        if not math.isfinite(value):
            return False
    return True


# The kernel (the interpreter, or the kernel specialised to the program) is an argument: the
# two functions that call it are compiled once per process and kernel (a few seconds), and not
# cached: numba's cache does not notice a change in a function another one calls.
@numba.njit(nogil=True)
def _stream(kernel, program, V, rows, rate, momentum, tolerance, inputs, targets, ends, counts, position, limit,
            steps_unit, reset_each, learn, record, active, out_steps, out_loss, wrong):
    """One stream (as `stream_score`): (units right, steps run, next position)."""
    kind, phase, code, mode, run_start, run_stop, runs = program
    states_from, states_to, traces_from, traces_to = rows[0], rows[1], rows[2], rows[3]
    width = inputs.shape[1]
    done = 0
    steps_run = 0
    while done < limit:
        if reset_each:
            end = _next_start(ends, position + 1)
            stop = min(end, position + limit - done) if steps_unit else end
        elif steps_unit:
            end = stop = position + limit
        else:
            end = stop = np.searchsorted(counts, counts[position] + limit)
        V[states_from:states_to, :] = 0.0
        V[traces_from:traces_to, :] = 0.0
        active[0] = True
        kernel(kind, phase, code, mode, run_start, run_stop, runs, V,
               inputs[position:stop].reshape((stop - position, width, 1)),
               targets[position:stop].reshape((stop - position, targets.shape[1], 1)),
               rate, momentum, 1.0, tolerance, learn, active, out_steps, out_loss, record, wrong)
        steps = out_steps[0]
        steps_run += steps
        last = position + steps - 1
        if steps < stop - position or _wrong(record, steps - 1, targets, last, tolerance):
            if reset_each:
                right = done + steps - 1 if steps_unit else done
            else:
                right = steps - 1 if steps_unit else counts[last] - counts[position]
            return right, steps_run, _next_start(ends, position + steps)
        if not reset_each:
            done = limit
        else:
            done += stop - position if steps_unit else 1
        position = _next_start(ends, end)
    return limit, steps_run, position


@numba.njit(cache=True, nogil=True)
def _available(counts, length, position, steps_unit):
    return length - position if steps_unit else counts[-1] - counts[position]


def drive(program, V, rows, rate, momentum, tolerance, rate_decay, train_inputs, train_targets, train_ends,
          train_counts, test_inputs, test_targets, test_ends, test_counts, settings, counters, scores, record,
          active, out_steps, out_loss, kernel=None):
    """Training and test streams until the trial ends or data or a progress report is due;
    returns why it stopped. ``counters`` (streams, steps, positions, phase: 0 = a training
    stream is next, k = test stream k) carry the loop across calls. ``kernel``: the compiled
    ``run`` to call, by default the one the `Population` holding ``V`` runs (the specialised
    kernel where it has one, else the interpreter)."""
    if kernel is None:
        kernel = block_kernel(V) or load_interpreter().run
    return _drive(kernel, program, V, rows, rate, momentum, tolerance, rate_decay, train_inputs, train_targets,
                  train_ends, train_counts, test_inputs, test_targets, test_ends, test_counts, settings, counters,
                  scores, record, active, out_steps, out_loss, np.zeros(1, dtype=np.bool_))


@numba.njit(nogil=True)
def _drive(kernel, program, V, rows, rate, momentum, tolerance, rate_decay,
           train_inputs, train_targets, train_ends, train_counts, test_inputs, test_targets, test_ends,
           test_counts, settings, counters, scores, record, active, out_steps, out_loss, wrong):
    steps_unit, train_limit, test_limit, test_streams = settings[0] == 1, settings[1], settings[2], settings[3]
    reset_each, max_streams, budget = settings[4] == 1, settings[5], settings[6]
    while True:
        phase = counters[PHASE]
        training = phase == 0
        if training and (counters[STREAMS] >= max_streams or (budget >= 0 and counters[STEPS] >= budget)):
            return DONE
        if training:
            inputs, targets, ends, counts = train_inputs, train_targets, train_ends, train_counts
            position, limit, short = counters[TRAIN_POSITION], train_limit, NEED_TRAINING
        else:
            inputs, targets, ends, counts = test_inputs, test_targets, test_ends, test_counts
            position, limit, short = counters[TEST_POSITION], test_limit, NEED_TEST
        if _available(counts, len(inputs), position, steps_unit) < limit:
            return short
        right, steps, position = _stream(kernel, program, V, rows, rate, momentum, tolerance, inputs, targets, ends,
                                         counts, position, limit, steps_unit, reset_each, training, record,
                                         active, out_steps, out_loss, wrong)
        if training:
            counters[STREAMS] += 1
            counters[STEPS] += steps
            counters[TRAIN_POSITION] = position
            if right >= train_limit:
                rate[0] *= rate_decay
            if not _finite(V[rows[4]:rows[5], 0]):
                return DIVERGED
            counters[PHASE] = 1
            continue
        counters[TEST_POSITION] = position
        scores[phase - 1] = right
        if phase < test_streams:
            counters[PHASE] = phase + 1
            continue
        counters[PHASE] = 0
        if scores.min() >= test_limit:
            return SOLVED
        if counters[STREAMS] % REPORT_EVERY == 0:
            return REPORT


