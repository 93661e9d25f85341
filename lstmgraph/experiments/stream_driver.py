"""The stream protocol's loop in compiled code, for trials side by side (`drive`).

A trial of the 2000/2002 protocols is up to 10^7 training streams, each followed by test
streams, most a few steps long while a net is still learning; in Python each stream cost about
0.2 ms of overhead, so the whole loop runs in numba and returns to Python only to draw more
data or to let it report. It does what `streams.run_streams_reference` does, stream by stream,
for every lane of a block of trials at once (the tests hold the two equal, and a trial run
beside others equal to the same trial run alone):

- every lane (trial) has its own data, its own place in its protocol (training stream, test
  stream k, or stopped), its own sequence and stream boundaries and its own learning flag;
- the lanes run in lockstep through the compiled kernel (the interpreter, or the kernel
  specialised to the program) in chunks of steps: a chunk ends where the first lane's segment
  (the steps from one reset of its state to the next) or data ends, or at the first error in
  any lane (the kernel's ``stop_all``), so no lane idles while others run;
- a lane whose data runs out mid-stream stops with `NEED_TRAINING` or `NEED_TEST`, and the
  caller draws more and calls again: a stream of 10^6 steps needs no 10^6 steps drawn before
  it starts, and what it sees does not depend on the refills.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from .. import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)
from ..engine.compiled.bound import bind_kernel
from ..engine.compiled.lanes import LaneBlock, lane_finite, mark_running, reset_lane, stage
from .counters import (FIRST_CHUNK, NOT_RUN, STREAM_COUNTERS, Status, StreamCounter as Counter,
                       StreamSetting as Setting)
from .data import next_start

#: Per lane, the data of its training or test streams (each field a typed list, one array per
#: lane, `lanes.LaneArrays`): inputs, targets, judged values, sequence ends and `StreamData.counts`.
LaneData = namedtuple("LaneData", "inputs targets judged ends counts")
#: The protocol as the driver reads it: the int64 `counters.StreamSetting` array, the success
#: test's kernel tolerance (`lstmgraph.success`) and the rate decay.
Rule = namedtuple("Rule", "settings tolerance rate_decay")
#: The kernel call's scratch: staging (chunk, columns, lanes) and (chunk, planes, columns, lanes),
#: and per lane: running, learning, steps run, loss sums, recorded outputs, first error.
Scratch = namedtuple("Scratch", "inputs targets active learn steps_done sums record wrong")


_next_start = numba.njit(cache=True, nogil=True)(next_start)


@numba.njit(cache=True, nogil=True)
def _first_at_least(counts, target):
    """The first index i with ``counts[i] >= target`` (``np.searchsorted``'s left side), by
    bisection: plain loops, which the GPU's driver compiles too."""
    low, high = 0, counts.shape[0]
    while low < high:
        middle = (low + high) // 2
        if counts[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low


@numba.njit(cache=True, nogil=True)
def _begin_segment(counter, settings, V, column, rows):
    """The lane's state and traces zeroed (column ``column`` of ``V``), and how far its segment
    runs: to the stream's limit (in steps or sequence ends) or, with a reset at each sequence,
    to the sequence's end."""
    limit = settings[Setting.TRAIN_LIMIT] if counter[Counter.PHASE] == 0 else settings[Setting.TEST_LIMIT]
    steps_unit = settings[Setting.STEPS_UNIT] == 1
    if settings[Setting.RESET_EACH] == 1:
        counter[Counter.ENDS_LEFT] = 1
        counter[Counter.STEPS_LEFT] = limit - counter[Counter.UNITS_DONE] if steps_unit else -1
    elif steps_unit:
        counter[Counter.STEPS_LEFT], counter[Counter.ENDS_LEFT] = limit, -1
    else:
        counter[Counter.STEPS_LEFT], counter[Counter.ENDS_LEFT] = -1, limit
    counter[Counter.SEGMENT_STEPS] = 0
    reset_lane(V, rows, column)


@numba.njit(cache=True, nogil=True)
def _room(counter, position, length, counts):
    """Steps the lane can run before its segment's end or its data's end."""
    room = length - position
    if counter[Counter.STEPS_LEFT] >= 0:
        room = min(room, counter[Counter.STEPS_LEFT])
    if counter[Counter.ENDS_LEFT] >= 0:
        target = counts[position] + counter[Counter.ENDS_LEFT]
        if counts[length] >= target:
            room = min(room, _first_at_least(counts, target) - position)
    return room


@numba.njit(cache=True, nogil=True)
def _last_phase(counter, settings):
    """The test phase now running is the trial's last: its training streams or its own step
    budget are spent (not a pause's)."""
    return counter[Counter.STREAMS] >= settings[Setting.MAX_STREAMS] or (
        counter[Counter.LAST_BUDGET] >= 0 and counter[Counter.STEPS] >= counter[Counter.LAST_BUDGET])


@numba.njit(cache=True, nogil=True)
def decays(every, error_free, streams):
    """Whether the rate decays after training stream number ``streams`` (`StreamProtocol`'s
    ``rate_decay_every``): after each error-free one (0), or after every ``every``-th."""
    return error_free if every == 0 else streams % every == 0


@numba.njit(cache=True, nogil=True)
def _end_stream(counter, score, settings, right, position, V, column, rows, rates, lane, rate_decay):
    """The bookkeeping after a stream: counters, the rate decay (``rates[lane]``), divergence
    (column ``column`` of ``V``), the phase (a failing test stream may end its phase:
    `STOP_FAILED_PHASE`), and success after the last test stream."""
    phase = counter[Counter.PHASE]
    counter[Counter.IN_STREAM] = 0
    if phase == 0:
        counter[Counter.STREAMS] += 1
        counter[Counter.STEPS] += counter[Counter.STREAM_STEPS]
        counter[Counter.TRAIN_POSITION] = position
        if decays(settings[Setting.DECAY_EVERY], right >= settings[Setting.TRAIN_LIMIT], counter[Counter.STREAMS]):
            rates[lane] *= rate_decay
        if not lane_finite(V, rows[4], rows[5], column):
            counter[Counter.STATUS] = Status.DIVERGED
            return
        counter[Counter.PHASE] = 1
        return
    counter[Counter.TEST_POSITION] = position
    score[phase - 1] = right
    if settings[Setting.STOP_FAILED_PHASE] == 1 and right < settings[Setting.TEST_LIMIT] and \
            not _last_phase(counter, settings):
        for k in range(phase, settings[Setting.TEST_STREAMS]):
            score[k] = NOT_RUN  # the phase has failed: training goes on
        counter[Counter.PHASE] = 0
        return
    if phase < settings[Setting.TEST_STREAMS]:
        counter[Counter.PHASE] = phase + 1
        return
    counter[Counter.PHASE] = 0
    lowest = score[0]
    for k in range(1, settings[Setting.TEST_STREAMS]):  # (a GPU population's rows may be longer)
        lowest = min(lowest, score[k])
    if lowest >= settings[Setting.TEST_LIMIT]:
        counter[Counter.STATUS] = Status.SOLVED


@numba.njit(cache=True, nogil=True)
def lane_begin(counter, settings, V, column, rows, train_length, train_counts, test_length, test_counts):
    """Before a lane's next steps: its next stream started (or the lane stopped, `Status.DONE`),
    and the steps it can run; 0 where its data ran out (its status then says which), -1 where
    it is not running. Both drivers' (the CPU's `_drive`, the GPU's) per-lane step."""
    if counter[Counter.STATUS] != Status.RUNNING:
        return -1
    if counter[Counter.IN_STREAM] == 0:
        if counter[Counter.PHASE] == 0 and (counter[Counter.STREAMS] >= settings[Setting.MAX_STREAMS] or (
                counter[Counter.BUDGET] >= 0 and counter[Counter.STEPS] >= counter[Counter.BUDGET])):
            counter[Counter.STATUS] = Status.DONE
            return -1
        counter[Counter.IN_STREAM], counter[Counter.UNITS_DONE], counter[Counter.STREAM_STEPS] = 1, 0, 0
        _begin_segment(counter, settings, V, column, rows)
    if counter[Counter.PHASE] == 0:
        room = _room(counter, counter[Counter.TRAIN_POSITION], train_length, train_counts)
    else:
        room = _room(counter, counter[Counter.TEST_POSITION], test_length, test_counts)
    if room == 0:  # its data ran out: back to Python for more
        counter[Counter.STATUS] = Status.NEED_TRAINING if counter[Counter.PHASE] == 0 else Status.NEED_TEST
    return room


@numba.njit(cache=True, nogil=True)
def lane_after(counter, score, settings, steps, erred, train_ends, train_counts, test_ends, test_counts, V, column,
               rows, rates, lane, rate_decay):
    """After a running lane's ``steps`` (``erred``: its last step had its first error): its
    stream's place, and the stream's end where it ended, as `streams.stream_score` reads a
    kernel call."""
    steps_unit, reset_each = settings[Setting.STEPS_UNIT] == 1, settings[Setting.RESET_EACH] == 1
    training = counter[Counter.PHASE] == 0
    ends, counts = (train_ends, train_counts) if training else (test_ends, test_counts)
    at = Counter.TRAIN_POSITION if training else Counter.TEST_POSITION
    limit = settings[Setting.TRAIN_LIMIT] if training else settings[Setting.TEST_LIMIT]
    start = counter[at]
    position = start + steps
    counter[at] = position
    counter[Counter.SEGMENT_STEPS] += steps
    counter[Counter.STREAM_STEPS] += steps
    if counter[Counter.STEPS_LEFT] >= 0:
        counter[Counter.STEPS_LEFT] -= steps
    if counter[Counter.ENDS_LEFT] >= 0:
        counter[Counter.ENDS_LEFT] -= counts[position] - counts[start]
    if erred:  # its first error, at its last step
        if reset_each:
            right = counter[Counter.UNITS_DONE] + (counter[Counter.SEGMENT_STEPS] - 1 if steps_unit else 0)
        elif steps_unit:
            right = counter[Counter.SEGMENT_STEPS] - 1
        else:  # sequences completed before the erring step
            right = limit - counter[Counter.ENDS_LEFT] - ends[position - 1]
        _end_stream(counter, score, settings, right, _next_start(ends, position), V, column, rows, rates, lane,
                    rate_decay)
    elif counter[Counter.STEPS_LEFT] == 0 or counter[Counter.ENDS_LEFT] == 0:  # the segment ran to its end
        done_units = counter[Counter.SEGMENT_STEPS] if steps_unit else 1
        counter[Counter.UNITS_DONE] = limit if not reset_each else counter[Counter.UNITS_DONE] + done_units
        counter[at] = _next_start(ends, position)
        if counter[Counter.UNITS_DONE] < limit:
            _begin_segment(counter, settings, V, column, rows)
        else:
            _end_stream(counter, score, settings, limit, counter[at], V, column, rows, rates, lane, rate_decay)


def drive(block: LaneBlock, momentum: float, rule: Rule, train: LaneData, test: LaneData, counters: np.ndarray,
          scores: np.ndarray, stage_inputs: np.ndarray, stage_targets: np.ndarray, work: int) -> None:
    """Run the lanes of ``block`` (lane l is trial l, for l < len(counters)) until every lane
    has stopped (its ``STATUS`` not `Status.RUNNING`), or one needs data, or about ``work``
    lockstep steps are done. ``train`` and ``test``: per lane, its data (`LaneData`; a stream
    stops at an output off its judged value, `Sequence.judged`). ``counters`` (lanes,
    `STREAM_COUNTERS`) and ``scores`` (lanes, test streams): the lanes' places and last test
    scores, updated in place. ``stage_inputs`` (chunk, columns, lanes) and ``stage_targets``
    (chunk, planes, columns, lanes): staging, their first axis the longest chunk; a second plane
    holds the judged values only where some differ from the targets."""
    lanes = block.width
    assert counters.shape[1] == STREAM_COUNTERS and len(train.inputs) == len(test.inputs) == counters.shape[0]
    scratch = Scratch(stage_inputs, stage_targets, np.zeros(lanes, dtype=np.bool_), np.zeros(lanes, dtype=np.bool_),
                      np.zeros(lanes, dtype=np.int64), np.zeros(lanes), np.zeros((lanes, 0, stage_targets.shape[2])),
                      np.zeros(lanes, dtype=np.bool_))
    bind_kernel(_drive, block.kernel)(block.for_driver(momentum), rule, train, test, counters, scores, scratch, work)


# Compiled by `bind_kernel` with ``kernel`` bound in (cached on disk, once per kernel).
def _drive(kernel, block, rule, train, test, counters, scores, scratch, work):
    V, rows, rates, momentum = block.V, block.rows, block.rates, block.momentum
    kind, phase, code, mode, run_start, run_stop, runs = block.program
    settings, tolerance, rate_decay = rule.settings, rule.tolerance, rule.rate_decay
    train_inputs, train_targets, train_judged, train_ends, train_counts = train
    test_inputs, test_targets, test_judged, test_ends, test_counts = test
    stage_inputs, stage_targets, active, learn, steps_done, sums, record, wrong = scratch
    trials = counters.shape[0]
    done_work = 0
    # The chunk grows while no lane stops in it and starts small again after a stop: the
    # staging copies little more than the steps that run when streams end after a few steps.
    longest = FIRST_CHUNK
    while done_work < work:
        # Lanes between streams start their next one (or stop); then the chunk's length.
        chunk = min(longest, stage_inputs.shape[0])
        for lane in range(trials):
            room = lane_begin(counters[lane], settings, V, lane, rows, len(train_inputs[lane]), train_counts[lane],
                              len(test_inputs[lane]), test_counts[lane])
            if room == 0:  # its data ran out: back to Python for more
                return
            if room > 0:
                chunk = min(chunk, room)
        running = mark_running(active, counters[:, Counter.STATUS])
        if running == 0:
            return
        # Each running lane's next steps side by side; the others idle.
        for lane in range(trials):
            if not active[lane]:
                continue
            learn[lane] = counters[lane, Counter.PHASE] == 0
            if learn[lane]:
                inputs, targets, judged = train_inputs[lane], train_targets[lane], train_judged[lane]
                position = counters[lane, Counter.TRAIN_POSITION]
            else:
                inputs, targets, judged = test_inputs[lane], test_targets[lane], test_judged[lane]
                position = counters[lane, Counter.TEST_POSITION]
            stage(stage_inputs, lane, inputs, position, chunk)
            stage(stage_targets[:, 0], lane, targets, position, chunk)
            if stage_targets.shape[1] == 2:
                stage(stage_targets[:, 1], lane, judged, position, chunk)
            steps_done[lane] = 0
        # np.bool_: a bool, not a literal, so this call takes the kernel's signature that Python calls
        # compile (a literal compiles the kernel again, 10 s or more).
        kernel(kind, phase, code, mode, run_start, run_stop, runs, V, stage_inputs[:chunk], stage_targets[:chunk],
               rates, momentum, 1.0, tolerance, learn, active, steps_done, sums, record, wrong, np.bool_(True))
        ran, still = 0, 0
        for lane in range(trials):
            ran = max(ran, steps_done[lane])
            still += active[lane]
        done_work += ran
        # (Capped: doubled without bound, 59 chunks in a row with no stop overflowed it to 0, and
        # a lane that erred no more, alone in its block, ran zero-step chunks for ever.)
        longest = min(2 * longest, stage_inputs.shape[0]) if still == running else FIRST_CHUNK
        # Each lane's stream after its steps.
        for lane in range(trials):
            if counters[lane, Counter.STATUS] == Status.RUNNING:
                lane_after(counters[lane], scores[lane], settings, steps_done[lane], not active[lane], train_ends[lane],
                           train_counts[lane], test_ends[lane], test_counts[lane], V, lane, rows, rates, lane,
                           rate_decay)
