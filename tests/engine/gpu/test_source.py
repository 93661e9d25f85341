"""The GPU kernel's text: how runs are shared among a trial's threads, the layout, and a kernel
for every bundled spec (compiled as Python here; on a GPU by benchmarks/gpu_check.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lstmgraph import compile_spec
from lstmgraph.engine.compiled import CompiledNetwork
from lstmgraph.engine.gpu.source import SHARED_BYTES, choose_layout, source, split
from lstmgraph.operations import OPERATION_KINDS

from conftest import SPECS

MAC, COPY, SCALE = OPERATION_KINDS["mac"], OPERATION_KINDS["copy"], OPERATION_KINDS["scale"]

pytestmark = pytest.mark.gpu


def run(ni, nj, out, a, b=(0, 0, 0), c=(0, 0, 0)) -> np.ndarray:
    """A run row: (n_i, n_j, then base, stride_i, stride_j of out, a, b, c)."""
    return np.array([ni, nj, *out, *a, *b, *c], dtype=np.int64)


def test_a_weighted_sum_is_shared_out_by_rows():
    # out[i] += a[j] * b[i, j]: 3 sums of 4 terms
    assert split(MAC, run(3, 4, (10, 1, 0), (20, 0, 1), (30, 4, 1))) == "rows"


def test_a_sum_over_rows_is_shared_out_by_columns():
    # out[j] += a[i] * b[i, j]
    assert split(MAC, run(3, 4, (10, 0, 1), (20, 1, 0), (30, 4, 1))) == "columns"


def test_distinct_entries_are_dealt_out():
    assert split(COPY, run(2, 5, (10, 5, 1), (40, 5, 1))) == "entries"
    assert split(SCALE, run(1, 5, (10, 0, 1), (40, 0, 1))) == "entries"  # each entry reads its own out


def test_a_run_reading_what_it_writes_runs_on_one_thread():
    # out[j] = out[j - 1]: entry j reads entry j - 1's slot
    assert split(COPY, run(1, 5, (11, 0, 1), (10, 0, 1))) == "one"
    # one slot written twice by a statement kind
    assert split(COPY, run(1, 3, (10, 0, 0), (20, 0, 1))) == "one"


def test_layout_puts_slots_in_shared_memory_where_they_fit():
    assert choose_layout(135, 32).shared and choose_layout(135, 32).trials == 4
    cerg = choose_layout(2600, 32)  # 20.8 kB a trial: two trials a block
    assert cerg.shared and cerg.trials == 2
    big = choose_layout(SHARED_BYTES // 8 + 1, 32)
    assert not big.shared and big.trials == 4
    # a thread a trial: as many trials as fit 48 kB (45 of 1,080 bytes), at most 128
    assert choose_layout(135, 1).trials == 45 and choose_layout(135, 32, simulator=True).trials == 1
    with pytest.raises(ValueError, match="do not fit"):
        choose_layout(SHARED_BYTES // 8 + 1, 32, slots_in="shared")
    with pytest.raises(ValueError, match="threads per trial"):
        choose_layout(135, 8)


@pytest.mark.parametrize("spec", sorted(path.name for path in SPECS.glob("*.yaml")))
def test_every_bundled_spec_has_a_kernel(spec):
    network = CompiledNetwork(compile_spec(SPECS / spec), kernel="interpreter")
    # Each layout once ("auto" is "global" where the slots outgrow shared memory).
    layouts = {choose_layout(network.program.n_slots, threads, slots_in=slots_in)
               for threads in (1, 32) for slots_in in ("auto", "global")}
    for layout in layouts:
        text = source(network.flat, network.program.n_slots, layout)
        compile(text, spec, "exec")  # valid Python: numba-cuda compiles it on a GPU
        assert ("cuda.syncwarp()" in text) == (layout.threads > 1)
        assert ("cuda.shared.array((SLOTS, TRIALS)" in text) == layout.shared
        assert ("lane_of" in text) == (layout.threads > 1)  # the lane table (`_LANE_TABLE`)


def test_threads_meet_only_before_a_run_that_depends_on_one_since_the_last_meeting():
    from lstmgraph.engine.gpu.source import _Writer

    w = _Writer(1, threads=32)
    w.sync({1, 2}, {10})      # reads 1, 2; writes 10
    w.sync({3}, {11})         # independent: no barrier
    assert w.lines == []
    w.sync({10}, {12})        # reads what the first wrote
    assert w.lines == ["    barrier()"]
    w.sync({4}, {12})         # writes what the last wrote
    w.sync({5}, {4})          # writes what the last read
    assert w.lines.count("    barrier()") == 3
    one = _Writer(1, threads=1)
    one.sync({1}, {2})
    one.sync({2}, {1})
    assert one.lines == []    # a thread a trial: its runs in order, no barrier


def test_the_cerg_step_has_fewer_barriers_than_runs():
    network = CompiledNetwork(compile_spec(SPECS / "gers2000_cerg.yaml"), kernel="interpreter")
    text = source(network.flat, network.program.n_slots, choose_layout(network.program.n_slots, 32))
    step = text[text.index("def part_0"):text.index("def run")]  # the step's parts and the step
    assert 0 < step.count("cuda.syncwarp()") < len(network.flat.runs) / 2


def _statements(text: str) -> list[tuple[bool, str]]:
    """The step's statements in the order they run, each with whether it runs only when learning
    (not each part's opening, where its threads read their lanes again)."""
    module, statements = {}, []
    parts = text[text.index("def part_0"):text.index("\ndef step")].split("\ndef ")
    for part in parts:
        name, *lines = part.splitlines()
        module[name[:name.index("(")].removeprefix("def ")] = [line for line in lines if line.strip()
                                                               and not line.startswith("@")
                                                               and line.strip() != "lane = lane_of[cuda.threadIdx.x]"]
    body = text[text.index("\ndef step"):text.index("\n@cuda.jit(cache=True")].splitlines()
    for line in body:
        call = line.strip().removeprefix("if learning: ")
        if call.startswith("part_"):
            learns = line.strip().startswith("if learning:")
            statements += [(learns, inner) for inner in module[call[:call.index("(")]]]
    return statements


@pytest.mark.parametrize("threads", [1, 32])
def test_the_step_in_parts_runs_the_statements_of_one_function(threads):
    """The parts (`PART_LINES`) split the step between operations: cut into many parts or left
    whole, the step runs the same statements in the same order, the same ones only when learning."""
    network = CompiledNetwork(compile_spec(SPECS / "gers2000_cerg.yaml"), kernel="interpreter")
    layout = choose_layout(network.program.n_slots, threads)
    whole = source(network.flat, network.program.n_slots, layout, part_lines=10**9)
    parts = source(network.flat, network.program.n_slots, layout, part_lines=5)
    # whole: forward, learning, the outputs kept for the next step; in parts of 5 lines: many
    assert whole.count("\ndef part_") == 3 and parts.count("\ndef part_") > 50
    assert _statements(whole) == _statements(parts)
    assert sum(learns for learns, _ in _statements(parts)) > len(_statements(parts)) / 2


@pytest.mark.parametrize("threads", [1, 32])
def test_the_text_has_no_operation_that_changes_nothing(threads):
    """As the specialised CPU kernel's (`entry_text`): positions are one constant plus the loop
    terms, a product reads neither the constant slot ONE nor a factor 1.0 (x * 1.0 is x, bit for
    bit: on a GPU a load from shared memory saved), no loop has one pass and a sum of two
    entries is two statements. The simulator's tests hold the results to the CPU's."""
    network = CompiledNetwork(compile_spec(SPECS / "gers2000_cerg.yaml"), kernel="interpreter")
    text = source(network.flat, network.program.n_slots, choose_layout(network.program.n_slots, threads))
    step = text[text.index("def part_0"):text.index("def run")]
    assert not re.search(r"\* 1\b|\* 1\.0\b|(?<![-\d.])1\.0 \*|\[0 \+ |W\[0, c\] \*|\* W\[0, c\]", step)
    assert "range(1)" not in step and "range(0, " not in step
    assert not re.search(r"for j in range\(2\):\n +acc", step)
    assert "W[60 + i, c] = acc" in step  # a cell input's weighted sum, in a register


def test_each_part_of_a_warp_s_step_reads_its_lane_again():
    """A lane computed once a launch lets the compiler keep every run's lane-dependent slot
    address in a register for the whole launch (the CERG warp kernel: 255 registers a thread and
    10 KB spilt, `ptxas -v`); each part reads it again from a table in shared memory."""
    network = CompiledNetwork(compile_spec(SPECS / "gers2000_cerg.yaml"), kernel="interpreter")
    n = network.program.n_slots
    for slots_in in ("shared", "global"):
        text = source(network.flat, n, choose_layout(n, 32, slots_in=slots_in))
        assert "lane_of = cuda.shared.array(64, int64)" in text or "lane_of = cuda.shared.array(128, int64)" in text
        openings = re.findall(r"^def part_\d+\(.*, lane_of\):\n    lane = lane_of\[cuda.threadIdx.x\]\n", text, re.M)
        assert len(openings) == text.count("\ndef part_") > 10
    assert "lane_of" not in source(network.flat, n, choose_layout(n, 1))  # a thread a trial: lane 0
