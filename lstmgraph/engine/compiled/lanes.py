"""A block of lanes: trials side by side in one slot array, the unit every compiled loop runs.

A `LaneBlock` is what a kernel call and a protocol driver need of some trials: the slot array
``V`` (slots, lanes; trial l in column l), one learning rate per lane, the momentum, the
flattened program and the kernel compiled for blocks of that width. A `Population`'s blocks
are lane blocks (`Population.lane_block`, no copy); trials of one experiment, each its own
one-trial population, run side by side in a block gathered from them (`LaneBlock.gather`) and
scattered back (`LaneBlock.scatter`). A second executor (e.g. a GPU's) implements the same
fields and the same driver contract.

The numba helpers below act on one lane of a block; both protocol drivers use them.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba.typed import List

from ... import numba_cache  # noqa: F401  (numba caches this module's functions in the kernel cache)

#: What a compiled driver receives of a block besides its kernel (numba reads a named tuple's
#: fields by name; the kernel goes apart, as a dispatcher argument, which numba specialises to):
#: the flattened program's arrays, the slots, the slot ranges `rows`, the rates and the momentum.
KernelBlock = namedtuple("KernelBlock", "program V rows rates momentum")


def slot_rows(program) -> np.ndarray:
    """The slot ranges the drivers read: activations, traces and weights (start, stop each)."""
    return np.array([program.states.start, program.states.stop, program.traces.start, program.traces.stop,
                     program.theta.start, program.theta.stop], dtype=np.int64)


@dataclass
class LaneBlock:
    """Trials side by side: ``V`` (slots, lanes), ``rates`` (lanes,), run by ``kernel`` (the
    interpreter's or the specialised kernel's ``run`` for blocks of ``V``'s width)."""

    network: Any        # the `CompiledNetwork`
    kernel: Any
    V: np.ndarray
    rates: np.ndarray

    @property
    def width(self) -> int:
        return self.V.shape[1]

    def for_driver(self, momentum: float) -> KernelBlock:
        return KernelBlock(self.network.flat.arguments(), self.V, slot_rows(self.network.program), self.rates,
                           float(momentum))

    @classmethod
    def gather(cls, engines: list) -> "LaneBlock":
        """The networks of ``engines`` (one-trial compiled engines of one plan) side by side, lane
        l being ``engines[l]``: one network runs in its own slots (no copy); several in a new
        block, the specialised kernel's width where it runs, else the interpreter's. `scatter`
        returns the lanes."""
        from . import specialised

        first = engines[0]
        if len(engines) == 1:
            return first.population.lane_block(0, first.rate)
        network = first.network
        together = len(engines) <= specialised.WIDTH and network.uses_specialised(specialised.WIDTH)
        width = specialised.WIDTH if together else len(engines)
        kernel = network.specialised(width).run if together else network.interpreter_run
        V, rates = np.zeros((network.program.n_slots, width)), np.zeros(width)
        for lane, engine in enumerate(engines):
            V[:, lane] = engine.population.lanes[0].V[:, 0]
            rates[lane] = engine.rate
        return cls(network, kernel, V, rates)

    def scatter(self, engines: list) -> None:
        """Each engine's network and rate from its lane (the inverse of `gather`)."""
        for lane, engine in enumerate(engines):
            if len(engines) > 1:
                engine.population.lanes[0].V[:, 0] = self.V[:, lane]
            engine.rate = float(self.rates[lane])


class LaneArrays:
    """A driver's per-lane data (``fields``: its named tuple, e.g. `stream_driver.LaneData`) as
    one numba typed list per field. A tuple's numba type names its length, so each number of
    lanes compiled a driver again (3-18 s); a typed list's does not. The lists are kept between
    calls and a lane's entry replaced only when its array is another object (a refill): building
    them anew cost about 0.13 ms a driver call."""

    def __init__(self, fields: type) -> None:
        self.fields = fields
        self.lists: tuple | None = None
        self.held: list[tuple] = []   # the arrays the lists hold, lane by lane (compared by identity)

    def __call__(self, lanes: list[tuple]) -> tuple:
        """``lanes``: each lane's arrays in ``fields``' order. Returns ``fields`` of typed lists."""
        if self.lists is None or len(lanes) != len(self.held):
            self.lists = tuple(_typed_list(arrays) for arrays in zip(*lanes))
        else:
            for lane, (arrays, held) in enumerate(zip(lanes, self.held)):
                for field, (array, old) in enumerate(zip(arrays, held)):
                    if array is not old:
                        _replace(self.lists[field], lane, array)
        self.held = [tuple(arrays) for arrays in lanes]
        return self.fields(*self.lists)


def _typed_list(arrays: tuple) -> List:
    """A typed list of ``arrays`` (one array type), built by the cached functions below: a typed
    list's own Python methods (``List(arrays)``, ``append``, item assignment) are compiled anew
    in every process, for each array type, about 0.3 s each: some 2 s of every worker's start."""
    items = _list_of(arrays[0])
    for array in arrays[1:]:
        _append(items, array)
    return items


@numba.njit(cache=True, nogil=True)
def _list_of(array):
    items = List()
    items.append(array)
    return items


@numba.njit(cache=True, nogil=True)
def _append(items, array):
    items.append(array)


@numba.njit(cache=True, nogil=True)
def _replace(items, index, array):
    items[index] = array


@numba.njit(cache=True, nogil=True)
def reset_lane(V, rows, lane):
    """Zero a lane's activations and traces (``rows``: `slot_rows`), as `Population.reset` does
    (plain loops, which the GPU's driver compiles too)."""
    for slot in range(rows[0], rows[1]):
        V[slot, lane] = 0.0
    for slot in range(rows[2], rows[3]):
        V[slot, lane] = 0.0


@numba.njit(cache=True, nogil=True)
def mark_running(active, statuses):
    """``active[l]``: lane l's trial is running (``statuses``: the trials' status counters,
    `counters.Status.RUNNING` = 0; lanes past them idle). Returns how many are."""
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
def lane_finite(V, start, stop, lane):
    """Every slot of a lane in [start, stop) is finite."""
    for slot in range(start, stop):
        if not math.isfinite(V[slot, lane]):
            return False
    return True
