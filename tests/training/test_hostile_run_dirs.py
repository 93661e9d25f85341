"""Run directories made hostile: links pointing out of the folder, a checkpoint of another run or
holding NaN, damaged, huge or deeply nested files, a second process on the same run. Each is
refused with exit code 2 and a message naming the file, never a traceback, nothing is written
through a link, and a refused resume leaves the directory exactly as it was (the small rnn spec,
numpy engine)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import lstmgraph
from lstmgraph import Overrides
from lstmgraph.files import OutputError
from lstmgraph.folder_lock import FolderLock
from lstmgraph.limits import MAX_JSON_BYTES
from lstmgraph.training import RunDirectoryError, RunExists, RunInUse, resume_run, start_run

from conftest import SPECS, hostile, invoke

RNN = SPECS / "rnn.yaml"
LSTMGRAPH = str(Path(sys.executable).with_name("lstmgraph"))
HOSTILE = hostile(25)


def _run(folder: Path, seed: int = 0, steps: int = 40) -> Path:
    plan = lstmgraph.compile_spec(RNN, Overrides(steps=steps, seed=seed))
    start_run(plan, folder, trials=2, engine="numpy").train()
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished two-trial runs of rnn.yaml that differ only in their seed."""
    root = tmp_path_factory.mktemp("hostile")
    return _run(root / "a", seed=0), _run(root / "b", seed=1)


@pytest.fixture
def run(runs, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(runs[0], copy)
    return copy


def fresh_copy(runs, tmp_path_factory) -> Path:
    """A copy of the first run for one example of a property (a fixture's lasts all of them)."""
    copy = tmp_path_factory.mktemp("example") / "run"
    shutil.copytree(runs[0], copy)
    return copy


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry of the folder: its kind and its bytes (a link: where it points)."""
    found = {}
    for path in sorted(folder.iterdir()):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            found[path.name] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            found[path.name] = ("file", path.read_bytes())
        else:
            found[path.name] = ("other", stat.S_IFMT(mode))
    return found


def refused(run: Path, *words: str) -> str:
    """`train --resume RUN` exits 2 naming ``words`` and leaves the folder as it was."""
    before = snapshot(run)
    code, output = invoke("train", "--resume", run, "--quiet")
    assert code == 2, output
    for word in words:
        assert word in output, output
    assert snapshot(run) == before
    return output


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


# -- links -----------------------------------------------------------------------------------------

def test_a_lock_that_is_a_link_is_never_followed(run, tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("precious\n")
    (run / ".lock").symlink_to(outside)
    refused(run, f"{run}/.lock", "is a symbolic link")
    assert outside.read_text() == "precious\n"
    # A fresh run in a folder whose .lock is a dangling link: refused, the target never created.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ".lock").symlink_to(tmp_path / "created-by-the-lock")
    code, output = invoke("train", RNN, "--steps", "10", "--quiet", "--out", fresh)
    assert code == 2 and "is a symbolic link" in output, output
    assert not (tmp_path / "created-by-the-lock").exists()


@pytest.mark.parametrize("name", ["checkpoint.npz", "metrics.jsonl", "metrics.csv", "run.json", "spec.yaml"])
def test_a_file_that_is_a_link_out_of_the_run_is_refused_and_its_target_untouched(run, tmp_path, name):
    outside = tmp_path / "outside" / name
    outside.parent.mkdir()
    shutil.copy(run / name, outside)
    content = outside.read_bytes()
    (run / name).unlink()
    (run / name).symlink_to(outside)
    refused(run, f"{run}/{name}", "is a symbolic link")
    assert outside.read_bytes() == content


def test_metrics_appended_during_training_never_go_through_a_link(tmp_path):
    plan = lstmgraph.compile_spec(RNN, Overrides(steps=20))
    training = start_run(plan, tmp_path / "run", engine="numpy")
    training.open()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("keep\n")
    (training.path / "metrics.jsonl").unlink()
    (training.path / "metrics.jsonl").symlink_to(outside)
    with pytest.raises(OutputError, match="metrics.jsonl: is a symbolic link"):
        training.train()
    assert outside.read_text() == "keep\n"
    assert not (training.path / ".lock").exists()   # given up, though training failed


def test_a_file_that_is_a_fifo_or_a_folder_is_refused_without_blocking(run):
    (run / "run.json").unlink()
    os.mkfifo(run / "run.json")
    refused(run, f"{run}/run.json", "is not a regular file")
    (run / "run.json").unlink()
    (run / "run.json").mkdir()
    refused(run, f"{run}/run.json", "is a folder")


# -- a checkpoint tied to its run ------------------------------------------------------------------

def test_a_checkpoint_of_another_run_is_refused(runs, run):
    shutil.copy(runs[1] / "checkpoint.npz", run / "checkpoint.npz")   # same network, seed 1
    refused(run, f"{run}/checkpoint.npz: not this run's checkpoint",
            "its seeds are {'data': 1, 'init': 1}, this run's {'init': 0, 'data': 0}")


def test_a_checkpoint_whose_identity_is_removed_or_forged_is_refused(run):
    arrays = _arrays(run / "checkpoint.npz")
    identity = json.loads(str(arrays.pop("run/identity")))
    _save(run / "checkpoint.npz", arrays)
    refused(run, "checkpoint.npz: holds no run identity")
    for forged, words in ((dict(identity, settings="0" * 64), "its settings digest '0000"),
                          (dict(identity, network="gru"), "its network is 'gru' with 131 parameters"),
                          (dict(identity, trials=3), "it holds 3 trials, this run 2")):
        _save(run / "checkpoint.npz", {**arrays, "run/identity": np.array(json.dumps(forged))})
        refused(run, f"{run}/checkpoint.npz: not this run's checkpoint", words)
    for junk in (np.array("[" * 5000), np.array(["a", "b"]), np.zeros(3), np.array("{" + "1" * 5000)):
        _save(run / "checkpoint.npz", {**arrays, "run/identity": junk})
        refused(run, "'run/identity' is not a run identity")


def test_a_changed_setting_is_refused_but_a_longer_run_resumes(run):
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    spec["training"]["learning_rate"] = 0.5
    (run / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    refused(run, "its settings digest", "only training.steps and training.epochs may change")
    spec["training"]["learning_rate"] = yaml.safe_load((RNN).read_text())["training"]["learning_rate"]
    spec["training"]["steps"] = 80
    (run / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    code, output = invoke("train", "--resume", run, "--quiet")
    assert code == 0, output
    assert json.loads((run / "summary.json").read_text())["steps"] >= 80
    assert not (run / ".lock").exists()


@HOSTILE
@given(data=st.data())
def test_a_checkpoint_holding_a_non_finite_value_is_refused(runs, tmp_path_factory, data):
    run = fresh_copy(runs, tmp_path_factory)
    arrays = _arrays(run / "checkpoint.npz")
    floats = sorted(name for name, array in arrays.items() if array.dtype.kind == "f" and array.size)
    name = data.draw(st.sampled_from(floats))
    index = data.draw(st.integers(0, arrays[name].size - 1))
    bad = arrays[name].copy()
    bad.flat[index] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    _save(run / "checkpoint.npz", {**arrays, name: bad})
    refused(run, f"{run}/checkpoint.npz: does not fit", f"'{name}' holds NaN or infinite values")


@pytest.mark.parametrize("name, value, words", [
    ("optimizer/rate", -1.0, "'optimizer/rate' is -1.0; expected 0.01, the spec's learning_rate"),
    ("optimizer/rate", 0.0, "'optimizer/rate' is 0.0; expected 0.01"),
    ("optimizer/rate", 1e300, "'optimizer/rate' is 1e+300; expected 0.01"),
    ("optimizer/rate", np.nan, "'optimizer/rate' holds NaN or infinite values"),
    ("optimizer/decays", -2, "'optimizer/decays' is -2; expected 0"),
    ("optimizer/updates", -1, "'optimizer/updates' is -1; expected 0"),
])
def test_a_checkpoint_whose_rate_or_counters_were_rewritten_is_refused(run, name, value, words):
    arrays = _arrays(run / "checkpoint.npz")
    _save(run / "checkpoint.npz", {**arrays, name: np.array(value, dtype=arrays[name].dtype)})
    refused(run, f"{run}/checkpoint.npz: does not fit", words, "restore this run's own checkpoint")


# -- damaged, huge, deep files ---------------------------------------------------------------------

def _json_values():
    scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
               | st.text(max_size=20))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@st.composite
def hostile_json(draw) -> bytes:
    """Text that is not a valid run.json: nesting past any limit, numbers of thousands of
    digits, random JSON (a trial count that is not a positive integer), or random bytes."""
    how = draw(st.sampled_from(["deep", "digits", "value", "wrong trials", "bytes"]))
    if how == "deep":
        depth = draw(st.integers(33, 100_000))
        return ('{"trials": ' + "[" * depth + "]" * depth + "}").encode()
    if how == "digits":
        return ('{"trials": ' + "9" * draw(st.integers(4301, 20_000)) + ', "engine": "numpy"}').encode()
    if how == "value":
        value = draw(_json_values().filter(lambda v: not (isinstance(v, dict) and type(v.get("trials")) is int)))
        return json.dumps(value).encode()
    if how == "wrong trials":
        trials = draw(st.one_of(st.integers(max_value=0), st.integers(min_value=100_001), st.floats(), st.text()))
        return json.dumps({"trials": trials, "engine": "numpy"}).encode()
    return draw(st.binary(max_size=200))


@HOSTILE
@given(content=hostile_json())
def test_a_hostile_run_json_is_refused_naming_it(runs, tmp_path_factory, content):
    run = fresh_copy(runs, tmp_path_factory)
    (run / "run.json").write_bytes(content)
    refused(run, f"{run}/run.json")


def test_a_run_json_over_the_size_limit_is_refused_before_it_is_read(run):
    with open(run / "run.json", "r+b") as stream:
        stream.truncate(MAX_JSON_BYTES + 1)            # sparse: nothing is held in memory here
    refused(run, f"{run}/run.json", f"more than the {MAX_JSON_BYTES:,}")


def test_run_json_with_unknown_keys_or_types_names_the_field(run):
    info = json.loads((run / "run.json").read_text())
    for changed, words in (({**info, "extra": 1}, "unknown key 'extra'"),
                           ({**info, "engine": ["numpy"]}, "'engine' is ['numpy']; expected a string"),
                           ({**info, "spec": 3}, "'spec' is 3; expected a string"),
                           ({**info, "engine": "gpu"}, "unknown engine 'gpu'")):
        (run / "run.json").write_text(json.dumps(changed))
        refused(run, f"{run}/run.json", words)


@pytest.mark.parametrize("damage, words", [
    (lambda lines: lines[:3] + [lines[2]] + lines[3:], "metrics.jsonl: line 4: 'sequence' is 3, expected 4"),
    (lambda lines: [lines[0].replace(b'"step": ', b'"step": 1' + b"0" * 5000)] + lines[1:],
     "metrics.jsonl: line 1 is not a metrics row"),
    (lambda lines: [b'{"a": ' + b"[" * 10_000 + b"]" * 10_000 + b"}\n"] + lines[1:],
     "metrics.jsonl: line 1 is not a metrics row (nested deeper than one list)"),
    (lambda lines: [lines[0].replace(b'"loss_trials"', b'"losses"')] + lines[1:],
     "metrics.jsonl: line 1: unknown key 'losses'"),
    (lambda lines: [lines[0].replace(b'"loss": ', b'"loss": "x", "y": ')] + lines[1:],
     "metrics.jsonl: line 1"),
    (lambda lines: [b"x" * (1 << 24) + b"\n"] + lines[1:], "metrics.jsonl: line 1 is longer than"),
    (lambda lines: [lines[0][:-1]], "metrics.jsonl: line 1 is cut short"),
])
def test_a_damaged_metrics_row_is_refused_naming_its_line(run, damage, words):
    lines = (run / "metrics.jsonl").read_bytes().splitlines(keepends=True)
    (run / "metrics.jsonl").write_bytes(b"".join(damage(lines)))
    refused(run, words)


def test_a_damaged_metrics_csv_is_refused_before_metrics_jsonl_is_cut(run):
    lines = (run / "metrics.csv").read_bytes().splitlines(keepends=True)
    (run / "metrics.csv").write_bytes(b"".join(lines[:2] + [lines[1]] + lines[2:]))
    refused(run, "metrics.csv: line 3: sequence 1, expected 2")
    (run / "metrics.csv").write_bytes(b"step,loss\n" + b"".join(lines[1:]))
    refused(run, "metrics.csv: line 1 is not the header")


@HOSTILE
@given(data=st.data())
def test_a_damaged_checkpoint_archive_never_ends_in_a_traceback(runs, tmp_path_factory, data):
    run = fresh_copy(runs, tmp_path_factory)
    raw = (run / "checkpoint.npz").read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=16))
    (run / "checkpoint.npz").write_bytes(raw[:at] + junk + raw[at + len(junk):])
    before = snapshot(run)
    code, output = invoke("train", "--resume", run, "--quiet")
    assert code == 0 or (code == 2 and f"{run}" in output and snapshot(run) == before), output


# -- one process at a time -------------------------------------------------------------------------

def test_a_run_in_use_is_refused_naming_its_holder(run, tmp_path):
    with FolderLock(run, "the test, process 1 on here"):
        with pytest.raises(RunInUse, match=f"{run} is in use by the test, process 1 on here"):
            resume_run(run)
        plan = lstmgraph.compile_spec(RNN, Overrides(steps=10))
        with pytest.raises(RunInUse, match="in use by the test"):
            start_run(plan, run)
    with pytest.raises(RunExists):
        start_run(lstmgraph.compile_spec(RNN, Overrides(steps=10)), run)
    # A new run whose folder another process takes between start_run and open.
    fresh = start_run(lstmgraph.compile_spec(RNN, Overrides(steps=10)), tmp_path / "fresh", engine="numpy")
    (tmp_path / "fresh").mkdir()
    with FolderLock(tmp_path / "fresh", "the other one"):
        with pytest.raises(RunInUse, match="in use by the other one"):
            fresh.open()
        assert [path.name for path in (tmp_path / "fresh").iterdir()] == [".lock"]   # the other's only
    assert list((tmp_path / "fresh").iterdir()) == []
    fresh.train()
    assert (tmp_path / "fresh" / "summary.json").exists() and not (tmp_path / "fresh" / ".lock").exists()


def test_a_second_resume_of_a_running_run_exits_2_naming_the_first(run, tmp_path):
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    spec["training"]["steps"] = 10**8                       # the first runs until it is killed
    (run / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    first = subprocess.Popen([LSTMGRAPH, "train", "--resume", str(run), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        lock, deadline = run / ".lock", time.monotonic() + 300  # a deadline, not a pause relied on
        while f"process {first.pid} " not in (lock.read_text() if lock.exists() else ""):
            assert first.poll() is None, first.stdout.read().decode()
            assert time.monotonic() < deadline, "the first resume never took the run"
            time.sleep(0.02)
        rows = (run / "metrics.jsonl").read_bytes()
        second = subprocess.run([LSTMGRAPH, "train", "--resume", str(run), "--quiet"],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        assert f"{run} is in use by lstmgraph train, process {first.pid} on" in second.stderr
        assert "Traceback" not in second.stderr + second.stdout
        code, output = invoke("train", RNN, "--steps", "10", "--quiet", "--out", run)
        assert code == 2 and f"process {first.pid}" in output, output
        assert (run / "metrics.jsonl").read_bytes()[:len(rows)] == rows  # the first's rows, not mixed
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(60)
        first.stdout.close()
    # The lock of a dead process is taken over: the run resumes (to a length it has passed).
    spec["training"]["steps"] = 40
    (run / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    code, output = invoke("train", "--resume", run, "--quiet")
    assert code == 0, output
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["sequence"] for row in rows] == list(range(1, len(rows) + 1))


def test_a_lock_file_replaced_by_its_releasing_holder_is_not_shared(tmp_path):
    """Two locks on one folder: whoever opened the file a holder then removed on release must
    not think it holds the folder while a third process locks the new file."""
    first = FolderLock(tmp_path, "first")
    first.acquire()
    handle = os.open(tmp_path / ".lock", os.O_RDWR)             # a second process, mid-acquire
    first.release()
    assert not (tmp_path / ".lock").exists()
    third = FolderLock(tmp_path, "third")
    third.acquire()
    assert (tmp_path / ".lock").read_text() == "third\n"
    with pytest.raises(Exception, match="in use by third"):
        FolderLock(tmp_path, "fourth").acquire()
    os.close(handle)
    third.release()


def test_resume_of_a_folder_without_a_run_writes_nothing(tmp_path):
    with pytest.raises(RunDirectoryError, match="holds no run to resume"):
        resume_run(tmp_path)
    assert list(tmp_path.iterdir()) == []
