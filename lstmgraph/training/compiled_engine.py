"""The compiled engine: the program run in the compiled interpreter (engine/compiled) a chunk of
steps at a time: online truncated or exact RTRL, or BPTT (a chunk being one window or sequence,
the interpreter's ``run_segment``), with momentum and the sum-of-squares or cross-entropy loss.

The interpreter decays the rate multiplicatively after every update (``decay``); a
per-sequence schedule sets the rate between sequences, and inverse-time decay after every
step runs one step per call. Non-finite values are looked for after every chunk; the chunk is
then replayed from a snapshot (see `CompiledEngine._diagnose`) to name the step. Its
checkpoint arrays are those every engine writes (`engines`).
"""

from __future__ import annotations

import numpy as np

from ..engine.weights import Weights
from ..limits import COUNT_LIMITS_HINT, MAX_TAPE_BYTES, LimitError
from ..plan import Plan
from ..spec.models import TrainingSpec
from ..tasks import Sequence
from .engines import EngineError, TrainingDiverged, nested
from .numpy_engine import NumpyEngine
from .optim import Optimizer


def _gpu_population(network, weights: Weights, rate: float):
    """The trials on this machine's GPU (engine/gpu); `EngineError` where there is none."""
    from ..engine.gpu import GpuPopulation, GpuUnavailable

    try:
        return GpuPopulation(network, weights, rate)
    except GpuUnavailable as error:
        raise EngineError(f"--device cuda: {error}") from None


class CompiledEngine:
    """The compiled interpreter: weights, velocity, activations and traces live in a
    `Population`'s slot arrays; `weights` and `state` give copies of them by name."""

    name = "compiled"
    #: Steps per call at most: bounds the replay after a divergence (and a snapshot's age).
    CHUNK = 1024

    def __init__(self, plan: Plan, training: TrainingSpec, trials: int, optimizer: Optimizer,
                 weights: Weights, kernel: str | None = None, device: str = "cpu"):
        from ..engine.compiled import CompiledNetwork  # imports numba: only when it is used
        from ..engine.compiled.network import KernelChoiceError

        self.plan = plan
        self.training = training
        self.trials = trials
        self.optimizer = optimizer
        self.learner = None
        #: BPTT: one kernel call per window (``bptt_window``) or whole sequence, one update after it.
        self.segments = training.learning_rule == "bptt"
        try:
            self.network = CompiledNetwork(plan, full_gradient=training.learning_rule == "rtrl",
                                           loss=training.loss, kernel=kernel, segments=self.segments)
        except KernelChoiceError as error:
            raise EngineError(str(error)) from None
        self.device = device
        self.population = (_gpu_population(self.network, weights, optimizer.rate) if device == "cuda"
                           else self.network.population(weights, optimizer.rate))
        self.n_outputs = self.network.n_outputs
        schedule = training.learning_rate_decay
        # The interpreter multiplies the rate by `decay` after every update: multiplicative
        # decay after every step is done inside it; inverse time after every step is not, so it
        # then runs one step per call with the rate set by the optimiser in between.
        # BPTT updates once a segment, so the optimiser decays the rate after every step there.
        self.interpreter_decay = (schedule.factor if schedule.kind == "multiplicative" and schedule.every == "step"
                                  and not self.segments else 1.0)
        if self.segments:
            self.chunk = training.bptt_window  # None: the whole sequence
        else:
            self.chunk = 1 if schedule.kind == "inverse_time" and schedule.every == "step" else self.CHUNK

    @property
    def weights(self) -> Weights:
        return self.population.weights()

    @property
    def state(self) -> dict[str, np.ndarray]:
        return self.population.state()

    def reset(self) -> None:
        self.population.reset()

    @property
    def rate(self) -> float:
        """The learning rate: the optimiser's, which `present` and `train` use."""
        return self.optimizer.rate

    @rate.setter
    def rate(self, value: float) -> None:
        self.optimizer.rate = float(value)
        self.population.set_rate(value)

    def finite(self) -> bool:
        return self.population.finite()

    def present(self, inputs: np.ndarray, targets: np.ndarray, learn: bool,
                tolerance: float = 0.0, judged: np.ndarray | None = None) -> tuple[int, np.ndarray]:
        """The protocols' step loop, for a single trial: run ``inputs`` from the current state,
        updating online toward ``targets`` if ``learn``; with ``tolerance`` > 0 stop after the
        first step with an output that far off its ``judged`` value (default: its target).
        Returns (steps run, outputs of those steps)."""
        outputs = np.zeros((1, len(inputs), self.n_outputs))
        self.population.set_rate(self.optimizer.rate)
        steps, _ = self.population.run(inputs, targets, self.training.momentum, 1.0, tolerance, learn, outputs,
                                       judged)
        return int(steps[0]), outputs[0, :int(steps[0])]

    def close(self) -> None:
        self.population.close()

    # -- training -------------------------------------------------------------------------------
    def train(self, sequence: Sequence, done: int) -> np.ndarray:
        """Train on one sequence, ``done`` steps having been trained before it; returns its
        summed loss per trial (summed per chunk, then over the chunks)."""
        inputs = np.require(sequence.inputs, np.float64, ["C", "W"])
        targets = np.require(sequence.targets, np.float64, ["C", "W"])
        total = np.zeros(self.trials)
        chunk = self.chunk or max(len(inputs), 1)
        if self.segments and min(chunk, len(inputs)) * self.network.tape_slots * self.trials * 8 > MAX_TAPE_BYTES:
            raise LimitError(f"BPTT over {min(chunk, len(inputs)):,} steps of {self.trials:,} trials keeps more than "
                             f"{MAX_TAPE_BYTES:,} bytes of values ({COUNT_LIMITS_HINT}); set training.bptt_window "
                             f"to update after fewer steps")
        for start in range(0, len(inputs), chunk):
            stop = min(start + chunk, len(inputs))
            total += self._chunk(inputs[start:stop], targets[start:stop], done + start)
        return total

    def _snapshot(self):
        return self.population.snapshot(), self.optimizer.rate, self.optimizer.decays

    def _restore_snapshot(self, snapshot) -> None:
        blocks, self.optimizer.rate, self.optimizer.decays = snapshot
        self.population.restore(blocks)

    def _chunk(self, inputs: np.ndarray, targets: np.ndarray, done: int) -> np.ndarray:
        snapshot = self._snapshot()
        outputs = np.zeros((self.trials, len(inputs), self.n_outputs))
        loss = self._run(inputs, targets, outputs)
        if not (np.isfinite(loss).all() and np.isfinite(outputs).all() and self.population.finite()):
            self._restore_snapshot(snapshot)
            raise self._diagnose(inputs, targets, done)
        if self.interpreter_decay != 1.0:
            self.optimizer.rate = float(self.population.rate()[0])
            self.optimizer.decays += len(inputs)
        else:
            for _ in range(len(inputs)):
                self.optimizer.after("step")
        return loss

    def _run(self, inputs: np.ndarray, targets: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """One call over the chunk for every trial; returns the summed loss per trial."""
        self.population.set_rate(self.optimizer.rate)
        _, loss = self.population.run(inputs, targets, self.training.momentum, self.interpreter_decay,
                                      outputs=outputs)
        return loss

    def _diagnose(self, inputs: np.ndarray, targets: np.ndarray, done: int) -> TrainingDiverged:
        """The exact step and place of a divergence inside a chunk. The chunk is replayed from
        its snapshot (the population's state now) with the numpy engine, which checks every
        unit group after every step and the weights after every update, so the report is the
        one ``--engine numpy`` gives (the engines agree to rounding up to there). Should the
        numpy replay stay finite (the engines parted by rounding on the brink), the compiled
        engine replays the chunk one step at a time and the first step with a non-finite
        output, carried activation, weight, trace or loss is reported. The population is left
        as it was at the start of the chunk."""
        optimizer = Optimizer(self.training.learning_rate, self.training.momentum,
                              self.training.learning_rate_decay)
        optimizer.rate, optimizer.decays = self.optimizer.rate, self.optimizer.decays
        if self.training.momentum:
            optimizer.velocity = self.population.velocity()
        replay = NumpyEngine(self.plan, self.training, self.trials, optimizer, self.population.weights())
        replay.state = self.population.state()
        replay.learner.traces = self.population.traces()
        try:
            replay.train(Sequence(inputs, targets), done)
        except TrainingDiverged as diverged:
            return diverged
        return self._diagnose_in_interpreter(inputs, targets, done)

    def _diagnose_in_interpreter(self, inputs: np.ndarray, targets: np.ndarray, done: int) -> TrainingDiverged:
        """Replay the chunk step by step in the interpreter from the current (snapshot) state
        (a BPTT segment learns only at its end: it is named whole)."""
        if self.segments:
            return TrainingDiverged(done + len(inputs), f"the BPTT segment of steps {done + 1}-{done + len(inputs)}")
        snapshot = self._snapshot()
        total = np.zeros(self.trials)
        try:
            for t in range(len(inputs)):
                outputs = np.zeros((self.trials, 1, self.n_outputs))
                total += self._run(inputs[t:t + 1], targets[t:t + 1], outputs)
                if self.interpreter_decay == 1.0:  # else the interpreter has decayed the rate itself
                    self.optimizer.after("step")
                else:
                    self.optimizer.rate = float(self.population.rate()[0])
                where = self._non_finite(outputs[:, 0], total)
                if where is not None:
                    return TrainingDiverged(done + t + 1, where)
            return TrainingDiverged(done + len(inputs), "the summed loss of the chunk")  # not reached
        finally:
            self._restore_snapshot(snapshot)

    def _non_finite(self, outputs: np.ndarray, total: np.ndarray) -> str | None:
        """The first place, in the numpy engine's order of checks, holding NaN or infinity:
        the unit groups the interpreter shows (outputs, and the activations carried to the
        next step) in execution order, then the weights, the traces, the loss."""
        column, output_columns = 0, {}
        for unit in self.plan.units:
            if unit.role == "output":
                output_columns[unit.name] = (column, column + unit.size)
                column += unit.size
        state = self.population.state()
        for name in self.plan.execution_order:
            if name in output_columns:
                a, b = output_columns[name]
                if not np.isfinite(outputs[:, a:b]).all():
                    return f"unit group '{name}'"
            elif name in state and not np.isfinite(state[name]).all():
                return f"unit group '{name}'"
        for name, values in self.population.weights().items():
            if not np.isfinite(values).all():
                return f"the weights of '{name}'"
        for name, values in self.population.velocity().items():
            if not np.isfinite(values).all():
                return f"the weight changes (velocity) of '{name}'"
        for group, values in self.population.traces().items():
            if not np.isfinite(values).all():
                return f"the eligibility traces of '{group}'"
        if not np.isfinite(total).all():
            return "the loss"
        return None

    # -- checkpoints ----------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, np.ndarray]:
        """The numpy engine's arrays; the velocity comes from the slot arrays."""
        arrays: dict[str, np.ndarray] = {f"optimizer/{k}": v for k, v in self.optimizer.state().items()}
        arrays.update({f"weights/{k}": v for k, v in self.weights.items()})
        arrays.update({f"optimizer/velocity/{k}": v for k, v in self.population.velocity().items()})
        arrays.update({f"state/{k}": v for k, v in self.state.items()})
        arrays.update({f"traces/{group}": data for group, data in self.population.traces().items()})
        return arrays

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.optimizer.restore(nested(arrays, "optimizer/"))
        self.population.set_rate(self.optimizer.rate)
        self.population.set_weights(nested(arrays, "weights/"))
        self.population.set_velocity(nested(arrays, "optimizer/velocity/"))
        self.optimizer.velocity = {}  # the slot arrays hold it
        self.population.set_state(nested(arrays, "state/"))
        self.population.set_traces(nested(arrays, "traces/"))
