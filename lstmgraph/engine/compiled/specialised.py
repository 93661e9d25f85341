"""The specialised kernel: the interpreter's loop written out for one program.

`source` turns a flattened program (`interpreter.flatten`: its operations and affine runs)
into the text of a numba function with the same signature as the interpreter's ``run``, in
which every operation is written where it stands, with its run's bounds, slot offsets and
activation formula as literal constants: no dispatch per operation, no index arithmetic read
from arrays, and loops LLVM can unroll and vectorise. It reads nothing but the flat program
and the registry (`lstmgraph.operations`), and it performs the interpreter's floating-point
operations in the interpreter's order (each multiply-accumulate entry in entry order, the
same expressions, no fastmath), so its results are bit-identical to the interpreter's. It
rewrites two things only: the constant slots ONE and MINUS_ONE are read as the literals 1.0
and -1.0, a factor 1.0 left out of the text (a product with 1.0 or -1.0 is exact, so LLVM
drops or negates it without changing a bit; numba would type it first), and an operand that
stays the same along a loop is read once, before it, where the run writes no slot it reads
(`_accumulate_hoisted`, `_steady_operands`: the same values).

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

from ...operations import ACTIVATIONS, KIND_CODE, OPERATION_KINDS, OperationKind
from ...program.model import LEARNING_PHASES, MINUS_ONE, ONE, PHASE_CODE
from .entry_text import OPERANDS, WRITTEN_OUT, constant, entry_lines, position, product
from .interpreter import FlatProgram, cache_directory, compiled_in_cache, group_functions, load_source, math_import

SPECIALISED_VERSION = "3"

_KIND = {code: name for name, code in KIND_CODE.items()}
_PHASE = {code: name for name, code in PHASE_CODE.items()}
_ACTIVATION = {code: activation for code, activation in enumerate(ACTIVATIONS.values())}


def _value(base: int, si: int, sj: int, ni: int, nj: int, width: int = 1, lane: int | str = 0) -> str:
    """An entry's value in a lane: a literal where every entry of the column reads a constant
    slot (`entry_text.constant`), else v[position]."""
    return constant(base, si, sj, ni, nj) or f"v[{position(base, si, sj, ni, nj, width, lane)}]"


def _slots(row: np.ndarray, column: int) -> set[int]:
    ni, nj = int(row[0]), int(row[1])
    base, si, sj = (int(x) for x in row[2 + 3 * column:5 + 3 * column])
    return {base + i * si + j * sj for i in range(ni) for j in range(nj)}


class _Writer:
    """Lines of one section function's body, and where they may be cut into two sections."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.cuts: list[int] = []  # line numbers where a run begins (its locals are its own)

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def cut(self) -> None:
        """Mark that a new section may begin here: the lines before define no local that the
        lines after read, and each side has a statement."""
        if self.lines and self.depth == 1:
            self.cuts.append(len(self.lines))

    def pieces(self) -> list[list[str]]:
        """The lines split at every cut."""
        bounds = [0, *self.cuts, len(self.lines)]
        return [self.lines[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]

    def run(self, row: np.ndarray, body, before_j=None) -> None:
        """``body(columns)`` inside `for i` / `for j` where the run has more than one row /
        column (``before_j``, if given, just before `for j`); ``columns`` are the four (base,
        stride_i, stride_j)."""
        ni, nj = int(row[0]), int(row[1])
        columns = [(int(row[2 + 3 * k]), int(row[3 + 3 * k]), int(row[4 + 3 * k])) for k in range(4)]
        depth = self.depth
        if ni > 1:
            self(f"for i in range({ni}):")
            self.depth += 1
        if before_j:
            before_j(ni, nj, columns)
        if nj > 1:
            self(f"for j in range({nj}):")
            self.depth += 1
        body(ni, nj, columns)
        self.depth = depth


def _operation(w: _Writer, kind: OperationKind, flat: FlatProgram, op: int, width: int) -> None:
    """An operation applied entry by entry, run by run, from its kind's statement: in one lane
    (the interpreter's ``<kind>_one``) or in ``for l in range(WIDTH)`` (its ``<kind>_lanes``,
    with the same masks; in the phases from ``update`` on, all lanes at once while every lane is
    active). A run of an accumulating kind adding into one slot keeps the sum in a register,
    where the interpreter does (one lane) or where no slot of the run is both written and read
    (lanes: the same sums, in place or not)."""
    R, rs, re = flat.runs, int(flat.run_start[op]), int(flat.run_stop[op])
    activation = _ACTIVATION[int(flat.code[op])] if kind.form else None
    masked = int(flat.phase[op]) >= PHASE_CODE["update"]
    lane = 0 if width == 1 else "l"
    for r in range(rs, re):
        row = R[r]
        if r > rs:  # the operation's first lines (its comment) stay with its first run
            w.cut()
        if kind.term and _accumulates(row, width):
            _accumulate(w, kind, row, width)
            continue

        steady = _steady_operands(row) if width == 1 else ()

        def before_j(ni, nj, columns):
            for name in steady:
                base, si, _ = columns[OPERANDS.index(name)]
                w(f"{name}_here = v[{position(base, si, 0, ni, 1)}]")

        def body(ni, nj, columns):
            lines = entry_lines(kind, activation, columns, ni, nj,
                                lambda column: f"v[{position(*column, ni, nj, width, lane)}]",
                                "0" if width == 1 else "l", "rate[0]" if width == 1 else "rate[l]",
                                {name: f"{name}_here" for name in steady})
            if width == 1:  # a lane runs a step only while it is active, so no mask
                for line in lines:
                    w(line)
            elif kind.learning:
                _lanes(w, lines, "active[l] and learn[l]")
            elif masked:
                w("if everyone:")
                w.depth += 1
                _lanes(w, lines)
                w.depth -= 1
                w("else:")
                w.depth += 1
                _lanes(w, lines, "active[l]")
                w.depth -= 1
            else:
                _lanes(w, lines)

        w.run(row, body, before_j)
    if kind.after and width == 1:
        w(kind.after.format(rate="rate[0]"))
    elif kind.after:
        _lanes(w, [kind.after.format(rate="rate[l]")], "active[l] and learn[l]" if kind.learning else "")


def _lanes(w: _Writer, lines: list[str], condition: str = "") -> None:
    w("for l in range(WIDTH):")
    indent = "    "
    if condition:
        w(f"    if {condition}:")
        indent = "        "
    for line in lines:
        w(indent + line)


def _steady_operands(row: np.ndarray) -> tuple[str, ...]:
    """The operands of a one-lane run (its columns: ``for j``) that stay the same along a row
    and read neither a constant slot (a literal) nor a slot the run writes: each is read into a
    local before ``for j`` (the same value), so LLVM need not reload it for every entry."""
    if int(row[1]) == 1:
        return ()
    writes = _slots(row, 0)
    return tuple(name for k, name in enumerate(OPERANDS[1:], start=1)
                 if (reads := _steady_reads(row, k, along=1)) is not None and not reads & ({ONE, MINUS_ONE} | writes))


def _steady_reads(row: np.ndarray, k: int, along: int) -> set[int] | None:
    """The slots operand ``k`` (1-3: a, b, c) of a run reads, if it stays the same along its
    rows (``along`` 0: i) or its columns (1: j); else None."""
    ni, nj = int(row[0]), int(row[1])
    base, si, sj = (int(x) for x in row[2 + 3 * k:5 + 3 * k])
    if (si, sj)[along]:
        return None
    return {base + i * si + j * sj for i in range(ni if along else 1) for j in range(1 if along else nj)}


def _accumulates(row: np.ndarray, width: int) -> bool:
    nj, oj = int(row[1]), int(row[4])
    if width == 1:
        return oj == 0 or nj == 1
    reads = set().union(*(_slots(row, k) for k in (1, 2, 3)))
    return (oj == 0 or nj == 1) and not (_slots(row, 0) & reads)


def _accumulate(w: _Writer, kind: OperationKind, row: np.ndarray, width: int) -> None:
    """A run adding into one slot (per lane): the sum kept in a register per lane."""
    ni, nj = int(row[0]), int(row[1])
    o0, oi = int(row[2]), int(row[3])
    operands = [tuple(int(x) for x in row[5 + 3 * k:8 + 3 * k]) for k in range(3)]
    if width == 1 and ni > 1 and nj <= UNROLL and _hoistable(row):
        _accumulate_hoisted(w, kind, row)
        return
    lanes = [("acc", 0)] if width == 1 else [(f"acc{lane}", lane) for lane in range(width)]
    depth = w.depth
    if ni > 1:
        w(f"for i in range({ni}):")
        w.depth += 1
    for acc, lane in lanes:
        w(f"{acc} = v[{position(o0, oi, 0, ni, 1, width, lane)}]")
    written_out = nj <= WRITTEN_OUT  # each entry a statement of its own, j a literal
    if not written_out:
        w(f"for j in range({nj}):")
        w.depth += 1
    for entries in ([[(base + j * sj, si, 0) for base, si, sj in operands] for j in range(nj)] if written_out
                    else [operands]):
        for acc, lane in lanes:
            values = (_value(*operand, ni, 1 if written_out else nj, width, lane) for operand in entries)
            w(f"{acc} += " + product(kind, values))
    if not written_out:
        w.depth -= 1
    for acc, lane in lanes:
        w(f"v[{position(o0, oi, 0, ni, 1, width, lane)}] = {acc}")
    w.depth = depth


#: Entries of a register sum written out one by one (`_accumulate_hoisted`) at most.
UNROLL = 16


def _hoistable(row: np.ndarray) -> bool:
    """Whether a run's rows (i) are consecutive slots in out and in every operand that varies
    along them (so that LLVM can vectorise over i), and the operands that stay the same read
    no slot the run writes (so that they may be read once before its loop)."""
    invariant = set()
    for k in (1, 2, 3):
        reads = _steady_reads(row, k, along=0)
        if reads is None and int(row[3 + 3 * k]) != 1:
            return False
        invariant |= reads or set()
    return int(row[3]) == 1 and bool(invariant) and not (invariant & _slots(row, 0))


def _accumulate_hoisted(w: _Writer, kind: OperationKind, row: np.ndarray) -> None:
    """A one-lane run of register sums whose entries are written out (j as literals), the
    operands that stay the same along its rows read into locals before ``for i``: numba reads
    them from the slot array otherwise, and LLVM, not knowing that the sums' stores leave them
    alone, reloads them for every row and leaves the loop scalar. The same reads, products and
    sums in the same order: bit-identical to `_accumulate`'s."""
    ni, nj = int(row[0]), int(row[1])
    o0, oi = int(row[2]), int(row[3])
    terms, hoisted = [], set()
    for j in range(nj):
        values = []
        for k in (1, 2, 3):
            base, si, sj = (int(x) for x in row[2 + 3 * k:5 + 3 * k])
            slot = base + j * sj
            if literal := constant(slot, si, 0, ni, 1):  # ni > 1: a constant only where si is 0
                values.append(literal)
            elif si == 0:
                name = f"h{slot}"
                if name not in hoisted:
                    w(f"{name} = v[{slot}]")
                    hoisted.add(name)
                values.append(name)
            else:
                values.append(f"v[{position(slot, si, 0, ni, 1)}]")
        terms.append(product(kind, values))
    out = position(o0, oi, 0, ni, 1)
    w(f"for i in range({ni}):")
    w(f"    acc = v[{out}]")
    for term in terms:
        w(f"    acc += {term}")
    w(f"    v[{out}] = acc")


#: Lines of a section function at most: numba's analyses grow faster than linearly with a
#: function's length (one function for the CERG net's step took a minute to compile), and a
#: call costs a few nanoseconds. An operation longer than this is cut between its runs (a run
#: longer than this keeps a section of its own).
SECTION_LINES = 150
_ARGUMENTS = ("v, V, R, inputs, targets, t, rate, momentum, decay, tolerance, active, learn, wrong, sums, record, "
              "everyone")

#: Lanes of the population kernel (trials side by side): four doubles fill an AVX2 register.
#: Measured (CPU time per trial-step, SLP vectoriser on, back to back): the timing net about
#: 0.25 us alone, 0.08 us in 4 lanes; the CERG net 1.55-1.99 us alone, 1.0-1.3 us in 4 lanes;
#: the CERG net with exact RTRL (20,320 slots) 9-11 us alone, 9-11 us in 4 lanes (docs/performance.md).
WIDTH = 4


def _sections(flat: FlatProgram, width: int, ops, prefix: str = "section",
              renamed: dict[str, str] | None = None) -> tuple[list[str], list[tuple[bool, str]]]:
    """The operations ``ops`` (in program order) written out in section functions (small
    functions called in order) named ``prefix_k``: their source, and each one's call with
    whether it belongs to a learning phase (the call's arguments ``renamed`` as given)."""
    sections: list[tuple[bool, list[str]]] = []  # (learning only, lines)
    for op in ops:
        kind, phase = _KIND[int(flat.kind[op])], int(flat.phase[op])
        learns = LEARNING_PHASES[0] <= phase <= LEARNING_PHASES[1]
        w = _Writer()
        rs, re = int(flat.run_start[op]), int(flat.run_stop[op])
        w(f"# {kind} ({_PHASE[phase]}), runs {rs}..{re - 1}")
        entry = OPERATION_KINDS[kind]
        if entry.call:
            w(entry.call.format(code=int(flat.code[op]), mode=int(flat.mode[op]), run=rs, lanes="WIDTH"))
        else:
            _operation(w, entry, flat, op, width)
        for piece in w.pieces():
            if sections and sections[-1][0] == learns and len(sections[-1][1]) + len(piece) <= SECTION_LINES:
                sections[-1][1].extend(piece)
            else:
                sections.append((learns, piece))
    functions, calls = [], []
    for k, (learns, lines) in enumerate(sections):
        body = "\n".join(lines)
        # Only the arguments the section reads: every array passed costs its struct's fields.
        names = [name for name in _ARGUMENTS.split(", ") if regex.search(rf"\b{name}\b", body)]
        functions.append("@numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)\n"
                         f"def {prefix}_{k}({', '.join(names)}):\n" + body + "\n")
        arguments = ", ".join((renamed or {}).get(name, name) for name in names)
        calls.append((learns, f"{prefix}_{k}({arguments})"))
    return functions, calls


def source(flat: FlatProgram, width: int = 1) -> str:
    """The kernel of ``flat`` for ``width`` lanes (1, or trials side by side): the step's
    operations written out in sections, those of the learning phases only while a lane learns.
    A program lowered with ``segments`` (BPTT) gets `segment_source`'s kernel."""
    if (flat.phase == PHASE_CODE["tape"]).any():
        return segment_source(flat, width)
    functions, calls = _sections(flat, width, range(len(flat.kind)))
    step = [("        if learning:\n    " if learns else "") + "        " + call for learns, call in calls]
    return ((_SINGLE if width == 1 else _SEVERAL).replace("#MATH\n", math_import())
            .replace("#RUNS", str(len(flat.runs))).replace("#WIDTH", str(width))
            .replace("#GROUPS\n", group_functions(inline_loss=True))
            .replace("#SECTIONS\n", "\n\n".join(functions) + "\n")
            .replace("#STEP\n", "\n".join(step) + "\n"))


#: The parts of `segment_source`'s kernel: its name (placeholders ``#NAME`` in the template,
#: indented there by ``indent`` levels), the phases it runs, and the arguments its calls pass
#: instead (the backward pass's loss keeps no sums or judgement).
_SEGMENT_PARTS = (("step", 2, ("forward", "loss"), {}), ("keep", 2, ("keep_state",), {}),
                  ("last_keep", 1, ("keep_state",), {}), ("begin", 1, ("segment_begin",), {}),
                  ("loss", 2, ("loss",), {"sums": "no_sums", "wrong": "no_wrong", "active": "back"}),
                  ("carry_in", 2, ("carry_in",), {}), ("backward", 2, ("backward",), {}),
                  ("carry_out", 2, ("carry_out",), {}), ("end", 1, ("segment_end",), {}),
                  ("update", 1, ("update",), {}))


def segment_source(flat: FlatProgram, width: int = 1) -> str:
    """The interpreter's ``run_segment`` (BPTT, a call being one segment) for ``flat`` and one
    lane, each part's operations written out in its own sections. The tape is the ``tape``
    phase's slots, consecutive from the first (`lower`: every slot below the weights)."""
    if width != 1:
        raise ValueError("the specialised BPTT kernel runs one trial (width 1)")
    tape = [op for op in range(len(flat.kind)) if flat.phase[op] == PHASE_CODE["tape"]]
    slots = sorted(set().union(*(_slots(flat.runs[r], 0) for op in tape
                                 for r in range(int(flat.run_start[op]), int(flat.run_stop[op])))))
    if slots != list(range(slots[0], slots[0] + len(slots))):
        raise ValueError("the specialised BPTT kernel keeps consecutive slots on its tape")
    text = (_SEGMENT.replace("#MATH\n", math_import()).replace("#RUNS", str(len(flat.runs))).replace("#WIDTH", "1")
            .replace("#TAPE_START", str(slots[0])).replace("#TAPE_SLOTS", str(len(slots)))
            .replace("#GROUPS\n", group_functions(inline_loss=True)))
    functions = []
    for name, indent, phases, renamed in _SEGMENT_PARTS:
        codes = [PHASE_CODE[phase] for phase in phases]
        ops = [op for op in range(len(flat.kind)) if int(flat.phase[op]) in codes]
        part_functions, calls = _sections(flat, 1, ops, name, renamed)
        functions += part_functions
        lines = "".join("    " * indent + call + "\n" for _, call in calls) or "    " * indent + "pass\n"
        text = text.replace(f"#{name.upper()}\n", lines)
    return text.replace("#SECTIONS\n", "\n\n".join(functions) + "\n")


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

#GROUPS

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
        if step_done(t, WIDTH, active, wrong, steps_done, stop_all):
            break
'''

#: The one-lane kernel's head (its checks and set-up), then BPTT over the call's steps.
_SEGMENT = _SINGLE[:_SINGLE.index("    for t in range")].replace("``run``", "``run_segment`` (BPTT)") + '''    TAPE_START = #TAPE_START
    TAPE = #TAPE_SLOTS
    steps = inputs.shape[0]
    tape = np.empty((steps if learning else 0, TAPE))
    ran = 0
    for t in range(steps):
        if not active[0]:
            break
#STEP
        if learning:
            for k in range(TAPE):
                tape[t, k] = v[TAPE_START + k]
#KEEP
        ran = t + 1
        steps_done[0] = t + 1
        if wrong[0]:
            active[0] = False
    if not learning or ran == 0:
        return
    if steps_done[0] != steps:
        raise ValueError("a lane learning by BPTT stopped inside its segment")
    back = np.ones(1, dtype=np.bool_)
    no_sums = np.zeros(1)
    no_wrong = np.zeros(1, dtype=np.bool_)
    t = 0
#BEGIN
    for t in range(ran - 1, -1, -1):
        for k in range(TAPE):
            v[TAPE_START + k] = tape[t, k]
#LOSS
#CARRY_IN
#BACKWARD
#CARRY_OUT
#END
#UPDATE
    t = ran - 1
    for k in range(TAPE):
        v[TAPE_START + k] = tape[t, k]
#LAST_KEEP
'''
