"""The GPU kernel of one lowered program: the specialised kernel's step, written for CUDA.

`source` turns a flattened program (`interpreter.flatten`) into the text of a numba-cuda kernel
``run`` that runs a population of trials for the steps of a staged stream, with the contract of
the CPU kernels' ``run`` (online learning, the success test stopping each trial after its first
error, steps done and loss sums per trial). Every operation is written where it stands, with
its runs' bounds and slot offsets as literals and its entry statement from the registry
(`lstmgraph.operations`); the group kinds call `groups.loss_lane` and `groups.softmax_lane`,
the CPU kernels' own functions.

**The work split.** ``threads`` threads run one trial (1: a thread per trial; 32: a warp per
trial). An operation's runs are shared among a trial's threads so that every slot is written by
one thread, in the CPU kernels' order:

- a run whose entries write distinct slots that none of them reads: its entries dealt out;
- a run adding into one slot per row (a weighted sum): its rows dealt out, each row summed by
  one thread in a register, in entry order;
- a run adding into one slot per column: its columns dealt out, each summed in row order;
- anything else: one thread, entry by entry, as the CPU's one-trial kernel does.

The threads of a trial meet at a barrier (a warp's ``syncwarp``) before a run that depends on one
since they last met (`_Writer.sync`). So the sums are the CPU kernels' sums, operation for
operation, compiled without fused multiply-adds (`arithmetic`). On an H200 the results still
differed from the CPU's in the last bits, from a source not yet found (docs/gpu.md).

**Where the slots live.** ``shared``: a trial's slots are copied into the block's shared memory
for the whole launch and back at its end (the weights, traces and velocities stay on the chip);
``global``: they stay in the device array ``V`` (slots, trials), a trial's slots side by side
where a warp runs it, trials side by side where a thread does (`Layout.slot_order`).

**Registers.** A warp's threads read their lanes again at each part of the step
(`_LANE_TABLE`): compiled once a launch, every lane-dependent slot address was kept in a
register for the whole launch, and every warp kernel spilt (docs/gpu.md, "Registers").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...operations import ACTIVATIONS, KIND_CODE, OPERATION_KINDS, OperationKind
from ...program.model import LEARNING_PHASES
from ..compiled.entry_text import OPERANDS, WRITTEN_OUT, constant, entry_lines, position, product
from ..compiled.interpreter import FlatProgram, _slots as kind_operands, math_import

GPU_SOURCE_VERSION = "6"

_KIND = {code: name for name, code in KIND_CODE.items()}
_ACTIVATION = dict(enumerate(ACTIVATIONS.values()))

#: Threads a trial may have: one, or a warp.
THREADS_PER_TRIAL = (1, 32)
#: Where a trial's slots live during a launch (`choose_layout`).
SLOTS_IN = ("auto", "shared", "global")
#: Static shared memory a block may hold (CUDA's limit without opting in).
SHARED_BYTES = 48 * 1024


@dataclass(frozen=True)
class Layout:
    """How a launch maps trials to threads: ``threads`` per trial, ``trials`` per block, the
    slots in ``shared`` memory or not."""

    threads: int
    trials: int
    shared: bool
    #: For numba's CUDA simulator: it has no ``syncwarp`` and runs one trial a block, so the
    #: block's ``syncthreads`` stands in for it; it calls the group kinds as Python functions.
    simulator: bool = False
    #: Fused multiply-adds (`arithmetic`), or contraction off as on the CPU.
    fused: bool = False

    @property
    def block_threads(self) -> int:
        return self.threads * self.trials

    @property
    def slot_order(self) -> str:
        """The memory order of the device's slot array (slots, trials): ``F`` (a trial's slots
        side by side) where a warp runs a trial, so that its threads read neighbouring slots
        together and each slot's address is a constant from the trial's first; ``C`` (a slot's
        trials side by side) where a thread runs a trial, so that neighbouring trials' threads
        read together. With ``C`` a warp's kernel in device memory computes every slot's row
        offset from the population's size, and ptxas keeps those in registers: the CERG net's
        exact-RTRL kernel took 255 registers a thread and spilt 40 kB, against 162 and none
        (docs/gpu.md, "Registers")."""
        return "F" if self.threads > 1 else "C"


def choose_layout(n_slots: int, threads: int, simulator: bool = False, slots_in: str = "auto",
                  fused: bool = False) -> Layout:
    """The layout for ``threads`` per trial: blocks of up to 128 threads (one trial a block in
    the simulator); ``slots_in`` ``shared`` or ``global`` memory, or ``auto``: shared where at
    least one trial's slots fit a block's shared memory, as many trials a block as fit;
    ``fused`` multiply-adds or the CPU's arithmetic (`arithmetic`)."""
    if threads not in THREADS_PER_TRIAL:
        raise ValueError(f"threads per trial must be one of {THREADS_PER_TRIAL}, not {threads}")
    if slots_in not in SLOTS_IN:
        raise ValueError(f"slots_in must be one of {SLOTS_IN}, not {slots_in!r}")
    most = 1 if simulator else max(1, 128 // threads)
    # A trial's share of a block's shared memory: its slots, its threads' lanes (`_LANE_TABLE`)
    # and a driver's word a trial (`experiments.gpu_drivers`).
    share = 8 * (n_slots + (threads if threads > 1 else 0) + 1)
    fit = min(most, SHARED_BYTES // share)
    shared = fit >= 1 if slots_in == "auto" else slots_in == "shared"
    if shared and fit < 1:
        raise ValueError(f"a trial's {n_slots} slots and its threads' lanes ({share} bytes) do not fit {SHARED_BYTES} "
                         "bytes of shared memory")
    return Layout(threads, fit if shared else most, shared, simulator, fused)


def _run_slots(row: np.ndarray, column: int) -> list[int]:
    ni, nj = int(row[0]), int(row[1])
    base, si, sj = (int(x) for x in row[2 + 3 * column:5 + 3 * column])
    return [base + i * si + j * sj for i in range(ni) for j in range(nj)]


def split(kind: OperationKind, row: np.ndarray) -> str:
    """How a run's entries are shared among a trial's threads: ``entries``, ``rows``,
    ``columns`` or ``one`` (the module docstring says when)."""
    ni, nj, oi, oj = int(row[0]), int(row[1]), int(row[3]), int(row[4])
    writes = _run_slots(row, 0)
    reads = {slot for name in kind_operands(kind) if name != "out" for slot in _run_slots(row, OPERANDS.index(name))}
    if set(writes) & reads:
        return "one"
    if len(set(writes)) == len(writes):
        return "entries"
    if kind.term and (oj == 0 or nj == 1) and len({int(row[2]) + i * oi for i in range(ni)}) == ni:
        return "rows"
    if kind.term and oi == 0 and len({int(row[2]) + j * oj for j in range(nj)}) == nj:
        return "columns"
    return "one"


class _Writer:
    """Lines of the step, with the barriers a trial's threads need between runs: one before a
    run that reads or writes a slot an earlier run since the last barrier wrote, or writes a
    slot such a run read (runs with no such conflict may run at once in any order: the same
    results). With one thread a trial, none."""

    def __init__(self, depth: int, threads: int) -> None:
        self.lines: list[str] = []
        self.depth = depth
        self.threads = threads
        self.written: set[int] = set()
        self.read: set[int] = set()

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def sync(self, reads: set[int], writes: set[int]) -> None:
        """Before a run reading ``reads`` and writing ``writes``: a barrier where it conflicts."""
        if self.threads > 1 and (reads & self.written or writes & (self.written | self.read)):
            self.fence()
        self.read |= reads
        self.written |= writes

    def fence(self, always: bool = False) -> None:
        """A barrier now where anything ran since the last (``always``: after a group kind or
        the rate, which one thread wrote), e.g. at a branch's edge."""
        if self.threads > 1 and (always or self.written or self.read):
            self("barrier()")
        self.written, self.read = set(), set()

    def by_one_thread(self, line: str) -> None:
        """``line`` run by the trial's first thread, between barriers (the group kinds, the
        rate's decay: what every thread reads next)."""
        self.fence()
        self(f"if lane == 0: {line}" if self.threads > 1 else line)
        self.fence(always=True)

    def block(self, lines: list[str]) -> None:
        for line in lines:
            self(line)


def _statement(kind: OperationKind, activation, columns, ni: int, nj: int, store: str) -> list[str]:
    """One entry's lines, its slots at the loop variables the run has (`entry_text.position`;
    an accumulating kind's constant slots as literals); ``store`` formats a slot of the trial's
    slot array."""
    return entry_lines(kind, activation, columns, ni, nj, lambda column: store.format(position(*column, ni, nj)),
                       "gi", "rate[g]")


def _run(w: _Writer, kind: OperationKind, activation, row: np.ndarray, threads: int, store: str) -> None:
    ni, nj = int(row[0]), int(row[1])
    columns = [(int(row[2 + 3 * k]), int(row[3 + 3 * k]), int(row[4 + 3 * k])) for k in range(4)]
    how = split(kind, row) if threads > 1 else "one"
    reads = {slot for name in kind_operands(kind) if name != "out" for slot in _run_slots(row, OPERANDS.index(name))}
    w.sync(reads, set(_run_slots(row, 0)))
    depth = w.depth
    if how == "entries":
        if ni > 1 and nj > 1:
            w(f"for e in range(lane, {ni * nj}, {threads}):")
            w(f"    i = e // {nj}")
            w(f"    j = e - i * {nj}")
        else:  # one loop variable, i or j (with a single entry: the first thread's)
            w(f"for {'i' if ni > 1 else 'j'} in range(lane, {ni * nj}, {threads}):")
        w.depth += 1
        w.block(_statement(kind, activation, columns, ni, nj, store))
    elif how == "columns":
        w(f"for j in range(lane, {nj}, {threads}):")
        w.depth += 1
        if ni > 1:
            w(f"for i in range({ni}):")
            w.depth += 1
        w.block(_statement(kind, activation, columns, ni, nj, store))
    else:
        if how == "one" and threads > 1:
            w("if lane == 0:")
            w.depth += 1
        if how == "rows":  # also with a single row: it is the first thread's
            w(f"for i in range(lane, {ni}, {threads}):")
            w.depth += 1
        elif ni > 1:
            w(f"for i in range({ni}):")
            w.depth += 1
        if kind.term and (int(row[4]) == 0 or nj == 1):  # a sum into one slot: in a register
            _register_sum(w, kind, columns, ni, nj, store)
        else:
            if nj > 1:
                w(f"for j in range({nj}):")
                w.depth += 1
            w.block(_statement(kind, activation, columns, ni, nj, store))
    w.depth = depth


def _register_sum(w: _Writer, kind: OperationKind, columns, ni: int, nj: int, store: str) -> None:
    """A row's sum into its one slot, kept in a register, its entries in order: a loop over j,
    or (at most `WRITTEN_OUT` entries) one statement an entry."""
    (o0, oi, _), operands = columns[0], columns[1:]
    out = store.format(position(o0, oi, 0, ni, 1))
    w(f"acc = {out}")
    written_out = nj <= WRITTEN_OUT
    if not written_out:
        w(f"for j in range({nj}):")
    for entries in ([[(base + j * sj, si, 0) for base, si, sj in operands] for j in range(nj)] if written_out
                    else [operands]):
        count = 1 if written_out else nj
        values = (constant(*column, ni, count) or store.format(position(*column, ni, count)) for column in entries)
        w(("acc += " if written_out else "    acc += ") + product(kind, values))
    w(f"{out} = acc")


def _operation(w: _Writer, flat: FlatProgram, op: int, threads: int, store: str) -> None:
    name = _KIND[int(flat.kind[op])]
    kind = OPERATION_KINDS[name]
    rs, re = int(flat.run_start[op]), int(flat.run_stop[op])
    if kind.call:
        code, mode = int(flat.code[op]), int(flat.mode[op])
        call = {"loss": f"loss_lane({code}, {mode}, {rs}, R, W, c, targets, gt, t, tolerance, wrong, sums, record, g, tr)",
                "softmax": f"softmax_lane({rs}, R, W, c)"}[name]
        w.by_one_thread(call)
        return
    activation = _ACTIVATION[int(flat.code[op])] if kind.form else None
    for r in range(rs, re):
        _run(w, kind, activation, flat.runs[r], threads, store)
    if kind.after:  # the rate, which every thread's entries read
        w.by_one_thread(kind.after.format(rate="rate[g]"))


def source(flat: FlatProgram, n_slots: int, layout: Layout, part_lines: int | None = None) -> str:
    """The CUDA module of ``flat`` for ``layout``: the device function ``step`` (one step of a
    trial) and the kernel ``run`` (a population over a staged stream).

    ``step`` calls the operations in parts (`PART_LINES`), each a device function that NVVM
    inlines (``forceinline``), so the code is that of one function. numba's analyses of a
    function's blocks grow faster than its length, so parts of a few dozen lines compile faster:
    the GRU kernel in three fifths of the time (docs/gpu.md, "Compile time")."""
    part_lines = PART_LINES if part_lines is None else part_lines
    store = "W[{}, c]"
    body = _Writer(1, layout.threads)
    parts: list[tuple[bool, list[str]]] = []  # (run only when learning, the part's lines)
    learning = False
    for op in range(len(flat.kind)):
        learns = LEARNING_PHASES[0] <= int(flat.phase[op]) <= LEARNING_PHASES[1]
        if learns != learning or len(body.lines) >= part_lines:
            if learns != learning:  # a branch's edge: the threads meet
                body.fence()
            parts.append((learning, body.lines))
            body.lines, learning = [], learns
        _operation(body, flat, op, layout.threads, store)
    body.fence()  # the step's end: the next step (or the caller) reads what it wrote
    parts.append((learning, body.lines))
    functions, calls = [], []
    for number, (learns, lines) in enumerate(part for part in parts if part[1]):
        functions.append(f"\n\n#PART_JIT\ndef part_{number}({_STEP_ARGUMENTS}):\n#LANE_AGAIN" + "\n".join(lines) + "\n")
        calls.append(f"    {'if learning: ' if learns else ''}part_{number}({_STEP_ARGUMENTS})")
    text = _HEADER.replace("#MATH\n", math_import()) + "".join(functions) + _STEP + _RUN
    text = text.replace("#STEP\n", "\n".join(calls + ["    return"]) + "\n")
    return finish(text.replace("#STEP_ARGUMENTS", _STEP_ARGUMENTS), layout, n_slots, len(flat.runs))


#: A part of the step (`source`) ends at the first operation after this many lines, or at a
#: phase's edge: a CERG warp kernel's step is 16 parts.
PART_LINES = 40


def finish(text: str, layout: Layout, n_slots: int, runs: int) -> str:
    """A kernel text with the layout's placeholders filled in: ``#ENTER`` (the trial's index
    ``g``, its column ``c`` of the slots ``W``, the slots loaded), ``#LEAVE`` (stored back),
    ``#BARRIER``, the constants, the arithmetic (so that its name differs) and the simulator's
    stand-ins."""
    return (text.replace("#ENTER\n", _ENTER_SHARED if layout.shared else _ENTER_GLOBAL)
            .replace("#LEAVE\n", _LEAVE_SHARED if layout.shared else "")
            .replace("#LANE_TABLE", _LANE_TABLE.replace("#BLOCK_THREADS", str(layout.block_threads))
                     if layout.threads > 1 else "")
            .replace("#LANE_AGAIN", _LANE_AGAIN if layout.threads > 1 else "")
            .replace("#LANE_OF", ", lane_of" if layout.threads > 1 else "")
            .replace("#THREADS", str(layout.threads)).replace("#TRIALS", str(layout.trials))
            .replace("#SLOTS", str(n_slots)).replace("#RUNS", str(runs))
            .replace("#ARITHMETIC", "fused multiply-adds" if layout.fused else "the CPU's (no contraction)")
            .replace("#BARRIER", "barrier()" if layout.threads > 1 else "pass")
            .replace("barrier()", "cuda.syncthreads()" if layout.simulator else "cuda.syncwarp()")
            .replace("#DEVICE_CODE\n", _DEVICE_CODE)
            .replace("#PART_JIT", "@cuda.jit(device=True)" if layout.simulator else _PART_JIT)
            .replace("#DEVICE_WRAP", "lambda function: function" if layout.simulator else "cuda.jit(device=True)")
            .replace("@cuda.jit(cache=True)", "@cuda.jit(cache=True)" if layout.simulator else _KERNEL_JIT)
            .replace("#DEVICE_TANH", "" if layout.simulator else "tanh = device_version(tanh, DEVICE)\n"))


#: Where a trial has a warp: each thread's lane in a table in shared memory, which each part of the
#: step reads again (`_LANE_AGAIN`). A lane computed once per launch lets the compiler hoist
#: every run's lane-dependent slot address out of the step loop and keep them all in registers:
#: the CERG warp kernel then took 255 registers a thread and spilt 10 KB (``ptxas -v``), against
#: about 100 and none. A barrier (``syncwarp``) orders shared memory, so no load of the table
#: moves past the step's barriers (docs/gpu.md, "Registers").
_LANE_TABLE = """    lane_of = cuda.shared.array(#BLOCK_THREADS, int64)
    lane_of[cuda.threadIdx.x] = lane
"""
_LANE_AGAIN = "    lane = lane_of[cuda.threadIdx.x]\n"

#: A kernel's decorator on a GPU. Without link-time optimisation: with it (numba-cuda's default
#: where nvJitLink is present), nvJitLink generates the code from NVVM's IR, whatever ``-fma``
#: NVVM was given (`arithmetic`); without it, the PTX holds ``mul.rn`` and ``add.rn``, which no
#: later stage may fuse.
_KERNEL_JIT = "@cuda.jit(cache=True, lto=False)"

#: A part of the step on a GPU: inlined by NVVM, so the step is compiled as one function.
_PART_JIT = "@cuda.jit(device=True, forceinline=True)"

_HEADER = '''"""Generated by lstmgraph (engine/gpu/source.py) from one lowered program; do not edit."""
import math

import numpy as np
from numba import cuda, float64, int64
#MATH

THREADS = #THREADS
TRIALS = #TRIALS
SLOTS = #SLOTS
RUNS = #RUNS
ARITHMETIC = "#ARITHMETIC"
#DEVICE_CODE
'''

#: The CPU's compiled functions the kernel calls, as device code (`device_code`): compiled for
#: the GPU, or as Python in the simulator (where ``tanh``, on floats only, stays compiled).
_DEVICE_CODE = """from lstmgraph.engine.gpu.device_code import device_version
DEVICE = #DEVICE_WRAP
loss_lane, softmax_lane = device_version(loss_lane, DEVICE), device_version(softmax_lane, DEVICE)
#DEVICE_TANH"""

_STEP_ARGUMENTS = ("R, W, c, g, lane, inputs, gi, targets, gt, t, rate, momentum, decay, tolerance, learning, sums, "
                   "record, wrong, tr#LANE_OF")

_STEP = '''

@cuda.jit(device=True)
def step(#STEP_ARGUMENTS):
    """One step of trial g (column c of W): the inputs of row t of ``inputs`` (column gi), the
    targets of row t of ``targets`` (column gt), the outputs to row tr of ``record[g]`` (where it
    has rows); the specialised CPU kernel's step."""
#STEP
'''

#: A kernel's opening: the thread's place in its trial (``lane``), the trial ``g``, its slots
#: ``W`` (column ``c``) and its place in the block ``b``.
_ENTER_SHARED = """    lane = cuda.threadIdx.x % THREADS
#LANE_TABLE    b = cuda.threadIdx.x // THREADS
    g = cuda.blockIdx.x * TRIALS + b
    W = cuda.shared.array((SLOTS, TRIALS), float64)
    c = b
    if g >= V.shape[1]:
        return
    for k in range(lane, SLOTS, THREADS):
        W[k, c] = V[k, g]
    #BARRIER
"""

_ENTER_GLOBAL = """    lane = cuda.threadIdx.x % THREADS
#LANE_TABLE    b = cuda.threadIdx.x // THREADS
    g = cuda.blockIdx.x * TRIALS + b
    if g >= V.shape[1]:
        return
    W = V
    c = g
"""

_LEAVE_SHARED = """    #BARRIER
    for k in range(lane, SLOTS, THREADS):
        V[k, g] = W[k, c]
"""

_RUN = '''

@cuda.jit(cache=True)
def run(R, V, inputs, targets, rate, momentum, decay, tolerance, learn, active, steps_done, sums, record, wrong):
    """The CPU kernels' ``run``: every trial over the steps of ``inputs`` (steps, columns,
    trials or 1), until its first error (``tolerance``)."""
#ENTER
    gi = g if inputs.shape[2] > 1 else 0
    gt = g if targets.shape[3] > 1 else 0
    learning = learn[g]
    if lane == 0:
        wrong[g] = False
    #BARRIER
    for t in range(inputs.shape[0]):
        if not active[g]:
            break
        step(R, W, c, g, lane, inputs, gi, targets, gt, t, rate, momentum, decay, tolerance, learning, sums, record,
             wrong, t#LANE_OF)
        stop = wrong[g]
        #BARRIER
        if lane == 0:
            steps_done[g] = t + 1
            if stop:
                active[g] = False
        if stop:
            break
#LEAVE
'''
