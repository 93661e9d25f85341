"""The numpy engine's view of a plan: weights and states by name, steps run by the program.

Every unit group v computes, in the plan's execution order (Gers, Schraudolph & Schmidhuber
2002, sec. 2, with its corrected time indices)::

    net_v(t) = sum over connections c into v of the products the connection's pattern and gate
               side define (lstmgraph.operations): weight x gate(t) x y_source(t - delay_c)
    y_v(t)   = f_v(net_v(t))

`Simulator` lowers the plan (`lstmgraph.program.lower`) and runs the program's forward phase
with the numpy executor; it converts between the named arrays users hold (`Weights`, states
``group -> (trials, size)``) and the program's slots. Every array carries a leading trial axis.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np

from ..graph.units import Unit
from ..limits import COUNT_LIMITS_HINT, MAX_RECORD_BYTES, LimitError, is_whole_number
from ..plan import Plan, require_plan
from ..program import Program, lower
from .executor import new_values, run_ops
from .weights import Weights, check_weights


class _Groups(Mapping):
    """Read-only ``group -> (trials, size)`` view of one region kind of a slot array."""

    def __init__(self, program: Program, values: np.ndarray, kind: str, names):
        self._program, self._values, self._kind, self._names = program, values, kind, tuple(names)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        rows = self._program.rows(self._kind, name, self._program.plan.unit[name].size)
        return self._values[rows].T

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class StepRecord:
    """What one forward step computed: the slot array after the step's forward phase, with
    ``y`` (every group's activations) and ``net`` (net inputs of computed groups) by name."""

    def __init__(self, program: Program, values: np.ndarray):
        self.values = values
        plan = program.plan
        self.y = _Groups(program, values, "y", [u.name for u in plan.units])
        self.net = _Groups(program, values, "net", plan.execution_order)


def require_simulator(value, caller: str) -> "Simulator":
    """``value`` if it is a `Simulator`, else a `TypeError` naming ``caller`` and how to make one."""
    if not isinstance(value, Simulator):
        raise TypeError(f"{caller} takes a Simulator, not a {type(value).__name__}: {caller}(Simulator(plan), ...)")
    return value


class Simulator:
    """Forward steps of a plan with the numpy executor.

    ``full_gradient=True`` treats every connection as gradient-carrying (exact RTRL / full
    BPTT); otherwise each connection's ``gradient`` flag decides. ``program(loss, traces,
    segments)`` gives the lowered program the learning rules run.
    """

    def __init__(self, plan: Plan, full_gradient: bool = False):
        self.plan = require_plan(plan, "Simulator")
        self.full_gradient = full_gradient
        self.units: dict[str, Unit] = dict(plan.unit)
        self.order = plan.execution_order
        self.delayed = plan.delayed_sources
        self._programs: dict[tuple[str, bool, bool], Program] = {}
        self.inputs = list(self.forward_program.inputs)
        self.outputs = list(self.forward_program.outputs)
        self.n_inputs = self.forward_program.n_inputs
        self.n_outputs = self.forward_program.n_outputs

    def program(self, loss: str = "sum_of_squares", traces: bool = False, segments: bool = False) -> Program:
        key = (loss, traces, segments)
        if key not in self._programs:
            self._programs[key] = lower(self.plan, self.full_gradient, loss, traces, segments)
        return self._programs[key]

    @cached_property
    def forward_program(self) -> Program:
        return self.program()

    # -- named arrays <-> slots ----------------------------------------------------------------
    def values(self, program: Program, weights: Weights, state: Mapping[str, np.ndarray] | None) -> np.ndarray:
        """A slot array holding ``weights`` and the previous-step values ``state``."""
        trials = check_weights(self.plan, weights)
        V = new_values(program, trials)
        for connection in self.plan.connections:
            V[program.weight_slots(connection)] = np.asarray(weights[connection.name]).reshape(trials, -1).T
        for name in self.delayed:
            if state is not None and name in state:
                value = np.asarray(state[name], dtype=np.float64)
                if value.shape != (trials, self.units[name].size):
                    raise ValueError(f"state['{name}'] has shape {value.shape}, expected "
                                     f"({trials}, {self.units[name].size}): (trials, size)")
                V[program.prev(name)] = value.T
        if state is not None and set(state) != set(self.delayed):
            raise ValueError(f"the state holds {sorted(state)}; {self.plan.name} expects {sorted(self.delayed)} "
                             f"(plan.delayed_sources; sim.zero_state(trials) starts a sequence)")
        return V

    def state_of(self, program: Program, V: np.ndarray) -> dict[str, np.ndarray]:
        """The previous-step values the next step reads, by group."""
        return {name: V[program.prev(name)].T.copy() for name in self.delayed}

    def zero_state(self, trials: int) -> dict[str, np.ndarray]:
        """Previous-step values of the delayed sources, all zero (papers: activations start at 0),
        for ``trials`` networks (at least 1)."""
        if not is_whole_number(trials, 1):
            raise ValueError(f"trials must be a whole number >= 1, not {trials!r}")
        return {name: np.zeros((trials, self.units[name].size)) for name in self.delayed}

    def output_vector(self, record: StepRecord) -> np.ndarray:
        return np.concatenate([record.y[u.name] for u in self.outputs], axis=1)

    # -- forward -----------------------------------------------------------------------------
    def step(self, weights: Weights, state: Mapping[str, np.ndarray], x: np.ndarray
             ) -> tuple[StepRecord, dict[str, np.ndarray]]:
        """One time step; returns its record and the new state (this step's delayed sources)."""
        program = self.forward_program
        V = self.values(program, weights, state)
        run_ops(program.phase("forward"), V, self.columns(x, "inputs", V.shape[1]))
        record = StepRecord(program, V.copy())
        run_ops(program.phase("keep_state"), V)
        return record, self.state_of(program, V)

    def run(self, weights: Weights, inputs: np.ndarray, state: Mapping[str, np.ndarray] | None = None
            ) -> tuple[list[StepRecord], dict[str, np.ndarray]]:
        """Run a sequence of inputs (T, n_inputs) or (T, trials, n_inputs) from ``state``
        (default: all activations zero); returns one record per step and the final state."""
        program = self.forward_program
        V = self.values(program, weights, state)
        inputs = self.sequence_array(inputs, "inputs")
        self.check_records(len(inputs), V.shape[1])
        forward, keep = program.phase("forward"), program.phase("keep_state")
        records = []
        for x in inputs:
            run_ops(forward, V, self.columns(x, "inputs", V.shape[1]))
            records.append(StepRecord(program, V.copy()))
            run_ops(keep, V)
        return records, self.state_of(program, V)

    def max_record_steps(self, trials: int) -> int:
        """The most steps `run` keeps the values of for ``trials`` networks (`check_records`)."""
        return MAX_RECORD_BYTES // (self.forward_program.n_slots * trials * 8)

    def check_records(self, steps: int, trials: int) -> None:
        """`LimitError` where `run` over ``steps`` steps of ``trials`` networks would keep more
        than `MAX_RECORD_BYTES` (each step's record holds every slot, weights included)."""
        slots = self.forward_program.n_slots
        size = steps * slots * trials * 8
        if size > MAX_RECORD_BYTES:
            raise LimitError(f"{steps:,} steps of {trials:,} network{'s' if trials != 1 else ''} of "
                             f"{self.plan.name} would keep {size / 2**30:,.1f} GiB of values ({slots:,} per step and "
                             f"network), more than the limit of {MAX_RECORD_BYTES / 2**30:,.0f} GiB "
                             f"({COUNT_LIMITS_HINT}); give fewer steps")

    def loss(self, record: StepRecord, target: np.ndarray, loss: str = "sum_of_squares") -> np.ndarray:
        """The loss per trial of a recorded step against ``target`` (NaN: no target)."""
        values = record.values.copy()
        step_loss = run_ops(self.program(loss).phase("loss"), values,
                            target=self.columns(target, "targets", values.shape[1]))
        return step_loss

    def signals(self, records: list[StepRecord]) -> dict[str, np.ndarray]:
        """Every unit group's activations over time, (T, trials, size) each, from `run`'s records."""
        if not records:
            raise ValueError("no records: signals need `run`'s records of at least one step")
        names = [unit.name for unit in self.plan.units if unit.computed]
        return {name: np.stack([record.y[name] for record in records]) for name in names}

    def sequence_array(self, values, what: str) -> np.ndarray:
        """A sequence's ``what`` (``inputs`` or ``targets``) as an array, `ValueError` unless it is
        (steps, width) or (steps, trials, width)."""
        values = np.asarray(values, dtype=np.float64)
        if values.ndim not in (2, 3):
            width = self.n_inputs if what == "inputs" else self.n_outputs
            raise ValueError(f"{what} have shape {values.shape}; expected (steps, {width}) or (steps, trials, {width})")
        return values

    def columns(self, x, what: str, trials: int) -> np.ndarray:
        """One step's ``what`` (``inputs`` or ``targets``), (width,) or (trials, width), as the
        executor's columns; `ValueError` naming the shape expected."""
        x = np.asarray(x, dtype=np.float64)
        width = self.n_inputs if what == "inputs" else self.n_outputs
        if x.shape not in ((width,), (trials, width)):
            raise ValueError(f"{what} of a step have shape {x.shape}; {self.plan.name} expects ({width},) or "
                             f"({trials}, {width}): (trials, {'n_inputs' if what == 'inputs' else 'n_outputs'})")
        return x if x.ndim == 1 else x.T
