"""A results folder handed over by anyone (issue 36): links, locks, damaged or foreign files,
huge numbers and deep nesting, each refused with exit 2 and a message naming the file and the
line or field, never a traceback, never a write outside the folder, and a refused run leaves
the folder as it was."""

from __future__ import annotations

import errno
import json
import os
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lstmgraph.arrays import npz_bytes
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.folder import ResultsConflict, ResultsFolder
from lstmgraph.experiments.folder_settings import settings as run_settings, settings_digest
from lstmgraph.experiments.settings_diff import setting_differences
from lstmgraph.experiments.folder_files import FolderFileError, parse_json, write_file
from lstmgraph.experiments.rows import MAX_TRIALS, check_results, check_row
from lstmgraph.experiments.schedule import run_experiment
from lstmgraph.files import BUNDLED_SPECS, OutputError

from conftest import hostile, invoke

ADDING, GTS = "hochreiter1997-adding-t100", "gers2002-gts-peephole"
PROPERTY = hostile(80)


def _row(seed: int, solved: bool = False, **extra) -> dict:
    return {"seed": seed, "solved": solved, "to_success": 10 if solved else None, "presented": 10, "steps": 100,
            "diverged": False, "seconds": 0.5, "class": None, **extra}


def _stream_row(seed: int) -> dict:
    return _row(seed, **{"class": "rest", "score": 3.0})


def _folder(tmp_path, name=ADDING, budget=1000, rows=()) -> tuple:
    """A results folder as a run of ``name`` capped at ``budget`` leaves it, holding ``rows``."""
    experiment = find_experiment(name)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    stored = run_settings(experiment, budget, BUNDLED_SPECS)
    (out / "experiment.json").write_text(json.dumps(stored, indent=2))
    (out / "trials.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return experiment, out, stored


def _snapshot(out) -> dict:
    return {path.relative_to(out): (path.read_bytes() if path.is_file() and not path.is_symlink() else
                                    os.readlink(path) if path.is_symlink() else None)
            for path in out.rglob("*") if path.name != ".lock"}


def _checkpoint(seed: int, kind: str, digest: str | None, **arrays) -> bytes:
    content = {"trial/seed": np.array(seed, dtype=np.int64), "trial/kind": np.array(kind),
               "trial/counters": np.zeros(4, dtype=np.int64), "trial/seconds": np.array(1.0), **arrays}
    if digest is not None:
        content["folder/settings"] = np.array(digest)
    return npz_bytes(content)


# -- the lock ----------------------------------------------------------------------------------------
def test_a_lock_that_is_a_link_is_refused_never_written_through(tmp_path):
    experiment, out, _ = _folder(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / ".lock").symlink_to(victim)
    with pytest.raises(ResultsConflict, match=r"\.lock: is a symbolic link"):
        run_experiment(experiment, 1, 1, out, 1000)
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and ".lock: is a symbolic link" in output
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out, "--status")
    assert code == 2 and ".lock: is a symbolic link" in output
    assert victim.read_text() == "precious\n" and (out / ".lock").is_symlink()


def test_a_lock_hard_linked_to_another_file_is_not_written(tmp_path):
    experiment, out, _ = _folder(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.link(victim, out / ".lock")
    with pytest.raises(ResultsConflict, match=r"\.lock: not a plain file of its own \(2 links\)"):
        run_experiment(experiment, 1, 1, out, 1000)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("command", [("reproduce", ADDING), ("sweep", ADDING, "--vary", "learning_rate=0.1")],
                         ids=["reproduce", "sweep"])
def test_a_lock_file_that_finds_no_room_says_cannot_write_and_that_the_command_resumes(tmp_path, monkeypatch,
                                                                                    command):
    """A full disk is the disk's state, not the folder's fault: the library raises the
    `OutputError` itself, and the command says that the same command resumes once it can write."""
    experiment, out, _ = _folder(tmp_path)

    def full(handle, data, offset):  # the holder written into .lock on a full disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(OutputError) as refused:
        run_experiment(experiment, 1, 1, out, 1000)
    assert str(refused.value) == f"cannot write {out}/.lock: No space left on device"
    code, output = invoke(*command, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and (f"error: cannot write {out}/.lock: No space left on device; once it can be written, "
                          "run the same command again: it resumes") in output, output
    assert not (out / ".lock").exists()


def test_status_says_when_another_process_holds_the_folder(tmp_path):
    _, out, _ = _folder(tmp_path)
    folder = ResultsFolder(out)
    assert folder.holder() is None
    with folder.locked():
        assert folder.holder().startswith(f"lstmgraph reproduce, process {os.getpid()}")
        code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out, "--status")
        assert code == 0 and f"in use by lstmgraph reproduce, process {os.getpid()}" in output
        code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out)
        assert code == 2 and f"is in use by lstmgraph reproduce, process {os.getpid()}" in output
    assert folder.holder() is None  # the status let it go


# -- no link followed out of the folder --------------------------------------------------------------
@pytest.mark.parametrize("link", ["trials", "trials/0"])
def test_a_trials_folder_that_is_a_link_is_neither_read_nor_written_through(tmp_path, link):
    experiment, out, stored = _folder(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    (out / link).symlink_to(outside)
    before = _snapshot(out)
    with pytest.raises(ResultsConflict, match=f"{link}: is a symbolic link"):
        run_experiment(experiment, 1, 1, out, 1000)
    folder = ResultsFolder(out)
    digest = settings_digest(stored)
    with pytest.raises(OutputError, match=f"{link}: is a symbolic link"):
        folder.write_checkpoint(0, _checkpoint(0, "sequences", None), digest)
    with pytest.raises(OutputError, match=f"{link}: is a symbolic link"):
        folder.save_trial(0, {}, b"weights", _row(0))
    assert list(outside.iterdir()) == [] and _snapshot(out) == before


def test_files_that_are_links_are_refused_on_reading_and_replaced_not_followed_on_writing(tmp_path):
    _, out, _ = _folder(tmp_path)
    victim = tmp_path / "victim.json"
    victim.write_text("precious\n")
    (out / "results.json").symlink_to(victim)
    write_file(out, "results.json", b"{}")
    assert victim.read_text() == "precious\n" and not (out / "results.json").is_symlink()
    (out / "trials.jsonl").unlink()
    (out / "trials.jsonl").symlink_to(victim)
    with pytest.raises(ResultsConflict, match=r"trials.jsonl: is a symbolic link"):
        ResultsFolder(out).read_rows(find_experiment(ADDING).protocol)
    with pytest.raises(OutputError, match=r"trials.jsonl: is a symbolic link"):
        ResultsFolder(out).append_row(_row(0))
    assert victim.read_text() == "precious\n"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    _, out, _ = _folder(tmp_path)
    (out / "trials.jsonl").unlink()
    os.mkfifo(out / "trials.jsonl")
    with pytest.raises(ResultsConflict, match=r"trials.jsonl: is not a regular file"):
        ResultsFolder(out).read_rows(find_experiment(ADDING).protocol)


# -- rows ----------------------------------------------------------------------------------------------
def test_a_duplicated_row_is_an_error_naming_its_line_and_the_folder_is_left_as_it_was(tmp_path):
    experiment, out, _ = _folder(tmp_path, rows=[_row(0), _row(1), _row(0)])
    before = _snapshot(out)
    with pytest.raises(ResultsConflict, match=r"trials.jsonl, line 3: trial 0's row again \(its first is on line 1\)"):
        run_experiment(experiment, 2, 1, out, 1000)
    assert _snapshot(out) == before
    code, output = invoke("reproduce", ADDING, "--trials", "2", "--max-steps", "1000", "--out", out, "--status")
    assert code == 2 and "line 3: trial 0's row again" in output


@pytest.mark.parametrize("row, words", [
    (_stream_row(0), "class 'rest': a row of another protocol's experiment"),
    ({**_row(0), "presented": 10**9}, "a row of another experiment"),
    ({key: value for key, value in _row(0).items() if key != "steps"}, "a row without steps"),
    ({**_row(0), "seed": -1}, "seed must be a whole number >= 0"),
    ({**_row(0), "seed": MAX_TRIALS}, f"seed {MAX_TRIALS:,} is beyond"),
    ({**_row(0), "seed": True}, "seed must be a whole number >= 0, not True"),
    ({**_row(0), "seconds": "fast"}, "seconds must be a finite number >= 0"),
    ({**_row(0), "solved": True}, "to_success must be set exactly when solved is true"),
    ({**_row(0), "extra": [[1]]}, "'extra' must be a short text"),
])
def test_rows_of_another_experiment_or_with_wrong_keys_are_refused_naming_the_line(tmp_path, row, words):
    experiment, out, _ = _folder(tmp_path, rows=[_row(1), row])
    with pytest.raises(ResultsConflict, match="trials.jsonl, line 2: ") as refused:
        run_experiment(experiment, 2, 1, out, 1000)
    assert words in str(refused.value)


def test_a_stream_row_must_carry_its_class_and_score():
    gts = find_experiment(GTS).protocol
    assert check_row(_stream_row(0), gts) is None
    assert "without its class and score" in check_row(_row(0), gts)


def test_a_line_cut_by_a_kill_is_dropped_only_at_the_end(tmp_path):
    experiment, out, _ = _folder(tmp_path)
    (out / "trials.jsonl").write_text(json.dumps(_row(0)) + "\n" + json.dumps(_row(1))[:20])
    rows, cut = ResultsFolder(out).read_rows(experiment.protocol)
    assert [row["seed"] for row in rows] == [0] and cut
    (out / "trials.jsonl").write_text(json.dumps(_row(0))[:20] + "\n" + json.dumps(_row(1)) + "\n")
    with pytest.raises(ResultsConflict, match=r"trials.jsonl, line 1: not JSON"):
        ResultsFolder(out).read_rows(experiment.protocol)



def test_a_row_appended_to_a_full_disk_fails_naming_the_file_and_leaves_no_cut_line(tmp_path, monkeypatch):
    """A full disk takes the first bytes of a row and refuses the rest (a short write, no
    error): the append fails naming trials.jsonl, cut back to its rows, so the next row does
    not land on half a line (which would damage the folder)."""
    experiment, out, _ = _folder(tmp_path, rows=[_row(0)])
    before = (out / "trials.jsonl").read_bytes()
    write = os.write

    def full(handle, data):  # room for 6 bytes, then none
        if len(data) > 6:
            return write(handle, bytes(data)[:6])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OutputError, match=r"cannot write .*trials.jsonl: No space left on device"):
        ResultsFolder(out).append_row(_row(1))
    monkeypatch.undo()
    assert (out / "trials.jsonl").read_bytes() == before
    ResultsFolder(out).append_row(_row(2))
    rows, cut = ResultsFolder(out).read_rows(experiment.protocol)
    assert [row["seed"] for row in rows] == [0, 2] and not cut


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=8)
JSON = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(list(_row(0)) + ["x"]), inner, max_size=4), max_leaves=12)


@PROPERTY
@given(lines=st.lists(st.one_of(st.binary(max_size=40), JSON.map(lambda v: json.dumps(v).encode()),
                                st.builds(lambda row, key, value: json.dumps({**row, key: value}).encode(),
                                          st.sampled_from([_row(0), _row(1, True), _stream_row(2)]),
                                          st.sampled_from(list(_row(0))), JSON)), max_size=5))
def test_garbage_rows_are_read_as_rows_or_refused_naming_the_line(tmp_path, lines):
    experiment, out, _ = _folder(tmp_path)
    (out / "trials.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    try:
        rows, _ = ResultsFolder(out).read_rows(experiment.protocol, experiment.protocol.limit)
    except ResultsConflict as error:
        assert "trials.jsonl" in str(error) and ", line " in str(error)
    else:
        assert len({row["seed"] for row in rows}) == len(rows) == len(lines)
        assert all(check_row(row, experiment.protocol) is None for row in rows)


# -- limits of the JSON read back -------------------------------------------------------------------
@pytest.mark.parametrize("text, words", [
    ("[" * 1000 + "]" * 1000, "nested 1000 deep; expected at most 32"),
    ('{"seed": ' + "9" * 5000 + "}", "an integer of 5,000 digits (at most 20)"),
    ('{"seconds": 1e999}', "beyond the range of a float"),
    ('{"seconds": NaN}', "NaN is not a JSON number"),
    ('{"a": 1, "a": 2}', "the key 'a' appears twice"),
    (b"\xff\xfe", "not UTF-8 text"),
    ('{"a": [1, 2}', "not JSON (column 12"),
])
def test_json_is_read_with_limits(text, words):
    with pytest.raises(FolderFileError, match="^where: ") as refused:
        parse_json(text if isinstance(text, bytes) else text.encode(), "where")
    assert words in str(refused.value)


@pytest.mark.parametrize("name, content, words", [
    ("experiment.json", "[" * 100 + "]" * 100, "experiment.json: lists and objects nested 100 deep"),
    ("experiment.json", '{"trials": ' + "1" * 400 + "}", "experiment.json: an integer of 400 digits"),
    ("experiment.json", "[1, 2]", "experiment.json: expected a JSON object of settings"),
    ("trials.jsonl", '{"seed": ' + "1" * 400 + "}\n", "trials.jsonl, line 1: an integer of 400 digits"),
    ("trials.jsonl", "[" * 100 + "]" * 100 + "\n", "trials.jsonl, line 1: lists and objects nested 100 deep"),
])
def test_huge_numbers_and_deep_nesting_in_the_folder_exit_2_naming_the_file(tmp_path, name, content, words):
    _, out, _ = _folder(tmp_path)
    (out / name).write_text(content)
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and words in output, output
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out, "--status")
    assert code == 2 and words in output, output


def test_results_json_is_checked_against_its_schema(tmp_path):
    experiment = find_experiment(GTS)
    good = {"experiment": experiment.describe(), "budget_steps": None,
            "summary": {"trials": 2, "seconds_total": 1.0}, "trials": [_stream_row(0), _stream_row(1)]}
    assert check_results(good) is None
    for change, words in (({"trials": [_stream_row(0), _stream_row(0)]}, "trials[1]: trial 0's row again"),
                          ({"trials": [_stream_row(0)]}, "summary.trials is 2, but trials holds 1 rows"),
                          ({"budget_steps": 0}, "budget_steps must be null or a whole number"),
                          ({"experiment": {**experiment.describe(), "unit": "laps"}}, "no protocol counts 'laps'"),
                          ({"trials": [_row(0), _row(1)]}, "trials[0]: a row without its class and score")):
        assert words in check_results({**good, **change})
    (tmp_path / "results.json").write_text(json.dumps({**good, "trials": [_stream_row(0)]}))
    with pytest.raises(ResultsConflict, match="results.json: summary.trials is 2"):
        ResultsFolder(tmp_path).read_results()


@pytest.mark.parametrize("published, words", [
    ({"mean_ratio": 2}, "ratio_to and mean_ratio go together"),
    ({"ratio_to": "gers2000-nto-standard", "mean_ratio": "x"}, "mean_ratio must be a number > 0, not 'x'"),
    ({"perfect_percent": "x"}, "perfect_percent must be a number from 0 to 100, not 'x'"),
    ({"success_percent": 150}, "success_percent must be a number from 0 to 100, not 150"),
    ({"mean_to_success": "x"}, "mean_to_success must be a number > 0"),
    ({"test_mse": -1}, "test_mse must be a number >= 0"),
    ({"ratio_to": 3, "mean_ratio": 1}, "ratio_to must be a text"),
    ({"mean_ratio": 1e308, "ratio_to": "x"}, "mean_ratio must be a number (at most 1e300 in size)"),
])
def test_published_figures_the_verdicts_read_are_checked(published, words):
    """Before: a user's results.json (a sweep setting of their spec) with such figures ended
    `lstmgraph results --folders` in a traceback (KeyError, ValueError) from the tables."""
    experiment = find_experiment(GTS)
    results = {"experiment": {**experiment.describe(), "published": published}, "budget_steps": None,
               "summary": {"trials": 1, "seconds_total": 1.0}, "trials": [_stream_row(0)]}
    assert (check_results(results) or "").startswith(f"experiment.published.{words}")


def test_a_results_json_never_holds_a_reference_and_a_test_mse_may_be_null():
    """The other row's trials are read from its folder, never from the file judged (before: a
    'reference' key in results.json was trusted, invented trials judged the ratio); a test MSE
    that overflowed is null, not the Infinity JSON cannot hold (before: written, then refused)."""
    experiment = find_experiment("gers2000-nto-forget-bias5")
    row = {"seed": 0, "solved": False, "to_success": None, "presented": 5, "steps": 5, "seconds": 1.0,
           "diverged": False, "test_wrong": 2560, "test_mse": None}
    results = {"experiment": experiment.describe(), "budget_steps": None,
               "summary": {"trials": 1, "seconds_total": 1.0}, "trials": [row]}
    assert check_results(results) is None
    assert check_results({**results, "reference": {"solved": [1, 1]}}) == "'reference' is not a key results.json holds"


# -- checkpoints tied to their trial and folder ------------------------------------------------------
@pytest.mark.parametrize("arrays, words", [
    ({"seed": 1}, "trial 1's checkpoint, not trial 0's"),
    ({"kind": "streams"}, "a checkpoint of a streams protocol's trial, not of this row's sequences protocol"),
    ({"digest": "0" * 64}, "written for other settings than this folder's experiment.json"),
    ({"digest": None}, "written for other settings"),
    ({"extra": {"network/w": np.array([0.0, np.nan])}}, "'network/w' holds NaN or infinite values"),
    ({"raw": npz_bytes({"weights": np.zeros(3)})}, "no trial/seed: not a trial's checkpoint"),
    ({"raw": b"PK\x03\x04 not an archive"}, "not an .npz archive of a trial"),
])
def test_a_checkpoint_of_another_trial_or_folder_is_refused_and_the_folder_left_as_it_was(tmp_path, arrays, words):
    experiment, out, stored = _folder(tmp_path)
    digest = arrays.get("digest", settings_digest(stored)) if "digest" in arrays else settings_digest(stored)
    content = arrays.get("raw") or _checkpoint(arrays.get("seed", 0), arrays.get("kind", "sequences"), digest,
                                               **arrays.get("extra", {}))
    (out / "trials" / "0").mkdir(parents=True)
    (out / "trials" / "0" / "checkpoint.npz").write_bytes(content)
    before = _snapshot(out)
    with pytest.raises(ResultsConflict, match=r"trials/0/checkpoint.npz: .*delete it") as refused:
        run_experiment(experiment, 1, 1, out, 1000)
    assert words in str(refused.value)
    assert _snapshot(out) == before
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out, "--status")
    assert code == 2 and words in output


def test_a_checkpoint_written_by_the_folder_reads_back_with_its_digest(tmp_path):
    _, out, stored = _folder(tmp_path)
    folder, digest = ResultsFolder(out), settings_digest(stored)
    folder.write_checkpoint(3, _checkpoint(3, "sequences", None), digest)
    content, arrays = folder.read_checkpoint(3, "sequences", (digest,))
    assert str(arrays["folder/settings"]) == digest and int(arrays["trial/seed"]) == 3
    assert folder.read_checkpoint(4, "sequences", (digest,)) is None
    # the digest ignores key order, not values
    assert settings_digest(dict(reversed(list(stored.items())))) == digest
    assert settings_digest({**stored, "budget_steps": 1001}) != digest


# -- settings --------------------------------------------------------------------------------------------
def test_other_settings_are_named(tmp_path):
    experiment, out, stored = _folder(tmp_path)
    with pytest.raises(ResultsConflict, match=r"run with other settings \(budget_steps \(--max-steps\): 1,000 in the "
                                              r"folder, 2,000 in this command\)"):
        run_experiment(experiment, 1, 1, out, 2000)
    assert setting_differences(stored, {**stored, "budget_steps": None}) == [
        "budget_steps (--max-steps): 1,000 in the folder, no cap in this command"]
    other = find_experiment(GTS)  # another row's trials: named as the folder's, not the command's
    with pytest.raises(ResultsConflict, match=rf"holds trials of {experiment.name}, not of {other.name} \(name: "):
        ResultsFolder(out).check_settings(run_settings(other, 1000, BUNDLED_SPECS), other.name)
    other = experiment.with_protocol_options({"max_sequences": 5000})
    assert setting_differences(stored, run_settings(other, 1000, BUNDLED_SPECS))[0].startswith("protocol: ")
    assert setting_differences({"a": {"b": 1}}, {"a": {"b": 2, "c": 3}}) == [
        "a.b: 1 in the folder, 2 in this command", "a.c: not set in the folder, 3 in this command"]
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "999", "--out", out, "--status")
    assert code == 0 and "budget_steps (--max-steps): 1,000 in the folder, 999 in this command" in output


# -- counts out of range ---------------------------------------------------------------------------------
@pytest.mark.parametrize("option", [("--trials", str(MAX_TRIALS + 1)), ("--trials", "0"), ("--max-steps", str(10**11)),
                                    ("--checkpoint-seconds", "nan"), ("--checkpoint-seconds", "1e12"),
                                    ("--jobs", "100000"), ("--log-every", "nan"),
                                    ("--protocol-option", "max_sequences=1e400"),
                                    ("--protocol-option", f"max_sequences={10**40}")])
def test_counts_out_of_range_exit_2_before_anything_is_written(tmp_path, option):
    code, output = invoke("reproduce", ADDING, *option, "--out", tmp_path / "out")
    assert code == 2, output
    assert not (tmp_path / "out").exists()


def test_the_library_bounds_the_counts_too(tmp_path):
    experiment = find_experiment(ADDING)
    for trials, budget, seconds, words in ((MAX_TRIALS + 1, None, 60, "more than the limit of 100,000"),
                                           (1, 10**11, 60, "--max-steps) is 100000000000, more than the limit"),
                                           (1, None, float("nan"), "checkpoint_seconds must be from 1")):
        with pytest.raises(ValueError, match=re.escape(words)):
            run_experiment(experiment, trials, 1, tmp_path / "out", budget, checkpoint_seconds=seconds)
    assert not (tmp_path / "out").exists()


# -- a folder no run of ours wrote ---------------------------------------------------------------------
@pytest.mark.parametrize("files", [["run.json", "checkpoint.npz"], ["notes.txt"], ["trials.jsonl"]])
def test_a_folder_of_files_without_experiment_json_is_refused_and_left_as_it_was(tmp_path, files):
    out = tmp_path / "foreign"
    out.mkdir()
    for name in files:  # a `train` run's folder; anyone's notes; a results folder that lost its settings
        (out / name).write_text("{}\n")
    before = _snapshot(out)
    with pytest.raises(ResultsConflict, match=r"foreign: holds .* but no experiment.json: not a folder lstmgraph "
                                              r"reproduce writes.*choose an empty or new folder with --out"):
        run_experiment(find_experiment(ADDING), 1, 1, out, 1000)
    code, output = invoke("reproduce", ADDING, "--trials", "1", "--max-steps", "1000", "--out", out)
    assert code == 2 and "but no experiment.json" in output
    assert _snapshot(out) == before and not (out / ".lock").exists()


def test_an_empty_folder_or_one_a_killed_run_left_before_its_settings_is_taken(tmp_path):
    wanted = run_settings(find_experiment(ADDING), 1000, BUNDLED_SPECS)
    for folder, names in (("empty", []), ("killed", [".lock", ".experiment.json.0123456789ab.tmp"])):
        (tmp_path / folder).mkdir()
        for name in names:
            (tmp_path / folder / name).write_text("")
        before = _snapshot(tmp_path / folder)
        ResultsFolder(tmp_path / folder).check_settings(wanted, ADDING)  # nothing raised,
        assert _snapshot(tmp_path / folder) == before  # and nothing written by the check


def test_a_damaged_file_read_by_a_command_without_out_says_to_restore_it(tmp_path):
    _, out, _ = _folder(tmp_path)
    (out / "results.json").write_text("{bad")
    (out / "experiment.json").write_text("[]")
    for read in (lambda folder: folder.read_results(), lambda folder: folder.stored_settings()):
        with pytest.raises(ResultsConflict) as refused:
            read(ResultsFolder.read_only(out))
        assert "restore it, or rerun the lstmgraph reproduce" in str(refused.value)
        assert "--out" not in str(refused.value)
        with pytest.raises(ResultsConflict, match="delete it or choose another --out"):
            read(ResultsFolder(out))  # a command that writes the folder: its --out
    assert ResultsFolder.of_trial(out / "trials" / "0").advice == ResultsFolder.read_only(out).advice


def test_a_huge_name_in_experiment_json_is_cut_in_the_message(tmp_path):
    """Before: a name of a million characters was echoed whole in the refusal."""
    experiment, out, stored = _folder(tmp_path)
    (out / "experiment.json").write_text(json.dumps({**stored, "name": "x" * 1_000_000}))
    with pytest.raises(ResultsConflict) as refused:
        ResultsFolder(out).check_settings(run_settings(experiment, 1000, BUNDLED_SPECS), experiment.name)
    assert "holds trials of xxx" in str(refused.value) and len(str(refused.value)) < 2_000
