"""Every operation kind of the spec language, each defined once.

A network is unit groups joined by connections (LSTM-g, Monner & Reggia 2012); what a step
computes is fixed by three kinds of choice, and each choice is one entry here:

- an **activation** (`ACTIVATIONS`): its formula as printed, its numpy form and derivative (the
  reference executor), and its compiled form (a scalar expression the compiled executor is
  generated from);
- a **pattern** (`PATTERNS`): which (target unit, source unit, weight) triples a connection
  holds, and the shape of its weight array. Everything else follows from the triples: the
  forward sum, the weight gradient, the backward error and the trace terms (`lower.py` turns
  each triple into multiply-accumulate entries);
- a **gate side** (`GATE_SIDES`): which unit of a gate group multiplies a triple, on the source
  side (LSTM-g, the papers' gates: gate unit k scales the k-th block of source units) or on the
  target side (gate unit k scales the k-th block of the target's share of this connection, as
  the reset gate of PyTorch's GRU, ``r * (W_hn h + b_hn)``).

Each entry also carries what `render` draws for it. Adding an activation is adding one
`Activation` here (`softsign`'s is an example) and its row in docs/spec.md's table. The program (`lstmgraph.program`)
lowers a plan into operations over these entries; the executors run it, and every kind of
operation is one entry too (`OPERATION_KINDS`): its numpy form, which the reference executor
dispatches to (`engine/executor.py`), and its compiled form, from which both compiled kernels
are generated (`engine/compiled/interpreter.py`, `specialised.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Literal

import numpy as np


@dataclass(frozen=True)
class Activation:
    """A squashing function y = f(net). ``scalar`` and ``scalar_derivative`` are Python
    expressions in ``x`` (the net input) and ``y`` (the activation) that the compiled executor
    is generated from; besides ``x`` and ``y`` they may use ``abs``, ``max``, ``min``, ``math.*``
    and ``tanh``, the compiled kernels' vectorisable one (`engine.compiled.vector_math.tanh`,
    within 2 units in the last place of libm's). ``apply``/``derivative`` are the numpy forms of
    the same formulas. ``smooth``: its derivatives are continuous up to the third, as
    `gradcheck`'s finite differences assume (relu's first and softsign's second jump at 0)."""

    name: str
    formula: str
    #: What a diagram writes in a unit of this activation: a name (a formula in x would read
    #: like the diagram's multiplication nodes, or an input x).
    label: str
    apply: Callable[[np.ndarray], np.ndarray]
    derivative: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
    scalar: str
    scalar_derivative: str
    elementwise: bool = True
    output_only: bool = False
    smooth: bool = True


def _logistic(net: np.ndarray) -> np.ndarray:
    # sigma(x) = (1 + tanh(x/2)) / 2: one ufunc call, and no overflow for any x.
    return 0.5 + 0.5 * np.tanh(0.5 * net)


def _softmax(net: np.ndarray) -> np.ndarray:
    """Over the unit axis, which is the first axis of the executors' (units, trials) arrays."""
    shifted = np.exp(net - net.max(axis=0, keepdims=True))
    return shifted / shifted.sum(axis=0, keepdims=True)


_LOGISTIC = "(0.5 + 0.5 * tanh(0.5 * x))"

ACTIVATIONS: dict[str, Activation] = {a.name: a for a in (
    Activation("logistic", "1/(1+e^-x)", "logistic", _logistic, lambda net, y: y * (1.0 - y),
               _LOGISTIC, "y * (1.0 - y)"),
    Activation("tanh", "tanh(x)", "tanh", np.tanh, lambda net, y: 1.0 - y * y,
               "tanh(x)", "1.0 - y * y"),
    Activation("identity", "x", "identity", lambda net: net.copy(), lambda net, y: np.ones_like(net),
               "x", "1.0"),
    Activation("relu", "max(0,x)", "relu", lambda net: np.maximum(net, 0.0),
               lambda net, y: (net > 0).astype(net.dtype), "max(x, 0.0)", "1.0 if x > 0.0 else 0.0", smooth=False),
    # 1997/2000 cell input g(x) = 4 sigma(x) - 2, range [-2, 2] (Hochreiter & Schmidhuber 1997, sec. 4).
    Activation("four_logistic_minus_two", "4 sigma(x) - 2", "4 logistic - 2",
               lambda net: 4.0 * _logistic(net) - 2.0,
               lambda net, y: 4.0 * ((y + 2.0) / 4.0) * (1.0 - (y + 2.0) / 4.0),
               f"4.0 * {_LOGISTIC} - 2.0", "4.0 * ((y + 2.0) / 4.0) * (1.0 - (y + 2.0) / 4.0)"),
    # 1997/2000 cell output h(x) = 2 sigma(x) - 1, range [-1, 1].
    Activation("two_logistic_minus_one", "2 sigma(x) - 1", "2 logistic - 1",
               lambda net: 2.0 * _logistic(net) - 1.0,
               lambda net, y: 2.0 * ((y + 1.0) / 2.0) * (1.0 - (y + 1.0) / 2.0),
               f"2.0 * {_LOGISTIC} - 1.0", "2.0 * ((y + 1.0) / 2.0) * (1.0 - (y + 1.0) / 2.0)"),
    # PyTorch's Softsign, x / (1 + |x|): a squashing to (-1, 1) with polynomial tails.
    Activation("softsign", "x/(1+|x|)", "softsign", lambda net: net / (1.0 + np.abs(net)),
               lambda net, y: (1.0 - np.abs(y)) ** 2, "x / (1.0 + abs(x))", "(1.0 - abs(y)) * (1.0 - abs(y))",
               smooth=False),
    # Over a whole group: dy_i/dnet_j = y_i (delta_ij - y_j); the executors treat it as a group.
    Activation("softmax", "softmax(x)", "softmax", _softmax, None, "x", "1.0", elementwise=False,
               output_only=True),
)}

#: Names a spec may use for the activation of any group, and of output groups.
UNIT_ACTIVATIONS: tuple[str, ...] = tuple(a.name for a in ACTIVATIONS.values() if not a.output_only)
OUTPUT_ACTIVATIONS: tuple[str, ...] = tuple(ACTIVATIONS)
#: Other names a spec may use (PyTorch's ``sigmoid``), replaced by their own name at validation.
ALIASES: dict[str, str] = {"sigmoid": "logistic"}
UnitActivation = Literal[UNIT_ACTIVATIONS]  # type: ignore[valid-type]
OutputActivation = Literal[OUTPUT_ACTIVATIONS]  # type: ignore[valid-type]
#: Formula of each activation, as printed by `lstmgraph validate` and the renderer.
FORMULAS: dict[str, str] = {name: a.formula for name, a in ACTIVATIONS.items()}
#: Integer codes of the compiled executor (the order of `ACTIVATIONS`).
ACTIVATION_CODE: dict[str, int] = {name: code for code, name in enumerate(ACTIVATIONS)}


Triple = tuple[int, int, int]  # (target unit, source unit, index into the flattened weight)


@dataclass(frozen=True)
class Pattern:
    """How a connection's weights join its source units to its target units."""

    name: str
    #: The weight array's shape for (target units, source units).
    shape: Callable[[int, int], tuple[int, ...]]
    #: Every (target unit, source unit, weight index) the connection sums over, in the order
    #: the executors add them (target by target, then source by source).
    triples: Callable[[int, int], Iterator[Triple]]
    #: The label a diagram shows on the edge, from the weight shape.
    label: Callable[[tuple[int, ...]], str]


def _full(n_target: int, n_source: int) -> Iterator[Triple]:
    for i in range(n_target):
        for j in range(n_source):
            yield i, j, i * n_source + j


def _one_to_one(n_target: int, n_source: int) -> Iterator[Triple]:
    for i in range(n_target):
        yield i, i, i


def _peephole(n_target: int, n_source: int) -> Iterator[Triple]:
    # Gate k of a block sees the cells of its own block only (Gers et al. 2002, sec. 2).
    block = max(n_source // n_target, 1)
    for i in range(n_target):
        for k in range(block):
            yield i, i * block + k, i * block + k


PATTERNS: dict[str, Pattern] = {p.name: p for p in (
    Pattern("full", lambda n_target, n_source: (n_target, n_source), _full,
            lambda shape: "x".join(map(str, shape))),
    Pattern("one_to_one", lambda n_target, n_source: (n_target,), _one_to_one,
            lambda shape: f"1:1 {shape[0]}"),
    Pattern("peephole", lambda n_target, n_source: (n_target, max(n_source // n_target, 1)), _peephole,
            lambda shape: f"peephole {'x'.join(map(str, shape))}"),
)}


@dataclass(frozen=True)
class GateSide:
    """Which unit of a gate group (of ``n_gate`` units) multiplies the triple (i, j)."""

    name: str
    #: The group whose size the gate group must divide: "source" or "target".
    divides: str
    gate_unit: Callable[[int, int, int], int]  # (i, j, units per gate unit) -> gate unit
    describe: str
    #: What a diagram writes in the multiplication node of such a connection.
    mark: str


GATE_SIDES: dict[str, GateSide] = {s.name: s for s in (
    GateSide("source", "source", lambda i, j, block: j // block,
             "gate unit k multiplies the k-th block of the source's units before the weights", "\u00d7"),
    GateSide("target", "target", lambda i, j, block: i // block,
             "gate unit k multiplies the k-th block of the weighted sums this connection adds "
             "to the target", "\u00d7\u03a3"),
)}

#: Per-step losses (targets concatenated over output groups; NaN: no target there).
LOSSES: tuple[str, ...] = ("sum_of_squares", "cross_entropy")
LOSS_CODE: dict[str, int] = {name: code for code, name in enumerate(LOSSES)}
#: The output activations a loss needs (absent: any): cross-entropy reads outputs as probabilities.
LOSS_OUTPUTS: dict[str, tuple[str, ...]] = {"cross_entropy": ("softmax", "logistic")}


def loss_output_problem(loss: str, output: str, activation: str) -> str | None:
    """Why output group `output`, of `activation`, cannot carry `loss`; None when it can."""
    needed = LOSS_OUTPUTS.get(loss)
    if needed is None or activation in needed:
        return None
    return f"{loss} needs {' or '.join(needed)} outputs; '{output}' is {activation}"


# -- the kinds of the lowered program's operations ------------------------------------------------

@dataclass
class NumpyStep:
    """What a numpy form reads besides the slot array: one `engine.executor.run_ops` call's
    inputs and targets ((columns, trials) or (columns,)), rate, momentum and loss per trial."""

    inputs: np.ndarray | None
    targets: np.ndarray | None
    rate: np.ndarray | float
    momentum: float
    loss: np.ndarray


@dataclass(frozen=True)
class OperationKind:
    """One kind of the program's operations (`lstmgraph.program.Op` says what each reads and
    writes), in the numpy form and the compiled form.

    ``numpy(op, V, step)`` applies the whole operation to the slot array V (slots, trials). A
    kind applied entry by entry has a ``statement``: Python lines for one entry in one lane,
    which both compiled kernels are generated from, where ``{out}``, ``{a}``, ``{b}`` stand for
    the entry's slots, ``{input}`` for the step's input in column a, ``{rate}`` for the lane's
    learning rate and ``{f}`` for the compiled form of the operation's activation (``form``
    picks it). An accumulating kind (``term``) adds its term to out, ``{out} += term``; a run
    adding into one slot keeps the sum in a register. ``learning``: only lanes that learn run it
    (and ``after``, once per operation). A kind over a whole group has a compiled function
    instead, called as ``call`` (with ``{code}``, ``{mode}``, ``{run}``, ``{lanes}``)."""

    name: str
    numpy: Callable[..., None]
    statement: str = ""
    term: str = ""
    #: Names of the compiled ``run``'s arguments the statement reads besides the slots.
    arguments: tuple[str, ...] = ()
    form: Callable[[Activation], str] | None = None
    learning: bool = False
    after: str = ""
    call: str = ""

    @property
    def entrywise(self) -> bool:
        return not self.call

    def lines(self, activation: Activation | None = None, **operands: str) -> list[str]:
        """The statement of one entry with ``operands`` (out, a, b, input, rate as text) filled in."""
        text = f"{{out}} += {self.term}" if self.term else self.statement
        f = self.form(activation) if self.form else ""
        return text.format(f=f, **operands).split("\n")


def _take(V: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
    """V[rows]: a view for a slice, a gathered copy for an index array."""
    return V[rows] if isinstance(rows, slice) else np.take(V, rows, axis=0)


def _columns(values: np.ndarray, trials: int) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return np.broadcast_to(values[:, None], (len(values), trials)) if values.ndim == 1 else values


def _input(op, V, step):
    V[op.out] = _columns(step.inputs, V.shape[1])[op.a]


def _zero(op, V, step):
    V[op.rows[0]] = 0.0


def _copy(op, V, step):
    V[op.rows[0]] = _take(V, op.rows[1])


def _mac(op, V, step):
    """Where entries share a slot: each slot's own value and then its entries, in entry
    order, summed by one `np.add.reduceat`, whose order of additions is numpy's (numpy 2.4
    pairs a segment of four as the compiled kernels' running sum does not), so such a sum can
    differ from theirs in the last place."""
    out, a, b, c = op.rows
    if op.distinct:
        V[out] += _take(V, a) * _take(V, b) * _take(V, c)
        return
    slots, starts, a, b, c = op.segments
    terms = np.take(V, a, axis=0)
    for factor in (b, c):
        if factor is not None:  # None: ONE in every row
            terms *= np.take(V, factor, axis=0)
    V[slots] = np.add.reduceat(terms, starts, axis=0)


def _scale(op, V, step):
    V[op.rows[0]] *= _take(V, op.rows[1])


def _activate(op, V, step):
    V[op.out] = _BY_CODE[op.code].apply(V[op.a])


def _derive(op, V, step):
    V[op.out] = _BY_CODE[op.code].derivative(V[op.a], V[op.b])


def _softmax_group(op, V, step):
    V[op.out] = _softmax(V[op.a])


def _complement(op, V, step):
    V[op.out] = 1.0 - V[op.a]


_TINY = np.finfo(np.float64).tiny


def _loss(op, V, step):
    """One output group: the loss into ``step.loss``, dE/dnet into out. (The success test is
    the compiled kernels' only, `lstmgraph.success`.)"""
    y = V[op.a]
    target = _columns(step.targets, V.shape[1])[op.c]
    missing = np.isnan(target)
    clean = np.where(missing, 0.0, target)
    if LOSSES[op.code] == "sum_of_squares":
        error = np.where(missing, 0.0, y - clean)
        step.loss += 0.5 * (error * error).sum(axis=0)
        if op.mode:  # softmax: dE/dnet_i = y_i (e_i - sum_j e_j y_j)
            V[op.out] = y * (error - (error * y).sum(axis=0))
        else:
            V[op.out] = V[op.b] * error
        return
    present = ~missing.any(axis=0)
    if op.mode:
        terms = clean * np.log(np.maximum(y, _TINY))
    else:
        terms = clean * np.log(np.maximum(y, _TINY)) + (1 - clean) * np.log(np.maximum(1 - y, _TINY))
    step.loss -= np.where(present, terms.sum(axis=0), 0.0)
    V[op.out] = np.where(present, y - clean, 0.0)


def momentum_step(weights: np.ndarray, velocity: np.ndarray, gradient: np.ndarray, rate, momentum) -> None:
    """Momentum SGD in place, the papers' update (2002: with momentum; 1997, 2000: momentum 0):
    ``v <- momentum v - rate dE/dw``, ``w <- w + v``."""
    velocity *= momentum
    velocity -= rate * gradient
    weights += velocity


def _update(op, V, step):
    weights, velocity = V[op.out], V[op.a]
    momentum_step(weights, velocity, V[op.b], np.asarray(step.rate), step.momentum)
    V[op.a], V[op.out] = velocity, weights


_BY_CODE = list(ACTIVATIONS.values())

#: Every operation kind, in the order of their integer codes (the compiled kernels').
OPERATION_KINDS: dict[str, OperationKind] = {k.name: k for k in (
    OperationKind("input", _input, "{out} = {input}", arguments=("inputs", "t")),
    OperationKind("zero", _zero, "{out} = 0.0"),
    OperationKind("copy", _copy, "{out} = {a}"),
    OperationKind("mac", _mac, term="{a} * {b} * {c}"),
    OperationKind("scale", _scale, "{out} *= {a}"),
    OperationKind("activate", _activate, "x = {a}\n{out} = {f}", form=lambda f: f.scalar),
    OperationKind("derive", _derive, "x = {a}\ny = {b}\n{out} = {f}", form=lambda f: f.scalar_derivative),
    OperationKind("softmax", _softmax_group, call="softmax({run}, R, V, {lanes})"),
    OperationKind("complement", _complement, "{out} = 1.0 - {a}"),
    OperationKind("loss", _loss, call="loss({code}, {mode}, {run}, R, V, {lanes}, targets, t, tolerance, active, "
                                      "wrong, sums, record)"),
    # Momentum SGD (the optimiser's `Optimizer.apply` for online steps): velocity a, gradient b.
    OperationKind("update", _update, "change = {a} * momentum - {rate} * {b}\n{a} = change\n{out} += change",
                  arguments=("rate", "momentum", "decay"), learning=True, after="{rate} *= decay"),
)}
KIND_CODE: dict[str, int] = {name: code for code, name in enumerate(OPERATION_KINDS)}
