"""The ``data_file`` task: a data file's sequences drawn at random, pinned by their digest, and
how a spec names it (relative to the spec) and a sweep of a spec trained on a data file."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest
import yaml

import lstmgraph
from lstmgraph.errors import SpecError
from lstmgraph.experiments.sweep import subject_of
from lstmgraph.experiments.sweep_values import SweepError
from lstmgraph.tasks import Sequences, TaskError, draw, make_task
from lstmgraph.training import RunDirectoryError, resume_run, start_run

from conftest import SPECS

LENGTHS = (3, 5, 4, 6)


def _write_data(path, flip: bool = False):
    """Four sequences of 1 input and 1 output, of lengths 3, 5, 4 and 6 (18 steps)."""
    rng = np.random.default_rng(1)
    inputs = rng.uniform(-1, 1, (sum(LENGTHS), 1)) * (-1 if flip else 1)
    np.savez(path, inputs=inputs, targets=(inputs > 0).astype(float), starts=np.cumsum((0,) + LENGTHS[:-1]))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_each_draw_is_one_of_the_file_s_sequences_picked_by_the_generator(tmp_path):
    digest = _write_data(tmp_path / "d.npz")
    task = make_task("data_file", {"path": str(tmp_path / "d.npz")})
    assert (task.n_inputs, task.n_outputs, task.continual, task.deterministic) == (1, 1, False, False)
    assert task.sha256 == digest
    with np.load(tmp_path / "d.npz") as archive:
        inputs, starts = archive["inputs"], list(archive["starts"]) + [len(archive["inputs"])]
    picks = np.random.default_rng(7).integers(len(LENGTHS), size=30)
    rng = np.random.default_rng(7)
    for pick in picks:
        sequence = task.sample(rng)
        assert np.array_equal(sequence.inputs, inputs[starts[pick]:starts[pick + 1]])
        assert np.array_equal(sequence.targets, (sequence.inputs > 0).astype(float))
    many, one_by_one = np.random.default_rng(3), np.random.default_rng(3)
    got = draw(task, many, 25)
    want = Sequences.of([task.sample(one_by_one) for _ in range(25)], 1, 1)
    assert np.array_equal(got.inputs, want.inputs) and np.array_equal(got.lengths, want.lengths)


def test_a_file_of_one_sequence_is_drawn_the_same_every_time(tmp_path):
    np.savez(tmp_path / "one.npz", inputs=np.arange(6.0), targets=np.arange(6.0) / 6)
    task = make_task("data_file", {"path": str(tmp_path / "one.npz")})
    assert task.deterministic and (task.n_inputs, task.n_outputs) == (1, 1)
    assert len(task.sample(np.random.default_rng(0))) == 6


def test_a_pinned_digest_refuses_a_changed_file_and_bad_files_are_named(tmp_path):
    digest = _write_data(tmp_path / "d.npz")
    assert make_task("data_file", {"path": str(tmp_path / "d.npz"), "sha256": digest.upper()}).sha256 == digest
    _write_data(tmp_path / "d.npz", flip=True)
    with pytest.raises(TaskError, match=f"its sha256 is [0-9a-f]{{64}}, not {digest} as sha256 pins it "
                                        r"\(a sweep pins it when it begins\)"):
        make_task("data_file", {"path": str(tmp_path / "d.npz"), "sha256": digest})
    with pytest.raises(TaskError, match="path: give the data file"):
        make_task("data_file", {})
    with pytest.raises(TaskError, match="missing.npz: no such file"):
        make_task("data_file", {"path": str(tmp_path / "missing.npz")})
    np.savez(tmp_path / "no-targets.npz", inputs=np.zeros((4, 1)))
    with pytest.raises(TaskError, match=r"no-targets.npz: missing array 'targets' \(has: inputs\)"):
        make_task("data_file", {"path": str(tmp_path / "no-targets.npz")})


def _spec(tmp_path, training: dict) -> str:
    data = yaml.safe_load((SPECS / "gers2002_timing.yaml").read_text())
    data["training"] = {"learning_rate": 0.1, **training}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return str(tmp_path / "net.yaml")


def test_a_spec_s_path_is_relative_to_the_spec_and_a_missing_file_names_its_line(tmp_path, monkeypatch):
    _write_data(tmp_path / "d.npz")
    spec = _spec(tmp_path, {"task": {"name": "data_file", "path": "d.npz"}, "steps": 40})
    monkeypatch.chdir(tmp_path.parent)  # not the spec's folder
    plan = lstmgraph.compile_spec(spec)
    assert plan.training.task.options["path"] == str(tmp_path / "d.npz")
    (tmp_path / "d.npz").unlink()
    with pytest.raises(SpecError, match=r"net.yaml:\d+:\d+: training.task: task 'data_file': .*d.npz: no such file"):
        lstmgraph.compile_spec(spec)


def test_a_run_on_the_task_records_the_file_s_digest_and_resumes_only_on_it(tmp_path):
    digest = _write_data(tmp_path / "d.npz")
    spec = _spec(tmp_path, {"task": {"name": "data_file", "path": "d.npz"}, "steps": 60, "checkpoint_every": 20})
    start_run(lstmgraph.compile_spec(spec), tmp_path / "run", engine="numpy").train()
    assert json.loads((tmp_path / "run" / "run.json").read_text())["data_sha256"] == digest
    _write_data(tmp_path / "d.npz", flip=True)
    with pytest.raises(RunDirectoryError, match=f"records {digest} from the run's start: the data changed"):
        resume_run(tmp_path / "run")



@pytest.mark.parametrize("training", [{"task": {"name": "data_file", "path": "d.npz"}, "steps": 20},
                                      {"data": "d.npz", "epochs": 1}], ids=["task", "training data"])
def test_a_run_moved_with_its_data_or_reached_through_a_link_finds_the_data(tmp_path, training):
    """Before: a run's spec.yaml named its data by the absolute path it had when it ran, so a run
    committed and cloned elsewhere (or moved with its data) could be neither evaluated nor plotted.
    Links on the way are kept: the run folder's (its '..' is its target's parent) and the data's
    (a data folder linked outside the tree, which a move to another depth keeps)."""
    (tmp_path / "here" / "specs").mkdir(parents=True)
    (tmp_path / "here" / "store" / "deep").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    _write_data(tmp_path / "outside" / "d.npz")
    (tmp_path / "here" / "specs" / "data").symlink_to(tmp_path / "outside")
    spec = _spec(tmp_path / "here" / "specs", {**training, **(
        {"task": {"name": "data_file", "path": "data/d.npz"}} if "task" in training else {"data": "data/d.npz"})})
    (tmp_path / "here" / "runs").symlink_to("store/deep")
    for run in ("run", "runs/run"):
        start_run(lstmgraph.compile_spec(spec), tmp_path / "here" / run, engine="numpy").train()
    (tmp_path / "deeper").mkdir()
    (tmp_path / "here").rename(tmp_path / "deeper" / "there")
    for run in ("run", "runs/run"):
        written = (tmp_path / "deeper" / "there" / run / "spec.yaml").read_text()
        assert str(tmp_path) not in written
        options = lstmgraph.compile_spec(tmp_path / "deeper" / "there" / run / "spec.yaml").training
        found = options.task.options["path"] if "task" in training else options.data
        assert os.path.samefile(found, tmp_path / "outside" / "d.npz") and ".." not in found  # (named plainly)


def test_a_sweep_of_a_spec_trained_on_a_data_file_draws_its_sequences_pinned_by_digest(tmp_path):
    digest = _write_data(tmp_path / "d.npz")
    subject = subject_of(_spec(tmp_path, {"data": "d.npz", "epochs": 3}), 2)
    experiment = subject.experiment
    assert experiment.task == "data_file"
    assert experiment.task_options == {"path": str(tmp_path / "d.npz"), "sha256": digest}
    assert "the sequences of d.npz drawn at random" in subject.judged_by
    training = experiment.spec_data()[0]["training"]
    assert "data" not in training and "epochs" not in training  # the task replaces them
    assert experiment.plan().training.task.options["sha256"] == digest
    _write_data(tmp_path / "d.npz", flip=True)
    with pytest.raises(TaskError, match="as sha256 pins it .*: the file changed since; restore it"):
        experiment.make_task()
    (tmp_path / "d.npz").unlink()
    with pytest.raises(SweepError, match=r"net.yaml: training.data: task 'data_file': .*d.npz: no such file"):
        subject_of(str(tmp_path / "net.yaml"), 2)


def test_a_sweep_over_data_files_pins_each_file_s_own_digest(tmp_path, monkeypatch):
    from lstmgraph.experiments.sweep import grid

    first = _write_data(tmp_path / "d.npz")
    second = _write_data(tmp_path / "other.npz", flip=True)
    subject = subject_of(_spec(tmp_path, {"data": "d.npz"}), 2).experiment
    monkeypatch.chdir(tmp_path)  # a value of --vary is a path from the current folder, as the CLI's are
    settings = grid(subject, [("task.path", ["d.npz", "other.npz"])], add_own=False)
    assert [setting.experiment.task_options for setting in settings] == [
        {"path": str(tmp_path / "d.npz"), "sha256": first}, {"path": str(tmp_path / "other.npz"), "sha256": second}]
    with pytest.raises(SweepError, match="task.path: .*missing.npz: no such file"):
        grid(subject, [("task.path", ["missing.npz"])], add_own=False)
    own, other = grid(subject, [("task.path", ["d.npz", "other.npz"])])  # the subject's file, named relatively
    assert own.own and not own.changes(subject) and not other.own


def test_a_spec_named_relatively_or_through_a_link_keeps_an_absolute_path_beside_the_spec(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "specs").mkdir()
    _write_data(tmp_path / "specs" / "d.npz")  # beside the link, where training.data is looked for too
    _spec(tmp_path / "real", {"task": {"name": "data_file", "path": "d.npz"}, "steps": 10})
    (tmp_path / "specs" / "net.yaml").symlink_to(tmp_path / "real" / "net.yaml")
    monkeypatch.chdir(tmp_path)
    plan = lstmgraph.compile_spec("specs/net.yaml")
    assert plan.training.task.options["path"] == str(tmp_path / "specs" / "d.npz")
    assert plan.resolved_spec["training"]["task"]["path"] == str(tmp_path / "specs" / "d.npz")
    data = yaml.safe_load((tmp_path / "real" / "net.yaml").read_text())
    data["training"] = {"learning_rate": 0.1, "data": "d.npz"}
    (tmp_path / "real" / "net.yaml").write_text(yaml.safe_dump(data))
    assert subject_of("specs/net.yaml", 1).experiment.task_options["path"] == str(tmp_path / "specs" / "d.npz")


def test_a_file_of_one_sequence_is_swept_under_the_sequence_protocol(tmp_path, monkeypatch):
    from lstmgraph.experiments.sweep import grid
    from lstmgraph.experiments.sequences import SequenceProtocol

    _write_data(tmp_path / "d.npz")
    np.savez(tmp_path / "one.npz", inputs=np.arange(6.0), targets=np.arange(6.0) / 6)
    subject = subject_of(_spec(tmp_path, {"data": "d.npz"}), 1).experiment
    monkeypatch.chdir(tmp_path)
    (setting,) = grid(subject, [("task.path", ["one.npz"])], add_own=False)
    assert isinstance(setting.experiment.protocol, SequenceProtocol) and setting.experiment.deterministic
    data = yaml.safe_load((tmp_path / "net.yaml").read_text())
    data["training"]["data"] = "one.npz"
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(data))
    assert subject_of(str(tmp_path / "one.yaml"), 1).experiment.protocol.test_sequences == 1  # every test the same


def test_a_file_without_any_target_is_refused_for_the_task_and_for_train(tmp_path):
    from lstmgraph.training import DataFile, DataError

    np.savez(tmp_path / "none.npz", inputs=np.zeros((5, 1)), targets=np.full((5, 1), np.nan))
    with pytest.raises(TaskError, match="none.npz: every value of 'targets' is NaN"):
        make_task("data_file", {"path": str(tmp_path / "none.npz")})
    with pytest.raises(DataError, match="none.npz: every value of 'targets' is NaN"):
        DataFile(tmp_path / "none.npz", 1, 1, 1)


def test_a_held_out_file_is_what_the_tests_draw_from(tmp_path):
    """``test_path``: the protocol's test set drawn from held-out sequences (before: from the
    training file itself, so a sweep's "test on 2,560 new sequences" tested training data)."""
    from lstmgraph.experiments.sequences import SequenceProtocol, _test_set
    from lstmgraph.tasks.base import test_task

    _write_data(tmp_path / "d.npz")
    held = _write_data(tmp_path / "held.npz", flip=True)
    task = make_task("data_file", {"path": str(tmp_path / "d.npz"), "test_path": str(tmp_path / "held.npz")})
    assert test_task(task) is task.held_out and task.held_out.sha256 == held
    assert test_task(make_task("data_file", {"path": str(tmp_path / "d.npz")})).held_out is None
    with np.load(tmp_path / "held.npz") as archive:
        held_inputs = set(archive["inputs"][:, 0])
    tests = _test_set(task, SequenceProtocol(success="tolerance", tolerance=0.5, test_sequences=20), seed=3)
    assert len(tests) == 20 and all(set(test.inputs[:, 0]) <= held_inputs for test in tests)
    training = {value for sequence in draw(task, np.random.default_rng(0), 20).inputs for value in sequence}
    assert not training & held_inputs  # (the flipped file shares no value with the training file)


@pytest.mark.parametrize("options, words", [
    ({"test_path": "wide.npz"}, "test_path: .*wide.npz has 2 input and 1 target columns; the training file"),
    ({"test_path": "missing.npz"}, "missing.npz: no such file"),
    ({"test_path": "held.npz", "test_sha256": "0" * 64}, "held.npz: its sha256 is .*as test_sha256 pins it"),
    ({"test_sha256": "0" * 64}, "test_sha256: the digest of a test_path; give the test_path too"),
    ({"test_path": "held.npz", "test_sha256": 7}, "test_sha256: a file's digest as 64 hex digits, not 7"),
])
def test_a_held_out_file_that_cannot_serve_is_named(tmp_path, options, words):
    _write_data(tmp_path / "d.npz")
    _write_data(tmp_path / "held.npz", flip=True)
    np.savez(tmp_path / "wide.npz", inputs=np.zeros((4, 2)), targets=np.zeros((4, 1)))
    named = {key: str(tmp_path / value) if key == "test_path" else value for key, value in options.items()}
    with pytest.raises(TaskError, match=words):
        make_task("data_file", {"path": str(tmp_path / "d.npz"), **named})


def test_a_sweep_pins_the_held_out_file_beside_the_training_file(tmp_path, monkeypatch):
    from lstmgraph.experiments.sweep import grid

    first = _write_data(tmp_path / "d.npz")
    held = _write_data(tmp_path / "held.npz", flip=True)
    subject = subject_of(_spec(tmp_path, {"task": {"name": "data_file", "path": "d.npz", "test_path": "held.npz"},
                                          "steps": 10}), 2)
    assert subject.experiment.task_options == {"path": str(tmp_path / "d.npz"), "sha256": first,
                                               "test_path": str(tmp_path / "held.npz"), "test_sha256": held}
    assert "its tests drawn from the held-out " + str(tmp_path / "held.npz") in subject.judged_by
    plain = subject_of(_spec(tmp_path, {"data": "d.npz"}), 2).experiment
    monkeypatch.chdir(tmp_path)
    (setting,) = grid(plain, [("task.test_path", ["held.npz"])], add_own=False)
    assert setting.experiment.task_options == {"path": str(tmp_path / "d.npz"), "sha256": first,
                                               "test_path": str(tmp_path / "held.npz"), "test_sha256": held}


def test_a_sweep_sizes_its_test_set_by_the_file_its_tests_draw_from(tmp_path, monkeypatch):
    """Before: the test count came from the spec's own file, so a one-sequence training file given
    a held-out file of many sequences by --vary tested one of them."""
    from lstmgraph.experiments.sweep import grid

    _write_data(tmp_path / "many.npz")
    np.savez(tmp_path / "one.npz", inputs=np.arange(6.0), targets=np.arange(6.0) / 6)
    monkeypatch.chdir(tmp_path)
    one = subject_of(_spec(tmp_path, {"data": "one.npz"}), 1).experiment
    assert one.protocol.test_sequences == 1
    (held,) = grid(one, [("task.test_path", ["many.npz"])], add_own=False)
    assert held.experiment.protocol.test_sequences == 2560
    for given in (50, 1):  # given, even as the spec's own value: kept
        (kept,) = grid(one, [("task.test_path", ["many.npz"]), ("protocol.test_sequences", [given])], add_own=False)
        assert kept.experiment.protocol.test_sequences == given
        assert f"protocol.test_sequences={given}" in kept.experiment.name
    many = subject_of(_spec(tmp_path, {"data": "many.npz"}), 1).experiment
    (alone,) = grid(many, [("task.test_path", ["one.npz"])], add_own=False)
    assert many.protocol.test_sequences == 2560 and alone.experiment.protocol.test_sequences == 1


def test_fixed_sets_and_a_held_out_file_are_refused_together(tmp_path, monkeypatch):
    """Fixed sets draw their test strings from the training sequences: the held-out file would go unused."""
    from lstmgraph.experiments.sweep import grid

    _write_data(tmp_path / "d.npz")
    _write_data(tmp_path / "held.npz", flip=True)
    monkeypatch.chdir(tmp_path)
    subject = subject_of(_spec(tmp_path, {"data": "d.npz"}), 1).experiment
    with pytest.raises(SweepError, match="fixed_sets: the full check's test strings come from the data_file task's "
                                         "training sequences, so its held-out sequences"):
        grid(subject, [("task.test_path", ["held.npz"]), ("protocol.fixed_sets", [2])], add_own=False)


def test_an_array_named_like_a_data_array_is_refused_and_others_are_left_unread(tmp_path):
    """A misspelt 'starts' used to be dropped without a word: the file then trained as one sequence.
    A file's own extra arrays (a mask, notes) stay readable, as before."""
    from lstmgraph.tasks.data_file import DataError, read_data_file
    path = tmp_path / "typo.npz"
    np.savez(path, inputs=np.zeros((4, 2)), targets=np.zeros((4, 1)), start=np.array([0, 2]))
    with pytest.raises(DataError, match=r"typo.npz: holds an array 'start' and no 'starts': a misspelt name is not "
                                        r"read; save it as 'starts' \(numpy.savez"):
        read_data_file(path, 2, 1)
    np.savez(path, inputs=np.zeros((4, 2)), targets=np.zeros((4, 1)), starts=np.array([0, 2]), mask=np.ones(4),
             start=np.zeros(2), outputs=np.ones(4))  # (beside 'starts', or unlike any name: left unread)
    assert [len(sequence.inputs) for sequence in read_data_file(path, 2, 1)[0]] == [2, 2]
    np.savez(path, inputs=np.zeros((4, 2)), targets=np.zeros((4, 1)), states=np.zeros(4), outputs=np.ones(4))
    assert len(read_data_file(path, 2, 1)[0]) == 1
