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

# LLVM's level-1 optimisation compiled these loop nests faster than level 3 in our measurements.
# numba reads it when first imported.
os.environ.setdefault("NUMBA_OPT", "1")

INTERPRETER_VERSION = "1"


@dataclass(frozen=True)
class FlatProgram:
    """A program as the arrays the interpreter reads: per operation its kind, phase, code,
    mode and range of entries; per entry its four slot indices."""

    kind: np.ndarray
    phase: np.ndarray
    code: np.ndarray
    mode: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    out: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    def arguments(self) -> tuple[np.ndarray, ...]:
        return (self.kind, self.phase, self.code, self.mode, self.start, self.stop, self.out, self.a,
                self.b, self.c)


def flatten(program: Program) -> FlatProgram:
    ops = program.ops
    lengths = np.array([len(op) for op in ops], dtype=np.int64)
    stop = np.cumsum(lengths)
    start = stop - lengths

    def column(name: str) -> np.ndarray:
        parts = [getattr(op, name) if getattr(op, name) is not None else np.zeros(len(op), dtype=np.int64)
                 for op in ops]
        return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0), dtype=np.int64)

    def per_op(values) -> np.ndarray:
        return np.asarray(list(values), dtype=np.int64)

    return FlatProgram(per_op(KIND_CODE[op.kind] for op in ops), per_op(PHASE_CODE[op.phase] for op in ops),
                       per_op(op.code for op in ops), per_op(op.mode for op in ops), start, stop,
                       column("out"), column("a"), column("b"), column("c"))


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
                        f"        for k in range(s, e):\n"
                        f"            o = out[k]\n"
                        f"            i = a[k]\n"
                        f"            for l in range(L):\n"
                        f"                x = V[i, l]\n"
                        f"                V[o, l] = {activation.scalar}")
        derive.append(f"    {keyword} code == {code}:\n"
                      f"        for k in range(s, e):\n"
                      f"            o = out[k]\n"
                      f"            i = a[k]\n"
                      f"            j = b[k]\n"
                      f"            for l in range(L):\n"
                      f"                x = V[i, l]\n"
                      f"                y = V[j, l]\n"
                      f"                V[o, l] = {activation.scalar_derivative}")
    constants = "".join(f"{name.upper()} = {code}\n" for name, code in KIND_CODE.items())
    constants += "".join(f"PHASE_{name.upper()} = {code}\n" for name, code in PHASE_CODE.items())
    return (_TEMPLATE.replace("#CONSTANTS\n", constants)
            .replace("#ACTIVATE\n", "\n".join(activate) + "\n")
            .replace("#DERIVE\n", "\n".join(derive) + "\n"))


def compiled_before(module: ModuleType) -> bool:
    """Whether numba's cache holds this interpreter's machine code (else its first call
    compiles it)."""
    path = Path(module.__file__)
    return any((path.parent / "__pycache__").glob(f"{path.stem}.run-*.nbc"))


def load() -> ModuleType:
    """The interpreter module: written to the kernel cache under its hash, then imported."""
    text = source()
    key = hashlib.sha256((INTERPRETER_VERSION + text).encode()).hexdigest()[:20]
    name = f"lstmgraph_interpreter_{key}"
    if name in sys.modules:
        return sys.modules[name]
    path = cache_directory() / f"{name}.py"
    if not path.exists() or path.read_bytes() != text.encode():
        write_atomically(path, text.encode())
    spec = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    # Executed from the text just written or checked, never re-read from the file.
    exec(compile(text, str(path), "exec"), module.__dict__)
    sys.modules[name] = module
    return module


_TEMPLATE = '''"""Generated by lstmgraph (engine/compiled/interpreter.py) from the operation registry; do not edit."""
import math

import numba
import numpy as np

#CONSTANTS

@numba.njit(cache=True, nogil=True)
def activate(code, s, e, out, a, V, L):
#ACTIVATE


@numba.njit(cache=True, nogil=True)
def derive(code, s, e, out, a, b, V, L):
#DERIVE


@numba.njit(cache=True, nogil=True)
def mac(s, e, out, a, b, c, V, L):
    for k in range(s, e):
        o = out[k]
        i = a[k]
        j = b[k]
        m = c[k]
        for l in range(L):
            V[o, l] += V[i, l] * V[j, l] * V[m, l]


@numba.njit(cache=True, nogil=True)
def softmax(s, e, out, a, V, L):
    for l in range(L):
        top = V[a[s], l]
        for k in range(s + 1, e):
            top = max(top, V[a[k], l])
        norm = 0.0
        for k in range(s, e):
            V[out[k], l] = math.exp(V[a[k], l] - top)
            norm += V[out[k], l]
        for k in range(s, e):
            V[out[k], l] /= norm


@numba.njit(cache=True, nogil=True)
def loss(code, mode, s, e, out, a, b, c, V, L, targets, t, tolerance, active, wrong, sums, record):
    for l in range(L):
        if not active[l]:
            continue
        present = 0
        for k in range(s, e):
            target = targets[t, c[k], l]
            if not math.isnan(target):
                present += 1
                if tolerance > 0.0 and abs(V[a[k], l] - target) >= tolerance:
                    wrong[l] = True
            if record.shape[1] > 0:
                record[l, t, c[k]] = V[a[k], l]
        if code == 0:
            dot = 0.0
            for k in range(s, e):
                target = targets[t, c[k], l]
                err = 0.0 if math.isnan(target) else V[a[k], l] - target
                sums[l] += 0.5 * err * err
                if mode == 1:
                    V[out[k], l] = err
                    dot += err * V[a[k], l]
                else:
                    V[out[k], l] = V[b[k], l] * err
            if mode == 1:
                for k in range(s, e):
                    V[out[k], l] = V[a[k], l] * (V[out[k], l] - dot)
        elif present == e - s:
            for k in range(s, e):
                target = targets[t, c[k], l]
                y = V[a[k], l]
                if mode == 1:
                    sums[l] -= target * math.log(max(y, 2.2250738585072014e-308))
                else:
                    sums[l] -= (target * math.log(max(y, 2.2250738585072014e-308))
                                + (1.0 - target) * math.log(max(1.0 - y, 2.2250738585072014e-308)))
                V[out[k], l] = y - target
        else:
            for k in range(s, e):
                V[out[k], l] = 0.0


@numba.njit(cache=True, nogil=True)
def run(kind, phase, code, mode, start, stop, out, a, b, c, V, inputs, targets, rate, momentum, decay,
        tolerance, learn, active, steps_done, sums, record):
    """Run the program over the steps of ``inputs`` (steps, n_inputs, lanes) for the lanes of
    ``V`` (slots, lanes) still ``active``; a lane stops after its first step with an error
    >= tolerance (if > 0), its state then left as that step made it."""
    L = V.shape[1]
    steps = inputs.shape[0]
    wrong = np.zeros(L, dtype=np.bool_)
    for t in range(steps):
        running = False
        for l in range(L):
            running = running or active[l]
        if not running:
            break
        for op in range(kind.shape[0]):
            ph = phase[op]
            if not learn and ph >= PHASE_BACKWARD and ph <= PHASE_KEEP_TRACES:
                continue
            kd = kind[op]
            s = start[op]
            e = stop[op]
            if kd == MAC:
                mac(s, e, out, a, b, c, V, L)
            elif kd == ZERO:
                for k in range(s, e):
                    o = out[k]
                    for l in range(L):
                        V[o, l] = 0.0
            elif kd == COPY:
                masked = ph >= PHASE_UPDATE
                for k in range(s, e):
                    o = out[k]
                    i = a[k]
                    for l in range(L):
                        if active[l] or not masked:
                            V[o, l] = V[i, l]
            elif kd == SCALE:
                for k in range(s, e):
                    o = out[k]
                    i = a[k]
                    for l in range(L):
                        V[o, l] *= V[i, l]
            elif kd == ACTIVATE:
                activate(code[op], s, e, out, a, V, L)
            elif kd == DERIVE:
                derive(code[op], s, e, out, a, b, V, L)
            elif kd == SOFTMAX:
                softmax(s, e, out, a, V, L)
            elif kd == COMPLEMENT:
                for k in range(s, e):
                    o = out[k]
                    i = a[k]
                    for l in range(L):
                        V[o, l] = 1.0 - V[i, l]
            elif kd == INPUT:
                for k in range(s, e):
                    o = out[k]
                    i = a[k]
                    for l in range(L):
                        V[o, l] = inputs[t, i, l]
            elif kd == LOSS:
                loss(code[op], mode[op], s, e, out, a, b, c, V, L, targets, t, tolerance, active, wrong,
                     sums, record)
            elif kd == UPDATE:
                for k in range(s, e):
                    o = out[k]
                    i = a[k]
                    j = b[k]
                    for l in range(L):
                        if active[l]:
                            V[i, l] = V[i, l] * momentum - rate[l] * V[j, l]
                            V[o, l] += V[i, l]
                for l in range(L):
                    if active[l]:
                        rate[l] *= decay
        for l in range(L):
            if active[l]:
                steps_done[l] = t + 1
                if wrong[l]:
                    active[l] = False
'''
