"""The numpy reference engine (engine/simulator.py, traces.py, bptt.py): it does everything,
truncated and exact RTRL with online or per-sequence updates, and BPTT. Its checkpoint arrays are
those every engine writes (`engines`)."""

from __future__ import annotations

import numpy as np

from ..engine.bptt import bptt_gradient
from ..engine.simulator import Simulator
from ..engine.traces import RealTimeRecurrentLearning
from ..engine.weights import Weights
from ..plan import Plan
from ..spec.models import TrainingSpec
from ..tasks import Sequence
from .engines import TrainingDiverged, nested
from .optim import Optimizer


class NumpyEngine:
    """The reference engine: `Simulator`, `RealTimeRecurrentLearning`, `bptt_gradient`."""

    name = "numpy"

    def __init__(self, plan: Plan, training: TrainingSpec, trials: int, optimizer: Optimizer,
                 weights: Weights):
        self.training = training
        self.trials = trials
        self.optimizer = optimizer
        self.sim = Simulator(plan, full_gradient=training.learning_rule == "rtrl")
        self.learner = (RealTimeRecurrentLearning(self.sim, trials)
                        if training.learning_rule != "bptt" else None)
        self.weights = weights
        self.state = self.sim.zero_state(trials)

    def reset(self) -> None:
        self.state = self.sim.zero_state(self.trials)
        if self.learner is not None:
            self.learner.reset(self.trials)

    def train(self, sequence: Sequence, done: int) -> np.ndarray:
        """Train on one sequence, ``done`` steps having been trained before it; returns its
        summed loss per trial. Raises `TrainingDiverged` naming the step (counted from 1)."""
        if self.learner is not None:
            return self._rtrl(sequence, done)
        return self._bptt(sequence, done)

    def _rtrl(self, sequence: Sequence, done: int) -> np.ndarray:
        online = self.training.update_mode == "online"
        total = np.zeros(self.trials)
        accumulated = None
        step = done
        for x, target in zip(sequence.inputs, sequence.targets):
            loss, grads, self.state, record = self.learner.step(
                self.weights, self.state, x, target, self.training.loss)
            step += 1
            for name in self.sim.order:
                if not np.isfinite(record.y[name]).all():
                    raise TrainingDiverged(step, f"unit group '{name}'")
            total += loss
            if online:
                self._update(grads, step)
            else:
                accumulated = grads if accumulated is None else {k: accumulated[k] + grads[k] for k in grads}
            self.optimizer.after("step")
        if accumulated is not None:
            self._update(accumulated, step)
        return total

    def _bptt(self, sequence: Sequence, done: int) -> np.ndarray:
        window = self.training.bptt_window or len(sequence)
        total = np.zeros(self.trials)
        step = done
        for start in range(0, len(sequence), window):
            stop = min(start + window, len(sequence))
            loss, grads, self.state = bptt_gradient(
                self.sim, self.weights, sequence.inputs[start:stop], sequence.targets[start:stop],
                self.training.loss, self.state)
            step += stop - start
            for name, values in self.state.items():
                if not np.isfinite(values).all():
                    raise TrainingDiverged(step, f"unit group '{name}' (steps {step - (stop - start) + 1}-{step})")
            total += loss
            self._update(grads, step)
            for _ in range(stop - start):
                self.optimizer.after("step")
        return total

    def _update(self, grads: dict[str, np.ndarray], step: int) -> None:
        self.optimizer.apply(self.weights, grads)
        for name in grads:
            if not np.isfinite(self.weights[name]).all():
                raise TrainingDiverged(step, f"the weights of '{name}'")

    # -- checkpoints ----------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, np.ndarray]:
        """The network's whole state: weights, the optimiser's state (velocity, rate),
        activations and traces."""
        arrays: dict[str, np.ndarray] = {f"optimizer/{k}": v for k, v in self.optimizer.state().items()}
        arrays.update({f"weights/{k}": v for k, v in self.weights.items()})
        arrays.update({f"state/{k}": v for k, v in self.state.items()})
        if self.learner is not None:
            arrays.update({f"traces/{group}": data for group, data in self.learner.traces.items()})
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.optimizer.restore(nested(arrays, "optimizer/"))
        self.weights = nested(arrays, "weights/")
        self.state = nested(arrays, "state/")
        if self.learner is not None:
            self.learner.reset(self.trials)
            self.learner.traces.update(nested(arrays, "traces/"))

