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

import math

import numba
import numpy as np

from .streams import NOT_RUN

#: A lane's status: running, or why it stopped.
RUNNING, DONE, SOLVED, DIVERGED, NEED_TRAINING, NEED_TEST = range(6)

#: A lane's counters (a row of ``counters``). The first five are its place in the protocol
#: between streams (what a checkpoint keeps): training streams and steps so far, the cursors in
#: its training and test data, and the phase (0: a training stream is next, k: test stream k).
#: The others say where it is inside a stream. ``BUDGET``: pause before a training stream once
#: ``STEPS`` reaches it (-1: never); ``LAST_BUDGET``: the trial's own step budget, at which its
#: last test phase runs (-1: none; ``BUDGET`` may be an earlier pause, which changes nothing).
(STREAMS, STEPS, TRAIN_POSITION, TEST_POSITION, PHASE, STATUS, IN_STREAM, UNITS_DONE, STREAM_STEPS,
 SEGMENT_STEPS, STEPS_LEFT, ENDS_LEFT, BUDGET, LAST_BUDGET) = range(14)
COUNTERS = 14
#: The counters a checkpoint keeps.
SAVED = 5

#: Steps of the first chunk after a lane stopped (chunks then double, up to the staging's length).
FIRST_CHUNK = 16

#: Settings (``settings``, int64): the protocol's, in this order.
STEPS_UNIT, TRAIN_LIMIT, TEST_LIMIT, TEST_STREAMS, RESET_EACH, MAX_STREAMS, STOP_FAILED_PHASE = range(7)


@numba.njit(cache=True, nogil=True)
def _next_start(ends, position):
    """The first sequence start at or after ``position``."""
    while position > 0 and not ends[position - 1]:
        position += 1
    return position


@numba.njit(cache=True, nogil=True)
def _finite(values):
    for value in values:
        if not math.isfinite(value):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _begin_segment(lane, counter, settings, V, rows):
    """The lane's state and traces zeroed, and how far its segment runs: to the stream's limit
    (in steps or sequence ends) or, with a reset at each sequence, to the sequence's end."""
    limit = settings[TRAIN_LIMIT] if counter[PHASE] == 0 else settings[TEST_LIMIT]
    steps_unit = settings[STEPS_UNIT] == 1
    if settings[RESET_EACH] == 1:
        counter[ENDS_LEFT] = 1
        counter[STEPS_LEFT] = limit - counter[UNITS_DONE] if steps_unit else -1
    elif steps_unit:
        counter[STEPS_LEFT], counter[ENDS_LEFT] = limit, -1
    else:
        counter[STEPS_LEFT], counter[ENDS_LEFT] = -1, limit
    counter[SEGMENT_STEPS] = 0
    reset_lane(V, rows, lane)


@numba.njit(cache=True, nogil=True)
def reset_lane(V, rows, lane):
    """Zero a lane's activations and traces (``rows``: `slot_rows`), as `Population.reset` does."""
    V[rows[0]:rows[1], lane] = 0.0
    V[rows[2]:rows[3], lane] = 0.0


@numba.njit(cache=True, nogil=True)
def mark_running(active, statuses):
    """``active[l]``: lane l's trial is running (``statuses``: the trials' status counters,
    `RUNNING` = 0 in both drivers; lanes past them idle). Returns how many are."""
    running = 0
    for lane in range(active.shape[0]):
        active[lane] = lane < statuses.shape[0] and statuses[lane] == 0
        running += active[lane]
    return running


@numba.njit(cache=True, nogil=True)
def stage(buffer, lane, values, position, chunk):
    """Copy a lane's next ``chunk`` rows of ``values`` (its inputs, targets or judged values)
    from ``position`` into the kernel's staging ``buffer`` (steps, columns, lanes)."""
    for t in range(chunk):
        for k in range(values.shape[1]):
            buffer[t, k, lane] = values[position + t, k]


@numba.njit(cache=True, nogil=True)
def _room(counter, position, length, counts):
    """Steps the lane can run before its segment's end or its data's end."""
    room = length - position
    if counter[STEPS_LEFT] >= 0:
        room = min(room, counter[STEPS_LEFT])
    if counter[ENDS_LEFT] >= 0:
        target = counts[position] + counter[ENDS_LEFT]
        if counts[length] >= target:
            room = min(room, np.searchsorted(counts, target) - position)
    return room


@numba.njit(cache=True, nogil=True)
def _last_phase(counter, settings):
    """The test phase now running is the trial's last: its training streams or its own step
    budget are spent (not a pause's)."""
    return counter[STREAMS] >= settings[MAX_STREAMS] or (
        counter[LAST_BUDGET] >= 0 and counter[STEPS] >= counter[LAST_BUDGET])


@numba.njit(cache=True, nogil=True)
def _end_stream(lane, counter, score, settings, right, position, V, rows, rates, rate_decay):
    """`_drive`'s bookkeeping after a stream: counters, the rate decay, divergence, the phase
    (a failing test stream may end its phase: `STOP_FAILED_PHASE`), and success after the last
    test stream."""
    phase = counter[PHASE]
    counter[IN_STREAM] = 0
    if phase == 0:
        counter[STREAMS] += 1
        counter[STEPS] += counter[STREAM_STEPS]
        counter[TRAIN_POSITION] = position
        if right >= settings[TRAIN_LIMIT]:
            rates[lane] *= rate_decay
        if not _finite(V[rows[4]:rows[5], lane]):
            counter[STATUS] = DIVERGED
            return
        counter[PHASE] = 1
        return
    counter[TEST_POSITION] = position
    score[phase - 1] = right
    if settings[STOP_FAILED_PHASE] == 1 and right < settings[TEST_LIMIT] and not _last_phase(counter, settings):
        score[phase:] = NOT_RUN  # the phase has failed: training goes on
        counter[PHASE] = 0
        return
    if phase < settings[TEST_STREAMS]:
        counter[PHASE] = phase + 1
        return
    counter[PHASE] = 0
    if score.min() >= settings[TEST_LIMIT]:
        counter[STATUS] = SOLVED


def slot_rows(program) -> np.ndarray:
    """The slot ranges the drivers read: activations, traces and weights (start, stop each)."""
    return np.array([program.states.start, program.states.stop, program.traces.start, program.traces.stop,
                     program.theta.start, program.theta.stop], dtype=np.int64)


def lane_block(engines: list) -> tuple[object, np.ndarray, np.ndarray]:
    """(kernel, V, rates) for running the networks of ``engines`` (trials of one experiment,
    one network each) side by side, lane l being ``engines[l]``: one network runs in its own
    slots; several in a new block of lanes, the specialised kernel's width where it runs, else
    the interpreter's. `lanes_back` returns the lanes to the engines."""
    from ..engine.compiled import specialised

    if len(engines) == 1:
        population = engines[0].population
        population.set_rate(engines[0].rate)
        return population.run_function, population.blocks[0], population.rates[0]
    network = engines[0].network
    together = len(engines) <= specialised.WIDTH and network.uses_specialised(specialised.WIDTH)
    width = specialised.WIDTH if together else len(engines)
    kernel = network.specialised(width).run if together else network.interpreter.run
    V, rates = np.zeros((network.program.n_slots, width)), np.zeros(width)
    for lane, engine in enumerate(engines):
        V[:, lane] = engine.population.blocks[0][:, 0]
        rates[lane] = engine.rate
    return kernel, V, rates


def lanes_back(engines: list, V: np.ndarray, rates: np.ndarray) -> None:
    """Each engine's network and rate from its lane of a `lane_block`."""
    for lane, engine in enumerate(engines):
        if len(engines) > 1:
            engine.population.blocks[0][:, 0] = V[:, lane]
        engine.rate = float(rates[lane])


def drive(kernel, program, V, rows, rates, momentum, tolerance, rate_decay, train, test, settings, counters,
          scores, stage_inputs, stage_targets, work):
    """Run the lanes of ``V`` (slots, lanes; lane l is trial l, for l < len(counters)) until
    every lane has stopped (its ``STATUS`` not `RUNNING`), or one needs data, or about ``work``
    lockstep steps are done. ``train`` and ``test``: per lane, the (inputs, targets, judged,
    ends, counts) of its data (tuples of arrays, one per lane; a stream stops at an output off
    its judged value, `Sequence.judged`); ``stage_inputs`` (chunk, columns, lanes) and
    ``stage_targets`` (chunk, planes, columns, lanes): scratch, their first axis the longest
    chunk; ``stage_targets`` has a second plane for the judged values only where some differ
    from the targets (else they are neither staged nor read). ``kernel``: the compiled ``run``
    (interpreter or specialised kernel) for blocks of ``V``'s width."""
    lanes = V.shape[1]
    return _drive(kernel, program, V, rows, rates, momentum, tolerance, rate_decay, *train, *test, settings, counters,
                  scores, stage_inputs, stage_targets, np.zeros(lanes, dtype=np.bool_),
                  np.zeros(lanes, dtype=np.bool_), np.zeros(lanes, dtype=np.int64), np.zeros(lanes),
                  np.zeros((lanes, 0, stage_targets.shape[2])), np.zeros(lanes, dtype=np.bool_), work)


# The kernel is an argument: this function is compiled once per process, kernel and lane count
# (a few seconds) and not cached: numba's cache does not notice a change in a function another
# one calls.
@numba.njit(nogil=True)
def _drive(kernel, program, V, rows, rates, momentum, tolerance, rate_decay,
           train_inputs, train_targets, train_judged, train_ends, train_counts, test_inputs, test_targets,
           test_judged, test_ends, test_counts, settings, counters, scores, stage_inputs, stage_targets, active,
           learn, steps_done, sums, record, wrong, work):
    kind, phase, code, mode, run_start, run_stop, runs = program
    trials = counters.shape[0]
    steps_unit, reset_each = settings[STEPS_UNIT] == 1, settings[RESET_EACH] == 1
    done_work = 0
    # The chunk grows while no lane stops in it and starts small again after a stop: the
    # staging copies little more than the steps that run when streams end after a few steps.
    longest = FIRST_CHUNK
    while done_work < work:
        # Lanes between streams start their next one (or stop); then the chunk's length.
        chunk = min(longest, stage_inputs.shape[0])
        for lane in range(trials):
            counter = counters[lane]
            if counter[STATUS] != RUNNING:
                continue
            if counter[IN_STREAM] == 0:
                if counter[PHASE] == 0 and (counter[STREAMS] >= settings[MAX_STREAMS] or (
                        counter[BUDGET] >= 0 and counter[STEPS] >= counter[BUDGET])):
                    counter[STATUS] = DONE
                    continue
                counter[IN_STREAM], counter[UNITS_DONE], counter[STREAM_STEPS] = 1, 0, 0
                _begin_segment(lane, counter, settings, V, rows)
            if counter[PHASE] == 0:
                room = _room(counter, counter[TRAIN_POSITION], len(train_inputs[lane]), train_counts[lane])
            else:
                room = _room(counter, counter[TEST_POSITION], len(test_inputs[lane]), test_counts[lane])
            if room == 0:  # its data ran out: back to Python for more
                counter[STATUS] = NEED_TRAINING if counter[PHASE] == 0 else NEED_TEST
                return
            chunk = min(chunk, room)
        running = mark_running(active, counters[:, STATUS])
        if running == 0:
            return
        # Each running lane's next steps side by side; the others idle.
        for lane in range(trials):
            if not active[lane]:
                continue
            learn[lane] = counters[lane, PHASE] == 0
            if learn[lane]:
                inputs, targets, judged = train_inputs[lane], train_targets[lane], train_judged[lane]
                position = counters[lane, TRAIN_POSITION]
            else:
                inputs, targets, judged = test_inputs[lane], test_targets[lane], test_judged[lane]
                position = counters[lane, TEST_POSITION]
            stage(stage_inputs, lane, inputs, position, chunk)
            stage(stage_targets[:, 0], lane, targets, position, chunk)
            if stage_targets.shape[1] == 2:
                stage(stage_targets[:, 1], lane, judged, position, chunk)
            steps_done[lane] = 0
        kernel(kind, phase, code, mode, run_start, run_stop, runs, V, stage_inputs[:chunk], stage_targets[:chunk],
               rates, momentum, 1.0, tolerance, learn, active, steps_done, sums, record, wrong, True)
        ran, still = 0, 0
        for lane in range(trials):
            ran = max(ran, steps_done[lane])
            still += active[lane]
        done_work += ran
        # (Capped: doubled without bound, 59 chunks in a row with no stop overflowed it to 0, and
        # a lane that erred no more, alone in its block, ran zero-step chunks for ever.)
        longest = min(2 * longest, stage_inputs.shape[0]) if still == running else FIRST_CHUNK
        # Each lane's stream after its steps, as `streams.stream_score` reads a kernel call.
        for lane in range(trials):
            counter = counters[lane]
            if counter[STATUS] != RUNNING:
                continue
            training = counter[PHASE] == 0
            ends, counts = (train_ends[lane], train_counts[lane]) if training else (test_ends[lane], test_counts[lane])
            at = TRAIN_POSITION if training else TEST_POSITION
            limit = settings[TRAIN_LIMIT] if training else settings[TEST_LIMIT]
            steps, start = steps_done[lane], counter[at]
            position = start + steps
            counter[at] = position
            counter[SEGMENT_STEPS] += steps
            counter[STREAM_STEPS] += steps
            if counter[STEPS_LEFT] >= 0:
                counter[STEPS_LEFT] -= steps
            if counter[ENDS_LEFT] >= 0:
                counter[ENDS_LEFT] -= counts[position] - counts[start]
            if not active[lane]:  # its first error, at its last step
                if reset_each:
                    right = counter[UNITS_DONE] + counter[SEGMENT_STEPS] - 1 if steps_unit else counter[UNITS_DONE]
                elif steps_unit:
                    right = counter[SEGMENT_STEPS] - 1
                else:  # sequences completed before the erring step
                    right = limit - counter[ENDS_LEFT] - ends[position - 1]
                _end_stream(lane, counter, scores[lane], settings, right, _next_start(ends, position), V, rows,
                            rates, rate_decay)
            elif counter[STEPS_LEFT] == 0 or counter[ENDS_LEFT] == 0:  # the segment ran to its end
                counter[UNITS_DONE] = (limit if not reset_each else
                                       counter[UNITS_DONE] + (counter[SEGMENT_STEPS] if steps_unit else 1))
                counter[at] = _next_start(ends, position)
                if counter[UNITS_DONE] < limit:
                    _begin_segment(lane, counter, settings, V, rows)
                else:
                    _end_stream(lane, counter, scores[lane], settings, limit, counter[at], V, rows, rates,
                                rate_decay)
