"""`run_checks.cap_note`: a step cap that leaves no trial able to succeed, said before the run."""

from __future__ import annotations

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
    assert cap_note(find_experiment("hochreiter1997-erg-3x2-lr0.5"), 1_000) is None  # (fixed sets: a full check)
    assert cap_note(find_experiment("gers2000-cerg-forget"), 1_000) is None  # (streams: no such bound)
    code, output = invoke("reproduce", "hochreiter1997-adding-t100", "--trials", "1", "--max-steps", "300",
                          "--jobs", "1", "--out", tmp_path / "out")
    assert code == 0 and "note: --max-steps 300 ends each trial of hochreiter1997-adding-t100" in output, output


def test_the_compile_note_names_the_protocol_driver_not_yet_compiled(monkeypatch):
    """Before: the note named the compiled engine only, so a first run of a protocol after a
    `train` had compiled the engine waited 10-20 s for its driver with no word (that time then
    counted as its first trial's CPU time)."""
    from lstmgraph.engine.compiled import interpreter

    protocols = [find_experiment(name).protocol for name in ("hochreiter1997-temporal-order-6a", "gers2002-gts-peephole")]
    cached: dict[str, bool] = {}
    monkeypatch.setattr(interpreter, "compiled_before", lambda module: cached.get("engine", False))
    monkeypatch.setattr(interpreter, "compiled_in_cache",
                        lambda path, function="run": cached.get(f"{path.stem.split('_')[1]} {function}", False))
    for protocol in protocols:
        note = compile_note(protocol)
        assert note.startswith(f"compiling the compiled engine and the driver of its {protocol.kind} protocol (once ")
    cached["engine"] = True
    assert compile_note(protocols[0]).startswith("compiling the driver of its sequences protocol (once per installation")
    cached["sequence _drive"] = True
    assert compile_note(protocols[0]) is None
    assert "the driver of its streams protocol" in compile_note(protocols[1])
