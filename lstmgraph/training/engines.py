"""The two engines a `Trainer` can train with: the numpy reference engine and the compiled one.

Both train one sequence at a time on the same weights, optimiser state, activations and
eligibility traces, and checkpoint them in the same arrays (``weights/<connection>``,
``optimizer/velocity/<connection>``, ``state/<group>``, ``traces/<group>``), so a
checkpoint written by one can be restored by the other.

- `NumpyEngine` (engine/simulator.py, traces.py, bptt.py) does everything: truncated and
  exact RTRL with online or per-sequence updates, and BPTT.
- `CompiledEngine` runs the program in the compiled interpreter (engine/compiled) a chunk of
  steps at a time: online truncated or exact RTRL, or BPTT (a chunk being one window or
  sequence, the interpreter's ``run_segment``), with momentum and the sum-of-squares or
  cross-entropy loss. The interpreter decays the rate multiplicatively after every update (``decay``); a
  per-sequence schedule sets the rate between sequences, and inverse-time decay after every
  step runs one step per call. Non-finite values are looked for after every chunk;
  the chunk is then replayed from a snapshot (see `CompiledEngine._diagnose`) to name the step.

`select_engine` decides which one a spec gets.
"""

from __future__ import annotations

import numpy as np

from ..engine.bptt import bptt_gradient
from ..engine.devices import DEVICES
from ..engine.simulator import Simulator
from ..engine.traces import RealTimeRecurrentLearning
from ..engine.weights import Weights
from ..limits import COUNT_LIMITS_HINT, MAX_TAPE_BYTES, LimitError
from ..plan import Plan
from ..program.lower import lower
from ..spec.models import TrainingSpec
from ..tasks import Sequence
from .optim import Optimizer

#: The engines a run trains with (run.json's ``engine``).
ENGINE_NAMES = ("compiled", "numpy")
#: What a run may ask for: one of them, or ``auto`` (`select_engine` decides).
ENGINES = ("auto", *ENGINE_NAMES)


class EngineError(ValueError):
    """The engine or device asked for cannot train this spec here (the message says why)."""


class TrainingDiverged(Exception):
    """NaN or infinity appeared; names the step and the unit group (or weights)."""

    def __init__(self, step: int, where: str):
        self.step = step
        self.where = where
        super().__init__(f"non-finite values at step {step} in {where}")


def compiled_unsupported(plan: Plan, training: TrainingSpec) -> str | None:
    """Why the compiled engine cannot train this training section, or None if it can."""
    if training.optimizer.name != "sgd" or training.clip_norm is not None:
        return "the compiled engine updates by momentum SGD only, not adam or clip_norm"
    if training.update_mode != "online" and training.learning_rule != "bptt":
        return "the compiled engine updates RTRL online only, not once per sequence (update: sequence)"
    if training.loss == "cross_entropy":
        for unit in plan.units:
            if unit.role == "output" and unit.activation not in ("softmax", "logistic"):
                return (f"cross_entropy needs softmax or logistic outputs; '{unit.name}' is "
                        f"{unit.activation}")
    return None


def select_engine(plan: Plan, training: TrainingSpec, requested: str = "auto",
                  device: str = "cpu") -> tuple[str, str | None]:
    """(engine, note): ``auto`` takes the compiled engine wherever it can train the spec and
    the numpy engine otherwise, the note saying why; ``compiled`` raises `EngineError` where
    it cannot. On ``cuda`` only the compiled engine runs (its GPU executor)."""
    if requested not in ENGINES:
        raise EngineError(f"unknown engine {requested!r}; expected one of {', '.join(ENGINES)}")
    if device not in DEVICES:
        raise EngineError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    if device != "cpu" and requested == "numpy":
        raise EngineError(f"the numpy engine runs on the CPU only; leave out --engine numpy for --device {device}")
    if device != "cpu" and training.learning_rule == "bptt":
        raise EngineError(f"on --device {device} trials learn by RTRL only, not bptt; train it on the CPU "
                          f"(leave out --device)")
    if requested == "numpy":
        return "numpy", None
    reason = compiled_unsupported(plan, training)
    if reason is None:
        return "compiled", None
    if device != "cpu":
        raise EngineError(f"on --device {device} only the compiled engine trains, and it cannot train this spec: "
                          f"{reason}; train it on the CPU (leave out --device)")
    if requested == "compiled":
        raise EngineError(f"the compiled engine cannot train this spec: {reason}; "
                          f"use --engine numpy (or auto)")
    return "numpy", f"training with the numpy engine: {reason}"


def check_program(plan: Plan, checked: set[str] | None = None) -> None:
    """`LimitError` where the program ``plan``'s training runs is over a limit (exact RTRL's
    traces, `limits.MAX_TRACE_TERMS`): the net lowered as its engine will lower it, so a run's
    folder is refused before it is written. BPTT keeps no traces and is not lowered here.
    ``checked``: the nets already lowered, shared across calls, so settings of one net and
    learning rule (a sweep over rates) are lowered once."""
    training = plan.training
    if training is None or training.learning_rule == "bptt":
        return
    key = program_key(plan)
    if checked is not None:
        if key in checked:
            return
        checked.add(key)
    lower(plan, full_gradient=training.learning_rule == "rtrl", loss=training.loss)


def program_key(plan: Plan) -> str:
    """What the program ``plan``'s training runs is lowered from: plans alike in it run one
    program (settings of a sweep over rates, say), so one kernel."""
    training = plan.training
    return repr((plan.units, plan.connections, plan.execution_order,
                 training and training.learning_rule, training and training.loss))


def _gpu_population(network, weights: Weights, rate: float):
    """The trials on this machine's GPU (engine/gpu); `EngineError` where there is none."""
    from ..engine.gpu import GpuPopulation, GpuUnavailable

    try:
        return GpuPopulation(network, weights, rate)
    except GpuUnavailable as error:
        raise EngineError(f"--device cuda: {error}") from None


def _nested(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {key[len(prefix):]: np.array(value) for key, value in arrays.items() if key.startswith(prefix)}


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
        self.optimizer.restore(_nested(arrays, "optimizer/"))
        self.weights = _nested(arrays, "weights/")
        self.state = _nested(arrays, "state/")
        if self.learner is not None:
            self.learner.reset(self.trials)
            self.learner.traces.update(_nested(arrays, "traces/"))


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
        self.optimizer.restore(_nested(arrays, "optimizer/"))
        self.population.set_rate(self.optimizer.rate)
        self.population.set_weights(_nested(arrays, "weights/"))
        self.population.set_velocity(_nested(arrays, "optimizer/velocity/"))
        self.optimizer.velocity = {}  # the slot arrays hold it
        self.population.set_state(_nested(arrays, "state/"))
        self.population.set_traces(_nested(arrays, "traces/"))
