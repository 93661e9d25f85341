"""Data drawn on the GPU: each trial's training or test stream (CERG, CNTO, GTS, MSD, PFG) or
1997 sequences, drawn from the trial's own generator and coded into its rows of the arrays the
drive kernels read (`gpu_drivers`), so that a population's data never cross from the host.

The refill kernel is `StreamData.ensure` as device code, one thread a trial: the rows after the
cursor move to the front, then sequences are drawn up to each anchor (`DEVICE_ANCHOR_EVERY`
sequences apart, where the generator's state is kept) until a quarter more than the amount asked
for lies after the cursor. The task's in-place function draws and codes them
(`tasks.draws.StreamRows`), the one the host's draws run, on numpy's PCG64 as device code
(`tasks.pcg64`). So a trial sees the host's sequences, and its outcome is the host-drawn
trial's (tests/experiments/test_gpu_data.py).

The host keeps each `StreamData`'s place only. A run starts every source at its cursor
(`StreamData.go_to`, as a restored checkpoint does) and ends by putting it at its new cursor,
from the last anchor the device kept before it: checkpoints and resumes are the host's.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np

from ..engine.compiled.interpreter import load_source
from ..engine.gpu.arithmetic import contraction
from ..engine.gpu.population import ensure_room
from ..tasks.draws import population_rows
from ..tasks.pcg64 import as_bit_generator_state, state_of
from .data import StreamData

STATE_WORDS = 6  # a PCG64 state array (`pcg64.state_of`)
#: What a refill draws, by unit, at the least: fewer than the host's (`data.REFILL`: 2^15 steps,
#: 2^11 sequences), since every trial holds its rows on the device at once. A trial's rows then
#: take 5.5 MB for CERG and 11-16 MB for CNTO (both sources; docs/gpu.md). The layout of a
#: trial's rows does not change its outcome (tests in numba's CUDA simulator, which runs each
#: thread in Python, set fewer still).
DEVICE_REFILL = {"steps": 1 << 13, "sequences": 1 << 6}
#: Sequences between two generator states a trial keeps on the device (the host's
#: `StreamData.ANCHOR_EVERY` is 256). A refill draws to the next anchor, so fewer apart means fewer
#: rows a trial: half a CNTO trial's (docs/gpu.md). Anchors only say where the host's source is
#: drawn again from (`give_back`), so their spacing changes no trial's data.
DEVICE_ANCHOR_EVERY = 64
#: What the refill kernel leaves in ``failed``: the trial's rows, or its anchors, ran out.
ROWS_FULL, ANCHORS_FULL = 1, 2


def device_rows(sources: list[StreamData]):
    """How every trial's source (its task, or a 1997 fixed set) draws in place
    (`tasks.draws.population_rows`), where all draw alike or with arguments of their own; else
    None (the host draws)."""
    rows = [getattr(source.task, "stream_rows", None) for source in sources]
    return None if any(draw is None for draw in rows) else population_rows(rows)


class DeviceStreams:
    """One stream source of every trial (its training or its test data) on the device, drawn by
    ``draws`` (`device_rows`): rows (inputs, targets, sequence ends, counts) at a stride a trial,
    each trial's generator state, the sequences drawn and the number of the sequence at its row
    0, and its anchors."""

    def __init__(self, cuda, sources: list[StreamData], draws, units: list[str], stride: int | None = None) -> None:
        self.cuda, self.sources, self.draws = cuda, sources, draws
        self.kernels = _kernels(cuda, draws.function, len(draws.arguments), draws.per_trial, DEVICE_ANCHOR_EVERY)
        amounts = [DEVICE_REFILL[unit] for unit in units]
        self.amounts = cuda.to_device(np.array(amounts, dtype=np.int64))
        self.steps_unit = cuda.to_device(np.array([unit == "steps" for unit in units], dtype=np.bool_))
        self.arguments = tuple(cuda.to_device(np.ascontiguousarray(argument)) if isinstance(argument, np.ndarray)
                               else argument for argument in draws.arguments)
        count = len(sources)
        for source in sources:  # each at its cursor, its generator there (as a restored checkpoint)
            source.go_to(source.where())
        self.states = cuda.to_device(np.stack([state_of(source.rng) for source in sources]))
        self.first = cuda.to_device(np.array([source.drawn for source in sources], dtype=np.int64))
        self.drawn = cuda.to_device(np.array([source.drawn for source in sources], dtype=np.int64))
        self.failed = cuda.to_device(np.zeros(count, dtype=np.int64))
        self.saved = cuda.to_device(np.zeros((count, STATE_WORDS), dtype=np.uint64))
        # Rows (``stride`` a trial) for what is kept (less than the amount) and what is drawn (to a
        # quarter more, and one more anchor's sequences of 16 steps or the task's fewest): more
        # when a trial's run out.
        rows = [(amount + amount + amount // 4) * (1 if unit == "steps" else draws.shortest)
                for amount, unit in zip(amounts, units)]
        self._allocate(stride or max(rows) + DEVICE_ANCHOR_EVERY * max(16, draws.shortest))
        anchors = np.zeros((count, self.capacity), dtype=np.int64)
        anchors[:, 0] = [source.drawn for source in sources]
        states = np.zeros((count, self.capacity, STATE_WORDS), dtype=np.uint64)
        states[:, 0] = self.states.copy_to_host()
        self.anchor_sequences, self.anchor_states = cuda.to_device(anchors), cuda.to_device(states)
        self.anchors = cuda.to_device(np.ones(count, dtype=np.int64))

    def _allocate(self, stride: int) -> None:
        """Empty rows at ``stride`` a trial, and room for the anchors they can hold; first
        `GpuUnavailable` where the device has not the memory for them."""
        cuda, count, task = self.cuda, len(self.sources), self.sources[0].task
        capacity = stride // (DEVICE_ANCHOR_EVERY * self.draws.shortest) + 3
        needed = count * (stride * (8 * task.n_inputs + 8 * self.draws.planes * task.n_outputs + 9)
                          + capacity * 8 * (STATE_WORDS + 1))
        ensure_room(cuda, needed, f"drawing {count:,} trials' streams")
        self.stride, self.capacity = stride, capacity
        self.inputs = cuda.device_array((count * stride, task.n_inputs, 1))
        self.targets = cuda.device_array((count * stride, self.draws.planes, task.n_outputs, 1))
        self.ends = cuda.to_device(np.zeros(count * stride, dtype=np.bool_))
        self.counts = cuda.to_device(np.zeros(count * (stride + 1), dtype=np.int64))
        trials = np.arange(count, dtype=np.int64)
        self.at = cuda.to_device(np.stack([trials * stride, trials * (stride + 1), np.zeros(count, np.int64)], axis=1))

    def arrays(self) -> tuple:
        """What the stream kernel reads of this source: inputs, targets, ends, counts and per
        trial (first row, first count, rows)."""
        return self.inputs, self.targets, self.ends, self.counts, self.at

    def refill(self, need: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """More rows for the trials in ``need``, as `StreamData.ensure` of `DEVICE_REFILL` of
        their unit at the cursor rows ``positions``; the cursors after it (0 where rows moved)."""
        cuda, kernel = self.cuda, self.kernels.refill
        d_need, d_positions = cuda.to_device(need.astype(np.bool_)), cuda.to_device(positions.astype(np.int64))
        while True:
            threads = 64
            with contraction(False):  # (its first launch compiles it: no fused multiply-adds, as the drivers)
                kernel[-(-len(need) // threads), threads](
                    d_need, d_positions, self.amounts, self.steps_unit, self.stride, self.inputs, self.targets,
                    self.ends, self.counts, self.at, self.states, self.saved, self.first, self.drawn,
                    self.anchor_sequences, self.anchor_states, self.anchors, self.failed, *self.arguments)
            failed = self.failed.copy_to_host()
            if not failed.any():
                return d_positions.copy_to_host()
            self._grow()  # each failed trial goes on from where it stopped, in more rows
            d_need = cuda.to_device(failed != 0)

    def _grow(self) -> None:
        """Twice the rows a trial, and the anchors they can hold, each trial's kept."""
        old = (self.stride, self.inputs, self.targets, self.ends, self.counts, self.at.copy_to_host())
        sequences, states = self.anchor_sequences.copy_to_host(), self.anchor_states.copy_to_host()
        capacity = self.capacity
        self._allocate(2 * self.stride)
        stride, inputs, targets, ends, counts, at = old
        for trial in range(len(self.sources)):
            rows, new = int(at[trial, 2]), trial * self.stride
            if rows:
                for device, before in ((self.inputs, inputs), (self.targets, targets), (self.ends, ends)):
                    device[new:new + rows].copy_to_device(before[trial * stride:trial * stride + rows])
            self.counts[trial * (self.stride + 1):trial * (self.stride + 1) + rows + 1].copy_to_device(
                counts[trial * (stride + 1):trial * (stride + 1) + rows + 1])
        grown_at = self.at.copy_to_host()
        grown_at[:, 2] = at[:, 2]
        self.at = self.cuda.to_device(grown_at)
        grown_sequences = np.zeros((len(self.sources), self.capacity), dtype=np.int64)
        grown_states = np.zeros((len(self.sources), self.capacity, STATE_WORDS), dtype=np.uint64)
        grown_sequences[:, :capacity], grown_states[:, :capacity] = sequences, states
        self.anchor_sequences = self.cuda.to_device(grown_sequences)
        self.anchor_states = self.cuda.to_device(grown_states)

    def give_back(self, positions: np.ndarray) -> None:
        """Each host source put at its trial's cursor (row ``positions``), from the last anchor
        before it: with empty arrays, as `StreamData.go_to` leaves it."""
        count = len(self.sources)
        cursors = self.cuda.to_device(np.zeros(count, dtype=np.int64))
        self.kernels.cursor[-(-count // 64), 64](self.cuda.to_device(positions.astype(np.int64)), self.stride,
                                                 self.counts, self.first, cursors)
        cursors = cursors.copy_to_host()
        sequences, states, anchors = (array.copy_to_host() for array in (self.anchor_sequences, self.anchor_states,
                                                                         self.anchors))
        for trial, source in enumerate(self.sources):
            held = sequences[trial, :anchors[trial]]
            last = int(np.flatnonzero(held <= cursors[trial])[-1])
            source.go_to({"sequence": int(cursors[trial]), "anchor": int(held[last]),
                          "state": as_bit_generator_state(states[trial, last])})


@functools.cache
def _kernels(cuda, function, arguments: int, per_trial: tuple, anchor: int):
    """The refill and cursor kernels (`_KERNELS`) for a task's in-place draws ``function`` of
    ``arguments`` arguments before its count (those at ``per_trial`` a trial's own: row g of
    each), anchors ``anchor`` sequences apart, built once per process. Their text names the
    function and a hash of its module's source: numba never serves them compiled from an older one."""
    from ..engine.gpu.population import simulated

    module = __import__(function.__module__, fromlist=[function.__name__])
    digest = hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]
    names = [f"argument{index}" for index in range(arguments)]
    passed = ", ".join(f"{name}[g]" if index in per_trial else name for index, name in enumerate(names))
    text = (_KERNELS.replace("#MODULE", module.__name__).replace("#FUNCTION", function.__name__)
            .replace("#DIGEST", digest).replace("#ARGUMENTS", ", ".join(names)).replace("#PASSED", passed)
            .replace("#ANCHOR", str(anchor))
            .replace("#FULL", f"{ROWS_FULL}, {ANCHORS_FULL}").replace("@cuda.jit", _JIT[simulated(cuda)])
            .replace("#DEVICE_WRAP", "lambda function: function" if simulated(cuda) else "cuda.jit(device=True)"))
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    return load_source(f"lstmgraph_gpu_draws_{key}", text)


#: How the kernels below are compiled: on a GPU without link-time optimisation, as the drivers
#: (`engine.gpu.source`), so that NVVM's arithmetic holds.
_JIT = {False: "@cuda.jit(lto=False)", True: "@cuda.jit"}
#: `StreamData.ensure` as a CUDA kernel, one thread a trial (module docstring), and each trial's
#: sequence number at its cursor row.
_KERNELS = '''"""Generated by lstmgraph (experiments/gpu_data.py) for one task's draws; do not edit."""
from numba import cuda

from lstmgraph.engine.gpu.device_code import device_version
from #MODULE import #FUNCTION  # its source: #DIGEST

draw_rows = device_version(#FUNCTION, #DEVICE_WRAP)
ANCHOR = #ANCHOR
ROWS_FULL, ANCHORS_FULL = #FULL


@cuda.jit
def refill(need, positions, amounts, steps_unit, stride, inputs, targets, ends, counts, at, states, saved, first, drawn,
           anchor_sequences, anchor_states, anchors, failed, #ARGUMENTS):
    g = cuda.grid(1)
    if g >= need.shape[0] or not need[g]:
        return
    base, counted = g * stride, g * (stride + 1)
    rows, position, amount = at[g, 2], positions[g], amounts[g]
    have = rows - position if steps_unit[g] else counts[counted + rows] - counts[counted + position]
    if have >= amount and failed[g] == 0:  # enough (a failed trial goes on drawing)
        return
    failed[g] = 0
    first[g] += counts[counted + position]  # the steps before the cursor are dropped
    for row in range(rows - position):
        for k in range(inputs.shape[1]):
            inputs[base + row, k, 0] = inputs[base + position + row, k, 0]
        for plane in range(targets.shape[1]):
            for k in range(targets.shape[2]):
                targets[base + row, plane, k, 0] = targets[base + position + row, plane, k, 0]
        ends[base + row] = ends[base + position + row]
        counts[counted + row + 1] = counts[counted + row] + ends[base + row]
    rows, positions[g] = rows - position, 0
    kept = 0
    for anchor in range(anchors[g]):  # those before the new row 0 but the last one
        if anchor + 1 == anchors[g] or anchor_sequences[g, anchor + 1] > first[g]:
            anchor_sequences[g, kept] = anchor_sequences[g, anchor]
            for word in range(states.shape[1]):
                anchor_states[g, kept, word] = anchor_states[g, anchor, word]
            kept += 1
    anchors[g] = kept
    own_inputs, own_targets = inputs[base:base + stride], targets[base:base + stride]
    own_ends = ends[base:base + stride]
    while have < amount + amount // 4 + 1:
        sequence = drawn[g]
        if sequence % ANCHOR == 0 and anchor_sequences[g, anchors[g] - 1] != sequence:
            if anchors[g] == anchor_sequences.shape[1]:
                failed[g] = ANCHORS_FULL
                break
            anchor_sequences[g, anchors[g]] = sequence
            for word in range(states.shape[1]):
                anchor_states[g, anchors[g], word] = states[g, word]
            anchors[g] += 1
        count = ANCHOR - sequence % ANCHOR
        for word in range(states.shape[1]):
            saved[g, word] = states[g, word]
        end = draw_rows(states[g], #PASSED, count, own_inputs, own_targets, own_ends, rows)
        if end < 0:  # out of rows: this anchor's sequences again, in more (`DeviceStreams._grow`)
            for word in range(states.shape[1]):
                states[g, word] = saved[g, word]
            failed[g] = ROWS_FULL
            break
        for row in range(rows, end):
            counts[counted + row + 1] = counts[counted + row] + own_ends[row]
        have += end - rows if steps_unit[g] else count
        rows, drawn[g] = end, sequence + count
    at[g, 2] = rows


@cuda.jit
def cursor(positions, stride, counts, first, out):
    g = cuda.grid(1)
    if g < positions.shape[0]:
        out[g] = first[g] + counts[g * (stride + 1) + positions[g]]
'''
