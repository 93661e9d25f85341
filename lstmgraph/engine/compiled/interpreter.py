"""The compiled executor: one numba function that runs any lowered program, compiled once.

The program is data (operation kinds, phases and index arrays, `flatten`); the function
loops over steps and operations, and inside every operation over the trials of a block of
lanes, the innermost loop, so that each multiply-accumulate runs across trials in SIMD lanes.
Its source is written from a template and the activation registry (`lstmgraph.operations`:
each activation's compiled form is its scalar expression), stored in the kernel cache under
the hash of that text and compiled with ``cache=True``: one compilation per installation and
registry, none per spec.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from ...files import write_atomically
from ...operations import ACTIVATIONS
from ...program import Program
from ...program.lower import KIND_CODE, PHASE_CODE

# LLVM level 3 vectorises the loops over lanes (SIMD across trials); level 1 does not.
# numba reads it when first imported.
os.environ.setdefault("NUMBA_OPT", "3")
# LLVM's SLP vectoriser packs like scalar operations on neighbouring slots into SIMD ones (the
# specialised kernel's unrolled runs; CERG step 2.3 -> 1.55 us of CPU time, measured back to
# back). It never reassociates (no fastmath), so results are unchanged. numba leaves it off; it
# reads the setting whenever it compiles (`load_source` applies it).
os.environ.setdefault("NUMBA_SLP_VECTORIZE", "1")

INTERPRETER_VERSION = "2"

#: The ``tolerance`` that has the kernels judge an output group by its most active units
#: (`success.most_active_correct`) instead of within a tolerance (`loss`).
MOST_ACTIVE = -1.0


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


def affine_runs(columns: np.ndarray) -> np.ndarray:
    """The entries of an operation, columns (4, n) of slot indices, as runs: rows
    ``(n_i, n_j, out0, out_i, out_j, a0, a_i, a_j, b0, b_i, b_j, c0, c_i, c_j)``, run r
    standing for the entries ``index = base + i * stride_i + j * stride_j`` taken in order
    i = 0..n_i-1, j = 0..n_j-1. Consecutive entries with constant differences form a line;
    consecutive lines of one length, stride and base step form a run. A dense matrix-vector
    product is one run, and an executor computes its indices instead of loading them."""
    count = columns.shape[1]
    lines = []  # (start, length, stride vector)
    if count:
        steps = np.diff(columns, axis=1)
        same = np.zeros(max(count - 1, 0) + 1, dtype=bool)
        if count > 2:
            same[1:count - 1] = (steps[:, 1:] == steps[:, :-1]).all(axis=0)
        streak = np.zeros(len(same) + 1, dtype=np.int64)
        for k in range(len(same) - 1, -1, -1):
            streak[k] = streak[k + 1] + 1 if same[k] else 0
        p = 0
        while p < count:
            if p == count - 1:
                lines.append((p, 1, np.zeros(4, dtype=np.int64)))
                break
            length = 2 + streak[p + 1]
            lines.append((p, length, steps[:, p]))
            p += length
    runs = []
    k = 0
    while k < len(lines):
        start, length, stride = lines[k]
        base = columns[:, start]
        rows, outer = 1, np.zeros(4, dtype=np.int64)
        while k + rows < len(lines):
            other, other_length, other_stride = lines[k + rows]
            step = columns[:, other] - columns[:, lines[k + rows - 1][0]]
            if other_length != length or not (other_stride == stride).all() or (rows > 1 and not (step == outer).all()):
                break
            outer = step
            rows += 1
        runs.append([rows, length] + [v for x in range(4) for v in (base[x], outer[x], stride[x])])
        k += rows
    return np.asarray(runs, dtype=np.int64).reshape(-1, 14)


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


def cache_directory() -> Path:
    root = os.environ.get("LSTMGRAPH_CACHE") or Path.home() / ".cache" / "lstmgraph"
    return Path(root) / "kernels"


def source() -> str:
    """The interpreter's source: the template with one branch per activation."""
    activate, derive = [], []
    for code, activation in enumerate(ACTIVATIONS.values()):
        if not activation.elementwise:
            continue
        keyword = "if" if not activate else "elif"
        activate.append(f"    {keyword} code == {code}:\n"
                        f"        for r in range(rs, re):\n"
                        f"            for i in range(R[r, 0]):\n"
                        f"                for j in range(R[r, 1]):\n"
                        f"                    o = R[r, 2] + i * R[r, 3] + j * R[r, 4]\n"
                        f"                    n = R[r, 5] + i * R[r, 6] + j * R[r, 7]\n"
                        f"                    for l in range(L):\n"
                        f"                        x = V[n, l]\n"
                        f"                        V[o, l] = {activation.scalar}")
        derive.append(f"    {keyword} code == {code}:\n"
                      f"        for r in range(rs, re):\n"
                      f"            for i in range(R[r, 0]):\n"
                      f"                for j in range(R[r, 1]):\n"
                      f"                    o = R[r, 2] + i * R[r, 3] + j * R[r, 4]\n"
                      f"                    n = R[r, 5] + i * R[r, 6] + j * R[r, 7]\n"
                      f"                    m = R[r, 8] + i * R[r, 9] + j * R[r, 10]\n"
                      f"                    for l in range(L):\n"
                      f"                        x = V[n, l]\n"
                      f"                        y = V[m, l]\n"
                      f"                        V[o, l] = {activation.scalar_derivative}")
    scalar_activate = [line.replace("for l in range(L):", "if True:").replace("V[n, l]", "v[n]")
                       .replace("V[m, l]", "v[m]").replace("V[o, l]", "v[o]") for line in activate]
    scalar_derive = [line.replace("for l in range(L):", "if True:").replace("V[n, l]", "v[n]")
                     .replace("V[m, l]", "v[m]").replace("V[o, l]", "v[o]") for line in derive]
    constants = "".join(f"{name.upper()} = {code}\n" for name, code in KIND_CODE.items())
    constants += "".join(f"PHASE_{name.upper()} = {code}\n" for name, code in PHASE_CODE.items())
    return (_TEMPLATE.replace("#MATH\n", math_import()).replace("#CONSTANTS\n", constants)
            .replace("#ACTIVATE\n", "\n".join(activate) + "\n")
            .replace("#DERIVE\n", "\n".join(derive) + "\n")
            .replace("#ACTIVATE_SCALAR\n", "\n".join(scalar_activate) + "\n")
            .replace("#DERIVE_SCALAR\n", "\n".join(scalar_derive) + "\n")
            .replace("#LOSS_AND_SOFTMAX\n", LOSS_AND_SOFTMAX))


def compiled_in_cache(path: Path) -> bool:
    """Whether numba's cache holds machine code of the ``run`` of the module at ``path``
    (else its first call compiles it)."""
    return any((path.parent / "__pycache__").glob(f"{path.stem}.run-*.nbc"))


def compiled_before(module: ModuleType) -> bool:
    """Whether numba's cache holds this interpreter's machine code."""
    return compiled_in_cache(Path(module.__file__))


def load_source(name: str, text: str) -> ModuleType:
    """The module ``name`` of source ``text``: written to the kernel cache (where numba keeps
    its machine code beside it), then executed from ``text`` itself, never re-read from the
    file; imported once per process."""
    if name in sys.modules:
        return sys.modules[name]
    from numba.core import config
    config.SLP_VECTORIZE = int(os.environ.get("NUMBA_SLP_VECTORIZE", "1"))
    path = cache_directory() / f"{name}.py"
    if not path.exists() or path.read_bytes() != text.encode():
        write_atomically(path, text.encode())
    spec = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    exec(compile(text, str(path), "exec"), module.__dict__)
    sys.modules[name] = module
    return module


def load() -> ModuleType:
    """The interpreter module: written to the kernel cache under its hash, then imported."""
    text = source()
    key = hashlib.sha256((INTERPRETER_VERSION + text).encode()).hexdigest()[:20]
    return load_source(f"lstmgraph_interpreter_{key}", text)


def math_import() -> str:
    """The generated modules' import of the compiled ``tanh`` (`vector_math`), with a hash of
    its source: a change to it gives every kernel a new text, so a new name, and numba's cache
    never serves machine code built with the old one."""
    from . import vector_math

    digest = hashlib.sha256(Path(vector_math.__file__).read_bytes()).hexdigest()[:16]
    return f"from lstmgraph.engine.compiled.vector_math import tanh  # source {digest}\n"


LOSS_AND_SOFTMAX = '''@numba.njit(cache=True, nogil=True)
def softmax(r, R, V, L):
    n = R[r, 1]
    o0, os, a0, a_s = R[r, 2], R[r, 4], R[r, 5], R[r, 7]
    for l in range(L):
        top = V[a0, l]
        for k in range(1, n):
            top = max(top, V[a0 + k * a_s, l])
        norm = 0.0
        for k in range(n):
            V[o0 + k * os, l] = math.exp(V[a0 + k * a_s, l] - top)
            norm += V[o0 + k * os, l]
        for k in range(n):
            V[o0 + k * os, l] /= norm


@numba.njit(cache=True, nogil=True)
def loss(code, mode, r, R, V, L, targets, t, tolerance, active, wrong, sums, record):
    """One output group's loss and dE/dnet from ``targets[t, 0]``; the success test (``wrong``)
    against ``targets[t, -1]``, the values judged: a second plane where a task judges other
    values than it trains on (`Sequence.legal`). NaN: no target, or not judged. The test: with
    ``tolerance`` > 0, every output within it (`success.within_tolerance`); with a negative
    ``tolerance`` (`MOST_ACTIVE`), the units judged 1 more active than every other unit of the
    group where the whole group is judged (`success.most_active_correct`); with 0, none.
    (One array with planes, not a second array: numba passes an array to a specialised
    kernel's section as a dozen scalars, and a second one cost the timing net's 4-lane kernel
    about 10 %.)"""
    n = R[r, 1]
    o0, os, y0, ys, d0, ds, c0, cs = R[r, 2], R[r, 4], R[r, 5], R[r, 7], R[r, 8], R[r, 10], R[r, 11], R[r, 13]
    judged = targets.shape[1] - 1
    for l in range(L):
        if not active[l]:
            continue
        lowest_legal, highest_other, whole = math.inf, -math.inf, True
        for k in range(n):
            y = V[y0 + k * ys, l]
            value = targets[t, judged, c0 + k * cs, l]
            if tolerance > 0.0 and abs(y - value) >= tolerance:  # (False for NaN)
                wrong[l] = True
            elif tolerance < 0.0:
                whole = whole and not math.isnan(value)
                if value > 0.5:
                    lowest_legal = min(lowest_legal, y)
                else:
                    highest_other = max(highest_other, y)
            if record.shape[1] > 0:
                record[l, t, c0 + k * cs] = y
        if tolerance < 0.0 and whole and not lowest_legal > highest_other:
            wrong[l] = True
        present = 0
        if code != 0:
            for k in range(n):
                present += not math.isnan(targets[t, 0, c0 + k * cs, l])
        if code == 0:
            dot = 0.0
            for k in range(n):
                target = targets[t, 0, c0 + k * cs, l]
                y = V[y0 + k * ys, l]
                err = 0.0 if math.isnan(target) else y - target
                sums[l] += 0.5 * err * err
                if mode == 1:
                    V[o0 + k * os, l] = err
                    dot += err * y
                else:
                    V[o0 + k * os, l] = V[d0 + k * ds, l] * err
            if mode == 1:
                for k in range(n):
                    V[o0 + k * os, l] = V[y0 + k * ys, l] * (V[o0 + k * os, l] - dot)
        elif present == n:
            for k in range(n):
                target = targets[t, 0, c0 + k * cs, l]
                y = V[y0 + k * ys, l]
                if mode == 1:
                    sums[l] -= target * math.log(max(y, 2.2250738585072014e-308))
                else:
                    sums[l] -= (target * math.log(max(y, 2.2250738585072014e-308))
                                + (1.0 - target) * math.log(max(1.0 - y, 2.2250738585072014e-308)))
                V[o0 + k * os, l] = y - target
        else:
            for k in range(n):
                V[o0 + k * os, l] = 0.0


'''


_TEMPLATE = '''"""Generated by lstmgraph (engine/compiled/interpreter.py) from the operation registry; do not edit."""
import math

import numba
import numpy as np
#MATH

#CONSTANTS

# A run r of R: entries index = base + i * stride_i + j * stride_j, for i < R[r, 0], j < R[r, 1];
# out, a, b, c at columns 2, 5, 8, 11 (base), +1 (stride_i), +2 (stride_j).

@numba.njit(cache=True, nogil=True)
def activate(code, rs, re, R, V, L):
#ACTIVATE


@numba.njit(cache=True, nogil=True)
def derive(code, rs, re, R, V, L):
#DERIVE


@numba.njit(cache=True, nogil=True, inline="always")
def activate_scalar(code, rs, re, R, v):
#ACTIVATE_SCALAR


@numba.njit(cache=True, nogil=True, inline="always")
def derive_scalar(code, rs, re, R, v):
#DERIVE_SCALAR


@numba.njit(cache=True, nogil=True, inline="always")
def update_scalar(rs, re, R, v, rate, momentum, decay):
    for r in range(rs, re):
        for i in range(R[r, 0]):
            o = R[r, 2] + i * R[r, 3]
            w = R[r, 5] + i * R[r, 6]
            g = R[r, 8] + i * R[r, 9]
            oj, wj, gj = R[r, 4], R[r, 7], R[r, 10]
            for j in range(R[r, 1]):
                change = v[w + j * wj] * momentum - rate[0] * v[g + j * gj]
                v[w + j * wj] = change
                v[o + j * oj] += change
    rate[0] *= decay


@numba.njit(cache=True, nogil=True, inline="always")
def mac(rs, re, R, V, v, L):
    """One lane: on the slots as a vector ``v``, a sum into one slot kept in a register.
    Lanes: on ``V``, the innermost loop across trials."""
    for r in range(rs, re):
        ni, nj = R[r, 0], R[r, 1]
        o0, oi, oj = R[r, 2], R[r, 3], R[r, 4]
        a0, ai, aj = R[r, 5], R[r, 6], R[r, 7]
        b0, bi, bj = R[r, 8], R[r, 9], R[r, 10]
        c0, ci, cj = R[r, 11], R[r, 12], R[r, 13]
        for i in range(ni):
            o = o0 + i * oi
            x = a0 + i * ai
            y = b0 + i * bi
            z = c0 + i * ci
            if L == 1 and oj == 0:
                acc = v[o]
                for j in range(nj):
                    acc += v[x + j * aj] * v[y + j * bj] * v[z + j * cj]
                v[o] = acc
            elif L == 1:
                for j in range(nj):
                    v[o + j * oj] += v[x + j * aj] * v[y + j * bj] * v[z + j * cj]
            else:
                for j in range(nj):
                    out = V[o + j * oj]
                    p = V[x + j * aj]
                    q = V[y + j * bj]
                    u = V[z + j * cj]
                    for l in range(L):
                        out[l] += p[l] * q[l] * u[l]


@numba.njit(cache=True, nogil=True, inline="always")
def elementwise_scalar(kind, rs, re, R, v, inputs, t):
    """`elementwise` for a single lane (masking is the caller's)."""
    for r in range(rs, re):
        ni, nj = R[r, 0], R[r, 1]
        o0, oi, oj = R[r, 2], R[r, 3], R[r, 4]
        a0, ai, aj = R[r, 5], R[r, 6], R[r, 7]
        for i in range(ni):
            o = o0 + i * oi
            x = a0 + i * ai
            if kind == ZERO:
                for j in range(nj):
                    v[o + j * oj] = 0.0
            elif kind == COPY:
                for j in range(nj):
                    v[o + j * oj] = v[x + j * aj]
            elif kind == SCALE:
                for j in range(nj):
                    v[o + j * oj] *= v[x + j * aj]
            elif kind == COMPLEMENT:
                for j in range(nj):
                    v[o + j * oj] = 1.0 - v[x + j * aj]
            else:  # INPUT
                for j in range(nj):
                    v[o + j * oj] = inputs[t, x + j * aj, 0]


@numba.njit(cache=True, nogil=True)
def elementwise(kind, rs, re, R, V, L, inputs, t, active, masked):
    for r in range(rs, re):
        for i in range(R[r, 0]):
            for j in range(R[r, 1]):
                o = R[r, 2] + i * R[r, 3] + j * R[r, 4]
                x = R[r, 5] + i * R[r, 6] + j * R[r, 7]
                if kind == ZERO:
                    for l in range(L):
                        V[o, l] = 0.0
                elif kind == COPY:
                    for l in range(L):
                        if active[l] or not masked:
                            V[o, l] = V[x, l]
                elif kind == SCALE:
                    for l in range(L):
                        V[o, l] *= V[x, l]
                elif kind == COMPLEMENT:
                    for l in range(L):
                        V[o, l] = 1.0 - V[x, l]
                else:  # INPUT
                    for l in range(L):
                        V[o, l] = inputs[t, x, l]


@numba.njit(cache=True, nogil=True)
def update(rs, re, R, V, L, rate, momentum, decay, active, learn):
    for r in range(rs, re):
        for i in range(R[r, 0]):
            for j in range(R[r, 1]):
                o = R[r, 2] + i * R[r, 3] + j * R[r, 4]
                v = R[r, 5] + i * R[r, 6] + j * R[r, 7]
                g = R[r, 8] + i * R[r, 9] + j * R[r, 10]
                for l in range(L):
                    if active[l] and learn[l]:
                        V[v, l] = V[v, l] * momentum - rate[l] * V[g, l]
                        V[o, l] += V[v, l]
    for l in range(L):
        if active[l] and learn[l]:
            rate[l] *= decay


#LOSS_AND_SOFTMAX
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
            if not learning and ph >= PHASE_BACKWARD and ph <= PHASE_KEEP_TRACES:
                continue
            kd = kind[op]
            rs = run_start[op]
            re = run_stop[op]
            if kd == MAC:
                mac(rs, re, R, V, v, L)
            elif kd == ACTIVATE:
                if L == 1:
                    activate_scalar(code[op], rs, re, R, v)
                else:
                    activate(code[op], rs, re, R, V, L)
            elif kd == DERIVE:
                if L == 1:
                    derive_scalar(code[op], rs, re, R, v)
                else:
                    derive(code[op], rs, re, R, V, L)
            elif kd == SOFTMAX:
                softmax(rs, R, V, L)
            elif kd == LOSS:
                loss(code[op], mode[op], rs, R, V, L, targets, t, tolerance, active, wrong, sums, record)
            elif kd == UPDATE:
                if L > 1:
                    update(rs, re, R, V, L, rate, momentum, decay, active, learn)
                elif active[0]:
                    update_scalar(rs, re, R, v, rate, momentum, decay)
            elif L == 1:
                if active[0] or ph < PHASE_UPDATE:
                    elementwise_scalar(kd, rs, re, R, v, inputs, t)
            else:
                elementwise(kd, rs, re, R, V, L, inputs, t, active, ph >= PHASE_UPDATE)
        halt = False
        for l in range(L):
            if active[l]:
                steps_done[l] = t + 1
                if wrong[l]:
                    active[l] = False
                    halt = stop_all
        if halt:
            break
'''
