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

Which sensitivities exist is decided here, value by value (`sensitivities`): with the papers'
truncation they are the cell states' traces of their own block's cell-input, input-gate and
forget-gate weights (O(W) per step, 1997 app. A.1); with every connection carrying, exact RTRL.
Everything the executors need is resolved here; nothing after this stage reads the spec.
"""

from __future__ import annotations

import numpy as np

from ..graph.units import Connection, Unit
from ..limits import COUNT_LIMITS_HINT, MAX_TRACE_TERMS, LimitError
from ..plan import Plan, require_plan
from ..operations import ACTIVATION_CODE, ACTIVATIONS, GATE_SIDES, LOSS_CODE, LOSSES, PATTERNS
from .model import MINUS_ONE, ONE, Op, Program, Slots
from .runs import affine_runs


def _array(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


#: Sorting an operation's entries by slot is kept only where it multiplies the operation's affine
#: runs by at most this. It multiplies no other bundled spec's by more than 2.7; the GRU's gated
#: sums alternate two patterns, and sorting would multiply them by 13.8 (gru) to 112 (gru_torch),
#: each run a kernel line or more (docs/performance.md, "A sum's terms together only where its
#: runs stay few").
MAX_RUNS_GROWTH = 4


def _by_slot(out: list[int], *reads: list[int]) -> tuple[np.ndarray, ...]:
    """A multiply-accumulate's entries ordered by the slot they add into, each slot's entries
    in their own order (a stable sort). Where no entry reads a slot the operation writes, every
    slot gets the same sum, added in the same order; a slot's entries then stand together, and
    an executor keeps its sum in a register (a sensitivity's sum over the sources, exact RTRL:
    the specialised kernel's step 3 times faster, docs/performance.md). Else, or where sorting
    breaks the entries into many more affine runs (`MAX_RUNS_GROWTH`), as given."""
    columns = [_array(column) for column in (out, *reads)]
    if set(columns[0].tolist()) & set(np.concatenate(columns[1:]).tolist()):
        return tuple(columns)
    order = np.argsort(columns[0], kind="stable")
    by_slot = tuple(column[order] for column in columns)
    if _run_count(by_slot) > MAX_RUNS_GROWTH * _run_count(columns):
        return tuple(columns)
    return by_slot


def _run_count(columns) -> int:
    """How many affine runs an executor walks for these entries (columns out, a, b, c; absent
    ones read as slot 0, as `interpreter.flatten` writes them)."""
    padded = np.zeros((4, len(columns[0])), dtype=np.int64)
    padded[:len(columns)] = columns
    return len(affine_runs(padded))


class _Lowering:
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
        out = _array(out)
        if not len(out):
            return
        self.ops.append(Op(kind, phase, out, None if a is None else _array(a), None if b is None else _array(b),
                           None if c is None else _array(c), code, mode, what, len(np.unique(out)) == len(out)))

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
        trace_entries = {group: (_array(units), _array(params)) for group, (units, params)
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
            if self.loss == "cross_entropy" and unit.activation not in ("softmax", "logistic"):
                raise ValueError(f"cross_entropy needs softmax or logistic outputs; '{unit.name}' is "
                                 f"{unit.activation}")
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

    # -- sensitivities -----------------------------------------------------------------------
    def _sensitivities(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """For each value (group, unit) upstream of a traced one, the parameters its
        sensitivity dy/dw can be non-zero for (sorted), found by iterating to a fixed point
        over time: a traced value's set feeds the next step through its delayed connections."""
        plan = self.plan
        self.traced = [name for name in plan.execution_order
                       if any(c.source == name and c.delay and self.carries(c) for c in plan.connections)]
        upstream = set(self.traced)
        for name in reversed(plan.execution_order):
            if name not in upstream:
                continue
            for c in plan.incoming[name]:
                if c.delay == 0 and self.carries(c) and self.computed(c.source):
                    upstream.add(c.source)
                if c.gate:
                    upstream.add(c.gate)
        self.forward_units = [name for name in plan.execution_order if name in upstream]
        previous: dict[tuple[str, int], frozenset[int]] = {}
        while True:
            current: dict[tuple[str, int], set[int]] = {}
            held = 0  # sensitivities of this pass so far: bounded before they fill memory
            for name in self.forward_units:
                unit = self.units[name]
                sets = [set() for _ in range(unit.size)]
                for c in plan.incoming[name]:
                    for i, j, w, gg, g in self.terms(c):
                        before = len(sets[i])
                        if c.trainable:
                            sets[i].add(self.theta_index[(c.name, w)])
                        if gg is not None:
                            sets[i] |= current[(gg, g)]
                        if self.carries(c) and self.computed(c.source):
                            sets[i] |= previous.get((c.source, j), frozenset()) if c.delay else current[(c.source, j)]
                        held += len(sets[i]) - before
                        if held > MAX_TRACE_TERMS:
                            self._refuse_traces(f"more than {MAX_TRACE_TERMS:,} sensitivities dy/dw")
                if not ACTIVATIONS[unit.activation].elementwise:
                    union = set().union(*sets)
                    held += len(union) * len(sets) - sum(len(values) for values in sets)
                    if held > MAX_TRACE_TERMS:
                        self._refuse_traces(f"more than {MAX_TRACE_TERMS:,} sensitivities dy/dw")
                    sets = [set(union) for _ in sets]
                for i, values in enumerate(sets):
                    current[(name, i)] = values
                    if name in self.complemented:
                        current[(name + "~", i)] = values
            following = {(name, i): frozenset(current[(name, i)]) for name in self.traced
                         for i in range(self.units[name].size)}
            if following == previous:
                return {key: tuple(sorted(values)) for key, values in current.items()}
            previous = following

    def _check_trace_terms(self, sensitivity: dict[tuple[str, int], tuple[int, ...]]) -> None:
        """`LimitError` where the traces' propagation would take more than `MAX_TRACE_TERMS`
        multiply-adds a step (each a slot of its own in the program, built in memory first):
        counted from the sensitivities before a single op is built."""
        terms = sum(len(values) for values in sensitivity.values())
        for name in self.forward_units:
            for c in self.plan.incoming[name]:
                for _, j, _, gg, g in self.terms(c):
                    terms += (c.trainable + (len(sensitivity[(gg, g)]) if gg is not None else 0)
                              + (len(sensitivity[(c.source, j)]) if self.carries(c) and self.computed(c.source)
                                 else 0))
                if terms > MAX_TRACE_TERMS:
                    self._refuse_traces(f"more than {MAX_TRACE_TERMS:,} multiply-adds a step")

    def _refuse_traces(self, what: str) -> None:
        rule = "exact RTRL" if self.full_gradient else "truncated RTRL"
        raise LimitError(f"{self.plan.name}: {rule}'s traces would need {what}, over the limit "
                         f"({COUNT_LIMITS_HINT}). BPTT over each sequence gives its gradient summed over the "
                         "sequence at far less cost: learning_rule: bptt (with gradient: true on the delayed "
                         "connections for the exact gradient; docs/spec.md in the lstmgraph source)")

    def _traces(self, sensitivity: dict[tuple[str, int], tuple[int, ...]]) -> None:
        plan = self.plan
        # Stored traces T_s(t-1), then this step's sensitivities, each (value, parameter) a slot.
        self.trace_entries: dict[str, tuple[list[int], list[int]]] = {}
        trace_slot: dict[tuple[str, int, int], int] = {}
        for name in self.traced:
            units, params = [], []
            for i in range(self.units[name].size):
                for p in sensitivity[(name, i)]:
                    units.append(i)
                    params.append(p)
            start = self.slots.region("trace", name, len(units))
            for k, (i, p) in enumerate(zip(units, params)):
                trace_slot[(name, i, p)] = start + k
            self.trace_entries[name] = (units, params)
        current_slot: dict[tuple[str, int, int], int] = {}
        values = [key for key in sensitivity]
        count = sum(len(sensitivity[key]) for key in values)
        start = self.slots.region("cur", "", count)
        for key in values:
            for p in sensitivity[key]:
                current_slot[(key[0], key[1], p)] = start
                start += 1
        grad = self.at("grad", "", 0)
        # Contraction: dE/dw += dE/dy_s(t-1) . T_s(t-1).
        out, a, b = [], [], []
        for name in self.traced:
            for i, p in zip(*self.trace_entries[name]):
                out.append(grad + p)
                a.append(self.at("perr", name, i))
                b.append(trace_slot[(name, i, p)])
        self.emit("mac", "contract", *_by_slot(out, a, b, [ONE] * len(out)), what="dE/dw += dE/dy(t-1) T(t-1)")
        # Propagation, value by value in step order.
        for name in self.forward_units:
            unit = self.units[name]
            rows = [current_slot[(name, i, p)] for i in range(unit.size) for p in sensitivity[(name, i)]]
            self.emit("zero", "propagate", rows, what=f"d{name}/dw")
            for c in plan.incoming[name]:
                out, a, b, cc = [], [], [], []
                for i, j, w, gg, g in self.terms(c):
                    weight, gate, source = self.weight_slot(c, w), self.gate_slot(gg, g), self.source_slot(c, j)
                    if c.trainable:
                        out.append(current_slot[(name, i, self.theta_index[(c.name, w)])])
                        a.append(gate), b.append(source), cc.append(ONE)
                    if gg is not None:
                        for p in sensitivity[(gg, g)]:
                            out.append(current_slot[(name, i, p)])
                            a.append(weight), b.append(source), cc.append(current_slot[(gg, g, p)])
                    if self.carries(c) and self.computed(c.source):
                        held = trace_slot if c.delay else current_slot
                        for p in (sensitivity[(c.source, j)]):
                            out.append(current_slot[(name, i, p)])
                            a.append(weight), b.append(gate), cc.append(held[(c.source, j, p)])
                self.emit("mac", "propagate", *_by_slot(out, a, b, cc), what=f"d{name}/dw via {c.name}")
            activation = ACTIVATIONS[unit.activation]
            if activation.elementwise:
                if unit.activation != "identity":
                    self.emit("scale", "propagate", rows,
                              [self.at("deriv", name, i) for i in range(unit.size) for _ in sensitivity[(name, i)]],
                              what=f"d{name}/dw *= f'")
            else:
                for p in sorted(set().union(*(sensitivity[(name, i)] for i in range(unit.size)))):
                    column = [current_slot[(name, i, p)] for i in range(unit.size)]
                    self._softmax_tangent("propagate", column, [column], unit, accumulate_into=False)
            if name in self.complemented:
                comp = [current_slot[(name + "~", i, p)] for i in range(unit.size) for p in sensitivity[(name, i)]]
                self.emit("zero", "propagate", comp)
                self.emit("mac", "propagate", comp, [MINUS_ONE] * len(rows), rows, [ONE] * len(rows),
                          what=f"d(1 - {name})/dw")
        out, a = [], []
        for name in self.traced:
            for i, p in zip(*self.trace_entries[name]):
                out.append(trace_slot[(name, i, p)])
                a.append(current_slot[(name, i, p)])
        self.emit("copy", "keep_traces", out, a, what="T(t) for the next step")

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
