"""Many sequences' random draws in compiled code, for the tasks' ``sample_many``.

A stream trial draws millions of short sequences, and one Python `sample` call per sequence cost
more than the compiled net's steps (docs/performance.md, "Drawing the data"). These functions
make the draws `sample` makes on its numpy generator, one sequence after another, on the
generator's state (`pcg64`: numpy's algorithm, inline), so the draws and the state after them
are the same (tests/tasks/test_tasks.py holds every task's `sample_many` to its `sample`, array
for array and state for state).
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from .. import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)
from .pcg64 import integers, next_double

#: How a task's stream is drawn in place (what the GPU runs: `experiments.gpu_data`): its
#: ``function`` (``function(state, *arguments, count, inputs, targets, ends, at)``, as
#: `continual_rows`), the ``arguments`` before the count, the fewest and the most steps a
#: sequence has (None: no bound), the target planes (2 where what is judged differs from the
#: targets), a ``key`` equal for tasks that draw alike, and the positions of the arguments that
#: may differ between trials drawing with the same function (`population_rows`).
StreamRows = namedtuple("StreamRows", "function arguments shortest longest planes key per_trial", defaults=((),))


def population_rows(rows: list[StreamRows]) -> StreamRows | None:
    """One way to draw a population's streams on the device, from each trial's `StreamRows`:
    where all draw alike, theirs (no argument per trial); where they differ only in their
    ``per_trial`` arguments, those stacked, a trial's along the first axis (zeros past its own
    length: the function reads only its own); else None (the host draws)."""
    first = rows[0]
    if all(row.key == first.key for row in rows):
        return first._replace(per_trial=())
    if not first.per_trial or any(row.function is not first.function or row.per_trial != first.per_trial
                                  or row.planes != first.planes for row in rows):
        return None
    shared = [index for index in range(len(first.arguments)) if index not in first.per_trial]
    if any(not np.array_equal(row.arguments[index], first.arguments[index]) for row in rows for index in shared):
        return None
    arguments = list(first.arguments)
    for index in first.per_trial:
        own = [np.asarray(row.arguments[index]) for row in rows]
        stacked = np.zeros((len(own),) + tuple(np.max([array.shape for array in own], axis=0)), dtype=own[0].dtype)
        for trial, array in enumerate(own):
            stacked[(trial,) + tuple(slice(0, length) for length in array.shape)] = array
        arguments[index] = stacked
    longest = None if any(row.longest is None for row in rows) else max(row.longest for row in rows)
    return first._replace(arguments=tuple(arguments), shortest=min(row.shortest for row in rows), longest=longest,
                          key=tuple(row.key for row in rows))


def draw_rows(rng: np.random.Generator, draws: StreamRows, count: int, rows: int, n_inputs: int, n_outputs: int):
    """``count`` sequences drawn in place on the host (`StreamRows`, on ``rng``'s state, which
    is left after them) into ``rows`` rows, twice as many from the same state where they do
    not fit; as `Sequences` (what is judged: the last target plane)."""
    from .base import Sequences
    from .pcg64 import set_state, state_of

    while True:
        inputs, targets = np.empty((rows, n_inputs, 1)), np.empty((rows, draws.planes, n_outputs, 1))
        ends = np.zeros(rows, dtype=np.bool_)
        state = state_of(rng)
        end = draws.function(state, *draws.arguments, count, inputs, targets, ends, 0)
        if end >= 0:
            break
        rows = max(2 * rows, 64)
    set_state(rng, state)
    coded = targets[:end, 0, :, 0]
    return Sequences(inputs[:end, :, 0], coded, targets[:end, -1, :, 0] if draws.planes == 2 else coded,
                     np.diff(np.flatnonzero(ends[:end]) + 1, prepend=0))


@numba.njit(cache=True, nogil=True)
def walk_strings(state, degree, edges, successors, start, final, count):
    """``count`` strings of an automaton, from ``start`` to ``final``, as `Automaton.walk`
    draws them from a generator's ``state`` (`pcg64.state_of`): at each state of ``degree`` 2
    one ``integers(2)`` picks the edge
    (``edges``/``successors``: per state, the numbers of its edges and their next states).
    Returns the edge numbers end to end and each string's length."""
    path = np.empty(max(64, 32 * count), dtype=np.int64)
    lengths = np.empty(count, dtype=np.int64)
    written = 0
    for string in range(count):
        node, first = start, written
        while node != final:
            choice = integers(state, 0, 2) if degree[node] == 2 else 0
            if written == path.shape[0]:
                grown = np.empty(2 * path.shape[0], dtype=np.int64)
                grown[:written] = path[:written]
                path = grown
            path[written] = edges[node, choice]
            written += 1
            node = successors[node, choice]
        lengths[string] = written - first
    return path[:written], lengths


@numba.njit(cache=True, nogil=True)
def continual_rows(state, degree, edges, successors, start, final, symbols, legal, restart, count, inputs, targets,
                   ends, at):
    """``count`` strings of a continual grammar stream (`reber.prediction_sequence`, continual)
    written in place from row ``at``: each step's input ``symbols[edge]``, its target
    ``legal[edge]`` (``restart``, the start's successors, at a string's last symbol) and whether a
    string ends there, drawn from ``state`` as `walk_strings` draws. ``inputs`` is
    (rows, inputs, 1) and ``targets`` (rows, planes, outputs, 1), plane 0 written: the layout the
    GPU drivers read. No allocation, so it runs as GPU device code too (`experiments.gpu_data`).
    Returns the row after the last string, or -1 where the rows run out (``state`` is then part
    way through: the caller keeps a copy)."""
    row = at
    for string in range(count):
        node = start
        while node != final:
            if row == inputs.shape[0]:
                return -1
            choice = integers(state, 0, 2) if degree[node] == 2 else 0
            edge = edges[node, choice]
            node = successors[node, choice]
            last = node == final
            for k in range(symbols.shape[1]):
                inputs[row, k, 0] = symbols[edge, k]
            for k in range(legal.shape[1]):
                targets[row, 0, k, 0] = restart[k] if last else legal[edge, k]
            ends[row] = last
            row += 1
    return row


@numba.njit(cache=True, nogil=True)
def temporal_order_rows(state, min_length, max_length, distractors, first, last, windows, x, y, idle, idle_judged,
                        count, inputs, targets, ends, at):
    """``count`` sequences of the temporal order task, drawn from ``state`` as
    `TemporalOrder.sample` draws them (a length in [min_length, max_length], a distractor at
    every step, then for each window, 1-based first and last step, a step in it and X or Y), and
    written in place from row ``at`` as its ``_coded`` codes them: inputs one-hot; targets plane 0
    ``idle`` before each sequence's last step (NaN: none) and the class one-hot at it (the X/Y
    string read as binary, X = 0); the last plane, where there are two, what is judged (NaN
    before the last step unless ``idle_judged``); ``ends``. Layout and return value as
    `continual_rows`."""
    row, planes = at, targets.shape[1]
    for sequence in range(count):
        length = integers(state, min_length, max_length + 1)
        if row + length > inputs.shape[0]:
            return -1
        for step in range(length):
            code = distractors[integers(state, 0, distractors.shape[0])]
            code = first if step == 0 else (last if step == length - 1 else code)
            for k in range(inputs.shape[1]):
                inputs[row + step, k, 0] = 1.0 if k == code else 0.0
            for k in range(targets.shape[2]):
                targets[row + step, 0, k, 0] = idle
                targets[row + step, planes - 1, k, 0] = idle if idle_judged else np.nan
            ends[row + step] = False
        label = 0
        for window in range(windows.shape[0]):
            step = integers(state, windows[window, 0], windows[window, 1] + 1) - 1
            is_y = integers(state, 0, 2)
            for k in range(inputs.shape[1]):
                inputs[row + step, k, 0] = 1.0 if k == (y if is_y else x) else 0.0
            label = 2 * label + is_y
        for plane in range(planes):
            for k in range(targets.shape[2]):
                targets[row + length - 1, plane, k, 0] = 1.0 if k == label else 0.0
        ends[row + length - 1] = True
        row += length
    return row


#: What the first input of a generated-timed-spikes interval carries (`spikes.CUES`): its length
#: F + I(n), its delay I(n), or 1; and measuring spike delays' coding (no cue).
CUE_LENGTH, CUE_DELAY, CUE_SPIKE, MEASURED = range(4)


@numba.njit(cache=True, nogil=True)
def interval_rows(state, period, delays, coding, count, inputs, targets, ends, at):
    """``count`` intervals of the 2002 spike-timing tasks, drawn from ``state`` as
    `spikes._Intervals.sample` draws them (one ``integers(len(delays))`` each for its delay I),
    F + I steps long, written in place from row ``at`` as ``_coded`` codes them. ``coding``
    `MEASURED` (MSD): input 1 at the spike (the last step), target I there and NaN elsewhere; a
    GTS cue (`CUE_LENGTH` ...): the cue at the first step, 0 elsewhere, target 1 at the spike and
    0 elsewhere. Layout and return value as `continual_rows`."""
    row = at
    for interval in range(count):
        delay = delays[integers(state, 0, delays.shape[0])]
        length = period + delay
        if row + length > inputs.shape[0]:
            return -1
        cue = float(period + delay) if coding == CUE_LENGTH else (float(delay) if coding == CUE_DELAY else 1.0)
        for step in range(length):
            spike = step == length - 1
            if coding == MEASURED:
                inputs[row + step, 0, 0] = 1.0 if spike else 0.0
                target = float(delay) if spike else np.nan
            else:
                inputs[row + step, 0, 0] = cue if step == 0 else 0.0
                target = 1.0 if spike else 0.0
            for plane in range(targets.shape[1]):
                targets[row + step, plane, 0, 0] = target
            ends[row + step] = spike
        row += length
    return row


@numba.njit(cache=True, nogil=True)
def repeated_rows(state, sequence_inputs, sequence_targets, count, inputs, targets, ends, at):
    """``count`` copies of one fixed sequence (PFG's whole periods: no draws, ``state`` unused),
    written in place from row ``at``. Layout and return value as `continual_rows`."""
    length, row = sequence_inputs.shape[0], at
    for sequence in range(count):
        if row + length > inputs.shape[0]:
            return -1
        for step in range(length):
            for k in range(inputs.shape[1]):
                inputs[row + step, k, 0] = sequence_inputs[step, k]
            for plane in range(targets.shape[1]):
                for k in range(targets.shape[2]):
                    targets[row + step, plane, k, 0] = sequence_targets[step, k]
            ends[row + step] = step == length - 1
        row += length
    return row


@numba.njit(cache=True, nogil=True)
def marked_pairs_rows(state, length, first_window, low, span, neutral, adding, count, inputs, targets, ends, at):
    """``count`` sequences of the 1997 adding (``adding``) or multiplication problem, drawn from
    ``state`` as `adding._MarkedPairs.sample` draws them (a length in [T, T + T // 10], the first
    mark among the first ``first_window`` pairs, the second among pairs 0 .. T // 2 - 2 other
    than the first, then the values ``low + span * u``), and written in place from row ``at``:
    input 0 the values (pair 0's the ``neutral`` element where it is marked), input 1 the
    markers; the target only at the last step (NaN before it). Layout and return value as
    `continual_rows`."""
    row = at
    for sequence in range(count):
        steps = integers(state, length, length + length // 10 + 1)
        first = integers(state, 0, first_window)
        skip = first < length // 2 - 1
        second = integers(state, 0, length // 2 - 1 - (1 if skip else 0))
        if skip and second >= first:
            second += 1
        if row + steps > inputs.shape[0]:
            return -1
        for step in range(steps):
            inputs[row + step, 0, 0] = low + span * next_double(state)
            inputs[row + step, 1, 0] = 0.0
            for plane in range(targets.shape[1]):
                targets[row + step, plane, 0, 0] = np.nan
            ends[row + step] = False
        if first == 0 or second == 0:
            inputs[row, 0, 0] = neutral
        inputs[row, 1, 0] = inputs[row + steps - 1, 1, 0] = -1.0
        inputs[row + first, 1, 0] = inputs[row + second, 1, 0] = 1.0
        x1, x2 = inputs[row + first, 0, 0], inputs[row + second, 0, 0]
        for plane in range(targets.shape[1]):
            targets[row + steps - 1, plane, 0, 0] = 0.5 + (x1 + x2) / 4.0 if adding else x1 * x2
        ends[row + steps - 1] = True
        row += steps
    return row


@numba.njit(cache=True, nogil=True)
def picked_rows(state, string_inputs, string_targets, starts, count, inputs, targets, ends, at):
    """``count`` strings picked from a fixed set, each by one ``integers(len(set))`` as
    `fixed_set.FixedSet.sample` picks them, and written in place from row ``at``: the
    strings lie end to end in ``string_inputs`` (rows, inputs) and ``string_targets`` (rows,
    planes, outputs), string i from row ``starts[i]`` to ``starts[i + 1]``. Layout and return
    value as `continual_rows`."""
    row = at
    for string in range(count):
        pick = integers(state, 0, starts.shape[0] - 1)
        first, length = starts[pick], starts[pick + 1] - starts[pick]
        if row + length > inputs.shape[0]:
            return -1
        for step in range(length):
            for k in range(inputs.shape[1]):
                inputs[row + step, k, 0] = string_inputs[first + step, k]
            for plane in range(targets.shape[1]):
                for k in range(targets.shape[2]):
                    targets[row + step, plane, k, 0] = string_targets[first + step, plane, k]
            ends[row + step] = step == length - 1
        row += length
    return row
