"""Lower a plan into a program: one ordered list of operations over one array of slots.

Every value a step touches has a *slot* (a row of the executors' ``(slots, trials)`` array):
activations, net inputs, derivatives, the previous step's values, weights, velocities, errors,
gradients, sensitivities and eligibility traces. A step is then a short list of operations,
each a kind from a handful (`Op`) applied to index arrays, in phases:

- ``forward``: net inputs as multiply-accumulates of weight x gate x source, squashing, the
  derivative f'(net), the complements 1 - gate (papers' forward pass, Gers et al. 2002 sec. 2);
- ``loss``: the per-step loss, the success test and dE/dnet of the outputs;
- ``backward``: the error within the step, stopping at connections that carry no gradient
  (Hochreiter & Schmidhuber 1997, truncation); the error reaching the previous step's values;
- ``contract``: dE/dw += dE/dy_s(t-1) . T_s(t-1) for every traced value s;
- ``propagate``: this step's sensitivities dy/dw of the values upstream of the traced ones;
- ``update``: momentum SGD; ``keep_traces``, ``keep_state``: what the next step reads;
- BPTT over a segment of steps (`lower` with ``segments``; the interpreter's ``run_segment``):
  ``tape``, the slots a step's backward pass reads (kept after its loss, restored latest
  first); ``carry_in``, ``carry_out``, the error a delayed value takes to the step before;
  ``segment_begin``, ``segment_end``, the gradient summed over the segment.

Which sensitivities exist is decided in `sensitivities`, value by value (the trace analysis).
Everything the executors need is resolved here; nothing after this stage reads the spec.
"""

from __future__ import annotations

import numpy as np

from ..graph.units import Connection, Unit
from ..plan import Plan, require_plan
from ..operations import ACTIVATION_CODE, ACTIVATIONS, GATE_SIDES, LOSS_CODE, LOSSES, PATTERNS, loss_output_problem
from .entries import index_array
from .model import MINUS_ONE, ONE, Op, Program, Slots
from .sensitivities import TracePhases


class _Lowering(TracePhases):
    def __init__(self, plan: Plan, full_gradient: bool, loss: str):
        self.plan = plan
        self.full_gradient = full_gradient
        self.loss = loss
        self.slots = Slots()
        self.ops: list[Op] = []
        self.units = plan.unit
        self.complemented = sorted({c.gate for c in plan.connections if c.gate and c.gate_complement},
                                   key=[u.name for u in plan.units].index)
        self._allocate_values()
        self.theta_index = {}  # (connection, weight index) -> parameter index
        for slot in plan.parameters:
            for w in range(slot.size):
                self.theta_index[(slot.connection, w)] = slot.offset + w

    # -- slots -----------------------------------------------------------------------------
    def _allocate_values(self) -> None:
        s, plan = self.slots, self.plan
        for unit in plan.units:
            if unit.role == "bias":
                s.regions[("y", unit.name)] = ONE  # the bias unit is the constant 1
            else:
                s.region("y", unit.name, unit.size)
        for gate in self.complemented:
            s.region("y", gate + "~", self.units[gate].size)
        for name in plan.execution_order:
            s.region("net", name, self.units[name].size)
            s.region("deriv", name, self.units[name].size)
        for name in plan.delayed_sources:
            s.region("prev", name, self.units[name].size)
        n_theta = plan.n_parameters
        s.region("theta", "", n_theta)
        for slot in plan.parameters:
            s.regions[("theta_of", slot.connection)] = s.regions[("theta", "")] + slot.offset
        for connection in plan.connections:
            if not connection.trainable:
                s.region("fixed", connection.name, connection.size)
        s.region("velocity", "", n_theta)
        s.region("grad", "", n_theta)
        for name in plan.execution_order:
            s.region("dy", name, self.units[name].size)
            s.region("dnet", name, self.units[name].size)
        for gate in self.complemented:
            s.region("dy", gate + "~", self.units[gate].size)
        for name in plan.delayed_sources:
            s.region("perr", name, self.units[name].size)

    def at(self, kind: str, name: str, index: int = 0) -> int:
        return self.slots.regions[(kind, name)] + index

    def carries(self, connection: Connection) -> bool:
        return self.full_gradient or connection.gradient

    def computed(self, group: str) -> bool:
        return self.units[group].computed

    def emit(self, kind: str, phase: str, out, a=None, b=None, c=None, code: int = 0, mode: int = 0,
             what: str = "") -> None:
        out = index_array(out)
        if not len(out):
            return
        self.ops.append(Op(kind, phase, out, None if a is None else index_array(a),
                           None if b is None else index_array(b), None if c is None else index_array(c),
                           code, mode, what, len(np.unique(out)) == len(out)))

    def span(self, kind: str, name: str, size: int) -> range:
        start = self.at(kind, name)
        return range(start, start + size)

    # -- the terms of a connection -----------------------------------------------------------
    def terms(self, c: Connection) -> list[tuple[int, int, int, str | None, int]]:
        """(target unit, source unit, weight index, gate value group or None, gate unit) of
        every product the connection adds, from its pattern and gate side."""
        target, source = self.units[c.target], self.units[c.source]
        gate_group = None
        if c.gate:
            gate_group = c.gate + "~" if c.gate_complement else c.gate
            side = GATE_SIDES[c.gate_side]
            covered = source.size if side.divides == "source" else target.size
            block = covered // self.units[c.gate].size
        rows = []
        for i, j, w in PATTERNS[c.pattern].triples(target.size, source.size):
            g = side.gate_unit(i, j, block) if c.gate else 0
            rows.append((i, j, w, gate_group, g))
        return rows

    def source_slot(self, c: Connection, j: int) -> int:
        return self.at("prev" if c.delay else "y", c.source, j)

    def weight_slot(self, c: Connection, w: int) -> int:
        return self.at("theta_of" if c.trainable else "fixed", c.name, w)

    def gate_slot(self, gate_group: str | None, g: int) -> int:
        return ONE if gate_group is None else self.at("y", gate_group, g)

    # -- phases ------------------------------------------------------------------------------
    def lower(self, traces: bool, segments: bool) -> Program:
        self._forward()
        self._loss()
        self._backward()
        self.trace_entries = {}
        if traces:
            sensitivity = self._sensitivities()
            self._check_trace_terms(sensitivity)
            self._traces(sensitivity)
        if segments:
            self._segments()
        self._update_and_keep()
        trace_entries = {group: (index_array(units), index_array(params)) for group, (units, params)
                         in self.trace_entries.items()}
        return Program(self.plan, tuple(self.ops), self.slots.size, dict(self.slots.regions), trace_entries,
                       self.full_gradient, self.loss, segments)

    def _forward(self) -> None:
        columns, start = [], 0
        out = []
        for unit in self.plan.units:
            if unit.role == "input":
                out += list(self.span("y", unit.name, unit.size))
                columns += list(range(start, start + unit.size))
                start += unit.size
        self.emit("input", "forward", out, columns, what="inputs")
        for name in self.plan.execution_order:
            unit = self.units[name]
            net = self.span("net", name, unit.size)
            self.emit("zero", "forward", net, what=f"net of {name}")
            for c in self.plan.incoming[name]:
                terms = self.terms(c)
                self.emit("mac", "forward", [self.at("net", name, i) for i, *_ in terms],
                          [self.weight_slot(c, w) for _, _, w, _, _ in terms],
                          [self.gate_slot(gg, g) for *_, gg, g in terms],
                          [self.source_slot(c, j) for _, j, *_ in terms], what=f"net of {name} += {c.name}")
            activation = ACTIVATIONS[unit.activation]
            y = self.span("y", name, unit.size)
            code = ACTIVATION_CODE[unit.activation]
            if activation.elementwise:
                self.emit("activate", "forward", y, net, code=code, what=f"{name} = {unit.activation}")
                self.emit("derive", "forward", self.span("deriv", name, unit.size), net, y, code=code,
                          what=f"{name}'")
            else:
                self.emit("softmax", "forward", y, net, what=f"{name} = softmax")
            if name in self.complemented:
                self.emit("complement", "forward", self.span("y", name + "~", unit.size), y,
                          what=f"1 - {name}")

    def _loss(self) -> None:
        for kind in ("dy", "dnet", "perr"):
            rows = [r for (k, name), start in self.slots.regions.items() if k == kind
                    for r in self.span(kind, name, self._size(name))]
            self.emit("zero", "loss", rows, what=f"clear {kind}")
        column = 0
        for unit in self.plan.units:
            if unit.role != "output":
                continue
            softmax = not ACTIVATIONS[unit.activation].elementwise
            mismatch = loss_output_problem(self.loss, unit.name, unit.activation)
            if mismatch:
                raise ValueError(mismatch)
            self.emit("loss", "loss", self.span("dnet", unit.name, unit.size),
                      self.span("y", unit.name, unit.size), self.span("deriv", unit.name, unit.size),
                      range(column, column + unit.size), code=LOSS_CODE[self.loss], mode=int(softmax),
                      what=f"loss of {unit.name}")
            column += unit.size

    def _size(self, name: str) -> int:
        return self.units[name.rstrip("~")].size

    def _backward(self) -> None:
        self.emit("zero", "backward", self.span("grad", "", self.plan.n_parameters), what="clear grad")
        for name in reversed(self.plan.execution_order):
            unit = self.units[name]
            dy, dnet = self.span("dy", name, unit.size), self.span("dnet", name, unit.size)
            if name in self.complemented:
                self.emit("mac", "backward", dy, [MINUS_ONE] * unit.size,
                          self.span("dy", name + "~", unit.size), [ONE] * unit.size, what=f"dE/d{name} via 1 - {name}")
            if ACTIVATIONS[unit.activation].elementwise:
                self.emit("mac", "backward", dnet, self.span("deriv", name, unit.size), dy,
                          [ONE] * unit.size, what=f"dE/dnet of {name}")
            else:
                self._softmax_tangent("backward", list(dy), [list(dnet)], unit, accumulate_into=True)
            for c in self.plan.incoming[name]:
                self._backward_connection(c)

    def _softmax_tangent(self, phase: str, tangent: list[int], outputs: list[list[int]], unit: Unit,
                         accumulate_into: bool) -> None:
        """out_i (+)= y_i (t_i - sum_j y_j t_j) for one tangent column (softmax's Jacobian)."""
        y = list(self.span("y", unit.name, unit.size))
        tmp = self.slots.region("tmp", f"{unit.name}/{len(self.slots.regions)}", 1)
        self.emit("zero", phase, [tmp])
        self.emit("mac", phase, [tmp] * len(y), y, tangent, [ONE] * len(y), what=f"softmax dot of {unit.name}")
        for out in outputs:
            if accumulate_into:
                self.emit("mac", phase, out, y, tangent, [ONE] * len(y))
            else:  # in place: out is the tangent
                self.emit("scale", phase, out, y)
            self.emit("mac", phase, out, [MINUS_ONE] * len(y), y, [tmp] * len(y))

    def _backward_connection(self, c: Connection) -> None:
        terms = self.terms(c)
        dnet = [self.at("dnet", c.target, i) for i, *_ in terms]
        gates = [self.gate_slot(gg, g) for *_, gg, g in terms]
        sources = [self.source_slot(c, j) for _, j, *_ in terms]
        weights = [self.weight_slot(c, w) for _, _, w, _, _ in terms]
        if c.trainable:
            self.emit("mac", "backward", [self.at("grad", "", self.theta_index[(c.name, w)]) for _, _, w, _, _ in terms],
                      dnet, gates, sources, what=f"dE/dW of {c.name}")
        if self.carries(c) and self.computed(c.source):
            sink = "perr" if c.delay else "dy"
            self.emit("mac", "backward", [self.at(sink, c.source, j) for _, j, *_ in terms], weights, dnet, gates,
                      what=f"dE/d{c.source} via {c.name}")
        if c.gate:
            self.emit("mac", "backward", [self.at("dy", gg, g) for *_, gg, g in terms], weights, dnet, sources,
                      what=f"dE/d{c.gate} via {c.name}")

    def _segments(self) -> None:
        """BPTT's phases over a segment: a step's values below the weights go on the tape
        (activations, net inputs, derivatives, the previous step's values); latest step first,
        each delayed value's error reaching the step before (``perr``) is carried into its
        ``dy`` there, and each step's gradient is summed (``grad_total``), then becomes ``grad``
        for the one update after the segment."""
        n = self.plan.n_parameters
        theta = self.at("theta", "")
        self.emit("copy", "tape", range(theta), range(theta), what="a step's values, kept for its backward pass")
        start = self.slots.region("grad_total", "", n)
        total = range(start, start + n)
        carried = [name for name in self.plan.delayed_sources if self.computed(name)]
        for name in carried:
            self.slots.region("carry", name, self.units[name].size)
        carries = [slot for name in carried for slot in self.span("carry", name, self._size(name))]
        self.emit("zero", "segment_begin", [*total, *carries], what="no error from beyond the segment, no gradient yet")
        for name in carried:
            size = self._size(name)
            self.emit("mac", "carry_in", self.span("dy", name, size), self.span("carry", name, size), [ONE] * size,
                      [ONE] * size, what=f"dE/d{name} from the step after")
            self.emit("copy", "carry_out", self.span("carry", name, size), self.span("perr", name, size),
                      what=f"dE/d{name} for the step before")
        self.emit("mac", "carry_out", total, self.span("grad", "", n), [ONE] * n, [ONE] * n,
                  what="the gradient summed over the segment")
        self.emit("copy", "segment_end", self.span("grad", "", n), total, what="the segment's gradient")

    def _update_and_keep(self) -> None:
        n = self.plan.n_parameters
        self.emit("update", "update", self.span("theta", "", n), self.span("velocity", "", n),
                  self.span("grad", "", n), what="momentum SGD")
        out, a = [], []
        for name in self.plan.delayed_sources:
            out += list(self.span("prev", name, self.units[name].size))
            a += list(self.span("y", name, self.units[name].size))
        self.emit("copy", "keep_state", out, a, what="values the next step reads")


def lower(plan: Plan, full_gradient: bool = False, loss: str = "sum_of_squares",
          traces: bool = True, segments: bool = False) -> Program:
    """The program of a plan: truncated RTRL as the flags say, or (``full_gradient``) exact.
    ``traces=False`` leaves out the sensitivity analysis and the contract, propagate and
    keep_traces phases (enough to run forward and for BPTT); ``segments`` adds BPTT's phases
    (tape, carries and the segment's gradient) and needs ``traces=False``."""
    require_plan(plan, "lower")
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; the losses: {', '.join(LOSSES)}")
    if segments and traces:
        raise ValueError("a program learns by BPTT over segments or by RTRL's traces, not both")
    return _Lowering(plan, full_gradient, loss).lower(traces, segments)
