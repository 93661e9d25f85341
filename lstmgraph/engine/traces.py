"""Real-time recurrent learning with exactly the eligibility traces the gradient flags need.

The gradient of the step loss E(t) splits into a part within the step and a part through the
values of the previous step that carrying delay-1 edges read (the *traced* units, e.g. the
cell states through the CEC)::

    dE(t)/dW = dE(t)/dW|within step  +  sum_s  dE(t)/dy_s(t-1) . T_s(t-1),   T_s = dy_s/dW

The first two factors come from one within-step backward pass (`Simulator.backward_step`).
The traces T_s are carried forward in time (forward mode) through the units upstream of the
traced ones. A compile-time analysis of the graph and the flags decides, for each (unit,
weight matrix) pair, whether the sensitivity is zero, *aligned* (unit i depends on one row
r(i) of the matrix only: a trace [units, columns], as in the 1997 truncation, O(W) per step)
or *dense* ([units, all weights of the matrix], as in exact RTRL, O(n W) memory). Nothing is
hand-coded per architecture: with the LSTM truncation the analysis finds the traces
ds/dW of cell-input, input-gate and forget-gate weights (papers.md section 2); with every
edge carrying it finds exact RTRL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import activations
from .losses import loss_and_delta
from .simulator import Link, Simulator, StepRecord
from .weights import Weights


@dataclass(frozen=True)
class Aligned:
    """Unit i's sensitivity lives in row ``rows[i]`` of the weight matrix only."""

    rows: tuple[int, ...]

    @property
    def block(self) -> int | None:
        """k if rows == (0,..,0, 1,..,1, ...) in runs of k (k = 1: the identity), else None."""
        count = len(self.rows)
        for k in range(1, count + 1):
            if count % k == 0 and self.rows == tuple(i // k for i in range(count)):
                return k
        return None


class _Dense:
    def __repr__(self) -> str:
        return "DENSE"


DENSE = _Dense()
Rep = Aligned | _Dense | None


def merge(first: Rep, second: Rep) -> Rep:
    if first is None:
        return second
    if second is None or first == second:
        return first
    return DENSE


@dataclass(frozen=True)
class ParameterGroup:
    """A trainable weight matrix seen as rows x columns (one_to_one: n x 1)."""

    link: Link
    rows: int
    columns: int

    @property
    def size(self) -> int:
        return self.rows * self.columns


class TraceLayout:
    """Which sensitivities are non-zero, and in which form (aligned or dense)."""

    def __init__(self, sim: Simulator):
        self.sim = sim
        self.groups = {}
        for name, link in sim.links.items():
            if link.trainable:
                shape = link.connection.shape
                self.groups[name] = ParameterGroup(link, shape[0], shape[1] if len(shape) > 1 else 1)
        self.traced = sorted({link.source for link in sim.links.values()
                              if link.carries and link.delay and sim.units[link.source].computed},
                             key=sim.order.index)
        upstream = set(self.traced)
        for name in reversed(sim.order):
            if name not in upstream:
                continue
            for link in sim.incoming[name]:
                if link.delay == 0 and link.carries and sim.units[link.source].computed:
                    upstream.add(link.source)
                if link.gate:
                    upstream.add(link.gate)
        self.forward_units = tuple(name for name in sim.order if name in upstream)
        self.rep: dict[tuple[str, str], Rep] = {}
        changed = True
        while changed:
            changed = False
            for unit in self.forward_units:
                for group in self.groups:
                    new = self._unit_rep(unit, group)
                    if new != self.rep.get((unit, group)):
                        self.rep[(unit, group)] = new
                        changed = True
        # What the runtime evaluates: the non-zero terms of each non-zero sensitivity.
        self.terms = {(unit, group): self._unit_terms(unit, group)
                      for unit in self.forward_units for group in self.nonzero(unit)}
        self.blocks = {key: rep.block for key, rep in self.rep.items() if isinstance(rep, Aligned)}

    def _unit_terms(self, unit: str, group: str) -> list[tuple[str, Link, Rep]]:
        terms = []
        for link in self.sim.incoming[unit]:
            for kind in ("direct", "source", "gate"):
                term = self._term(kind, link, group, None, None, None)
                if term is not None:
                    terms.append((kind, link, term[0]))
        return terms

    def _unit_rep(self, unit: str, group: str) -> Rep:
        result: Rep = None
        for _, _, rep in self._unit_terms(unit, group):
            result = merge(result, rep)
        if result is not None and self.sim.units[unit].activation == "softmax":
            result = DENSE
        return result

    def nonzero(self, unit: str) -> list[str]:
        return [group for group in self.groups if self.rep.get((unit, group)) is not None]

    # -- the transfer rules, shared by the analysis (record None) and the runtime --------------
    def _term(self, kind: str, link: Link, group: str, record: StepRecord | None,
              weights: Weights | None, sensitivities) -> tuple[Rep, np.ndarray | None] | None:
        """(rep, data) of one term of d net_target / dW_group that ``link`` contributes:
        ``direct`` (the link is the weight matrix itself), ``source`` (through the source's
        sensitivity) or ``gate`` (through the gate's sensitivity); None when it is zero."""
        sim = self.sim
        numeric = record is not None
        gate = record.gate.get(link.name) if numeric else None
        source = record.source[link.name] if numeric else None
        weight = weights[link.name] if numeric else None
        if kind == "direct":
            if link.name != group:
                return None
            rows = tuple(range(sim.units[link.target].size))
            data = None
            if numeric:
                trials = source.shape[0]
                gated = source if gate is None else gate * source
                if link.pattern == "full":
                    data = np.broadcast_to(gated[:, None, :], (trials, len(rows), gated.shape[1]))
                elif link.pattern == "one_to_one":
                    data = gated[:, :, None]
                else:
                    data = gated.reshape(trials, len(rows), link.peephole_block)
            return Aligned(rows), data
        if kind == "source":
            if not (link.carries and sim.units[link.source].computed):
                return None
            rep = self.rep.get((link.source, group))
            if rep is None:
                return None
            data = None
            if numeric:
                data = sensitivities(link.source, link.delay)[group]
                if gate is not None:
                    data = gate[:, :, None] * data
            return self._through_pattern(link, group, rep, data, weight)
        if not link.gate:
            return None
        rep = self.rep.get((link.gate, group))
        if rep is None:
            return None
        if isinstance(rep, Aligned) and link.gate_block > 1:
            rep = Aligned(tuple(r for r in rep.rows for _ in range(link.gate_block)))
        data = None
        if numeric:
            data = sensitivities(link.gate, 0)[group]
            if link.gate_block > 1:
                data = np.repeat(data, link.gate_block, axis=1)
            data = (-source if link.complement else source)[:, :, None] * data
        return self._through_pattern(link, group, rep, data, weight)

    def _through_pattern(self, link: Link, group: str, rep: Rep, data, weight):
        if link.pattern == "one_to_one":
            return rep, (None if data is None else weight[:, :, None] * data)
        if link.pattern == "full":
            if data is not None:
                data = np.matmul(weight, self.to_dense(rep, group, data))
            return DENSE, data
        block = link.peephole_block
        if isinstance(rep, Aligned) and all(len(set(rep.rows[k:k + block])) == 1
                                            for k in range(0, len(rep.rows), block)):
            new_rep: Rep = Aligned(rep.rows[::block])
        else:
            new_rep, data = DENSE, (None if data is None else self.to_dense(rep, group, data))
        if data is not None:
            trials, _, width = data.shape
            data = (weight[:, :, :, None] * data.reshape(trials, weight.shape[1], block, width)).sum(axis=2)
        return new_rep, data

    def to_dense(self, rep: Rep, group: str, data: np.ndarray) -> np.ndarray:
        if rep is DENSE:
            return data
        columns = self.groups[group].columns
        trials, count, _ = data.shape
        dense = np.zeros((trials, count, self.groups[group].size))
        for unit, row in enumerate(rep.rows):
            dense[:, unit, row * columns:(row + 1) * columns] = data[:, unit, :]
        return dense

    def trace_sizes(self) -> dict[tuple[str, str], int]:
        """Stored numbers per (traced unit, weight matrix), per trial."""
        sizes = {}
        for unit in self.traced:
            for group in self.nonzero(unit):
                width = self.groups[group].size if self.rep[(unit, group)] is DENSE else self.groups[group].columns
                sizes[(unit, group)] = self.sim.units[unit].size * width
        return sizes


class RealTimeRecurrentLearning:
    """Per-step gradients by (truncated) RTRL: `step` returns dE(t)/dW with weights as given.

    With ``Simulator(plan)`` this is the papers' truncated RTRL; with
    ``Simulator(plan, full_gradient=True)`` exact RTRL.
    """

    def __init__(self, sim: Simulator, trials: int = 1):
        self.sim = sim
        self.layout = TraceLayout(sim)
        self.reset(trials)

    def reset(self, trials: int) -> None:
        """Zero traces: at the start of a sequence, with the activations."""
        self.trials = trials
        layout = self.layout
        self.traces = {}
        for unit in layout.traced:
            size = self.sim.units[unit].size
            self.traces[unit] = {}
            for group in layout.nonzero(unit):
                info = layout.groups[group]
                width = info.size if layout.rep[(unit, group)] is DENSE else info.columns
                self.traces[unit][group] = np.zeros((trials, size, width))

    def step(self, weights: Weights, state: dict[str, np.ndarray], x: np.ndarray, target: np.ndarray,
             loss: str) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], StepRecord]:
        """One step forward; returns (loss per trial, dE(t)/dW, new state, record)."""
        sim = self.sim
        record, new_state = sim.step(weights, state, x)
        step_loss, delta = loss_and_delta(loss, sim.outputs, record.net, record.y, target)
        grads, previous_error = sim.backward_step(weights, record, delta)
        for unit, error in previous_error.items():
            for group, data in self.traces.get(unit, {}).items():
                self._contract(grads[group], error, unit, group, data)
        self.traces = self._propagate(weights, record)
        return step_loss, grads, new_state, record

    def _contract(self, grad: np.ndarray, error: np.ndarray, unit: str, group: str, data: np.ndarray) -> None:
        """grad += dE/dy_unit(t-1) . trace, scattered into the rows the trace belongs to."""
        rep = self.layout.rep[(unit, group)]
        trials = grad.shape[0]
        if rep is DENSE:
            grad.reshape(trials, -1)[...] += np.einsum("pi,piw->pw", error, data)
            return
        group_rows = grad.shape[1]
        weighted = error[:, :, None] * data
        flat = grad.reshape(trials, group_rows, -1)
        block = self.layout.blocks[(unit, group)]
        if block == 1 and len(rep.rows) == group_rows:
            flat += weighted
        elif block is not None and len(rep.rows) == group_rows * block:
            flat += weighted.reshape(trials, group_rows, block, -1).sum(axis=2)
        else:
            np.add.at(flat, (slice(None), np.asarray(rep.rows)), weighted)

    def _propagate(self, weights: Weights, record: StepRecord) -> dict[str, dict[str, np.ndarray]]:
        layout, sim = self.layout, self.sim
        current: dict[str, dict[str, np.ndarray]] = {}

        def sensitivities(unit: str, delay: int) -> dict[str, np.ndarray]:
            return self.traces[unit] if delay else current[unit]

        for unit in layout.forward_units:
            current[unit] = {}
            for group in layout.nonzero(unit):
                rep = layout.rep[(unit, group)]
                total = None
                for kind, link, term_rep in layout.terms[(unit, group)]:
                    _, data = layout._term(kind, link, group, record, weights, sensitivities)
                    if term_rep != rep:
                        data = layout.to_dense(term_rep, group, data)
                    total = data if total is None else total + data
                current[unit][group] = activations.forward_tangent(
                    sim.units[unit].activation, record.net[unit], record.y[unit], total)
        return {unit: current[unit] for unit in layout.traced}
