"""RTRL's sensitivities dy/dw in the program: which exist (the trace analysis), the limit on them
(`MAX_TRACE_TERMS`), and the phases that use them: ``contract`` (dE/dw += dE/dy_s(t-1) .
T_s(t-1)), ``propagate`` (this step's sensitivities) and ``keep_traces``.

With the papers' truncation they are the cell states' traces of their own block's cell-input,
input-gate and forget-gate weights (O(W) per step, 1997 app. A.1); with every connection
carrying, exact RTRL.
"""

from __future__ import annotations

from ..limits import COUNT_LIMITS_HINT, MAX_TRACE_TERMS, LimitError
from ..operations import ACTIVATIONS
from .entries import by_slot
from .model import MINUS_ONE, ONE


class TracePhases:
    """The trace analysis and the trace phases of a lowering: mixed into `lower._Lowering`,
    whose slots, terms and `emit` they use."""

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
        self.emit("mac", "contract", *by_slot(out, a, b, [ONE] * len(out)), what="dE/dw += dE/dy(t-1) T(t-1)")
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
                self.emit("mac", "propagate", *by_slot(out, a, b, cc), what=f"d{name}/dw via {c.name}")
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
