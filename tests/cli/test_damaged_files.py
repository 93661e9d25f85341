"""`run` and `train --resume` on damaged, odd or unwritable files: exit 2 naming the file, never
a traceback (in-process through click's runner, on the small rnn spec and the numpy engine)."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shutil

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstmgraph_cli.main import main

from conftest import SPECS

RNN = str(SPECS / "rnn.yaml")


def invoke(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished single-network run and a two-trial run of rnn.yaml (40 steps)."""
    root = tmp_path_factory.mktemp("runs")
    for name, trials in (("one", "1"), ("two", "2")):
        code, output = invoke("train", RNN, "--steps", "40", "--trials", trials, "--quiet",
                              "--out", root / name)
        assert code == 0, output
    return root


def _save(path, arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


def test_run_reads_csv_and_npz_inputs_and_writes_the_outputs(runs, tmp_path):
    inputs = np.random.default_rng(1).uniform(size=(5, 4))
    np.save(tmp_path / "x.npy", inputs)
    np.savetxt(tmp_path / "x.csv", inputs, delimiter=",", fmt="%.17g", header="a,b,c,d", comments="")
    _save(tmp_path / "x.npz", {"inputs": inputs, "notes": np.zeros(1)})
    weights = runs / "one" / "weights.npz"
    code, printed = invoke("run", RNN, "--weights", weights, "--inputs", tmp_path / "x.npy",
                           "--outputs", tmp_path / "y.csv")
    assert code == 0, printed
    rows = np.array([[float(v) for v in line.split(",")] for line in printed.splitlines()])
    assert rows.shape == (5, 3)
    np.testing.assert_allclose(np.loadtxt(tmp_path / "y.csv", delimiter=","), rows, rtol=1e-9)
    for name in ("x.csv", "x.npz"):
        code, again = invoke("run", RNN, "--weights", weights, "--inputs", tmp_path / name,
                             "--outputs", tmp_path / "y.npy")
        assert code == 0 and again == printed, name
        np.testing.assert_allclose(np.load(tmp_path / "y.npy"), rows, rtol=1e-9)


def test_run_whose_outputs_find_no_room_prints_only_the_error(runs, tmp_path, monkeypatch):
    """The files are written before the outputs are printed: a full disk ends the command with
    its error alone, not after a screen of outputs that --outputs never got."""
    np.save(tmp_path / "x.npy", np.zeros((5, 4)))

    def full(handle):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    code, output = invoke("run", RNN, "--weights", runs / "one" / "weights.npz", "--inputs", tmp_path / "x.npy",
                          "--outputs", tmp_path / "y.csv")
    assert code == 2 and output == f"error: cannot write {tmp_path}/y.csv: No space left on device\n", output


def test_run_refuses_bad_weights_inputs_and_outputs(runs, tmp_path):
    weights = runs / "one" / "weights.npz"
    with np.load(weights) as archive:
        stored = {name: archive[name] for name in archive.files}
    _save(tmp_path / "nan.npz", {**stored, "x->h": stored["x->h"] * np.nan})
    _save(tmp_path / "meta.npz", {**stored, "__meta__": np.array("{not json")})
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    np.save(tmp_path / "empty.npy", np.zeros((0, 4)))
    np.save(tmp_path / "inf.npy", np.full((3, 4), np.inf))
    np.save(tmp_path / "text.npy", np.array([["a"] * 4]))
    (tmp_path / "plain").write_text("a file")
    good = ("--weights", weights, "--inputs", tmp_path / "x.npy")
    cases = {
        ("--weights", tmp_path / "nan.npz", "--inputs", tmp_path / "x.npy"): "NaN or infinite values in 'x->h'",
        ("--weights", tmp_path / "meta.npz", "--inputs", tmp_path / "x.npy"): "'__meta__' is not the JSON object",
        ("--weights", tmp_path / "x.npy", "--inputs", tmp_path / "x.npy"): "not an .npz archive",
        ("--weights", weights, "--inputs", tmp_path / "empty.npy"): "at least one step",
        ("--weights", weights, "--inputs", tmp_path / "inf.npy"): "NaN or infinite values in the inputs",
        ("--weights", weights, "--inputs", tmp_path / "text.npy"): "string values in the inputs, not real numbers",
        good + ("--record", tmp_path / "plain" / "r.npz"): f"cannot write {tmp_path}/plain/r.npz: "
                                                             f"{tmp_path}/plain is a file, not a folder",
        good + ("--outputs", tmp_path / "y.txt"): "expected a file ending in .npy or .csv",
    }
    for args, words in cases.items():
        code, output = invoke("run", RNN, *args)
        assert code == 2 and words in output, (args, output)


def test_run_refuses_outputs_or_a_record_over_its_own_inputs_or_weights(runs, tmp_path):
    """--outputs X.csv --inputs X.csv replaced the inputs with the outputs, --record over the
    weights replaced the run's weights.npz; a link in the path does not hide them."""
    weights = tmp_path / "w.npz"
    shutil.copy(runs / "one" / "weights.npz", weights)
    np.savetxt(tmp_path / "x.csv", np.zeros((3, 4)), delimiter=",")
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    (tmp_path / "link").symlink_to(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in ("w.npz", "x.csv", "x.npy")}
    for inputs, option, target, source in (("x.csv", "--outputs", "x.csv", "--inputs"),
                                           ("x.npy", "--outputs", "link/x.npy", "--inputs"),
                                           ("x.npy", "--record", "w.npz", "--weights"),
                                           ("x.npy", "--record", "link/w.npz", "--weights")):
        code, output = invoke("run", RNN, "--weights", weights, "--inputs", tmp_path / inputs,
                              option, tmp_path / target)
        assert code == 2 and f"{tmp_path / target}: {option} names the {source} file" in output, output
    assert {name: (tmp_path / name).read_bytes() for name in before} == before



def test_run_refuses_outputs_or_a_record_over_a_run_directory_s_own_files(runs, tmp_path):
    """Before: ``run RUN_DIR --record RUN_DIR/weights.npz`` replaced the run's weights with the
    record (only a --weights file was guarded), and --outputs RUN_DIR/metrics.csv its metrics;
    so did a --weights run naming another run's checkpoint.npz, or a path through a linked folder."""
    one = tmp_path / "one"
    shutil.copytree(runs / "one", one)
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    (tmp_path / "link").symlink_to(one)
    before = {path.name: path.read_bytes() for path in one.iterdir()}
    for source, option, target in ((["run", one], "--record", one / "weights.npz"),
                                   (["run", one], "--record", tmp_path / "link" / "weights.npz"),
                                   (["run", one], "--outputs", one / "metrics.csv"),
                                   (["run", RNN, "--weights", runs / "one" / "weights.npz"], "--record",
                                    one / "checkpoint.npz")):
        code, output = invoke(*source, "--inputs", tmp_path / "x.npy", option, target)
        assert code == 2 and f"cannot write {target}: it is {target.name} of the run directory" in output, output
    assert {path.name: path.read_bytes() for path in one.iterdir()} == before
    code, output = invoke("run", one, "--inputs", tmp_path / "x.npy", "--record", one / "record.npz")
    assert code == 0 and (one / "record.npz").exists(), output  # a file of its own beside the run's



def test_run_render_and_plot_refuse_a_results_or_sweep_folder_s_own_files(runs, tmp_path):
    """Before: ``run ... --outputs OUT/trials.csv`` replaced a results folder's table (only a run
    directory's files were guarded), and ``render``/``plot -o OUT/results.png`` its figure."""
    results, sweep = tmp_path / "results", tmp_path / "sweep"
    results.mkdir()
    (sweep / "settings").mkdir(parents=True)
    for folder, names in ((results, ("experiment.json", "trials.csv", "results.png")), (sweep, ("sweep.csv",))):
        for name in names:
            (folder / name).write_text("ours\n")
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    for command, target in ((["run", runs / "one", "--inputs", tmp_path / "x.npy", "--outputs"], results / "trials.csv"),
                            (["run", runs / "one", "--inputs", tmp_path / "x.npy", "--outputs"], sweep / "sweep.csv"),
                            (["render", RNN, "-o"], results / "results.png"),
                            (["plot", runs / "one", "-o"], results / "results.png")):
        code, output = invoke(*command, target)
        assert code == 2 and f"cannot write {target}: it is {target.name} of the" in output, output
        assert target.read_text() == "ours\n"


def test_run_names_a_run_directory_that_is_not_there(tmp_path, monkeypatch):
    """Before: ``run NOWHERE --inputs X`` said "give its --weights, or a run directory", not that
    NOWHERE does not exist; and a folder ``rnn`` without spec.yaml was told only to give --weights."""
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "x.npy", np.zeros((3, 4)))
    code, output = invoke("run", "nowhere", "--inputs", "x.npy")
    assert code == 2 and "nowhere: no such run directory" in output, output
    (tmp_path / "rnn").mkdir()
    code, output = invoke("run", "rnn", "--inputs", "x.npy")
    assert code == 2 and "rnn: a folder with no spec.yaml (not a run directory)" in output, output
    assert "the bundled spec 'rnn' runs with --weights" in output, output


DAMAGE = {
    "checkpoint.npz truncated": lambda d: (d / "checkpoint.npz").write_bytes((d / "checkpoint.npz").read_bytes()[:500]),
    "checkpoint.npz a folder": lambda d: ((d / "checkpoint.npz").unlink(), (d / "checkpoint.npz").mkdir()),
    "run.json not JSON": lambda d: (d / "run.json").write_text("{trials: 2"),
    "run.json without trials": lambda d: (d / "run.json").write_text('{"engine": "numpy"}'),
    "run.json trial count": lambda d: (d / "run.json").write_text('{"trials": 3, "engine": "numpy"}'),
    "run.json a key twice": lambda d: (d / "run.json").write_text('{"trials": 2,\n "engine": "numpy", "trials": 1}'),
    "spec.yaml of another network": lambda d: shutil.copy(SPECS / "gru.yaml", d / "spec.yaml"),
    "metrics.jsonl cut short": lambda d: (d / "metrics.jsonl").write_text(""),
}


@pytest.mark.parametrize("damage, words", [
    ("checkpoint.npz truncated", "checkpoint.npz: not an .npz archive"),
    ("checkpoint.npz a folder", "checkpoint.npz: is a folder"),
    ("run.json not JSON", "run.json: cannot read it as JSON"),
    ("run.json without trials", "run.json: expected a JSON object whose 'trials' is an integer > 0"),
    ("run.json trial count", "checkpoint.npz: holds 2 trials, but"),
    ("run.json a key twice", "run.json: line 2, column 21: the key 'trials' appears twice in one object"),
    ("spec.yaml of another network", "checkpoint.npz: not this run's checkpoint: its network is 'rnn' with 131 "
                                     "parameters, this run's 'gru' with 339"),
    ("metrics.jsonl cut short", "metrics.jsonl: holds 0 rows, but the checkpoint was written after 5"),
])
def test_resume_names_what_is_damaged(runs, tmp_path, damage, words):
    copy = tmp_path / "run"
    shutil.copytree(runs / "two", copy)
    DAMAGE[damage](copy)
    code, output = invoke("train", "--resume", copy, "--quiet")
    assert code == 2 and words in output, output


def test_resume_refuses_a_checkpoint_that_does_not_fit(runs, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(runs / "two", copy)
    with np.load(copy / "checkpoint.npz") as archive:
        stored = {name: archive[name] for name in archive.files}
    for change, words in (({"weights/h->h": stored["weights/h->h"] * np.nan}, "'weights/h->h' holds NaN"),
                          ({"weights/h->h": stored["weights/h->h"][..., :2]}, "'weights/h->h' has shape (2, 8, 2), expected (2, 8, 8)"),
                          ({"data_position": np.array("{broken")}, "'data_position' is not a data position"),
                          ({"data_position": np.array("[" * 100_000 + "]" * 100_000)},  # (was a RecursionError)
                           "'data_position' is not a data position")):
        _save(copy / "checkpoint.npz", {**stored, **change})
        code, output = invoke("train", "--resume", copy, "--quiet")
        assert code == 2 and f"{copy}/checkpoint.npz: does not fit" in output and words in output, output


def test_unwritable_and_full_output_exit_2(tmp_path, monkeypatch):
    (tmp_path / "plain").write_text("a file")
    code, output = invoke("train", RNN, "--steps", "10", "--quiet", "--out", tmp_path / "plain" / "run")
    assert code == 2 and f"cannot write {tmp_path}/plain/run" in output

    def full(handle):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    code, output = invoke("train", RNN, "--steps", "10", "--quiet", "--out", tmp_path / "full")
    assert code == 2 and f"cannot write {tmp_path}/full/spec.yaml: No space left on device" in output


def test_metric_rows_that_find_no_room_are_named_and_exit_2(tmp_path, monkeypatch):
    """A disk that fills up while rows wait in the metrics files' buffers: the flush before a
    checkpoint fails (as on a full tmpfs), and the message names the file (its stream, opened
    from a descriptor, carries a number for a name)."""
    import lstmgraph.training.rundir as rundir

    def full_disk(path, newline=None):  # writes are buffered; the flush finds no room
        return os.fdopen(os.open("/dev/full", os.O_WRONLY), "a", encoding="utf-8", newline=newline)

    monkeypatch.setattr(rundir, "append_no_follow", full_disk)
    code, output = invoke("train", RNN, "--steps", "40", "--quiet", "--out", tmp_path / "run")
    assert code == 2 and f"cannot write {tmp_path}/run/metrics.jsonl: No space left on device" in output, output


def test_a_full_disk_at_the_first_checkpoint_leaves_a_run_that_resumes_from_step_0(tmp_path, monkeypatch):
    """A disk that fills up as the first checkpoint is written (rows already in the metrics
    files): exit 2 naming the checkpoint and saying how to continue; once there is room,
    --resume trains from step 0 to the files of an uninterrupted run, byte for byte."""
    code, output = invoke("train", RNN, "--steps", "40", "--quiet", "--out", tmp_path / "whole")
    assert code == 0, output
    real_fsync = os.fsync

    def full_at_checkpoint(handle):
        if "/.checkpoint.npz." in os.readlink(f"/proc/self/fd/{handle}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(handle)

    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full_at_checkpoint)
        code, output = invoke("train", RNN, "--steps", "40", "--quiet", "--out", run_dir)
    assert code == 2 and f"cannot write {run_dir}/checkpoint.npz: No space left on device" in output, output
    assert f"lstmgraph train --resume {run_dir}" in output, output
    assert not (run_dir / "checkpoint.npz").exists() and (run_dir / "metrics.jsonl").read_text()
    code, output = invoke("train", RNN, "--steps", "40", "--quiet", "--out", run_dir)
    assert code == 2 and f"continue it with --resume {run_dir}" in output, output
    code, output = invoke("train", "--resume", run_dir, "--quiet")
    assert code == 0, output
    for name in ("weights.npz", "metrics.jsonl", "metrics.csv", "checkpoint.npz"):
        assert (run_dir / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary == {**json.loads((tmp_path / "whole" / "summary.json").read_text()), "run_directory": str(run_dir)}


def test_a_resume_whose_lock_finds_no_room_says_to_resume_again_once_it_can_write(tmp_path, monkeypatch):
    """--resume on a full disk: the lock file is the first write; the message says the same
    --resume works once there is room, and the run's files are untouched."""
    run_dir = tmp_path / "run"
    code, output = invoke("train", RNN, "--steps", "20", "--quiet", "--out", run_dir)
    assert code == 0, output
    (run_dir / ".lock").unlink(missing_ok=True)
    before = {path.name: path.read_bytes() for path in run_dir.iterdir()}

    def full(handle, data, offset):  # the holder written into .lock
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    code, output = invoke("train", "--resume", run_dir, "--quiet")
    assert code == 2 and (f"error: cannot write {run_dir}/.lock: No space left on device; once it can be written, "
                          f"run lstmgraph train --resume {run_dir} again") in output, output
    assert {path.name: path.read_bytes() for path in run_dir.iterdir()} == before


def test_metric_rows_are_synced_before_the_checkpoint_that_counts_them(tmp_path, monkeypatch):
    """A power cut must not leave a checkpoint counting rows the metrics files lost: a resume
    would refuse it. So the rows are synced (fsync) before each checkpoint is written."""
    synced = []
    real_fsync = os.fsync

    def record(handle):
        synced.append(os.readlink(f"/proc/self/fd/{handle}"))
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", record)
    code, output = invoke("train", RNN, "--steps", "40", "--quiet", "--out", tmp_path / "run")
    assert code == 0, output
    first = next(at for at, path in enumerate(synced) if "/.checkpoint.npz." in path)
    assert {f"{tmp_path}/run/metrics.jsonl", f"{tmp_path}/run/metrics.csv"} <= set(synced[:first]), synced


def test_the_default_run_directory_stays_in_runs(tmp_path, monkeypatch):
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    del data["name"]  # the name then comes from the file's stem, which may hold anything
    spec = tmp_path / "specs" / (" $(x);'" + "s" * 240 + ".yaml")
    spec.parent.mkdir()
    spec.write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    code, output = invoke("train", spec, "--steps", "10", "--quiet")
    assert code == 0, output
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"___x___s{57}-\d{8}-\d{6}", run_dir.name), run_dir.name
    assert json.loads((run_dir / "summary.json").read_text())["steps"] >= 10


# -- property-based: byte-level damage of the files run and resume read ------------------------

DAMAGE_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def damage(draw, size: int):
    """A truncation, some overwritten bytes, or appended bytes, as a function of the content."""
    how = draw(st.sampled_from(["truncate", "overwrite", "append"]))
    if how == "truncate":
        at = draw(st.integers(0, size - 1))
        return lambda raw: raw[:at]
    if how == "append":
        extra = draw(st.binary(min_size=1, max_size=64))
        return lambda raw: raw + extra
    spots = draw(st.lists(st.tuples(st.integers(0, size - 1), st.binary(min_size=1, max_size=8)),
                          min_size=1, max_size=4))

    def overwrite(raw: bytes) -> bytes:
        for at, data in spots:
            raw = raw[:at] + data + raw[at + len(data):]
        return raw
    return overwrite


def _outcome(args) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output and result.exit_code in (0, 2), result.output
    return result.exit_code, result.output


@DAMAGE_SETTINGS
@given(data=st.data())
def test_damaged_weights_never_end_in_a_traceback(runs, tmp_path, data):
    raw = (runs / "one" / "weights.npz").read_bytes()
    broken = tmp_path / "weights.npz"
    broken.write_bytes(data.draw(damage(len(raw)))(raw))
    np.save(tmp_path / "x.npy", np.zeros((2, 4)))
    code, output = _outcome(["run", RNN, "--weights", broken, "--inputs", tmp_path / "x.npy"])
    assert code == 0 or f"error: {broken}: " in output, output


@DAMAGE_SETTINGS
@given(data=st.data(), name=st.sampled_from(["checkpoint.npz", "run.json", "metrics.jsonl", "spec.yaml"]))
def test_damaged_run_directories_never_end_in_a_traceback(runs, tmp_path_factory, data, name):
    copy = tmp_path_factory.mktemp("damaged") / "run"
    shutil.copytree(runs / "two", copy)
    raw = (copy / name).read_bytes()
    (copy / name).write_bytes(data.draw(damage(len(raw)))(raw))
    code, output = _outcome(["train", "--resume", copy, "--quiet"])
    assert code == 0 or f"{copy}" in output, output


@pytest.mark.parametrize("command", [
    ["train", RNN, "--steps", "5", "--quiet", "--out", "{long}"],
    ["reproduce", "gers2002-gts-peephole", "--trials", "1", "--out", "{long}"],
    ["reproduce", "gers2002-gts-peephole", "--status", "--out", "{long}"],
    ["sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.1", "--trials", "1", "--out", "{long}"],
    ["sweep", "gers2002-gts-peephole", "--vary", "learning_rate=0.1", "--status", "--out", "{long}"],
    ["results", "--docs", "{long}"],
], ids=["train", "reproduce", "reproduce-status", "sweep", "sweep-status", "results"])
def test_a_folder_name_too_long_for_the_file_system_is_named_with_what_to_do(tmp_path, command):
    """Path.exists raises ENAMETOOLONG instead of answering: each command says the name is too
    long and to choose a shorter one (before: a traceback from train, the bare errno elsewhere)."""
    long = tmp_path / ("b" * 300)
    code, output = invoke(*[str(long) if part == "{long}" else part for part in command])
    assert code == 2, output
    assert output.startswith("error: ") and "longer than the file system allows" in output, output
    assert "choose a shorter one" in output and "[Errno" not in output and "delete it" not in output
    assert os.listdir(tmp_path) == []
