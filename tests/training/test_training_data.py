"""`data`: a data file's place restored from a checkpoint is one of its own places."""

from __future__ import annotations

import numpy as np
import pytest

from lstmgraph.training.data import DataFile


def test_a_data_file_goes_back_only_to_a_place_among_its_sequences(tmp_path):
    np.savez(tmp_path / "d.npz", inputs=np.zeros((6, 1)), targets=np.zeros((6, 1)), starts=np.array([0, 2, 4]))
    data = DataFile(tmp_path / "d.npz", 1, 1, epochs=2)
    for _ in range(4):
        data.next()
    place = data.state()
    again = DataFile(tmp_path / "d.npz", 1, 1, epochs=2)
    again.restore(place)
    assert (again.epoch, again.index) == (1, 1) and again.next() is again.sequences[1]
    for wrong in ('{"epoch": 0, "index": 4}', '{"epoch": -1, "index": 0}', '{"epoch": 0.5, "index": 0}',
                  '{"epoch": 0, "index": 1e9}', '{"epoch": 0}'):
        with pytest.raises((ValueError, KeyError)):
            DataFile(tmp_path / "d.npz", 1, 1, epochs=2).restore(wrong)


def test_a_csv_given_as_training_data_is_told_what_a_data_file_holds(tmp_path):
    """Before: `train --data d.csv` said only "not an .npz archive (truncated, corrupted or another
    kind of file)", as for a damaged archive; `run --inputs` takes CSV, training data does not."""
    from lstmgraph.training.data import DataError

    (tmp_path / "d.csv").write_text("x,y\n1,0\n0,1\n")
    with pytest.raises(DataError, match=r"d.csv: not an .npz archive.*; training data is an .npz archive of "
                                        r"'inputs', 'targets' and optional 'starts'"):
        DataFile(tmp_path / "d.csv", 1, 1, epochs=1)
    (tmp_path / "d.npz").write_bytes(b"PK damaged")
    with pytest.raises(DataError, match=r"d.npz: not an .npz archive \(truncated, corrupted or another kind of file\)$"):
        DataFile(tmp_path / "d.npz", 1, 1, epochs=1)


def test_a_data_file_that_cannot_be_read_is_named_with_the_spec_line_or_option_that_gave_it(tmp_path):
    """Before: `train` said only "nope.npz: no such file", naming neither the spec's line nor --data."""
    from conftest import invoke

    spec = tmp_path / "net.yaml"
    spec.write_text("version: 1\ngroups:\n  - {name: x, kind: input, size: 1}\n  - {name: y, kind: output, size: 1}\n"
                    "connections:\n  - {from: x, to: y}\ntraining:\n  learning_rate: 0.1\n  data: nope.npz\n")
    code, output = invoke("train", spec, "--out", tmp_path / "run")
    assert code == 2 and f"\n{spec}:9:3: training.data: {tmp_path / 'nope.npz'}: no such file" in output
    code, output = invoke("train", spec, "--data", tmp_path / "other.npz", "--out", tmp_path / "run")
    assert code == 2 and "training.data (with --data " in output


def test_a_data_file_of_scalars_or_raw_members_is_refused_by_name(tmp_path):
    """Before: 0-d inputs reached len() (TypeError), and a zip member not named .npy reached the
    checks as raw bytes (AttributeError): tracebacks, not the file's problem."""
    from lstmgraph.training.data import DataError
    import zipfile

    np.savez(tmp_path / "scalar.npz", inputs=np.float64(1), targets=np.float64(1))
    with pytest.raises(DataError, match=r"'inputs' has shape \(\); the network needs \(steps, 4\)"):
        DataFile(tmp_path / "scalar.npz", 4, 1, epochs=1)
    with zipfile.ZipFile(tmp_path / "raw.npz", "w") as archive:
        archive.writestr("inputs", b"\x00" * 16)
        archive.writestr("targets.npy", b"")
    with pytest.raises(DataError, match=r"raw.npz: holds 'inputs', not an array \(.npy\)"):
        DataFile(tmp_path / "raw.npz", 1, 1, epochs=1)


def test_targets_a_cross_entropy_loss_cannot_train_on_are_refused_for_train_and_the_task(tmp_path):
    """Before: the rnn net (softmax outputs, cross_entropy) trained without a word on targets such
    as [-1, 2, 5], where the loss has no minimum and its weights run off."""
    import yaml
    import lstmgraph
    from lstmgraph.errors import SpecError
    from lstmgraph.training import start_run
    from lstmgraph.training.data import DataError
    from conftest import SPECS

    targets = np.tile(np.eye(3), (2, 1))
    targets[4] = [-1.0, 2.0, 5.0]
    np.savez(tmp_path / "bad.npz", inputs=np.zeros((6, 4)), targets=targets, starts=np.array([0, 3]))
    np.savez(tmp_path / "good.npz", inputs=np.zeros((6, 4)), targets=np.tile(np.eye(3), (2, 1)))
    spec = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    for name, data in (("data.yaml", {"data": "bad.npz"}), ("task.yaml", {"task": {"name": "data_file", "path": "bad.npz"}})):
        spec["training"] = {"learning_rate": 0.1, "loss": "cross_entropy", "steps": 6, **data}
        (tmp_path / name).write_text(yaml.safe_dump(spec))
    words = r"cross_entropy needs targets in \[0, 1\] \(probabilities\); .targets.\[4, 0\] is -1"
    for name in ("data.yaml", "task.yaml"):  # (refused when the spec is compiled: by validate too)
        with pytest.raises(SpecError, match=r"bad.npz: " + words) as refused:
            lstmgraph.compile_spec(tmp_path / name)
        assert refused.value.problems[0].path == ("training", "data" if name == "data.yaml" else "task")
    (tmp_path / "good.yaml").write_text((tmp_path / "data.yaml").read_text().replace("bad.npz", "good.npz"))
    plan = lstmgraph.compile_spec(tmp_path / "good.yaml")
    (tmp_path / "good.npz").write_bytes((tmp_path / "bad.npz").read_bytes())  # (changed since: train refuses it)
    with pytest.raises(DataError, match=r"good.yaml:\d+:\d+: training.data: .*good.npz: " + words):
        start_run(plan, tmp_path / "run").train()
    np.savez(tmp_path / "good.npz", inputs=np.zeros((6, 4)), targets=np.tile(np.eye(3), (2, 1)))
    (tmp_path / "data.yaml").write_text((tmp_path / "data.yaml").read_text().replace("bad.npz", "good.npz"))
    start_run(lstmgraph.compile_spec(tmp_path / "data.yaml"), tmp_path / "good").train()


def test_a_group_s_target_given_for_some_units_only_is_refused_under_cross_entropy(tmp_path):
    """Before: a row of NaN and values under one output group was skipped whole by the
    cross_entropy loss, without a word (it judges a group's units together)."""
    import yaml
    import lstmgraph
    from lstmgraph.errors import SpecError
    from conftest import SPECS

    targets = np.tile(np.eye(3), (2, 1))
    targets[4, 1] = np.nan
    np.savez(tmp_path / "half.npz", inputs=np.zeros((6, 4)), targets=targets)
    spec = yaml.safe_load((SPECS / "rnn.yaml").read_text())  # (its output group: softmax)
    for activation in ("softmax", "logistic"):
        spec["groups"][-1]["activation"] = activation
        spec["training"] = {"learning_rate": 0.1, "data": "half.npz", "loss": "cross_entropy"}
        (tmp_path / "net.yaml").write_text(yaml.safe_dump(spec))
        with pytest.raises(SpecError, match=r"half.npz: 'targets' row 4 holds NaN \(no target\) for some units of "
                                            r"the output group 'class'") as refused:
            lstmgraph.compile_spec(tmp_path / "net.yaml")
        assert refused.value.problems[0].path == ("training", "data")
        spec["training"]["loss"] = "sum_of_squares"  # (each unit judged alone: fine)
        (tmp_path / "net.yaml").write_text(yaml.safe_dump(spec))
        lstmgraph.compile_spec(tmp_path / "net.yaml")
    spec["training"]["loss"] = "cross_entropy"
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(spec))
    targets[4] = np.nan  # (no target for the whole group: fine)
    np.savez(tmp_path / "half.npz", inputs=np.zeros((6, 4)), targets=targets)
    assert lstmgraph.compile_spec(tmp_path / "net.yaml").training.data.endswith("half.npz")
