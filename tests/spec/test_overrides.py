"""`Overrides`: the options of `lstmgraph train` as changes to a spec's data, validated with it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import lstmgraph
from lstmgraph import Overrides, SpecError

from conftest import SPECS


def _data(name: str) -> dict:
    return yaml.safe_load((SPECS / f"{name}.yaml").read_text())


def test_overrides_change_a_copy_of_the_data():
    data = _data("gers2002_timing")
    changed = Overrides(steps=50, seed=4).apply(data)
    assert (changed["training"]["steps"], changed["training"]["seed"], changed["init"]["seed"]) == (50, 4, 4)
    assert data == _data("gers2002_timing")
    assert Overrides().apply(data) == data
    assert Overrides(steps=5).apply([1, 2]) == [1, 2]           # left for validation to report


def test_a_learning_rate_given_is_the_run_s_and_is_checked_where_it_is_set():
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml", Overrides(learning_rate=0.25))
    assert plan.training.learning_rate == 0.25
    with pytest.raises(SpecError) as error:
        lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml", Overrides(learning_rate=-1.0))
    assert "training.learning_rate (with --learning-rate -1.0 given): invalid value -1.0" in str(error.value)


def test_a_rule_other_than_bptt_drops_the_window():
    data = _data("rnn")
    data["training"].update(learning_rule="bptt", bptt_window=3)
    assert "bptt_window" not in Overrides(learning_rule="rtrl").apply(data)["training"]
    assert Overrides(learning_rule="bptt").apply(data)["training"]["bptt_window"] == 3


def test_a_data_file_replaces_the_task(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    training = Overrides(data="x.npz", epochs=2).apply(_data("rnn"))["training"]
    assert "task" not in training and training["epochs"] == 2
    assert training["data"] == str(tmp_path.resolve() / "x.npz")  # from the current directory


def test_overridden_specs_are_validated_like_the_file():
    plan = lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml", Overrides(steps=123, learning_rule="rtrl"))
    assert (plan.training.steps, plan.training.learning_rule) == (123, "rtrl")
    with pytest.raises(SpecError) as caught:
        lstmgraph.compile_spec(SPECS / "gers2002_timing.yaml", Overrides(epochs=2))
    (problem,) = caught.value.problems
    assert problem.path == ("training",) and "epochs count passes over a data file" in problem.message
    assert caught.value.source.filename == str(Path(SPECS / "gers2002_timing.yaml"))


def test_an_error_in_a_field_an_option_set_names_the_option_not_only_the_file_s_line(tmp_path):
    """`train --epochs 3` on a task spec: the located error says --epochs was given, since the
    line it points to does not hold it."""
    with pytest.raises(SpecError) as raised:
        lstmgraph.load_spec(SPECS / "gers2000_cerg.yaml", Overrides(epochs=3))
    assert "training (with --epochs 3 given): epochs count passes over a data file" in str(raised.value)
    data = _data("gers2000_cerg")
    data["training"]["epochs"] = 3  # the same error from the file itself names no option
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError) as raised:
        lstmgraph.load_spec(tmp_path / "net.yaml")
    assert "given" not in str(raised.value)


def test_numpy_numbers_are_taken_as_python_s_in_specs_overrides_trials_and_sweeps():
    """Before: np.int64(3) was "invalid value np.int64(3), expected: a valid integer" in a spec
    or an override, "not int64" as a trial count, and a sweep's np.arange a raw TypeError."""
    import numpy as np
    import yaml

    from lstmgraph.experiments.sweep import grid, subject_of
    from lstmgraph.training import Trainer
    from conftest import SPECS

    plan = lstmgraph.compile_spec("rnn", lstmgraph.Overrides(seed=np.int64(3), steps=np.int64(20)))
    assert (plan.init.seed, plan.training.steps) == (3, 20)
    assert type(Trainer(plan, trials=np.int64(2), engine="numpy").trials) is int
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["groups"][1]["size"] = np.int64(8)
    data["training"]["learning_rate"] = np.float32(0.5)
    assert lstmgraph.compile_plan(lstmgraph.spec_from_data(data)).n_parameters == 131
    data["training"]["task"] = {"name": "data_file", "path": Path("held.npz")}  # (a path: its text)
    with pytest.raises(SpecError, match="held.npz: no such file"):
        lstmgraph.spec_from_data(data)
    settings = grid(subject_of("hochreiter1997-adding-t100").experiment,
                    {"task.length": np.arange(100, 201, 100), "learning_rate": np.linspace(0.1, 0.2, 2)})
    assert [setting.label() for setting in settings][:2] == ["task.length=100, learning_rate=0.1",
                                                            "task.length=100, learning_rate=0.2"]
