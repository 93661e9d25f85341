"""Run and train a plan with its generated numba kernel.

`CompiledNetwork` packs the numpy engine's weights, state and traces into the kernel's flat
buffers (one row per trial) and back, and runs chunks of a stream inside compiled code:
forward step, truncated (or exact) RTRL, online momentum update, and an optional success test
that stops each trial at its first error (``tolerance``: |output - target| must stay below it).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...plan import Plan
from ..simulator import Simulator
from ..weights import Weights
from .codegen import KernelSource
from .kernel import load_kernel


class CompiledNetwork:
    def __init__(self, plan: Plan, full_gradient: bool = False, loss: str = "sum_of_squares",
                 threads: int | None = None):
        self.plan = plan
        self.threads = threads or os.cpu_count() or 1
        self.sim = Simulator(plan, full_gradient=full_gradient)
        self.source = KernelSource(self.sim, loss)
        self.buffers = self.source.buffers
        self.layout = self.source.layout
        self.kernel = load_kernel(self.source).run

    # -- packing ------------------------------------------------------------------------------
    def pack_weights(self, weights: Weights) -> tuple[np.ndarray, np.ndarray]:
        trials = next(iter(weights.values())).shape[0]
        theta = np.zeros((trials, max(self.buffers.n_theta, 1)))
        fixed = np.zeros((trials, max(self.buffers.n_fixed, 1)))
        for connection in self.plan.connections:
            values = weights[connection.name].reshape(trials, -1)
            if connection.trainable:
                start = self.buffers.theta[connection.name]
                theta[:, start:start + connection.size] = values
            else:
                start = self.buffers.fixed[connection.name]
                fixed[:, start:start + connection.size] = values
        return theta, fixed

    def unpack_weights(self, theta: np.ndarray, fixed: np.ndarray) -> Weights:
        weights = {}
        for connection in self.plan.connections:
            buffer, start = ((theta, self.buffers.theta[connection.name]) if connection.trainable
                             else (fixed, self.buffers.fixed[connection.name]))
            weights[connection.name] = buffer[:, start:start + connection.size].reshape(
                (len(buffer),) + connection.shape).copy()
        return weights

    def new_state(self, trials: int) -> tuple[np.ndarray, np.ndarray]:
        """Zero activations and traces (a reset)."""
        return (np.zeros((trials, self.buffers.n_act)),
                np.zeros((trials, max(self.buffers.n_traces, 1))))

    def unpack_traces(self, traces: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        """Traces in the numpy engine's form: unit -> group -> (trials, units, width)."""
        result: dict[str, dict[str, np.ndarray]] = {}
        for (unit, group), start in self.buffers.traces.items():
            size = self.sim.units[unit].size
            width = self.buffers.width[(unit, group)]
            result.setdefault(unit, {})[group] = traces[:, start:start + size * width].reshape(-1, size, width).copy()
        return result

    def pack_traces(self, traces: dict[str, dict[str, np.ndarray]], trials: int) -> np.ndarray:
        """The inverse of `unpack_traces`: the numpy engine's traces (unit -> group ->
        (trials, units, width)) in the kernel's flat buffer; entries not given are zero."""
        flat = np.zeros((trials, max(self.buffers.n_traces, 1)))
        for (unit, group), start in self.buffers.traces.items():
            data = traces.get(unit, {}).get(group)
            if data is not None:
                count = self.sim.units[unit].size * self.buffers.width[(unit, group)]
                flat[:, start:start + count] = np.asarray(data, dtype=np.float64).reshape(trials, count)
        return flat

    def unpack_state(self, prev: np.ndarray) -> dict[str, np.ndarray]:
        """The activations the next step reads through delay-1 connections, in the numpy
        engine's form (`Simulator.zero_state`): group -> (trials, size)."""
        return {name: prev[:, self.buffers.act[name]:self.buffers.act[name] + self.sim.units[name].size].copy()
                for name in self.sim.delayed}

    def pack_state(self, state: dict[str, np.ndarray], trials: int) -> np.ndarray:
        """The inverse of `unpack_state`: the ``prev`` buffer (groups not given are zero)."""
        prev = np.zeros((trials, self.buffers.n_act))
        for name in self.sim.delayed:
            if name in state:
                start = self.buffers.act[name]
                prev[:, start:start + self.sim.units[name].size] = np.asarray(state[name], dtype=np.float64)
        return prev

    # -- running ------------------------------------------------------------------------------
    def run(self, theta: np.ndarray, fixed: np.ndarray, velocity: np.ndarray, prev: np.ndarray,
            traces: np.ndarray, inputs: np.ndarray, targets: np.ndarray, rate: np.ndarray,
            momentum: float = 0.0, decay: float = 1.0, tolerance: float = 0.0, learn: bool = True,
            outputs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Run the steps of ``inputs`` (steps, n_inputs) for every trial, updating the buffers
        in place; each trial stops after its first step with an error >= tolerance (if > 0).
        ``outputs`` (trials, steps, n_outputs), if given, receives every step's output (the
        prediction before that step's update). Returns (steps run, summed loss) per trial."""
        trials = theta.shape[0]
        if outputs is None:
            outputs = np.zeros((trials, 0, self.sim.n_outputs))
        steps = np.zeros(trials, dtype=np.int64)
        loss = np.zeros(trials)
        arguments = (theta, fixed, velocity, prev, traces,
                     np.ascontiguousarray(inputs, dtype=np.float64),
                     np.ascontiguousarray(targets, dtype=np.float64),
                     rate, float(momentum), float(decay), float(tolerance), bool(learn), steps, loss,
                     outputs)
        workers = min(self.threads, trials)
        if workers <= 1:
            self.kernel(0, trials, *arguments)
        else:
            # The kernel releases the GIL: blocks of trials run on the cores at once.
            bounds = np.linspace(0, trials, workers + 1).astype(int)
            with ThreadPoolExecutor(workers) as pool:
                jobs = [pool.submit(self.kernel, int(a), int(b), *arguments)
                        for a, b in zip(bounds[:-1], bounds[1:])]
                for job in jobs:
                    job.result()
        return steps, loss
