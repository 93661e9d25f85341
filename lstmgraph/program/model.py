"""The lowered program's data model: slots, operations and their phases (`Op`, `Program`).

A program is one ordered list of operations over one array of slots, a row per value a step
touches (``(slots, trials)`` in the executors). `lower` builds it from a plan; the executors
(numpy, the compiled kernels, the GPU kernels) run it and read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..graph.units import Connection, Unit
from ..plan import Plan

ONE, MINUS_ONE = 0, 1  # constant slots

PHASES = ("forward", "loss", "backward", "contract", "propagate", "update", "keep_traces",
          "keep_state", "tape", "segment_begin", "carry_in", "carry_out", "segment_end")
PHASE_CODE = {name: code for code, name in enumerate(PHASES)}
#: The first and last code of the phases a trial runs only while it learns (none in a test phase).
LEARNING_PHASES = (PHASE_CODE["backward"], PHASE_CODE["keep_traces"])


@dataclass(frozen=True)
class Op:
    """One operation: for each entry k, with V the slot array (one column per trial)

    - ``input``: V[out[k]] = inputs[t, a[k]];  ``zero``: V[out[k]] = 0;  ``copy``: V[out[k]] = V[a[k]]
    - ``mac``: V[out[k]] += V[a[k]] * V[b[k]] * V[c[k]]  (in entry order)
    - ``scale``: V[out[k]] *= V[a[k]];  ``complement``: V[out[k]] = 1 - V[a[k]]
    - ``activate``: V[out[k]] = f(V[a[k]]);  ``derive``: V[out[k]] = f'(V[a[k]], V[b[k]])
      (f = ``code``, an activation code; net in a, y in b)
    - ``softmax``: the group out = softmax(group a)
    - ``loss``: one output group (``code``: loss; ``mode`` 1 for softmax): out = dE/dnet,
      a = y, b = f'(net), c = target columns; adds the loss and the success test
    - ``update``: momentum SGD: V[a] = momentum V[a] - rate V[b]; V[out] += V[a]
    """

    kind: str
    phase: str
    out: np.ndarray
    a: np.ndarray | None = None
    b: np.ndarray | None = None
    c: np.ndarray | None = None
    code: int = 0
    mode: int = 0
    what: str = ""
    #: No two entries write the same slot (so a vectorised executor may add them at once).
    distinct: bool = True

    def __len__(self) -> int:
        return len(self.out)

    @cached_property
    def rows(self) -> tuple[slice | np.ndarray | None, ...]:
        """out, a, b, c as indices for a numpy executor: a slice where the slots are
        consecutive (a view, far cheaper than gathering by an index array), else the array."""
        def index(slots: np.ndarray | None):
            if slots is None or len(slots) == 0:
                return slots
            slots = np.asarray(slots, dtype=np.intp)
            if (np.diff(slots) == 1).all():
                return slice(int(slots[0]), int(slots[-1]) + 1)
            return slots
        return tuple(index(x) for x in (self.out, self.a, self.b, self.c))

    @cached_property
    def segments(self) -> tuple[np.ndarray, ...]:
        """The entries grouped by the slot they add into, for a vectorised ``mac``: (the slots,
        where each group starts, and a, b, c of every row in that order). A stable sort keeps
        each slot's entries in entry order; a group's first row reads the slot's own value
        (a = the slot, b = c = ONE: a product with 1.0 is exact), so a sum down a group is the
        slot plus its entries in order. A factor that is ONE in every row is None (the
        product is the same without it)."""
        order = np.argsort(self.out, kind="stable")
        slots, counts = np.unique(self.out[order], return_counts=True)
        starts = np.concatenate([[0], np.cumsum(counts + 1)[:-1]]).astype(np.intp)
        rows = np.ones(len(order) + len(slots), dtype=bool)
        rows[starts] = False
        a, b, c = (np.full(len(rows), ONE, dtype=np.intp) for _ in range(3))
        a[starts] = slots
        a[rows], b[rows], c[rows] = self.a[order], self.b[order], self.c[order]
        return slots, starts, a, None if (b == ONE).all() else b, None if (c == ONE).all() else c


@dataclass
class Slots:
    """Allocates slots: named regions of consecutive rows."""

    size: int = 2  # ONE and MINUS_ONE
    regions: dict[tuple[str, str], int] = field(default_factory=dict)

    def region(self, kind: str, name: str, count: int) -> int:
        start = self.size
        self.regions[(kind, name)] = start
        self.size += count
        return start


@dataclass(frozen=True)
class Program:
    """A plan lowered for one learning rule (truncated or exact RTRL, or BPTT over segments:
    ``segments``) and one loss."""

    plan: Plan
    ops: tuple[Op, ...]
    n_slots: int
    #: Region starts: ("y", group), ("net", group), ("prev", group), ("theta", ""),
    #: ("theta_of", connection), ("fixed", connection), ("velocity", ""), ("grad", ""), ...
    regions: dict[tuple[str, str], int]
    #: Per traced group: for each stored trace entry, its unit and its parameter index.
    trace_entries: dict[str, tuple[np.ndarray, np.ndarray]]
    full_gradient: bool = False
    loss: str = "sum_of_squares"
    segments: bool = False

    @property
    def n_theta(self) -> int:
        return self.plan.n_parameters

    @cached_property
    def inputs(self) -> tuple[Unit, ...]:
        return tuple(u for u in self.plan.units if u.role == "input")

    @cached_property
    def outputs(self) -> tuple[Unit, ...]:
        return tuple(u for u in self.plan.units if u.role == "output")

    @property
    def n_inputs(self) -> int:
        return sum(u.size for u in self.inputs)

    @property
    def n_outputs(self) -> int:
        return sum(u.size for u in self.outputs)

    def rows(self, kind: str, name: str, size: int) -> slice:
        start = self.regions[(kind, name)]
        return slice(start, start + size)

    def y(self, group: str) -> slice:
        return self.rows("y", group, self.plan.unit[group].size)

    def prev(self, group: str) -> slice:
        return self.rows("prev", group, self.plan.unit[group].size)

    @property
    def theta(self) -> slice:
        return self.rows("theta", "", self.n_theta)

    @property
    def velocity(self) -> slice:
        return self.rows("velocity", "", self.n_theta)

    @property
    def grad(self) -> slice:
        return self.rows("grad", "", self.n_theta)

    def trace(self, group: str) -> slice:
        return self.rows("trace", group, len(self.trace_entries[group][0]))

    @cached_property
    def traces(self) -> slice:
        """All stored traces (one contiguous region)."""
        if not self.trace_entries:
            return slice(self.n_slots, self.n_slots)
        first = min(self.regions[("trace", g)] for g in self.trace_entries)
        return slice(first, first + sum(len(e[0]) for e in self.trace_entries.values()))

    @cached_property
    def states(self) -> slice:
        """All previous-step values (one contiguous region)."""
        groups = self.plan.delayed_sources
        if not groups:
            return slice(self.n_slots, self.n_slots)
        first = self.regions[("prev", groups[0])]
        return slice(first, first + sum(self.plan.unit[g].size for g in groups))

    def weight_slots(self, connection: Connection) -> slice:
        kind = "theta_of" if connection.trainable else "fixed"
        return self.rows(kind, connection.name, connection.size)

    def phase(self, *names: str) -> tuple[Op, ...]:
        return tuple(op for op in self.ops if op.phase in names)
