"""Generate the source of a numba kernel that runs a plan's steps with online RTRL learning.

The generated code is plain loops over the flat buffers of `layout.py`: per step the forward
pass (simulator.py), the loss and its output deltas (losses.py), the within-step backward
pass, the contraction of the previous traces with the error reaching the previous step, the
forward propagation of the traces by the terms `TraceLayout` derived (traces.py), and a
momentum SGD update (optimiser). It mirrors the numpy reference executor operation by
operation, so the two agree to rounding; nothing in it is specific to an architecture.
"""

from __future__ import annotations

import hashlib

from ...graph.units import Unit
from ..simulator import Link, Simulator
from ..traces import DENSE, Aligned, TraceLayout
from .layout import BufferLayout, buffer_layout
from .ssa import unique_names

KERNEL_VERSION = "7"


SECTION_ARGUMENTS = ("th, fx, ve, pv, tr, y, net, dy, dnet, perr, grad, cur, sc, inputs, targets, t, "
                     "momentum, decay, tolerance")


class _Code:
    """Lines of generated code. A `section` becomes a small function of its own, called where
    it stands: numba compiles many small functions far faster than one long one, yet every
    call costs argument passing, so adjacent sections are merged up to `SECTION_LINES` lines."""

    SECTION_LINES = 120

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.constants: dict[tuple[int, ...], str] = {}
        self.counter = 0
        self.sections: list[list[str]] = []

    def section(self):
        code = self

        class _Section:
            def __enter__(self_inner):
                self_inner.saved = (code.lines, code.depth)
                code.lines, code.depth = [], 1

            def __exit__(self_inner, *exc):
                body = code.lines or ["    pass"]
                code.lines, code.depth = self_inner.saved
                last = len(code.sections) - 1
                call = "    " * code.depth + f"section_{last}({SECTION_ARGUMENTS})"
                if (code.lines and code.lines[-1] == call
                        and len(code.sections[last]) + len(body) <= code.SECTION_LINES):
                    code.sections[last].extend(body)
                    return
                code.sections.append(list(body))
                code(f"section_{last + 1}({SECTION_ARGUMENTS})")

        return _Section()

    def functions(self) -> str:
        """The source of every section function."""
        return "\n\n".join("@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, "
                            "no_cfunc_wrapper=True)\n"
                            f"def section_{k}({SECTION_ARGUMENTS}):\n" + "\n".join(body) + "\n"
                            for k, body in enumerate(self.sections))

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def block(self, header: str):
        code = self

        class _Block:
            def __enter__(self_inner):
                code(header)
                code.depth += 1

            def __exit__(self_inner, *exc):
                code.depth -= 1

        return _Block()

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def rows(self, rows: tuple[int, ...], index: str) -> str:
        """An expression for rows[index]: arithmetic when the map is the identity or blocks."""
        count = len(rows)
        if rows == tuple(range(count)):
            return f"({index})"
        for k in range(2, count + 1):
            if count % k == 0 and rows == tuple(i // k for i in range(count)):
                return f"(({index}) // {k})"
        if rows not in self.constants:
            self.constants[rows] = f"ROWS{len(self.constants)}"
        return f"{self.constants[rows]}[{index}]"


def _activation(name: str, net: str) -> str:
    return {
        "logistic": f"(0.5 + 0.5 * math.tanh(0.5 * {net}))",
        "tanh": f"math.tanh({net})",
        "identity": f"({net})",
        "relu": f"max({net}, 0.0)",
        "four_logistic_minus_two": f"(4.0 * (0.5 + 0.5 * math.tanh(0.5 * {net})) - 2.0)",
        "two_logistic_minus_one": f"(2.0 * (0.5 + 0.5 * math.tanh(0.5 * {net})) - 1.0)",
    }[name]


def _derivative(name: str, net: str, y: str) -> str:
    return {
        "logistic": f"({y} * (1.0 - {y}))",
        "tanh": f"(1.0 - {y} * {y})",
        "identity": "1.0",
        "relu": f"(1.0 if {net} > 0 else 0.0)",
        "four_logistic_minus_two": f"(4.0 * (({y} + 2.0) / 4.0) * (1.0 - ({y} + 2.0) / 4.0))",
        "two_logistic_minus_one": f"(2.0 * (({y} + 1.0) / 2.0) * (1.0 - ({y} + 1.0) / 2.0))",
    }[name]


class KernelSource:
    """The generated kernel of one plan, learning rule and loss."""

    def __init__(self, sim: Simulator, loss: str):
        self.sim = sim
        self.loss = loss
        self.layout = TraceLayout(sim)
        self.buffers: BufferLayout = buffer_layout(sim, self.layout)
        self.code = _Code()
        self._generate()
        constants = "".join(f"{name} = np.array({list(rows)}, dtype=np.int64)\n"
                            for rows, name in self.code.constants.items())
        sections = self.code.functions()
        self.text = unique_names(_HEADER + constants + "\n\n" + sections + "\n\n"
                                 + "\n".join(self.code.lines) + "\n")
        self.key = hashlib.sha256((KERNEL_VERSION + self.text).encode()).hexdigest()[:20]

    # -- accessors ---------------------------------------------------------------------------
    def unit(self, name: str) -> Unit:
        return self.sim.units[name]

    def a(self, unit: str, index: str) -> str:
        return f"y[{self.buffers.act[unit]} + {index}]"

    def weight(self, link: Link, index: str) -> str:
        if link.trainable:
            return f"th[{self.buffers.theta[link.name]} + {index}]"
        return f"fx[{self.buffers.fixed[link.name]} + {index}]"

    def source(self, link: Link, index: str) -> str:
        buffer = "pv" if link.delay else "y"
        return f"{buffer}[{self.buffers.act[link.source]} + {index}]"

    def gate(self, link: Link, index: str) -> str | None:
        if not link.gate:
            return None
        position = index if link.gate_block == 1 else f"({index}) // {link.gate_block}"
        value = self.a(link.gate, position)
        return f"(1.0 - {value})" if link.complement else value

    def gated(self, link: Link, index: str) -> str:
        gate = self.gate(link, index)
        return self.source(link, index) if gate is None else f"{gate} * {self.source(link, index)}"

    # -- the kernel --------------------------------------------------------------------------
    def _generate(self) -> None:
        code, b = self.code, self.buffers
        # `run` takes trials first..last-1; the caller spreads blocks of trials over threads.
        code("@numba.njit(cache=True, nogil=True)")
        code("def run(first, last, theta, fixed, velocity, prev, traces, inputs, targets, rate, momentum, "
             "decay, tolerance, learn, out_steps, out_loss, record):")
        code.depth += 1
        with code.block("for p in range(first, last):"):
            code("trial(p, theta, fixed, velocity, prev, traces, inputs, targets, rate, momentum, "
                 "decay, tolerance, learn, out_steps, out_loss, record)")
        code.depth -= 1
        code("")
        code("")
        code("@numba.njit(cache=True, nogil=True)")
        code("def trial(p, theta, fixed, velocity, prev, traces, inputs, targets, rate, momentum, decay, "
             "tolerance, learn, out_steps, out_loss, record):")
        code.depth += 1
        code("steps = inputs.shape[0]")
        code("th = theta[p]")
        code("fx = fixed[p]")
        code("ve = velocity[p]")
        code("pv = prev[p]")
        code("tr = traces[p]")
        code(f"y = np.zeros({b.n_act})")
        code(f"net = np.zeros({b.n_act})")
        code(f"dy = np.zeros({b.n_act})")
        code(f"dnet = np.zeros({b.n_act})")
        code(f"perr = np.zeros({b.n_act})")
        code(f"grad = np.zeros({max(b.n_theta, 1)})")
        code(f"cur = np.zeros({max(b.n_cur, 1)})")
        code("sc = np.zeros(4)  # running loss, error flag, learning rate, steps done")
        code("sc[2] = rate[p]")
        with code.block("for t in range(steps):"):
            self._forward()
            code("sc[1] = 0.0")
            with code.section():
                self._loss()
            with code.block("if record.shape[1] > 0:"):
                column = 0
                for unit in self.sim.outputs:
                    with code.block(f"for i in range({unit.size}):"):
                        code(f"record[p, t, {column} + i] = y[{b.act[unit.name]} + i]")
                    column += unit.size
            with code.block("if learn:"):
                self._backward()
                self._contract()
                self._propagate()
                with code.section():
                    self._update()
            with code.section():
                for name in self.sim.delayed:
                    size = self.unit(name).size
                    with code.block(f"for i in range({size}):"):
                        code(f"pv[{b.act[name]} + i] = y[{b.act[name]} + i]")
            code("sc[3] = t + 1")
            with code.block("if sc[1] > 0.0:"):
                code("break")
        code("out_steps[p] = int(sc[3])")
        code("out_loss[p] = sc[0]")
        code("rate[p] = sc[2]")
        code.depth -= 1

    def _forward(self) -> None:
        code, b, sim = self.code, self.buffers, self.sim
        start = 0
        with code.section():
            for unit in sim.inputs:
                with code.block(f"for i in range({unit.size}):"):
                    code(f"y[{b.act[unit.name]} + i] = inputs[t, {start} + i]")
                start += unit.size
            if "bias" in b.act:
                code(f"y[{b.act['bias']}] = 1.0")
        for name in sim.order:
            with code.section():
                self._forward_unit(name)

    def _forward_unit(self, name: str) -> None:
        code, b, sim = self.code, self.buffers, self.sim
        unit = self.unit(name)
        o = b.act[name]
        with code.block(f"for i in range({unit.size}):"):
            code(f"net[{o} + i] = 0.0")
        for link in sim.incoming[name]:
            source_size = self.unit(link.source).size
            if link.pattern == "full":
                with code.block(f"for i in range({unit.size}):"):
                    code("acc = 0.0")
                    with code.block(f"for j in range({source_size}):"):
                        code(f"acc += {self.weight(link, f'i * {source_size} + j')} * {self.gated(link, 'j')}")
                    code(f"net[{o} + i] += acc")
            elif link.pattern == "one_to_one":
                with code.block(f"for i in range({unit.size}):"):
                    code(f"net[{o} + i] += {self.weight(link, 'i')} * {self.gated(link, 'i')}")
            else:
                block = link.peephole_block
                with code.block(f"for i in range({unit.size}):"):
                    code("acc = 0.0")
                    with code.block(f"for j in range({block}):"):
                        code(f"acc += {self.weight(link, f'i * {block} + j')} * {self.gated(link, f'i * {block} + j')}")
                    code(f"net[{o} + i] += acc")
        if unit.activation == "softmax":
            code(f"top = net[{o}]")
            with code.block(f"for i in range(1, {unit.size}):"):
                code(f"top = max(top, net[{o} + i])")
            code("norm = 0.0")
            with code.block(f"for i in range({unit.size}):"):
                code(f"y[{o} + i] = math.exp(net[{o} + i] - top)")
                code(f"norm += y[{o} + i]")
            with code.block(f"for i in range({unit.size}):"):
                code(f"y[{o} + i] /= norm")
        else:
            with code.block(f"for i in range({unit.size}):"):
                code(f"y[{o} + i] = {_activation(unit.activation, f'net[{o} + i]')}")

    def _loss(self) -> None:
        """Loss, success test and dE/dnet of the outputs (kept in dnet; dy collects the rest)."""
        code, b = self.code, self.buffers
        with code.block(f"for i in range({b.n_act}):"):
            code("dnet[i] = 0.0")
            code("dy[i] = 0.0")
            code("perr[i] = 0.0")
        column = 0
        for unit in self.sim.outputs:
            o = b.act[unit.name]
            n = unit.size
            code(f"present = 0")
            with code.block(f"for i in range({n}):"):
                with code.block(f"if not math.isnan(targets[t, {column} + i]):"):
                    code("present += 1")
                    with code.block(f"if tolerance > 0.0 and abs(y[{o} + i] - targets[t, {column} + i]) >= tolerance:"):
                        code("sc[1] = 1.0")
            if self.loss == "sum_of_squares":
                with code.block("if present > 0:"):
                    with code.block(f"for i in range({n}):"):
                        code(f"target = targets[t, {column} + i]")
                        code(f"e = 0.0 if math.isnan(target) else y[{o} + i] - target")
                        code("sc[0] += 0.5 * e * e")
                        code(f"dy[{o} + i] = e")
                    if unit.activation == "softmax":
                        code("dot = 0.0")
                        with code.block(f"for i in range({n}):"):
                            code(f"dot += dy[{o} + i] * y[{o} + i]")
                        with code.block(f"for i in range({n}):"):
                            code(f"dnet[{o} + i] = y[{o} + i] * (dy[{o} + i] - dot)")
                    else:
                        with code.block(f"for i in range({n}):"):
                            code(f"dnet[{o} + i] = {_derivative(unit.activation, f'net[{o} + i]', f'y[{o} + i]')} * dy[{o} + i]")
                    with code.block(f"for i in range({n}):"):
                        code(f"dy[{o} + i] = 0.0")
            else:
                with code.block(f"if present == {n}:"):
                    with code.block(f"for i in range({n}):"):
                        code(f"target = targets[t, {column} + i]")
                        code(f"out = y[{o} + i]")
                        if unit.activation == "softmax":
                            code("sc[0] -= target * math.log(max(out, 2.2250738585072014e-308))")
                        else:
                            code("sc[0] -= target * math.log(max(out, 2.2250738585072014e-308)) + "
                                 "(1.0 - target) * math.log(max(1.0 - out, 2.2250738585072014e-308))")
                        code(f"dnet[{o} + i] = out - target")
            column += n

    def _backward(self) -> None:
        code, b, sim = self.code, self.buffers, self.sim
        with code.section():
            with code.block(f"for i in range({max(b.n_theta, 1)}):"):
                code("grad[i] = 0.0")
        for name in reversed(sim.order):
            with code.section():
                self._backward_unit(name)

    def _backward_unit(self, name: str) -> None:
        code, b, sim = self.code, self.buffers, self.sim
        unit = self.unit(name)
        o, n = b.act[name], unit.size
        if unit.activation == "softmax":
            code("dot = 0.0")
            with code.block(f"for i in range({n}):"):
                code(f"dot += dy[{o} + i] * y[{o} + i]")
            with code.block(f"for i in range({n}):"):
                code(f"dnet[{o} + i] += y[{o} + i] * (dy[{o} + i] - dot)")
        else:
            with code.block(f"for i in range({n}):"):
                code(f"dnet[{o} + i] += {_derivative(unit.activation, f'net[{o} + i]', f'y[{o} + i]')} * dy[{o} + i]")
        for link in sim.incoming[name]:
            self._backward_link(link, o, n)

    def _backward_link(self, link: Link, o: int, n: int) -> None:
        code, b = self.code, self.buffers
        ns = self.unit(link.source).size
        needs_source = link.carries and self.unit(link.source).computed
        sink = ("perr" if link.delay else "dy") if needs_source else None

        def spread(j: str, error: str) -> None:
            if link.gate:
                g_index = j if link.gate_block == 1 else f"({j}) // {link.gate_block}"
                sign = "-" if link.complement else ""
                code(f"dy[{b.act[link.gate]} + {g_index}] += {sign}{error} * {self.source(link, j)}")
            if sink:
                gate = self.gate(link, j)
                code(f"{sink}[{b.act[link.source]} + {j}] += {error}" + (f" * {gate}" if gate else ""))

        if link.pattern == "full":
            if link.trainable:
                w = b.theta[link.name]
                with code.block(f"for i in range({n}):"):
                    code(f"d = dnet[{o} + i]")
                    with code.block(f"for j in range({ns}):"):
                        code(f"grad[{w} + i * {ns} + j] += d * {self.gated(link, 'j')}")
            if link.gate or sink:
                with code.block(f"for j in range({ns}):"):
                    code("acc = 0.0")
                    with code.block(f"for i in range({n}):"):
                        code(f"acc += {self.weight(link, f'i * {ns} + j')} * dnet[{o} + i]")
                    spread("j", "acc")
        elif link.pattern == "one_to_one":
            with code.block(f"for i in range({n}):"):
                if link.trainable:
                    code(f"grad[{b.theta[link.name]} + i] += dnet[{o} + i] * {self.gated(link, 'i')}")
                if link.gate or sink:
                    code(f"back = {self.weight(link, 'i')} * dnet[{o} + i]")
                    spread("i", "back")
        else:
            block = link.peephole_block
            with code.block(f"for i in range({n}):"):
                with code.block(f"for k in range({block}):"):
                    code(f"j = i * {block} + k")
                    if link.trainable:
                        code(f"grad[{b.theta[link.name]} + j] += dnet[{o} + i] * {self.gated(link, 'j')}")
                    if link.gate or sink:
                        code(f"back = {self.weight(link, 'j')} * dnet[{o} + i]")
                        spread("j", "back")

    def _contract(self) -> None:
        code, b = self.code, self.buffers
        for (unit, group), offset in b.traces.items():
            with code.section():
                self._contract_one(unit, group, offset)

    def _contract_one(self, unit: str, group: str, offset: int) -> None:
        code, b = self.code, self.buffers
        rep = self.layout.rep[(unit, group)]
        info = self.layout.groups[group]
        width = b.width[(unit, group)]
        g = b.theta[group]
        with code.block(f"for i in range({self.unit(unit).size}):"):
            code(f"e = perr[{b.act[unit]} + i]")
            with code.block("if e != 0.0:"):
                if rep is DENSE:
                    with code.block(f"for c in range({width}):"):
                        code(f"grad[{g} + c] += e * tr[{offset} + i * {width} + c]")
                else:
                    code(f"base = {g} + {self.code.rows(rep.rows, 'i')} * {info.columns}")
                    with code.block(f"for c in range({width}):"):
                        code(f"grad[base + c] += e * tr[{offset} + i * {width} + c]")

    def _propagate(self) -> None:
        code, b, layout = self.code, self.buffers, self.layout
        for (unit, group), offset in b.cur.items():
            with code.section():
                self._propagate_one(unit, group, offset)
        with code.section():
            for (unit, group), offset in b.traces.items():
                count = self.unit(unit).size * b.width[(unit, group)]
                with code.block(f"for i in range({count}):"):
                    code(f"tr[{offset} + i] = cur[{b.cur[(unit, group)]} + i]")

    def _propagate_one(self, unit: str, group: str, offset: int) -> None:
        code, b, layout = self.code, self.buffers, self.layout
        rep = layout.rep[(unit, group)]
        width = b.width[(unit, group)]
        size = self.unit(unit).size
        with code.block(f"for i in range({size * width}):"):
            code(f"cur[{offset} + i] = 0.0")
        for kind, link, term_rep in layout.terms[(unit, group)]:
            self._term(kind, link, group, rep, term_rep, offset, width)
        o = b.act[unit]
        activation = self.unit(unit).activation
        if activation == "softmax":
            with code.block(f"for c in range({width}):"):
                code("dot = 0.0")
                with code.block(f"for i in range({size}):"):
                    code(f"dot += y[{o} + i] * cur[{offset} + i * {width} + c]")
                with code.block(f"for i in range({size}):"):
                    code(f"cur[{offset} + i * {width} + c] = y[{o} + i] * (cur[{offset} + i * {width} + c] - dot)")
        elif activation != "identity":
            with code.block(f"for i in range({size}):"):
                code(f"d = {_derivative(activation, f'net[{o} + i]', f'y[{o} + i]')}")
                with code.block(f"for c in range({width}):"):
                    code(f"cur[{offset} + i * {width} + c] *= d")

    def _place(self, target_rep, term_rep, group: str, offset: int, width: int, row: str, column: str) -> str:
        """Index in cur of the term's (row, column) entry, within the unit's representation."""
        if target_rep is DENSE and isinstance(term_rep, Aligned):
            columns = self.layout.groups[group].columns
            return (f"{offset} + ({row}) * {width} + {self.code.rows(term_rep.rows, row)} * {columns} "
                    f"+ {column}")
        return f"{offset} + ({row}) * {width} + {column}"

    def _term(self, kind: str, link: Link, group: str, rep, term_rep, offset: int, width: int) -> None:
        code, b, layout = self.code, self.buffers, self.layout
        n = self.unit(link.target).size
        ns = self.unit(link.source).size
        if kind == "direct":
            place = lambda row, column: self._place(rep, term_rep, group, offset, width, row, column)
            if link.pattern == "full":
                with code.block(f"for i in range({n}):"):
                    with code.block(f"for c in range({ns}):"):
                        code(f"cur[{place('i', 'c')}] += {self.gated(link, 'c')}")
            elif link.pattern == "one_to_one":
                with code.block(f"for i in range({n}):"):
                    code(f"cur[{place('i', '0')}] += {self.gated(link, 'i')}")
            else:
                block = link.peephole_block
                with code.block(f"for i in range({n}):"):
                    with code.block(f"for c in range({block}):"):
                        code(f"cur[{place('i', 'c')}] += {self.gated(link, f'i * {block} + c')}")
            return
        # The sensitivity feeding the term, row j of the source-side tensor, and its rows map.
        if kind == "source":
            holder = link.source
            in_rep = layout.rep[(holder, group)]
            in_width = b.width[(holder, group)]
            buffer, base = ("tr", b.traces[(holder, group)]) if link.delay else ("cur", b.cur[(holder, group)])
            row_of = lambda j: j
            gate = self.gate(link, "j")
            factor = gate if gate else None
        else:
            holder = link.gate
            in_rep = layout.rep[(holder, group)]
            in_width = b.width[(holder, group)]
            buffer, base = "cur", b.cur[(holder, group)]
            row_of = (lambda j: j) if link.gate_block == 1 else (lambda j: f"({j}) // {link.gate_block}")
            sign = "-" if link.complement else ""
            factor = f"{sign}{self.source(link, 'j')}"
            if isinstance(in_rep, Aligned) and link.gate_block > 1:
                in_rep = Aligned(tuple(r for r in in_rep.rows for _ in range(link.gate_block)))
        columns = layout.groups[group].columns

        def entry(j: str, c: str) -> str:
            return f"{buffer}[{base} + ({row_of(j)}) * {in_width} + {c}]"

        def coefficient(weight: str) -> str:
            return f"{weight} * {factor}" if factor else weight

        if link.pattern == "one_to_one":
            with code.block(f"for j in range({n}):"):
                code(f"coef = {coefficient(self.weight(link, 'j'))}")
                with code.block(f"for c in range({in_width}):"):
                    code(f"cur[{self._place(rep, term_rep, group, offset, width, 'j', 'c')}] += coef * {entry('j', 'c')}")
            return
        if link.pattern == "full":
            with code.block(f"for i in range({n}):"):
                with code.block(f"for j in range({ns}):"):
                    code(f"coef = {coefficient(self.weight(link, f'i * {ns} + j'))}")
                    if in_rep is DENSE:
                        with code.block(f"for c in range({in_width}):"):
                            code(f"cur[{offset} + i * {width} + c] += coef * {entry('j', 'c')}")
                    else:
                        code(f"at = {offset} + i * {width} + {code.rows(in_rep.rows, 'j')} * {columns}")
                        with code.block(f"for c in range({in_width}):"):
                            code(f"cur[at + c] += coef * {entry('j', 'c')}")
            return
        block = link.peephole_block
        with code.block(f"for i in range({n}):"):
            with code.block(f"for k in range({block}):"):
                code(f"j = i * {block} + k")
                code(f"coef = {coefficient(self.weight(link, 'j'))}")
                if term_rep is DENSE and in_rep is not DENSE:
                    code(f"at = {offset} + i * {width} + {code.rows(in_rep.rows, 'j')} * {columns}")
                    with code.block(f"for c in range({in_width}):"):
                        code(f"cur[at + c] += coef * {entry('j', 'c')}")
                else:
                    with code.block(f"for c in range({in_width}):"):
                        code(f"cur[{self._place(rep, term_rep, group, offset, width, 'i', 'c')}] += coef * {entry('j', 'c')}")

    def _update(self) -> None:
        code, b = self.code, self.buffers
        with code.block(f"for w in range({b.n_theta}):"):
            code("ve[w] = ve[w] * momentum - sc[2] * grad[w]")
            code("th[w] += ve[w]")
        code("sc[2] *= decay")


_HEADER = '''"""Generated by lstmgraph from a compiled plan; do not edit (see engine/compiled/codegen.py)."""
import math

import numba
import numpy as np

'''
