"""Run and train a plan with the compiled executor: the interpreter or the specialised kernel.

`CompiledNetwork` lowers a plan once and picks its kernel: the interpreter (compiled once per
installation, runs any program) or the kernel specialised to the program (`specialised.py`,
compiled once per program and lane width; bit-identical results, several times faster). A
`Population` holds the slot arrays of its trials in blocks of lanes (one C-contiguous
``(slots, lanes)`` array per block, trials innermost, blocks spread over threads) and runs
chunks of a stream inside compiled code: the forward step, truncated
(or exact) RTRL, the online momentum update, and an optional success test that stops each trial
after its first error (``tolerance``: |output - target| must stay below it). Weights, states,
traces and velocities go in and out by name, in the numpy engine's forms.
"""

from __future__ import annotations

import hashlib
import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property

import numpy as np

from ...plan import Plan
from ...program import MINUS_ONE, ONE, Program, lower
from ..weights import Weights, check_weights
from . import specialised
from .interpreter import flatten, load
from .lanes import LaneBlock
from .named_slots import NamedSlots

#: Trials per block of lanes in the interpreter: wide enough for SIMD across trials, small
#: enough that a block's slots stay in the cache. The specialised kernel's blocks have one lane
#: or `specialised.WIDTH`.
LANES = 32

#: The kernels `CompiledNetwork` can run: ``auto`` is the specialised kernel where numba's cache
#: already holds it and the interpreter otherwise, so it never waits for a compilation;
#: ``specialised`` compiles it on first use if needed.
KERNELS = ("auto", "interpreter", "specialised")

#: Trial-steps from which compiling the specialised kernel first pays off (measured on the CERG
#: net, docs/performance.md: about 20-60 s of compilation against about 7 us saved per step).
SPECIALISE_FROM_STEPS = 5_000_000


class KernelChoiceError(ValueError):
    """A kernel name (argument or ``$LSTMGRAPH_KERNEL``) that is not one of `KERNELS`."""


def kernel_for(trial_steps: int) -> str:
    """The kernel to ask for in a job of about ``trial_steps`` steps over all its trials (all
    the trials of a `reproduce` row share one compilation): ``specialised`` where its
    compilation pays off, else ``auto``."""
    return "specialised" if trial_steps >= SPECIALISE_FROM_STEPS else "auto"


class CompiledNetwork:
    """A plan lowered for one learning rule and loss, with the interpreter loaded; ``kernel``
    (`KERNELS`; default ``$LSTMGRAPH_KERNEL`` or ``auto``) says which kernel its populations
    run."""

    def __init__(self, plan: Plan, full_gradient: bool = False, loss: str = "sum_of_squares",
                 threads: int | None = None, kernel: str | None = None, segments: bool = False):
        # The environment variable LSTMGRAPH_KERNEL sets the default (e.g. for `lstmgraph train`).
        if kernel is None and os.environ.get("LSTMGRAPH_KERNEL"):
            kernel = os.environ["LSTMGRAPH_KERNEL"]
            if kernel not in KERNELS:
                raise KernelChoiceError(f"LSTMGRAPH_KERNEL must be one of {', '.join(KERNELS)}, not {kernel!r}")
        kernel = kernel or "auto"
        if kernel not in KERNELS:
            raise KernelChoiceError(f"kernel must be one of {', '.join(KERNELS)}, not {kernel!r}")
        self.plan = plan
        self.kernel = kernel
        self.threads = threads or os.cpu_count() or 1
        #: Learning by BPTT, a kernel call being one segment (the interpreter's ``run_segment``,
        #: or for one lane the specialised kernel's BPTT form).
        self.segments = segments
        self.program: Program = lower(plan, full_gradient, loss, traces=not segments, segments=segments)
        self.flat = flatten(self.program)
        self.interpreter = load()
        self.n_outputs = self.program.n_outputs
        self.n_inputs = self.program.n_inputs
        self._specialised: dict[int, specialised.Kernel] = {}
        self._cached: dict[int, bool] = {}

    @property
    def tape_slots(self) -> int:
        """Slots BPTT keeps per step and trial: every value below the weights."""
        return self.program.regions[("theta", "")]

    @property
    def interpreter_run(self):
        """The interpreter's kernel for this program: ``run``, or ``run_segment`` (BPTT)."""
        return self.interpreter.run_segment if self.segments else self.interpreter.run

    @cached_property
    def program_digest(self) -> str:
        """A digest of the program as the executors run it (its flat arrays and its slots): nets
        that share it run in one block of lanes or one GPU population, whatever their weights,
        rates or data."""
        digest = hashlib.sha256()
        for array in self.flat.arguments():
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
        program = self.program
        digest.update(repr((program.n_slots, program.states, program.traces, program.theta, self.n_inputs,
                            self.n_outputs)).encode())
        return digest.hexdigest()

    def uses_specialised(self, width: int = 1) -> bool:
        """Whether blocks of ``width`` lanes run the specialised kernel (for ``auto``: whether
        numba's cache holds it, checked once). BPTT's specialised kernel runs one lane only."""
        if self.segments and width != 1:
            return False
        if self.kernel == "auto":
            if width not in self._cached:
                self._cached[width] = width in self._specialised or specialised.cached(self.flat, width)
            return self._cached[width]
        return self.kernel == "specialised"

    def specialised(self, width: int = 1) -> specialised.Kernel:
        """The specialised kernel for blocks of ``width`` lanes (loaded once; compiled on its
        first call if numba's cache does not hold it)."""
        if width not in self._specialised:
            self._specialised[width] = specialised.load(self.flat, width)
        return self._specialised[width]

    def population(self, weights: Weights, rate: float | np.ndarray, lanes: int | None = None) -> "Population":
        """Trials with these weights (trial axis first), zero state and traces, and learning
        rate ``rate`` (one, or one per trial)."""
        return Population(self, weights, rate, lanes)


class Population(NamedSlots):
    """The trials of a `CompiledNetwork`: every per-trial number in slot arrays."""

    def __init__(self, network: CompiledNetwork, weights: Weights, rate: float | np.ndarray,
                 lanes: int | None = None):
        self.network = network
        self.program = network.program
        self.trials = check_weights(network.program.plan, weights)
        if lanes is None:
            per_thread = -(-self.trials // network.threads)
            lanes = max(1, min(LANES, per_thread))
        # The specialised kernel runs one trial, or `specialised.WIDTH` side by side (the last
        # block's spare lanes idle).
        width = 1 if lanes == 1 else specialised.WIDTH
        #: "specialised" or "interpreter", and the compiled ``run`` of this population's blocks
        #: (the same arguments, bit-identical results).
        self.kernel = "specialised" if network.uses_specialised(width) else "interpreter"
        self.width = width if self.kernel == "specialised" else None
        if self.width is not None:
            lanes = width
        run = network.specialised(width).run if self.kernel == "specialised" else network.interpreter_run
        bounds = list(range(0, self.trials, lanes)) + [self.trials]
        self.bounds = list(zip(bounds[:-1], bounds[1:]))
        #: The trials' slots and rates in blocks of lanes, trials ``bounds[i]`` in ``lanes[i]``.
        self.lanes: list[LaneBlock] = []
        for first, last in self.bounds:
            block = np.zeros((self.program.n_slots, self.width or last - first))
            block[ONE], block[MINUS_ONE] = 1.0, -1.0
            self.lanes.append(LaneBlock(network, run, block, np.zeros(block.shape[1])))
        self.set_rate(rate)
        self.set_weights(weights)
        self.pool = ThreadPoolExecutor(min(network.threads, len(self.lanes))) \
            if network.threads > 1 and len(self.lanes) > 1 else None

    def _slots(self) -> list[np.ndarray]:
        return [lane.V for lane in self.lanes]

    def _rates(self) -> list[np.ndarray]:
        return [lane.rates for lane in self.lanes]

    def _get(self, rows: slice) -> np.ndarray:
        """Rows of every trial, (trials, rows)."""
        return np.concatenate([block[rows, :last - first].T for (first, last), block in zip(self.bounds, self._slots())],
                              axis=0)

    def _set(self, rows: slice, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(self.trials, -1)
        for (first, last), block in zip(self.bounds, self._slots()):
            block[rows, :last - first] = values[first:last].T

    def rate(self) -> np.ndarray:
        return np.concatenate([rate[:last - first] for (first, last), rate in zip(self.bounds, self._rates())])

    def set_rate(self, rate: float | np.ndarray) -> None:
        """Every trial's learning rate: one finite rate >= 0, or one per trial."""
        if type(rate) is float and 0.0 <= rate < math.inf:  # (the engines' call before every chunk: no array made)
            for (first, last), values in zip(self.bounds, self._rates()):
                values[:last - first] = rate
            return
        given = np.asarray(rate)
        if given.dtype.kind not in "iuf" or given.shape not in ((), (self.trials,)) or \
                not (np.isfinite(given).all() and (given >= 0).all()):
            raise ValueError(f"rate: a finite number >= 0, or one per trial ({self.trials}), not {rate!r:.80}")
        rate = np.broadcast_to(given.astype(np.float64), (self.trials,))
        for (first, last), values in zip(self.bounds, self._rates()):
            values[:last - first] = rate[first:last]

    def lane_block(self, index: int, rate: float) -> LaneBlock:
        """Block ``index`` (its own arrays, no copy), every lane at ``rate``."""
        self.set_rate(rate)
        return self.lanes[index]

    def reset(self) -> None:
        """Zero activations and traces (a reset between sequences)."""
        for block in self._slots():
            block[self.program.states] = 0.0
            block[self.program.traces] = 0.0

    def finite(self) -> bool:
        return all(bool(np.isfinite(block).all()) for block in self._slots())

    def snapshot(self) -> list[np.ndarray]:
        return [block.copy() for block in self._slots()] + [rate.copy() for rate in self._rates()]

    def restore(self, snapshot: list[np.ndarray]) -> None:
        count = len(self.lanes)
        for block, saved in zip(self._slots(), snapshot[:count]):
            block[:] = saved
        for rate, saved in zip(self._rates(), snapshot[count:]):
            rate[:] = saved

    # -- running ----------------------------------------------------------------------------
    def run(self, inputs: np.ndarray, targets: np.ndarray, momentum: float = 0.0, decay: float = 1.0,
            tolerance: float = 0.0, learn: bool | np.ndarray = True, outputs: np.ndarray | None = None,
            judged: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Run the steps of ``inputs`` (steps, n_inputs), the same for every trial, or
        (steps, n_inputs, trials); each trial stops after its first step with an output off its
        ``judged`` value (default: its target; NaN: not judged) by ``tolerance`` or more (if >
        0). ``outputs`` (trials, steps, n_outputs), if given, receives every step's output (the
        prediction before that step's update). ``learn``: for every trial, or one flag per
        trial (the others run forward only). Returns (steps run, summed loss) per trial."""
        for name, value in (("momentum", momentum), ("decay", decay), ("tolerance", tolerance)):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(value):
                raise ValueError(f"{name}: a finite number, not {value!r:.80}")
        inputs = np.asarray(inputs, dtype=np.float64)
        targets = np.asarray(targets, dtype=np.float64)
        planes = (targets,) if judged is None else (targets, np.asarray(judged, dtype=np.float64))
        if outputs is None:
            outputs = np.zeros((self.trials, 0, self.network.n_outputs))
        self._check_stream(inputs, planes, outputs)
        learns = np.broadcast_to(np.asarray(learn, dtype=np.bool_), (self.trials,))
        steps = np.zeros(self.trials, dtype=np.int64)
        loss = np.zeros(self.trials)
        jobs = [(index, first, last) for index, (first, last) in enumerate(self.bounds)]
        arguments = self.network.flat.arguments()

        def block_run(index: int, first: int, last: int) -> None:
            lane_block = self.lanes[index]
            width, count = lane_block.width, last - first
            active = np.zeros(width, dtype=np.bool_)
            active[:count] = True
            learning = np.zeros(width, dtype=np.bool_)
            learning[:count] = learns[first:last]
            if width == count:
                lane_block.kernel(*arguments, lane_block.V, _lanes(inputs, first, last), _planes(planes, first, last),
                          lane_block.rates, float(momentum), float(decay), float(tolerance), learning, active,
                          steps[first:last], loss[first:last], outputs[first:last], np.zeros(width, dtype=np.bool_),
                          False)
                return
            # A block with idle lanes (never active: they neither learn nor count); their
            # inputs repeat the last trial's.
            block_steps, block_loss = np.zeros(width, dtype=np.int64), np.zeros(width)
            block_outputs = np.zeros((width,) + outputs.shape[1:])
            lane_block.kernel(*arguments, lane_block.V, _lanes(inputs, first, last, width),
                      _planes(planes, first, last, width), lane_block.rates, float(momentum), float(decay),
                      float(tolerance), learning, active, block_steps, block_loss, block_outputs,
                      np.zeros(width, dtype=np.bool_), False)
            steps[first:last], loss[first:last] = block_steps[:count], block_loss[:count]
            outputs[first:last] = block_outputs[:count]

        if self.pool is None:
            for job in jobs:
                block_run(*job)
        else:
            for future in [self.pool.submit(block_run, *job) for job in jobs]:
                future.result()
        return steps, loss

    def _check_stream(self, inputs: np.ndarray, planes: tuple[np.ndarray, ...], outputs: np.ndarray) -> None:
        """`ValueError` naming the shape expected unless ``inputs`` and the target ``planes`` are
        (steps, width) or (steps, width, trials) over the same steps and ``outputs`` holds them
        (a buffer of more steps too; the kernels index them unchecked)."""
        steps = len(inputs) if inputs.ndim else 0
        for what, values, width in (("inputs", inputs, self.network.n_inputs),
                                    *((name, plane, self.network.n_outputs) for name, plane in zip(("targets", "judged"), planes))):
            if values.shape not in ((steps, width), (steps, width, self.trials)):
                raise ValueError(f"{what} have shape {values.shape}; expected ({steps}, {width}) or "
                                 f"({steps}, {width}, {self.trials}): (steps, width), or (steps, width, trials)")
        trials, held, width = outputs.shape if outputs.ndim == 3 else (None, None, None)
        if trials != self.trials or width != self.network.n_outputs or 0 < held < steps:
            raise ValueError(f"outputs have shape {outputs.shape}; expected ({self.trials}, {steps}, "
                             f"{self.network.n_outputs}): (trials, steps, n_outputs), steps or more (0: none kept)")

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


def _planes(planes: tuple[np.ndarray, ...], first: int, last: int, width: int | None = None) -> np.ndarray:
    """The kernel's targets: (steps, planes, columns, lanes), the targets and, if given apart,
    the judged values (`_lanes` of each; one plane is a view, no copy)."""
    if len(planes) == 1:
        return _lanes(planes[0], first, last, width)[:, None]
    return np.stack([_lanes(values, first, last, width) for values in planes], axis=1)


def _lanes(values: np.ndarray, first: int, last: int, width: int | None = None) -> np.ndarray:
    """A stream as (steps, columns, lanes): shared by every lane, or the lanes' own; ``width``
    lanes in all (the last trial's data repeated). Always C-contiguous and writable: numba
    compiles a kernel once per array layout and read-only flag, 10 s or more each. The kernels
    only read it, so one lane's shared stream is a view of ``values`` where it is both already."""
    width = width or last - first
    if values.ndim == 2:
        if width == 1:  # a view where the layout allows: a 10^6-step stream that stops early costs no copy
            return np.require(values[:, :, None], requirements=["C", "W"])
        return np.repeat(values[:, :, None], width, axis=2)
    own = values[:, :, first:last]
    if width != last - first:
        own = np.concatenate([own, np.repeat(own[:, :, -1:], width - (last - first), axis=2)], axis=2)
    return np.require(own, requirements=["C", "W"])
