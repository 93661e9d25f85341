"""The numpy reference executor of a plan: one step forward, and one step of backpropagation.

Every unit group v computes, in the plan's execution order (papers.md section 1, 2002 time
convention)::

    net_v(t) = sum over connections c into v of  W_c (*) (G_c(t) * y_src(t - delay_c))
    y_v(t)   = f_v(net_v(t))

where ``(*)`` is the connection's pattern (matrix product, elementwise, or block-diagonal for
peepholes) and ``G_c(t)`` is the gate's activation (or 1 - it) repeated over the source's
blocks, 1 for an ungated connection. All arrays carry a leading trial axis.

`backward_step` sends error back through one step along the edges that carry gradient
(stop-gradient on the others; gate edges always carry), returning the weight gradients and
the error that reaches the previous step through carrying delay-1 edges. BPTT chains it over
time; truncated RTRL combines it with forward-propagated eligibility traces (traces.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import activations
from ..graph.units import Connection, Unit
from ..plan import Plan
from .weights import Weights


@dataclass(frozen=True)
class Link:
    """A connection with everything the executors need precomputed."""

    connection: Connection
    name: str
    source: str
    target: str
    pattern: str
    delay: int
    carries: bool
    gate: str | None
    complement: bool
    gate_block: int      # source units per gate unit
    peephole_block: int  # source units per target unit (peephole)
    trainable: bool


@dataclass
class StepRecord:
    """What one forward step computed: net inputs, activations, and each connection's
    (ungated) source values and expanded gate, kept for backpropagation and traces."""

    net: dict[str, np.ndarray] = field(default_factory=dict)
    y: dict[str, np.ndarray] = field(default_factory=dict)
    source: dict[str, np.ndarray] = field(default_factory=dict)
    gate: dict[str, np.ndarray] = field(default_factory=dict)


class Simulator:
    """Forward and backward steps of a compiled plan.

    ``full_gradient=True`` treats every connection as gradient-carrying (exact RTRL / full
    BPTT); otherwise each connection's ``gradient`` flag decides.
    """

    def __init__(self, plan: Plan, full_gradient: bool = False):
        self.plan = plan
        self.full_gradient = full_gradient
        self.units: dict[str, Unit] = dict(plan.unit)
        self.order = plan.execution_order
        self.inputs = [u for u in plan.units if u.role == "input"]
        self.outputs = [u for u in plan.units if u.role == "output"]
        self.n_inputs = sum(u.size for u in self.inputs)
        self.n_outputs = sum(u.size for u in self.outputs)
        self.links: dict[str, Link] = {}
        for c in plan.connections:
            source = self.units[c.source]
            gate = self.units[c.gate] if c.gate else None
            self.links[c.name] = Link(
                connection=c, name=c.name, source=c.source, target=c.target, pattern=c.pattern,
                delay=c.delay, carries=full_gradient or c.gradient, gate=c.gate,
                complement=c.gate_complement,
                gate_block=source.size // gate.size if gate else 1,
                peephole_block=source.size // self.units[c.target].size if c.pattern == "peephole" else 1,
                trainable=c.trainable)
        self.incoming: dict[str, list[Link]] = {
            name: [self.links[c.name] for c in plan.incoming[name]] for name in self.order}
        self.delayed = plan.delayed_sources

    # -- state -----------------------------------------------------------------------------------
    def zero_state(self, trials: int) -> dict[str, np.ndarray]:
        """Previous-step values of the delayed sources, all zero (papers: activations start at 0)."""
        return {name: np.zeros((trials, self.units[name].size)) for name in self.delayed}

    def split_inputs(self, x: np.ndarray, trials: int) -> dict[str, np.ndarray]:
        x = np.broadcast_to(np.asarray(x, dtype=np.float64), (trials, self.n_inputs))
        values, start = {}, 0
        for unit in self.inputs:
            values[unit.name] = x[:, start:start + unit.size]
            start += unit.size
        return values

    def output_vector(self, record: StepRecord) -> np.ndarray:
        return np.concatenate([record.y[u.name] for u in self.outputs], axis=1)

    # -- forward -----------------------------------------------------------------------------------
    def step(self, weights: Weights, state: dict[str, np.ndarray], x: np.ndarray
             ) -> tuple[StepRecord, dict[str, np.ndarray]]:
        """One time step; returns its record and the new state (this step's delayed sources)."""
        trials = next(iter(weights.values())).shape[0]
        record = StepRecord()
        record.y.update(self.split_inputs(x, trials))
        record.y["bias"] = np.ones((trials, 1))
        for name in self.order:
            unit = self.units[name]
            net = np.zeros((trials, unit.size))
            for link in self.incoming[name]:
                values = state[link.source] if link.delay else record.y[link.source]
                record.source[link.name] = values
                if link.gate:
                    gate = record.y[link.gate]
                    if link.complement:
                        gate = 1.0 - gate
                    gate = np.repeat(gate, link.gate_block, axis=1) if link.gate_block > 1 else gate
                    record.gate[link.name] = gate
                    values = gate * values
                net += apply_pattern(link, weights[link.name], values)
            record.net[name] = net
            record.y[name] = activations.apply(unit.activation, net)
        new_state = {name: record.y[name] for name in self.delayed}
        return record, new_state

    def run(self, weights: Weights, inputs: np.ndarray, state: dict[str, np.ndarray] | None = None
            ) -> tuple[list[StepRecord], dict[str, np.ndarray]]:
        """Run a sequence of inputs (T, n_inputs) or (T, trials, n_inputs) from ``state``
        (default: all activations zero); returns one record per step and the final state."""
        if state is None:
            state = self.zero_state(next(iter(weights.values())).shape[0])
        records = []
        for x in inputs:
            record, state = self.step(weights, state, x)
            records.append(record)
        return records, state

    def signals(self, records: list[StepRecord]) -> dict[str, np.ndarray]:
        """Every unit group's activations over time, (T, trials, size) each."""
        names = [unit.name for unit in self.plan.units if unit.computed]
        return {name: np.stack([record.y[name] for record in records]) for name in names}

    # -- backward ----------------------------------------------------------------------------------
    def backward_step(self, weights: Weights, record: StepRecord, output_delta: dict[str, np.ndarray],
                      future_error: dict[str, np.ndarray] | None = None,
                      grads: dict[str, np.ndarray] | None = None,
                      ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Backpropagate within one step.

        ``output_delta``: dE/dnet of output groups from the loss; ``future_error``: dE/dy of
        units of this step arriving from the next step. Adds weight gradients into ``grads``
        (created if None) and returns (grads, dE/dy of the previous step's delayed sources).
        """
        trials = next(iter(weights.values())).shape[0]
        if grads is None:
            grads = {name: np.zeros_like(weights[name]) for name in self.links if self.links[name].trainable}
        error_y: dict[str, np.ndarray] = {}
        if future_error:
            for name, value in future_error.items():
                error_y[name] = value.copy()
        previous: dict[str, np.ndarray] = {}
        for name in reversed(self.order):
            unit = self.units[name]
            delta = None
            if name in error_y:
                delta = activations.backward(unit.activation, record.net[name], record.y[name], error_y[name])
            if name in output_delta:
                delta = output_delta[name] if delta is None else delta + output_delta[name]
            if delta is None:
                continue
            for link in self.incoming[name]:
                values = record.source[link.name]
                gate = record.gate.get(link.name)
                gated = values if gate is None else gate * values
                if link.trainable:
                    grads[link.name] += pattern_weight_gradient(link, delta, gated)
                needs_source = link.carries and self.units[link.source].computed
                if not needs_source and gate is None:
                    continue
                error_gated = pattern_transpose(link, weights[link.name], delta)
                if gate is not None:
                    error_gate = error_gated * values
                    if link.gate_block > 1:
                        error_gate = error_gate.reshape(trials, -1, link.gate_block).sum(axis=2)
                    _accumulate(error_y, link.gate, -error_gate if link.complement else error_gate)
                if needs_source:
                    error_source = error_gated if gate is None else error_gated * gate
                    _accumulate(previous if link.delay else error_y, link.source, error_source)
        return grads, previous


def _accumulate(store: dict[str, np.ndarray], name: str, value: np.ndarray) -> None:
    if name in store:
        store[name] = store[name] + value
    else:
        store[name] = value


def apply_pattern(link: Link, weight: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Contribution to the target's net input: W (*) values, per trial."""
    if link.pattern == "full":
        return np.matmul(weight, values[:, :, None])[:, :, 0]
    if link.pattern == "one_to_one":
        return weight * values
    trials = values.shape[0]
    return (weight * values.reshape(trials, weight.shape[1], link.peephole_block)).sum(axis=2)


def pattern_transpose(link: Link, weight: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """dE/d(gated source values) from dE/dnet of the target: W^T delta, per trial."""
    if link.pattern == "full":
        return np.matmul(delta[:, None, :], weight)[:, 0, :]
    if link.pattern == "one_to_one":
        return weight * delta
    return (weight * delta[:, :, None]).reshape(delta.shape[0], -1)


def pattern_weight_gradient(link: Link, delta: np.ndarray, gated: np.ndarray) -> np.ndarray:
    """dE/dW from dE/dnet of the target and the (gated) source values, per trial."""
    if link.pattern == "full":
        return delta[:, :, None] * gated[:, None, :]
    if link.pattern == "one_to_one":
        return delta * gated
    trials = delta.shape[0]
    return delta[:, :, None] * gated.reshape(trials, delta.shape[1], link.peephole_block)
