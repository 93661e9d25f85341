"""`run_checks`' notes before a run: a step cap that leaves no trial able to succeed, and what the first
trials will wait to compile."""

from __future__ import annotations

import os
import subprocess
import sys

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.run_checks import cap_note, compile_note

from conftest import invoke


def test_a_cap_below_the_sequences_the_success_test_needs_is_noted_before_the_run(tmp_path):
    """Before: a quick look with --max-steps 30,000 at the adding row ran every trial to "not
    solved in 286 sequences", which no net could escape (its rule: 2,000 right in a row)."""
    adding = find_experiment("hochreiter1997-adding-t100")  # sequences of 100 to 110 steps
    note = cap_note(adding, 30_000)
    assert note.startswith("--max-steps 30,000 ends each trial of hochreiter1997-adding-t100 after about 28")
    assert "before the 2,000 its success test needs: no trial can succeed" in note
    assert cap_note(adding, 300_000) is None and cap_note(adding, None) is None
    # Before: a cap between the shortest and the mean length went unnoted (NTO: 1,903 sequences of 2,000).
    assert "its success test needs: a trial succeeds only if its sequences run short; give --max-steps above 209,320" \
        in cap_note(find_experiment("gers2000-nto-standard"), 200_000)
    assert cap_note(find_experiment("hochreiter1997-erg-3x2-lr0.5"), 1_000) is None  # (fixed sets: a full check)
    assert cap_note(find_experiment("gers2000-cerg-forget"), 1_000) is None  # (streams: no such bound)
    code, output = invoke("reproduce", "hochreiter1997-adding-t100", "--trials", "1", "--max-steps", "300",
                          "--jobs", "1", "--out", tmp_path / "out")
    assert code == 0 and "note: --max-steps 300 ends each trial of hochreiter1997-adding-t100" in output, output


def test_the_compile_note_names_the_kernel_and_driver_the_trials_will_compile(tmp_path):
    """Before: the note named the compiled engine only, so a first run of a protocol after a
    `train` had compiled the engine waited 10-20 s for its driver with no word (that time then
    counted as its first trial's CPU time). Run in a process with an empty kernel cache: a row's
    uncapped run compiles its net's specialised kernel, a capped one the interpreter, a BPTT
    spec the interpreter's BPTT form; each with its protocol's driver."""
    script = """
import sys
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.folder_run import trials_kernel
from lstmgraph.experiments.run_checks import compile_note
from lstmgraph.experiments.sweep import subject_of
row, gru = find_experiment("gers2002-gts-peephole"), subject_of("gru").experiment
print(compile_note(row, trials_kernel(10, None)))
print(compile_note(row, trials_kernel(1, 100)))
print(compile_note(gru, trials_kernel(1, 100)))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "LSTMGRAPH_CACHE": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    specialised, interpreted, bptt = result.stdout.splitlines()
    ending = f" (once per installation, about 10-60 s; cached in {tmp_path / 'kernels'})"
    assert specialised == "compiling the kernel specialised to its net and the driver of its streams protocol" + ending
    assert interpreted == "compiling the compiled engine and the driver of its streams protocol" + ending
    assert bptt == "compiling the compiled engine and the driver of its sequences protocol" + ending


def test_the_compile_note_is_none_once_numba_s_cache_holds_both(monkeypatch):
    from lstmgraph.engine.compiled import interpreter
    from lstmgraph.experiments.folder_run import trials_kernel

    row = find_experiment("gers2002-gts-peephole")
    monkeypatch.setattr(interpreter, "function_compiled", lambda function: True)
    assert compile_note(row, trials_kernel(1, 100)) is None
    monkeypatch.setattr(interpreter, "function_compiled", lambda function: function.py_func.__name__ == "run")
    assert compile_note(row, trials_kernel(1, 100)).startswith("compiling the driver of its streams protocol (once")


def test_finished_trials_beyond_those_asked_are_noted_before_the_summary_leaves_them_out(tmp_path):
    """Before: rerunning a finished folder with a smaller --trials rewrote its summary of fewer
    trials without a word (the rows stay in trials.jsonl)."""
    from lstmgraph.experiments.run_checks import beyond_note

    row, out = find_experiment("gers2002-gts-peephole"), tmp_path / "out"
    assert beyond_note(row, 1, out) is None  # (nothing there yet)
    code, output = invoke("reproduce", row.name, "--trials", "3", "--max-steps", "300", "--jobs", "1", "--out", out)
    assert code == 0, output
    assert beyond_note(row, 3, out) is None
    assert beyond_note(row, 1, out).startswith(f"{out} holds 2 finished trials with seeds beyond the 1 asked: kept")
    assert beyond_note(row, 1, out).endswith("give --trials 3 to keep them in")
    code, output = invoke("reproduce", row.name, "--trials", "2", "--max-steps", "300", "--jobs", "1", "--out", out)
    assert code == 0 and "note: " + f"{out} holds 1 finished trial with a seed beyond the 2 asked" in output
