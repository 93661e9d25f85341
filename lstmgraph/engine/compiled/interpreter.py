"""The compiled executor: one numba function that runs any lowered program, compiled once.

The program is data (operation kinds, phases and index arrays, `flatten`); the function
loops over steps and operations, and inside every operation over the trials of a block of
lanes, the innermost loop, so that each multiply-accumulate runs across trials in SIMD lanes.
Its source is written from a template and the registry (`lstmgraph.operations`: each
operation kind's statement, each activation's scalar expression), stored in the kernel cache
under the hash of that text and compiled with ``cache=True``: one compilation per
installation and registry, none per spec. The success test a loss judges by is encoded in
``tolerance`` as `lstmgraph.success` defines (`MOST_ACTIVE`, `NOT_JUDGED`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from types import ModuleType

import numpy as np

from ...files import InputFileError, OutputError, cache_directory, reading_no_follow, write_atomically
from ...operations import ACTIVATIONS, KIND_CODE, OPERATION_KINDS, OperationKind
from ...program import Program
from ...program.model import LEARNING_PHASES, PHASE_CODE
from ...program.runs import affine_runs

INTERPRETER_VERSION = "4"


@dataclass(frozen=True)
class FlatProgram:
    """A program as the arrays the interpreter reads: per operation its kind, phase, code,
    mode and range of runs; per run (`affine_runs`) its shape and the base and strides of its
    four slot indices."""

    kind: np.ndarray
    phase: np.ndarray
    code: np.ndarray
    mode: np.ndarray
    run_start: np.ndarray
    run_stop: np.ndarray
    runs: np.ndarray

    def arguments(self) -> tuple[np.ndarray, ...]:
        return (self.kind, self.phase, self.code, self.mode, self.run_start, self.run_stop, self.runs)


def flatten(program: Program) -> FlatProgram:
    ops = program.ops
    runs, run_start, run_stop = [], [], []
    total = 0
    for op in ops:
        columns = np.zeros((4, len(op)), dtype=np.int64)
        for row, name in enumerate(("out", "a", "b", "c")):
            if getattr(op, name) is not None:
                columns[row] = getattr(op, name)
        op_runs = affine_runs(columns)
        if op.kind in ("loss", "softmax") and (len(op_runs) != 1 or op_runs[0, 0] != 1):
            raise ValueError(f"a {op.kind} operation must span consecutive slots")
        runs.append(op_runs)
        run_start.append(total)
        total += len(op_runs)
        run_stop.append(total)

    def per_op(values) -> np.ndarray:
        return np.asarray(list(values), dtype=np.int64)

    return FlatProgram(per_op(KIND_CODE[op.kind] for op in ops), per_op(PHASE_CODE[op.phase] for op in ops),
                       per_op(op.code for op in ops), per_op(op.mode for op in ops), per_op(run_start),
                       per_op(run_stop), np.ascontiguousarray(np.concatenate(runs) if runs else np.zeros((0, 14), dtype=np.int64)))


def source() -> str:
    """The interpreter's source: the template, and from each operation kind of the registry its
    compiled form (`entry_functions`) and its branch of ``run``."""
    constants = "".join(f"{name.upper()} = {code}\n" for name, code in KIND_CODE.items())
    constants += "".join(f"PHASE_{name.upper()} = {code}\n" for name, code in PHASE_CODE.items())
    constants += "FIRST_LEARNING_PHASE = {}\nLAST_LEARNING_PHASE = {}\n".format(*LEARNING_PHASES)
    functions = "\n\n".join(entry_functions(kind) for kind in OPERATION_KINDS.values() if kind.entrywise)
    dispatch = []
    # mac first: most of a step's operations.
    for name, kind in sorted(OPERATION_KINDS.items(), key=lambda item: not item[1].term):
        dispatch.append(f"{'if' if not dispatch else 'elif'} kd == {name.upper()}:")
        if kind.entrywise:
            mask = "learn" if kind.learning else "ph >= PHASE_UPDATE"
            lanes = _arguments(f"code[op], rs, re, R, V, L, active, {mask}", kind)
            dispatch += ["    if L == 1:", f"        {name}_one({_arguments('code[op], rs, re, R, v', kind)})",
                         "    else:", f"        {name}_lanes({lanes})"]
        else:
            dispatch.append("    " + kind.call.format(code="code[op]", mode="mode[op]", run="rs", lanes="L"))
    return (_TEMPLATE.replace("#MATH\n", math_import()).replace("#CONSTANTS\n", constants)
            .replace("#ENTRIES\n", functions + "\n")
            .replace("#GROUPS\n", group_functions(inline_loss=False))
            .replace("#DISPATCH\n", "".join(" " * 12 + line + "\n" for line in dispatch))
            .replace("#PHASE_DISPATCH\n", "".join(" " * 8 + line + "\n" for line in dispatch)))


#: The column of R holding each operand's base (its strides over i and j follow).
_COLUMN = {"out": 2, "a": 5, "b": 8, "c": 11}


def _arguments(first: str, kind: OperationKind) -> str:
    return ", ".join((first,) + kind.arguments)


def _slots(kind: OperationKind) -> list[str]:
    """The operands whose slots an entry of ``kind`` touches (``{input}`` reads column a)."""
    text = " ".join((kind.statement, kind.term, "{out}" if kind.term else ""))
    fields = {field for _, field, _, _ in Formatter().parse(text) if field}
    return [name for name in _COLUMN if name in fields or (name == "a" and "input" in fields)]


def entry_functions(kind: OperationKind) -> str:
    """The interpreter's two functions of a kind applied entry by entry, from its statement:
    ``<kind>_one`` on one lane's slots as a vector ``v`` (an accumulating kind's run into one
    slot summed in a register), and ``<kind>_lanes`` on ``V`` (slots, lanes), the lanes the
    innermost loop (SIMD across trials): with ``mask`` (the phases from ``update`` on) only the
    active lanes, a learning kind only the lanes that learn. A kind with an activation form has
    a branch per activation code. (One loop nest with the mask tested in it: two nests, masked
    and not, inlined into ``run`` cost the timing net's 32-lane step a third, measured.)"""
    slots = _slots(kind)
    # Per run the strides along j, per row i the bases: read from R before the loop over j.
    runs = ["for r in range(rs, re):", "    nj = R[r, 1]"]
    runs += [f"    {name}_j = R[r, {_COLUMN[name] + 2}]" for name in slots] + ["    for i in range(R[r, 0]):"]
    runs += [f"        {name}_i = R[r, {_COLUMN[name]}] + i * R[r, {_COLUMN[name] + 1}]" for name in slots]

    def one(activation) -> list[str]:
        operands = {name: f"v[{name}_i + j * {name}_j]" for name in slots}
        operands.update(input="inputs[t, a_i + j * a_j, 0]", rate="rate[0]")
        entry = ["            " + line for line in kind.lines(activation, **operands)]
        if kind.term:  # out fixed along j: the sum in a register
            lines = runs + ["        if out_j == 0:", "            acc = v[out_i]", "            for j in range(nj):",
                            "                acc += " + kind.term.format(**operands), "            v[out_i] = acc",
                            "        else:", "            for j in range(nj):"] + ["    " + line for line in entry]
        else:
            lines = runs + ["        for j in range(nj):"] + entry
        return lines + ([kind.after.format(rate="rate[0]")] if kind.after else [])

    def lanes(activation) -> list[str]:
        operands = {name: f"V[{name}_k, l]" for name in slots}
        operands.update(input="inputs[t, a_k, l]", rate="rate[l]")
        entry = kind.lines(activation, **operands)

        def loops(condition: str) -> list[str]:
            lines = runs + ["        for j in range(nj):"]
            lines += [f"            {name}_k = {name}_i + j * {name}_j" for name in slots]
            lines.append("            for l in range(L):")
            if condition:
                return lines + [f"                if {condition}:"] + [" " * 20 + line for line in entry]
            return lines + [" " * 16 + line for line in entry]

        lines = loops("active[l] and learn[l]" if kind.learning else "active[l] or not mask")
        if kind.after:
            after = kind.after.format(rate="rate[l]")
            lines += ["for l in range(L):"] + (["    if active[l] and learn[l]:", "        " + after] if kind.learning
                                               else ["    " + after])
        return lines

    def function(name: str, arguments: str, body) -> str:
        if kind.form is None:
            lines = ["    " + line for line in body(None)]
        else:
            lines = []
            for code, activation in enumerate(ACTIVATIONS.values()):
                if activation.elementwise:
                    lines.append(f"    {'if' if not lines else 'elif'} code == {code}:")
                    lines += ["        " + line for line in body(activation)]
        return ("@numba.njit(cache=True, nogil=True)\n"
                f"def {kind.name}_{name}({_arguments(arguments, kind)}):\n" + "\n".join(lines) + "\n")

    mask = "learn" if kind.learning else "mask"
    # Called, not inlined into run (numba's inline="always"): run then compiles in 10 s, not 12, and
    # steps 4-26 % faster (docs/performance.md, 2026-11-29).
    return (function("one", "code, rs, re, R, v", one) + "\n\n"
            + function("lanes", f"code, rs, re, R, V, L, active, {mask}", lanes))


def compiled_in_cache(path: Path, function: str = "run") -> bool:
    """Whether numba's cache holds machine code of the ``function`` of the module at ``path``
    (else its first call compiles it)."""
    return any((path.parent / "__pycache__").glob(f"{path.stem}.{function}-*.nbc"))


def compiled_before(module: ModuleType) -> bool:
    """Whether numba's cache holds this interpreter's machine code (its ``run``)."""
    return function_compiled(module.run)


def function_compiled(function) -> bool:
    """Whether numba's cache holds the machine code of ``function``, a cached dispatcher."""
    return compiled_in_cache(Path(sys.modules[function.py_func.__module__].__file__), function.py_func.__name__)


def compile_wait_note(waiting: list[str]) -> str | None:
    """What a command says before a run that first compiles ``waiting`` (each once per
    installation): the wait and where the machine code is kept; None for nothing to compile."""
    if not waiting:
        return None
    return (f"compiling {' and '.join(waiting)} (once per installation, about 10-60 s; cached in "
            f"{cache_directory()})")


def first_compile_note() -> str | None:
    """`compile_wait_note` of a command's first compiled run on this installation (numba's cache
    holds no interpreter yet)."""
    return compile_wait_note([] if compiled_before(load()) else ["the compiled engine"])


def load_source(name: str, text: str) -> ModuleType:
    """The module ``name`` of source ``text``: written to the kernel cache (where numba keeps
    its machine code beside it), then executed from ``text`` itself, never re-read from the
    file; imported once per process."""
    if name in sys.modules:
        return sys.modules[name]
    _vectorise_neighbours()
    path = cache_directory() / f"{name}.py"
    content = text.encode()
    if _cached_bytes(path, len(content)) != content:
        try:
            write_atomically(path, content)  # replaces a link, FIFO or device there, never follows it
        except OutputError as error:
            raise OutputError(path, f"{error.reason} (the kernel cache: set LSTMGRAPH_CACHE to a writable "
                                    "folder, or leave it unset for ~/.cache/lstmgraph)") from None
    spec = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    exec(compile(text, str(path), "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def _cached_bytes(path: Path, size: int) -> bytes | None:
    """The first ``size`` + 1 bytes of the module cached at ``path``; None where none can be
    used: missing, a link, a folder, a FIFO or device (never opened blocking), unreadable."""
    try:
        with reading_no_follow(path) as stream:
            return stream.read(size + 1)
    except (InputFileError, OSError):
        return None


def load() -> ModuleType:
    """The interpreter module: written to the kernel cache under its hash, then imported."""
    text = source()
    key = hashlib.sha256((INTERPRETER_VERSION + text).encode()).hexdigest()[:20]
    return load_source(f"lstmgraph_interpreter_{key}", text)


def _vectorise_neighbours() -> None:
    """Turn on LLVM's SLP vectoriser in numba (which leaves it off) unless
    ``NUMBA_SLP_VECTORIZE`` says otherwise: it packs like scalar operations on neighbouring slots
    into SIMD ones (the specialised kernel's unrolled runs; CERG step 2.3 -> 1.55 us of CPU time,
    measured back to back) and never reassociates (no fastmath), so results are unchanged.
    numba reads the setting whenever it compiles, which is at a kernel's first call (or a
    compiled driver's that calls it), after this returns: so it stays on for the process. LLVM's
    level (``NUMBA_OPT``) is numba's default, 3, which vectorises the loops over lanes."""
    from numba.core import config

    if "NUMBA_SLP_VECTORIZE" not in os.environ:
        config.SLP_VECTORIZE = 1


def math_import() -> str:
    """The generated modules' imports of the compiled ``tanh`` (`vector_math`) and the group
    kinds (`groups`), each with a hash of its source: a change to one gives every kernel a new
    text, so a new name, and numba's cache never serves machine code built with the old one."""
    from . import groups, vector_math

    lines = ""
    for module, names in ((vector_math, "tanh"), (groups, "loss_lane, softmax_lane")):
        digest = hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]
        lines += f"from {module.__name__} import {names}  # source {digest}\n"
    return lines


def group_functions(inline_loss: bool) -> str:
    """The compiled forms of the kinds over a whole group (``softmax``, ``loss``; the registry's
    ``call``) and ``step_done``, shared by both kernels; the specialised kernel inlines the loss
    into its sections (its code, mode, run and width then literals LLVM folds)."""
    return _GROUPS.replace("#LOSS_OPTIONS", ', inline="always"' if inline_loss else "")


_GROUPS = '''@numba.njit(cache=True, nogil=True)
def softmax(r, R, V, L):
    for l in range(L):
        softmax_lane(r, R, V, l)


@numba.njit(cache=True, nogil=True#LOSS_OPTIONS)
def loss(code, mode, r, R, V, L, targets, t, tolerance, active, wrong, sums, record):
    """One output group's loss in every active lane (`groups.loss_lane`)."""
    for l in range(L):
        if active[l]:
            loss_lane(code, mode, r, R, V, l, targets, l, t, tolerance, wrong, sums, record, l, t)


@numba.njit(cache=True, nogil=True, inline="always")
def step_done(t, L, active, wrong, steps_done, stop_all):
    """After step ``t``: the steps done of each active lane; a lane judged wrong stops. True:
    the call ends (``stop_all`` and a lane stopped)."""
    halt = False
    for l in range(L):
        if active[l]:
            steps_done[l] = t + 1
            if wrong[l]:
                active[l] = False
                halt = stop_all
    return halt
'''


_TEMPLATE = '''"""Generated by lstmgraph (engine/compiled/interpreter.py) from the operation registry; do not edit."""
import math

import numba
import numpy as np
#MATH

#CONSTANTS

# A run r of R: entries index = base + i * stride_i + j * stride_j, for i < R[r, 0], j < R[r, 1];
# out, a, b, c at columns 2, 5, 8, 11 (base), +1 (stride_i), +2 (stride_j).

#ENTRIES

#GROUPS

@numba.njit(cache=True, nogil=True)
def run(kind, phase, code, mode, run_start, run_stop, R, V, inputs, targets, rate, momentum, decay,
        tolerance, learn, active, steps_done, sums, record, wrong, stop_all):
    """Run the program over the steps of ``inputs`` (steps, n_inputs, lanes) for the lanes of
    ``V`` (slots, lanes) still ``active``, learning from ``targets[:, 0]`` ((steps, planes,
    n_outputs, lanes)); a lane stops after its first step with an output off its judged value,
    ``targets[:, -1]``, by ``tolerance`` or more (if > 0; one plane: the targets are judged),
    its state then left as that step made it.
    ``learn`` (lanes, booleans): which lanes learn (the others run forward only; their weights,
    velocities and rates stay as they are; their traces are left undefined). ``stop_all``: the
    call ends after the first step at which any lane stops. ``wrong`` (lanes, booleans) is
    scratch, passed in so that a call allocates nothing."""
    L = V.shape[1]
    v = V.reshape(V.shape[0] * L)  # the slots as a vector, for the single-lane paths
    steps = inputs.shape[0]
    for l in range(L):
        wrong[l] = False
    for t in range(steps):
        running = False
        learning = False
        for l in range(L):
            running = running or active[l]
            learning = learning or (active[l] and learn[l])
        if not running:
            break
        for op in range(kind.shape[0]):
            ph = phase[op]
            if not learning and ph >= FIRST_LEARNING_PHASE and ph <= LAST_LEARNING_PHASE:
                continue
            kd = kind[op]
            rs = run_start[op]
            re = run_stop[op]
#DISPATCH
        if step_done(t, L, active, wrong, steps_done, stop_all):
            break


@numba.njit(cache=True, nogil=True)
def run_phases(first, last, ordered, phase_start, kind, phase, code, mode, run_start, run_stop, R, V, v, L, inputs,
               targets, t, rate, momentum, decay, tolerance, learn, active, sums, record, wrong):
    """The operations of phases ``first`` to ``last`` at step ``t``, in program order
    (``ordered``, ``phase_start``: `by_phase`)."""
    for index in range(phase_start[first], phase_start[last + 1]):
        op = ordered[index]
        ph = phase[op]
        kd = kind[op]
        rs = run_start[op]
        re = run_stop[op]
#PHASE_DISPATCH


@numba.njit(cache=True, nogil=True)
def by_phase(phase):
    """The operations ordered by phase, each phase's in program order, and where each phase
    starts in that order (one more entry: the end)."""
    ordered = np.argsort(phase, kind="mergesort")
    phase_start = np.zeros(PHASE_SEGMENT_END + 2, dtype=np.int64)
    for op in range(phase.shape[0]):
        phase_start[phase[op] + 1] += 1
    for p in range(1, phase_start.shape[0]):
        phase_start[p] += phase_start[p - 1]
    return ordered, phase_start


@numba.njit(cache=True, nogil=True)
def tape_slots(kind, phase, run_start, run_stop, R):
    """The slots of the ``tape`` phase's operation, in entry order."""
    count = 0
    for op in range(kind.shape[0]):
        if phase[op] == PHASE_TAPE:
            for r in range(run_start[op], run_stop[op]):
                count += R[r, 0] * R[r, 1]
    slots = np.empty(count, dtype=np.int64)
    k = 0
    for op in range(kind.shape[0]):
        if phase[op] == PHASE_TAPE:
            for r in range(run_start[op], run_stop[op]):
                for i in range(R[r, 0]):
                    for j in range(R[r, 1]):
                        slots[k] = R[r, 2] + i * R[r, 3] + j * R[r, 4]
                        k += 1
    return slots


#: run_segment's parts, in order, each one call of run_phases (the phases from, to): a step
#: forward (its tape kept after), its state kept; then, learning, the segment begun, a step
#: backward (its tape restored before: loss, carry in, backward, carry out), the segment ended,
#: the update, and the last step's state kept again. One call site keeps the compiled code small.
PART_FROM = (PHASE_FORWARD, PHASE_KEEP_STATE, PHASE_SEGMENT_BEGIN, PHASE_LOSS, PHASE_CARRY_IN, PHASE_BACKWARD,
             PHASE_CARRY_OUT, PHASE_SEGMENT_END, PHASE_UPDATE, PHASE_KEEP_STATE)
PART_TO = (PHASE_LOSS, PHASE_KEEP_STATE, PHASE_SEGMENT_BEGIN, PHASE_LOSS, PHASE_CARRY_IN, PHASE_BACKWARD,
           PHASE_CARRY_OUT, PHASE_SEGMENT_END, PHASE_UPDATE, PHASE_KEEP_STATE)
STEP_FORWARD, STEP_KEPT, BEGIN, STEP_LOSS, STEP_CARRY_OUT, LAST_KEPT = 0, 1, 2, 3, 6, 9  # (part numbers)


@numba.njit(cache=True, nogil=True)
def run_segment(kind, phase, code, mode, run_start, run_stop, R, V, inputs, targets, rate, momentum, decay,
                tolerance, learn, active, steps_done, sums, record, wrong, stop_all):
    """``run`` for a program lowered with ``segments``: the call is one segment of BPTT. It
    runs forward as ``run`` does (the same outputs, loss sums, success test and final state),
    keeping each step's values on a tape; then, in the lanes that learn, it runs the backward
    phase latest step first, carrying each delayed value's error to the step before and summing
    the gradient, and updates once with that sum (its parts: `PART_FROM`). A learning lane must
    run every step: a success test that stops one inside the segment raises ValueError."""
    L = V.shape[1]
    v = V.reshape(V.shape[0] * L)
    steps = inputs.shape[0]
    back = np.zeros(L, dtype=np.bool_)  # the lanes that learn from this segment
    learning = False
    for l in range(L):
        wrong[l] = False
        back[l] = active[l] and learn[l]
        learning = learning or back[l]
    slots = tape_slots(kind, phase, run_start, run_stop, R)
    ordered, phase_start = by_phase(phase)
    tape = np.empty((steps if learning else 0, slots.shape[0], L))
    no_sums = np.zeros(L)  # the backward pass's loss: neither summed nor judged again
    no_wrong = np.zeros(L, dtype=np.bool_)
    ran = 0
    t = 0
    halted = False
    part = STEP_FORWARD
    while part <= LAST_KEPT:
        if part == STEP_FORWARD:
            running = False
            for l in range(L):
                running = running or active[l]
            if halted or t == steps or not running:  # the forward pass is over
                if not learning or ran == 0:
                    return
                for l in range(L):
                    if back[l] and steps_done[l] != steps:
                        raise ValueError("a lane learning by BPTT stopped inside its segment")
                t = ran - 1
                part = BEGIN
        if part == STEP_LOSS or part == LAST_KEPT:
            if part == LAST_KEPT:
                t = ran - 1  # the values after the last step again (the backward pass overwrote them)
            for k in range(slots.shape[0]):
                for l in range(L):
                    V[slots[k], l] = tape[t, k, l]
        forward = part <= STEP_KEPT
        lanes = active if forward or part == LAST_KEPT else back
        run_phases(PART_FROM[part], PART_TO[part], ordered, phase_start, kind, phase, code, mode, run_start, run_stop,
                   R, V, v, L, inputs, targets, t, rate, momentum, decay, tolerance, learn, lanes,
                   sums if forward else no_sums, record, wrong if forward else no_wrong)
        if part == STEP_FORWARD:
            if learning:
                for k in range(slots.shape[0]):
                    for l in range(L):
                        tape[t, k, l] = V[slots[k], l]
            part = STEP_KEPT
        elif part == STEP_KEPT:
            ran = t + 1
            halted = step_done(t, L, active, wrong, steps_done, stop_all)
            t += 1
            part = STEP_FORWARD
        elif part == STEP_CARRY_OUT and t > 0:
            t -= 1
            part = STEP_LOSS
        else:
            part += 1
'''
