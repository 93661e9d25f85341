"""The specialised kernel: the interpreter's loop written out for one program.

`source` turns a flattened program (`interpreter.flatten`: its operations and affine runs)
into the text of a numba function with the same signature as the interpreter's ``run``, in
which every operation is written where it stands, with its run's bounds, slot offsets and
activation formula as literal constants: no dispatch per operation, no index arithmetic read
from arrays, and loops LLVM can unroll and vectorise. It reads nothing but the flat program
and the registry (`lstmgraph.operations`), and it performs the interpreter's floating-point
operations in the interpreter's order (each multiply-accumulate entry in entry order, the
same expressions, no fastmath), so its results are bit-identical to the interpreter's; the
only rewriting is that the constant slots ONE and MINUS_ONE are read as the literals 1.0 and
-1.0 (a product with 1.0 or -1.0 is exact, so LLVM drops or negates it without changing a bit).

A kernel runs one trial (width 1: it matches the interpreter's single-lane paths) or `WIDTH`
trials side by side (it matches the interpreter's lane paths; sums kept in one register per
lane), the width a literal too; populations of more than one trial use the second. The text is
stored in the kernel cache under its hash and compiled with ``cache=True``: the first use of a
program and width compiles it (seconds to a minute or two, growing with the program; the lane
version takes about twice as long), later processes load the machine code.
"""

from __future__ import annotations

import hashlib
import re as regex
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from ...operations import ACTIVATIONS
from ...program.lower import KIND_CODE, MINUS_ONE, ONE, PHASE_CODE
from .interpreter import FlatProgram, LOSS_AND_SOFTMAX, cache_directory, compiled_in_cache, load_source, math_import

SPECIALISED_VERSION = "2"

_KIND = {code: name for name, code in KIND_CODE.items()}
_PHASE = {code: name for name, code in PHASE_CODE.items()}
_LEARN = (PHASE_CODE["backward"], PHASE_CODE["keep_traces"])  # phases run only when learning
_ACTIVATION = {code: activation for code, activation in enumerate(ACTIVATIONS.values())}


def _index(base: int, si: int, sj: int, ni: int, nj: int, width: int = 1) -> str:
    """Where lane 0 of an entry's slot base + i si + j sj is in the flat array (slot * width),
    with the loop variables the run has."""
    parts = [str(base * width)]
    if ni > 1 and si:
        parts.append(f"i * {si * width}")
    if nj > 1 and sj:
        parts.append(f"j * {sj * width}")
    return " + ".join(parts)


def _value(base: int, si: int, sj: int, ni: int, nj: int, width: int = 1, lane: str = "") -> str:
    """An entry's value in a lane: '1.0' or '-1.0' where every entry of the column reads the
    constant slot ONE or MINUS_ONE, else v[position]."""
    if not ((ni > 1 and si) or (nj > 1 and sj)) and base in (ONE, MINUS_ONE):
        return "1.0" if base == ONE else "-1.0"
    return f"v[{_index(base, si, sj, ni, nj, width)}{lane}]"


def _slots(row: np.ndarray, column: int) -> set[int]:
    ni, nj = int(row[0]), int(row[1])
    base, si, sj = (int(x) for x in row[2 + 3 * column:5 + 3 * column])
    return {base + i * si + j * sj for i in range(ni) for j in range(nj)}


class _Writer:
    """Lines of one section function's body."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def run(self, row: np.ndarray, body) -> None:
        """``body(columns)`` inside `for i` / `for j` where the run has more than one row /
        column; ``columns`` are the four (base, stride_i, stride_j)."""
        ni, nj = int(row[0]), int(row[1])
        columns = [(int(row[2 + 3 * k]), int(row[3 + 3 * k]), int(row[4 + 3 * k])) for k in range(4)]
        depth = self.depth
        if ni > 1:
            self(f"for i in range({ni}):")
            self.depth += 1
        if nj > 1:
            self(f"for j in range({nj}):")
            self.depth += 1
        body(ni, nj, columns)
        self.depth = depth


def _mac(w: _Writer, row: np.ndarray) -> None:
    ni, nj = int(row[0]), int(row[1])
    o0, oi, oj = (int(x) for x in row[2:5])
    if oj == 0 or nj == 1:
        # The interpreter's single-lane path: a sum into one slot kept in a register.
        depth = w.depth
        if ni > 1:
            w(f"for i in range({ni}):")
            w.depth += 1
        out = _index(o0, oi, 0, ni, 1)
        w(f"acc = v[{out}]")
        if nj > 1:
            w(f"for j in range({nj}):")
            w.depth += 1
        a, b, c = (_value(int(row[5 + 3 * k]), int(row[6 + 3 * k]), int(row[7 + 3 * k]), ni, nj) for k in range(3))
        w(f"acc += {a} * {b} * {c}")
        if nj > 1:
            w.depth -= 1
        w(f"v[{out}] = acc")
        w.depth = depth
        return

    def body(ni, nj, columns):
        a, b, c = (_value(*column, ni, nj) for column in columns[1:])
        w(f"v[{_index(*columns[0], ni, nj)}] += {a} * {b} * {c}")

    w.run(row, body)


def _elementwise(w: _Writer, kind: str, row: np.ndarray) -> None:
    def body(ni, nj, columns):
        out, source = _index(*columns[0], ni, nj), _index(*columns[1], ni, nj)
        w({"zero": f"v[{out}] = 0.0",
           "copy": f"v[{out}] = v[{source}]",
           "scale": f"v[{out}] *= v[{source}]",
           "complement": f"v[{out}] = 1.0 - v[{source}]",
           "input": f"v[{out}] = inputs[t, {source}, 0]"}[kind])

    w.run(row, body)


def _activation(w: _Writer, kind: str, code: int, row: np.ndarray, width: int = 1) -> None:
    """f or f' of every entry, in every lane (the lanes' loop runs `vector_math.tanh` in SIMD registers)."""
    activation = _ACTIVATION[code]
    lane, indent = ("", "") if width == 1 else (" + l", "    ")

    def body(ni, nj, columns):
        out, net, value = (_index(*column, ni, nj, width) for column in columns[:3])
        if width > 1:
            w("for l in range(WIDTH):")
        w(f"{indent}x = v[{net}{lane}]")
        if kind == "activate":
            w(f"{indent}v[{out}{lane}] = {activation.scalar}")
        else:
            w(f"{indent}y = v[{value}{lane}]")
            w(f"{indent}v[{out}{lane}] = {activation.scalar_derivative}")

    w.run(row, body)


def _update(w: _Writer, row: np.ndarray) -> None:
    # update_scalar: a lane runs a step only while it is active, so no mask.
    def body(ni, nj, columns):
        o, velocity, grad = (_index(*column, ni, nj) for column in columns[:3])
        w(f"change = v[{velocity}] * momentum - rate[0] * v[{grad}]")
        w(f"v[{velocity}] = change")
        w(f"v[{o}] += change")

    w.run(row, body)


# -- several lanes: the interpreter's lane paths, the width a literal ------------------------

def _mac_lanes(w: _Writer, row: np.ndarray, width: int) -> None:
    ni, nj = int(row[0]), int(row[1])
    o0, oi, oj = (int(x) for x in row[2:5])
    lanes = range(width)
    operands = [tuple(int(x) for x in row[5 + 3 * k:8 + 3 * k]) for k in range(3)]
    reads = set().union(*(_slots(row, k) for k in (1, 2, 3)))
    if (oj == 0 or nj == 1) and not (_slots(row, 0) & reads):
        # A sum into one slot per lane, kept in registers: the interpreter adds the same
        # products in the same order in place; with no slot both written and read by the run
        # the two are the same.
        depth = w.depth
        if ni > 1:
            w(f"for i in range({ni}):")
            w.depth += 1
        out = _index(o0, oi, 0, ni, 1, width)
        for lane in lanes:
            w(f"acc{lane} = v[{out} + {lane}]")
        if nj > 1:
            w(f"for j in range({nj}):")
            w.depth += 1
        for lane in lanes:
            a, b, c = (_value(*operand, ni, nj, width, f" + {lane}") for operand in operands)
            w(f"acc{lane} += {a} * {b} * {c}")
        if nj > 1:
            w.depth -= 1
        for lane in lanes:
            w(f"v[{out} + {lane}] = acc{lane}")
        w.depth = depth
        return

    def body(ni, nj, columns):
        out = _index(*columns[0], ni, nj, width)
        w("for l in range(WIDTH):")
        a, b, c = (_value(*column, ni, nj, width, " + l") for column in columns[1:])
        w(f"    v[{out} + l] += {a} * {b} * {c}")

    w.run(row, body)


def _elementwise_lanes(w: _Writer, kind: str, row: np.ndarray, width: int, masked: bool) -> None:
    def body(ni, nj, columns):
        out, source = _index(*columns[0], ni, nj, width), _index(*columns[1], ni, nj, width)
        column = _index(*columns[1], ni, nj)
        line = {"zero": f"v[{out} + l] = 0.0",
                "copy": f"v[{out} + l] = v[{source} + l]",
                "scale": f"v[{out} + l] *= v[{source} + l]",
                "complement": f"v[{out} + l] = 1.0 - v[{source} + l]",
                "input": f"v[{out} + l] = inputs[t, {column}, l]"}[kind]
        if masked:  # the interpreter's copies of the last phases: active lanes only
            w("if everyone:")
            w("    for l in range(WIDTH):")
            w(f"        {line}")
            w("else:")
            w("    for l in range(WIDTH):")
            w("        if active[l]:")
            w(f"            {line}")
        else:
            w("for l in range(WIDTH):")
            w(f"    {line}")

    w.run(row, body)


def _update_lanes(w: _Writer, row: np.ndarray, width: int) -> None:
    def body(ni, nj, columns):
        o, velocity, grad = (_index(*column, ni, nj, width) for column in columns[:3])
        w("for l in range(WIDTH):")
        w("    if active[l] and learn[l]:")
        w(f"        v[{velocity} + l] = v[{velocity} + l] * momentum - rate[l] * v[{grad} + l]")
        w(f"        v[{o} + l] += v[{velocity} + l]")

    w.run(row, body)


#: Lines of a section function at most: numba's analyses grow faster than linearly with a
#: function's length (one function for the CERG net's step took a minute to compile), and a
#: call costs a few nanoseconds.
SECTION_LINES = 150
_ARGUMENTS = ("v, V, R, inputs, targets, t, rate, momentum, decay, tolerance, active, learn, wrong, sums, record, "
              "everyone")

#: Lanes of the population kernel (trials side by side): four doubles fill an AVX2 register.
#: Measured (CPU time per trial-step, SLP vectoriser on, back to back): the timing net about
#: 0.25 us alone, 0.08 us in 4 lanes; the CERG net 1.55-1.99 us alone, 1.0-1.3 us in 4 lanes;
#: the CERG net with exact RTRL (20,320 slots) 52 us alone, 25 us in 4 lanes.
WIDTH = 4


def source(flat: FlatProgram, width: int = 1) -> str:
    """The kernel of ``flat`` for ``width`` lanes (1, or trials side by side): the step's
    operations written out in sections (small functions called in order), those of the
    learning phases only while a lane learns."""
    R = flat.runs
    sections: list[tuple[bool, list[str]]] = []  # (learning only, lines)
    for op in range(len(flat.kind)):
        kind, phase = _KIND[int(flat.kind[op])], int(flat.phase[op])
        learns = _LEARN[0] <= phase <= _LEARN[1]
        w = _Writer()
        rs, re = int(flat.run_start[op]), int(flat.run_stop[op])
        w(f"# {kind} ({_PHASE[phase]}), runs {rs}..{re - 1}")
        if kind == "softmax":
            w(f"softmax({rs}, R, V, WIDTH)")
        elif kind == "loss":
            w(f"loss({int(flat.code[op])}, {int(flat.mode[op])}, {rs}, R, V, WIDTH, targets, t, tolerance, "
              f"active, wrong, sums, record)")
        elif width == 1:
            _single(w, kind, flat, op)
        else:
            _several(w, kind, flat, op, width)
        if sections and sections[-1][0] == learns and len(sections[-1][1]) + len(w.lines) <= SECTION_LINES:
            sections[-1][1].extend(w.lines)
        else:
            sections.append((learns, w.lines))
    functions, calls = [], []
    for k, (learns, lines) in enumerate(sections):
        body = "\n".join(lines)
        # Only the arguments the section reads: every array passed costs its struct's fields.
        names = ", ".join(name for name in _ARGUMENTS.split(", ") if regex.search(rf"\b{name}\b", body))
        functions.append("@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)\n"
                         f"def section_{k}({names}):\n" + body + "\n")
        calls.append(("        if learning:\n    " if learns else "") + f"        section_{k}({names})")
    return ((_SINGLE if width == 1 else _SEVERAL).replace("#MATH\n", math_import())
            .replace("#RUNS", str(len(R))).replace("#WIDTH", str(width))
            .replace("#LOSS_AND_SOFTMAX\n", _INLINED_LOSS)
            .replace("#SECTIONS\n", "\n\n".join(functions) + "\n")
            .replace("#STEP\n", "\n".join(calls) + "\n"))


# The interpreter's loss and softmax, the loss inlined where a section calls it (its code, mode,
# run and width then literals LLVM folds); the same text otherwise.
_INLINED_LOSS = LOSS_AND_SOFTMAX.replace("@numba.njit(cache=True, nogil=True)\ndef loss(",
                                         '@numba.njit(cache=True, nogil=True, inline="always")\ndef loss(')
assert _INLINED_LOSS != LOSS_AND_SOFTMAX


def _single(w: _Writer, kind: str, flat: FlatProgram, op: int) -> None:
    R, rs, re = flat.runs, int(flat.run_start[op]), int(flat.run_stop[op])
    for r in range(rs, re):
        if kind == "mac":
            _mac(w, R[r])
        elif kind in ("activate", "derive"):
            _activation(w, kind, int(flat.code[op]), R[r])
        elif kind == "update":
            _update(w, R[r])
        else:  # the copies of the last phases are masked in the interpreter; a lane runs only while active
            _elementwise(w, kind, R[r])
    if kind == "update":
        w("rate[0] *= decay")


def _several(w: _Writer, kind: str, flat: FlatProgram, op: int, width: int) -> None:
    R, rs, re = flat.runs, int(flat.run_start[op]), int(flat.run_stop[op])
    for r in range(rs, re):
        if kind == "mac":
            _mac_lanes(w, R[r], width)
        elif kind in ("activate", "derive"):
            _activation(w, kind, int(flat.code[op]), R[r], width)
        elif kind == "update":
            _update_lanes(w, R[r], width)
        else:
            _elementwise_lanes(w, kind, R[r], width, int(flat.phase[op]) >= PHASE_CODE["update"])
    if kind == "update":
        w("for l in range(WIDTH):")
        w("    if active[l] and learn[l]:")
        w("        rate[l] *= decay")


@dataclass(frozen=True)
class Kernel:
    """A loaded specialised kernel: its module (``run``) and whether numba's cache held its
    machine code when it was loaded."""

    module: ModuleType
    width: int
    compiled_before: bool

    @property
    def run(self):
        return self.module.run


def _name(text: str) -> str:
    key = hashlib.sha256((SPECIALISED_VERSION + text).encode()).hexdigest()[:20]
    return f"lstmgraph_specialised_{key}"


def cached(flat: FlatProgram, width: int = 1) -> bool:
    """Whether the kernel of ``flat`` for ``width`` lanes has been compiled before (its machine
    code is in numba's cache), so loading it costs no compilation."""
    text = source(flat, width)
    return compiled_in_cache(cache_directory() / f"{_name(text)}.py")


def load(flat: FlatProgram, width: int = 1) -> Kernel:
    """The kernel of ``flat`` for ``width`` lanes (compiled on its first call if numba's cache
    does not hold it)."""
    text = source(flat, width)
    name = _name(text)
    before = compiled_in_cache(cache_directory() / f"{name}.py")
    return Kernel(load_source(name, text), width, before)


_HEADER = '''"""Generated by lstmgraph (engine/compiled/specialised.py) from one lowered program; do not edit."""
import math

import numba
import numpy as np
#MATH

WIDTH = #WIDTH
RUNS = #RUNS

#LOSS_AND_SOFTMAX

#SECTIONS
'''

_SINGLE = _HEADER + '''
@numba.njit(cache=True, nogil=True)
def run(kind, phase, code, mode, run_start, run_stop, R, V, inputs, targets, rate, momentum, decay,
        tolerance, learn, active, steps_done, sums, record, wrong, stop_all):
    """The interpreter's ``run`` for this program only, one lane."""
    if V.shape[1] != 1 or R.shape[0] != RUNS:
        raise ValueError("a specialised kernel runs its own program, at its own width")
    v = V.reshape(V.shape[0])
    everyone = True
    learning = learn[0]
    wrong[0] = False
    for t in range(inputs.shape[0]):
        if not active[0]:
            break
#STEP
        steps_done[0] = t + 1
        if wrong[0]:
            active[0] = False
'''

_SEVERAL = _HEADER + '''
@numba.njit(cache=True, nogil=True)
def run(kind, phase, code, mode, run_start, run_stop, R, V, inputs, targets, rate, momentum, decay,
        tolerance, learn, active, steps_done, sums, record, wrong, stop_all):
    """The interpreter's ``run`` for this program only, WIDTH lanes."""
    if V.shape[1] != WIDTH or R.shape[0] != RUNS:
        raise ValueError("a specialised kernel runs its own program, at its own width")
    v = V.reshape(V.shape[0] * WIDTH)
    for l in range(WIDTH):
        wrong[l] = False
    for t in range(inputs.shape[0]):
        running = False
        learning = False
        everyone = True
        for l in range(WIDTH):
            running = running or active[l]
            learning = learning or (active[l] and learn[l])
            everyone = everyone and active[l]
        if not running:
            break
#STEP
        halt = False
        for l in range(WIDTH):
            if active[l]:
                steps_done[l] = t + 1
                if wrong[l]:
                    active[l] = False
                    halt = stop_all
        if halt:
            break
'''
