"""A population of trials on a CUDA GPU: the compiled `Population`'s contract, run by the GPU
kernel generated for its program (`source.py`).

The slot array ``V`` (slots, trials) and the rates stay on the device between calls; a call's
stream is copied there once (shared by every trial, or each trial's own), and the steps run,
loss sums and recorded outputs come back. Weights, velocities, states and traces go in and out
by name (`NamedSlots`), as the CPU population's do.

numba-cuda compiles the kernel. Without a GPU, ``NUMBA_ENABLE_CUDASIM=1`` runs it in numba's
CUDA simulator (Python threads, for tests on tiny populations: every arithmetic operation is
then the CPU's, so its results are the CPU kernels' bit for bit).
"""

from __future__ import annotations

import hashlib
import os
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator

import numpy as np

from ...limits import MAX_GPU_KERNEL_LINES
from ...program import MINUS_ONE, ONE
from ..compiled.interpreter import load_source
from ..compiled.named_slots import NamedSlots
from ..weights import Weights
from .arithmetic import contraction, install
from .source import GPU_SOURCE_VERSION, Layout, choose_layout, source


class GpuUnavailable(RuntimeError):
    """``--device cuda`` was asked for where no CUDA GPU (or no numba-cuda) is present, or
    where the device has not the memory a run asks for."""


def free_bytes(cuda) -> int | None:
    """The device's free memory in bytes (None in numba's CUDA simulator)."""
    return None if simulated(cuda) else int(cuda.current_context().get_memory_info()[0])


def ensure_room(cuda, needed: int, what: str) -> None:
    """`GpuUnavailable` (the CLI's exit 2) where ``what`` needs more than the device's free
    memory: checked before allocating, not the device's out-of-memory error."""
    free = free_bytes(cuda)
    if free is not None and needed > free:
        raise GpuUnavailable(f"{what} on the GPU needs {needed / 1e6:,.1f} MB more, and {free / 1e6:,.1f} MB is free; "
                             "run fewer trials or settings at a time")


def cuda_module(allow_simulator: bool = True) -> ModuleType:
    """``numba.cuda``, checked: a GPU is present, or the simulator is on and allowed."""
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 still imports it; numpy 2.5 removed the alias
        np.row_stack = np.vstack
    try:
        from numba import cuda
    except ImportError as error:  # numba-cuda missing or broken
        raise GpuUnavailable(f"cannot import numba.cuda ({error}); install it: "
                             "pip install numba-cuda (in a checkout: pip install '.[gpu]')") from None
    if simulated(cuda):
        if allow_simulator:
            return cuda
        raise GpuUnavailable("NUMBA_ENABLE_CUDASIM=1 runs numba's CUDA simulator, which is for tests only; "
                             "unset it on a machine with an NVIDIA GPU")
    if not cuda.is_available():
        raise GpuUnavailable("no CUDA GPU is available (numba.cuda.is_available() is False); on a machine with "
                             "an NVIDIA GPU and its driver, install numba-cuda (in a checkout: pip install '.[gpu]'); "
                             "or use the CPU (the default device)")
    from numba.cuda.cudadrv import nvvm

    install(nvvm)
    return cuda


def simulated(cuda: ModuleType) -> bool:
    """Whether ``cuda`` is numba's CUDA simulator."""
    return bool(getattr(cuda, "simulator_enabled", False)) or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def load_kernel(flat, n_slots: int, layout: Layout) -> ModuleType:
    """The generated kernel module of a program and layout (written to the kernel cache);
    `GpuUnavailable` where it is too long to compile (`limits.MAX_GPU_KERNEL_LINES`)."""
    text = source(flat, n_slots, layout)
    lines = text.count("\n")
    if lines > MAX_GPU_KERNEL_LINES:
        raise GpuUnavailable(f"this network's GPU kernel is {lines:,} lines, over the {MAX_GPU_KERNEL_LINES:,} that "
                             "numba-cuda compiles within a few GB of memory (one of 18,000 lines took "
                             "over 24 GB); run it on the CPU (the default device). docs/gpu.md in the lstmgraph "
                             "source, \"Kernels too long to compile\"")
    key = hashlib.sha256((GPU_SOURCE_VERSION + text).encode()).hexdigest()[:20]
    return load_source(f"lstmgraph_gpu_{key}", text)


#: Python frames numba-cuda may need to compile a kernel: its control-flow passes recurse once
#: per basic block, and the GRU and modern LSTM nets' kernels pass the default 1,000.
COMPILE_RECURSION = 20_000


@contextmanager
def launching(layout: Layout) -> Iterator[None]:
    """Around a kernel's launch, where numba-cuda compiles it the first time: the layout's
    arithmetic (`arithmetic.contraction`) and room for the compiler's recursion."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, COMPILE_RECURSION))
    try:
        with contraction(layout.fused):
            yield
    finally:
        sys.setrecursionlimit(limit)


class GpuPopulation(NamedSlots):
    """The trials of a `CompiledNetwork` on the GPU, ``threads`` threads a trial (32: a warp;
    1: a thread; None: a warp on a GPU, a thread in numba's CUDA simulator, which runs each
    thread as a Python thread, 30 times slower for 32), their slots in ``slots_in`` memory
    during a launch (`source.choose_layout`), with the CPU's arithmetic or ``fused``
    multiply-adds (`arithmetic`)."""

    def __init__(self, network, weights: Weights, rate: float | np.ndarray, threads: int | None = None,
                 slots_in: str = "auto", fused: bool = False):
        trials = next(iter(weights.values())).shape[0]
        self._open(network, trials, threads, slots_in, fused)
        # The slots are built on the host (weights set by name), then copied over once.
        self._host = np.zeros((self.program.n_slots, trials))
        self._host[ONE], self._host[MINUS_ONE] = 1.0, -1.0
        self.set_weights(weights)
        self.V = self._to_device(self._host)
        self._host = None
        self.rates = self.cuda.to_device(np.zeros(trials))
        self.set_rate(rate)

    @classmethod
    def from_slots(cls, network, slots: np.ndarray, rates: np.ndarray, threads: int | None = None,
                   slots_in: str = "auto") -> "GpuPopulation":
        """Trials whose whole slot array (slots, trials) and rates are given: CPU trials moved
        to the device (`slots` gives them back)."""
        population = cls.__new__(cls)
        population._open(network, slots.shape[1], threads, slots_in, False)
        population.V = population._to_device(slots)
        population.rates = population.cuda.to_device(np.ascontiguousarray(rates, dtype=np.float64))
        return population

    def _open(self, network, trials: int, threads: int | None, slots_in: str, fused: bool) -> None:
        self.cuda = cuda_module()
        if threads is None:
            threads = 1 if simulated(self.cuda) else 32
        self.network = network
        self.program = network.program
        self.trials = trials
        self._host: np.ndarray | None = None
        self.layout = choose_layout(self.program.n_slots, threads, simulated(self.cuda), slots_in, fused)
        self.module = load_kernel(network.flat, self.program.n_slots, self.layout)
        self.kernel = self.module.run
        self.R = self.cuda.to_device(np.ascontiguousarray(network.flat.runs))

    def _to_device(self, slots: np.ndarray):
        """A slot array (slots, trials) on the device, in the layout's memory order (`Layout.slot_order`)."""
        return self.cuda.to_device(np.array(slots, dtype=np.float64, order=self.layout.slot_order))

    def slots(self) -> np.ndarray:
        """Every trial's slots, (slots, trials), on the host."""
        return self.V.copy_to_host()

    # -- slots ------------------------------------------------------------------------------
    def _slots(self) -> np.ndarray:
        return self._host if self._host is not None else self.slots()

    def _get(self, rows: slice) -> np.ndarray:
        return np.ascontiguousarray(self._slots()[rows].T)

    def _set(self, rows: slice, values: np.ndarray) -> None:
        host = self._slots()
        host[rows] = np.asarray(values, dtype=np.float64).reshape(self.trials, -1).T
        if self._host is None:
            self.V.copy_to_device(host)

    def rate(self) -> np.ndarray:
        return self.rates.copy_to_host()

    def set_rate(self, rate: float | np.ndarray) -> None:
        self.rates.copy_to_device(np.ascontiguousarray(np.broadcast_to(np.asarray(rate, dtype=np.float64),
                                                                       (self.trials,))))

    def reset(self) -> None:
        """Zero activations and traces (a reset between sequences)."""
        host = self.V.copy_to_host()
        host[self.program.states] = 0.0
        host[self.program.traces] = 0.0
        self.V.copy_to_device(host)

    def finite(self) -> bool:
        return bool(np.isfinite(self.V.copy_to_host()).all())

    def snapshot(self) -> list[np.ndarray]:
        """Every trial's slots and rates, on the host (`restore` puts them back)."""
        return [self.V.copy_to_host(), self.rates.copy_to_host()]

    def restore(self, snapshot: list[np.ndarray]) -> None:
        slots, rates = snapshot
        self.V.copy_to_device(np.array(slots, dtype=np.float64, order=self.layout.slot_order))
        self.rates.copy_to_device(np.ascontiguousarray(rates))

    # -- running ----------------------------------------------------------------------------
    def run(self, inputs: np.ndarray, targets: np.ndarray, momentum: float = 0.0, decay: float = 1.0,
            tolerance: float = 0.0, learn: bool | np.ndarray = True, outputs: np.ndarray | None = None,
            judged: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`Population.run` on the GPU: the same arguments and results."""
        cuda = self.cuda
        inputs = _trials_last(np.asarray(inputs, dtype=np.float64))
        planes = [_trials_last(np.asarray(targets, dtype=np.float64))]
        if judged is not None:
            planes.append(_trials_last(np.asarray(judged, dtype=np.float64)))
        if len({plane.shape[2] for plane in planes}) > 1:  # one shared, one per trial
            planes = [np.broadcast_to(plane, plane.shape[:2] + (self.trials,)) for plane in planes]
        stacked = np.ascontiguousarray(np.stack(planes, axis=1))
        n_outputs = self.network.n_outputs
        record = np.zeros((self.trials, inputs.shape[0] if outputs is not None else 0, n_outputs))
        learns = np.ascontiguousarray(np.broadcast_to(np.asarray(learn, dtype=np.bool_), (self.trials,)))
        steps, sums = cuda.to_device(np.zeros(self.trials, dtype=np.int64)), cuda.to_device(np.zeros(self.trials))
        d_record = cuda.to_device(record)
        blocks = -(-self.trials // self.layout.trials)
        with launching(self.layout):
            self.kernel[blocks, self.layout.block_threads](
                self.R, self.V, cuda.to_device(inputs), cuda.to_device(stacked), self.rates, float(momentum),
                float(decay), float(tolerance), cuda.to_device(learns), cuda.to_device(np.ones(self.trials, dtype=np.bool_)),
                steps, sums, d_record, cuda.to_device(np.zeros(self.trials, dtype=np.bool_)))
        if outputs is not None:
            outputs[:] = d_record.copy_to_host()
        return steps.copy_to_host(), sums.copy_to_host()

    def close(self) -> None:
        """Nothing to release: the device arrays go with the object."""


def _trials_last(values: np.ndarray) -> np.ndarray:
    """A stream as (steps, columns, trials or 1): one shared by every trial keeps one column."""
    return np.ascontiguousarray(values[:, :, None] if values.ndim == 2 else values)
