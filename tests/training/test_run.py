"""`start_run` / `resume_run`: what `lstmgraph train` does, from Python, and an interrupted run
resumed to the same files as an uninterrupted one."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph import Overrides
from lstmgraph.progress import ProgressReport
from lstmgraph.training import RunDirectoryError, RunExists, resume_run, start_run

from conftest import SPECS

TIMING = SPECS / "gers2002_timing.yaml"


def test_a_run_writes_its_directory_and_summary(tmp_path):
    plan = lstmgraph.compile_spec(TIMING, Overrides(steps=400, seed=3))
    run = start_run(plan, tmp_path / "run", trials=2)
    assert not (tmp_path / "run").exists()                  # nothing written before it is opened
    reports: list[ProgressReport] = []
    summary = run.train(reports.append)
    assert {path.name for path in run.path.iterdir()} == {
        "spec.yaml", "run.json", "metrics.jsonl", "metrics.csv", "checkpoint.npz", "weights.npz", "summary.json"}
    assert json.loads((run.path / "summary.json").read_text()) == summary.as_dict()
    assert (summary.network, summary.steps, summary.trials, summary.stopped_by) == ("gers2002_timing", 400, 2, "steps")
    assert json.loads((run.path / "run.json").read_text()) == {
        "lstmgraph": lstmgraph.__version__, "spec": str(TIMING), "trials": 2, "engine": run.trainer.engine}
    resolved = yaml.safe_load((run.path / "spec.yaml").read_text())
    assert resolved == plan.resolved_spec and resolved["init"]["seed"] == resolved["training"]["seed"] == 3
    assert [r.done for r in reports] == list(range(100, 401, 100))
    assert {(r.unit, r.total, r.label) for r in reports} == {("steps", 400, "gers2002_timing")}
    rows = [json.loads(line) for line in (run.path / "metrics.jsonl").read_text().splitlines()]
    # The figure: the mean loss per step over the last stop_window (100) sequences, here all four.
    assert reports[-1].figures == {"loss_per_step": pytest.approx(np.mean([r["loss_per_step"] for r in rows]))}
    with pytest.raises(RunExists):
        start_run(plan, run.path)


def test_an_interrupted_run_resumes_to_the_same_files(tmp_path):
    data = yaml.safe_load(TIMING.read_text())
    data["training"].update(steps=3000, checkpoint_every=700)
    (tmp_path / "timing.yaml").write_text(yaml.safe_dump(data))
    plan = lstmgraph.compile_spec(tmp_path / "timing.yaml")
    whole = start_run(plan, tmp_path / "whole")
    whole.train()
    broken = start_run(plan, tmp_path / "broken")

    class Interrupted(Exception):
        pass

    def interrupt(report: ProgressReport) -> None:
        if report.done >= 1800:                             # checkpoints at 700 and 1400: rows past the last
            raise Interrupted
    with pytest.raises(Interrupted):
        broken.train(interrupt)
    assert not (broken.path / "weights.npz").exists()
    resumed = resume_run(broken.path)
    assert resumed.resumed and resumed.trainer.engine == whole.trainer.engine
    summary = resumed.train()
    expected = json.loads((whole.path / "summary.json").read_text())
    assert summary.as_dict() == {**expected, "run_directory": str(broken.path)}
    for name in ("metrics.csv", "metrics.jsonl"):
        assert (broken.path / name).read_bytes() == (whole.path / name).read_bytes(), name
    with np.load(whole.path / "weights.npz") as a, np.load(broken.path / "weights.npz") as b:
        assert all(np.array_equal(a[k], b[k]) for k in a.files if k != "__meta__")


def test_resume_refuses_a_folder_without_a_run(tmp_path):
    with pytest.raises(RunDirectoryError, match="holds no run to resume"):
        resume_run(tmp_path)


def _data_run(tmp_path, steps: int):
    """rnn.yaml on a data file of 20 sequences (``data.npz``) for ``steps`` steps, checkpoints every 40."""
    rng = np.random.default_rng(0)
    targets = np.full((200, 3), np.nan)
    targets[9::10] = np.eye(3)[rng.integers(0, 3, 20)]
    np.savez(tmp_path / "data.npz", inputs=rng.uniform(-1, 1, (200, 4)), targets=targets,
             starts=np.arange(0, 200, 10))
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["training"].pop("task")
    data["training"].update(data="data.npz", steps=steps, epochs=10, checkpoint_every=40)
    (tmp_path / "rnn.yaml").write_text(yaml.safe_dump(data))
    return lstmgraph.compile_spec(tmp_path / "rnn.yaml")


def test_a_run_on_a_data_file_resumes_only_on_the_same_bytes(tmp_path):
    plan = _data_run(tmp_path, 100)
    start_run(plan, tmp_path / "run", engine="numpy").train()
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())["data_sha256"]
    assert recorded == hashlib.sha256((tmp_path / "data.npz").read_bytes()).hexdigest()
    with resume_run(tmp_path / "run") as same:               # the same data: it continues, no word on it
        assert not [note for note in same.notes if "digest" in note]
    with np.load(tmp_path / "data.npz") as archive:          # same shapes, other values
        np.savez(tmp_path / "data.npz", inputs=-archive["inputs"], targets=archive["targets"],
                 starts=archive["starts"])
    current = hashlib.sha256((tmp_path / "data.npz").read_bytes()).hexdigest()
    with pytest.raises(RunDirectoryError) as refused:
        resume_run(tmp_path / "run")
    assert str(refused.value).startswith(f"{tmp_path / 'data.npz'}: its sha256 is {current}, but "
                                         f"{tmp_path / 'run' / 'run.json'} records {recorded}")
    assert "restore that file, or start a new run" in str(refused.value)
    # A run.json of an older lstmgraph records no digest: the run resumes, and a note says so.
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    del info["data_sha256"]
    (tmp_path / "run" / "run.json").write_text(json.dumps(info))
    resumed = resume_run(tmp_path / "run")
    assert any("records no digest of the data file" in note for note in resumed.notes)
    resumed.close()


@pytest.mark.parametrize("existed", [False, True])
def test_a_run_that_fails_before_its_first_row_removes_what_it_created(tmp_path, existed):
    out = tmp_path / "run"
    if existed:
        out.mkdir()
    plan = lstmgraph.compile_spec(TIMING, Overrides(steps=200))
    run = start_run(plan, out, engine="numpy")

    def too_large():  # as a task's sequence too large to allocate fails
        raise MemoryError("Unable to allocate 7.28 TiB")
    run.trainer.source.next = too_large
    with pytest.raises(MemoryError):
        run.train()
    assert out.exists() == existed and (not existed or list(out.iterdir()) == [])
    assert start_run(plan, out, engine="numpy").train().steps >= 200   # the same command, again


def test_a_new_run_refuses_a_folder_of_files_no_run_wrote(tmp_path):
    """Anyone's files, or a reproduce results folder: refused before anything is written. A
    folder with only what a start killed early leaves (its lock, a temporary, spec.yaml) is taken."""
    plan = lstmgraph.compile_spec(TIMING, Overrides(steps=100))
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    (foreign / "experiment.json").write_text("{}")
    with pytest.raises(RunDirectoryError, match=r"holds experiment.json, notes.txt but no run.json or spec.yaml: "
                                                r"not a folder lstmgraph train writes"):
        start_run(plan, foreign)
    assert sorted(path.name for path in foreign.iterdir()) == ["experiment.json", "notes.txt"]
    started = tmp_path / "started"
    started.mkdir()
    for name in (".lock", ".run.json.0a1b2c.tmp", "spec.yaml"):
        (started / name).write_text("")
    assert start_run(plan, started, engine="numpy").train().steps >= 100


@pytest.mark.parametrize("left", ["rows", "no metrics files"])
def test_a_run_stopped_before_its_first_checkpoint_resumes_from_step_0(tmp_path, left):
    plan = lstmgraph.compile_spec(TIMING, Overrides(steps=200))
    whole = start_run(plan, tmp_path / "whole", engine="numpy")
    whole.train()
    start_run(plan, tmp_path / "run", engine="numpy").train()
    for name in ("checkpoint.npz", "weights.npz", "summary.json"):   # as if killed before its first checkpoint
        (tmp_path / "run" / name).unlink()
    if left == "no metrics files":                                  # killed as the run was created
        (tmp_path / "run" / "metrics.csv").unlink()
        (tmp_path / "run" / "metrics.jsonl").unlink()
    with pytest.raises(RunExists):
        start_run(plan, tmp_path / "run")
    resumed = resume_run(tmp_path / "run")
    assert resumed.resumed and resumed.trainer.steps == 0
    summary = resumed.train()
    expected = json.loads((whole.path / "summary.json").read_text())
    assert summary.as_dict() == {**expected, "run_directory": str(resumed.path)}
    for name in ("metrics.csv", "metrics.jsonl", "checkpoint.npz", "weights.npz"):
        assert (resumed.path / name).read_bytes() == (whole.path / name).read_bytes(), name


def test_a_resumed_run_removes_what_killed_writes_left(tmp_path):
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml", Overrides(steps=300))
    run = start_run(plan, tmp_path / "run")
    run.train()
    run.close()
    left = tmp_path / "run" / ".checkpoint.npz.k3j2xq.tmp"
    left.write_bytes(b"cut short")
    resumed = resume_run(tmp_path / "run")
    resumed.close()
    assert not left.exists() and (tmp_path / "run" / "checkpoint.npz").exists()
