"""A training run read back (`lstmgraph.training.trained`): what `plot` and `evaluate` both read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lstmgraph.engine import Simulator, load_weights
from lstmgraph.training.trained import TrainedRunError, load_run, read_metrics, sequence_source
from lstmgraph_cli.main import main

from conftest import SPECS


@pytest.fixture(scope="module")
def timing_run(tmp_path_factory) -> Path:
    """The timing net trained 60 steps, 2 trials."""
    out = tmp_path_factory.mktemp("trained") / "timing"
    result = CliRunner().invoke(main, ["train", str(SPECS / "gers2002_timing.yaml"), "--steps", "60", "--trials", "2",
                                       "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_a_run_reads_back_as_it_was_written(timing_run):
    run = load_run(timing_run)
    assert run.trials == 2 and run.weights_file == "weights.npz" and run.steps_trained >= 60
    stored = load_weights(timing_run / "weights.npz", run.plan)
    assert all(np.array_equal(run.weights[name], stored[name]) for name in stored)
    assert len(run.metrics) >= 1 and run.metrics.loss_trials.shape == (len(run.metrics), 2)


def test_read_metrics_of_an_empty_file(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("")
    metrics = read_metrics(tmp_path / "metrics.jsonl")
    assert len(metrics) == 0 and metrics.loss_trials is None


def test_a_file_given_as_the_run_directory_is_named_as_a_file(tmp_path):
    """A spec or weights file passed where the run's folder belongs exists: it is not 'no such'."""
    (tmp_path / "weights.npz").write_bytes(b"")
    with pytest.raises(TrainedRunError, match="weights.npz: is a file, not a run directory"):
        load_run(tmp_path / "weights.npz")
    with pytest.raises(TrainedRunError, match="absent: no such run directory"):
        load_run(tmp_path / "absent")


def test_a_run_directory_name_too_long_for_the_file_system_is_named(tmp_path):
    """Path.is_dir raised ENAMETOOLONG: evaluate and plot of a 300-byte name were tracebacks."""
    with pytest.raises(TrainedRunError, match="a name in the path is longer than the file system allows"):
        load_run(tmp_path / ("b" * 300))


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "spec.yaml").unlink(), "not a run directory"),
    (lambda run: (run / "weights.npz").write_bytes(b"not a zip"), "weights.npz"),
    (lambda run: (run / "metrics.jsonl").write_text('{"sequence": "x"}\n{}\n'), "metrics.jsonl"),
])
def test_a_damaged_run_is_a_trained_run_error_naming_the_file(timing_run, tmp_path, damage, message):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(timing_run, copy)
    damage(copy)
    with pytest.raises(TrainedRunError, match=message):
        load_run(copy)


def test_held_out_data_that_does_not_fit_the_net_is_refused(timing_run, tmp_path):
    run = load_run(timing_run)
    data = tmp_path / "held_out.npz"
    np.savez(data, inputs=np.zeros((5, run.plan.n_inputs + 1)), targets=np.zeros((5, 1)))
    with pytest.raises(TrainedRunError, match="held_out.npz"):
        sequence_source(run, Simulator(run.plan), seed=0, data=data)


def test_fresh_sequences_come_from_the_run_s_task_and_seed(timing_run):
    run = load_run(timing_run)
    first, again = (sequence_source(run, Simulator(run.plan), seed=3) for _ in range(2))
    assert first.kind == "task" and first.source == "periodic_function"
    one, other = first.draw(), again.draw()
    assert np.array_equal(one.inputs, other.inputs) and np.array_equal(one.targets, other.targets)


def test_a_reproduce_trial_folder_names_its_network_by_its_seed(timing_run, tmp_path):
    import json

    assert load_run(timing_run).seed is None and load_run(timing_run).trial_number(1) == 1
    trial = tmp_path / "trials" / "12"
    result = CliRunner().invoke(main, ["train", str(SPECS / "gers2002_timing.yaml"), "--steps", "20",
                                       "--out", str(trial), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads((trial / "summary.json").read_text())
    (trial / "summary.json").write_text(json.dumps({**summary, "seed": 12}))
    run = load_run(trial)
    assert run.seed == 12 and run.trial_number(0) == 12
    (trial / "summary.json").write_text(json.dumps({**summary, "seed": 3}))  # not the folder's name
    assert load_run(trial).seed is None


def test_an_unfinished_reproduce_trial_folder_says_so(tmp_path):
    """Before: OUT/trials/SEED of a trial still running (or stopped) holds only its checkpoint.npz,
    and was told it was not a run directory because reproduce writes a spec.yaml in OUT/trials/SEED."""
    trial = tmp_path / "trials" / "0"
    trial.mkdir(parents=True)
    (trial / "checkpoint.npz").write_bytes(b"")
    with pytest.raises(TrainedRunError, match="trials/0 holds a checkpoint.npz but no spec.yaml: a reproduce trial "
                                              "not finished"):
        load_run(trial)


def test_the_run_s_own_training_file_given_as_data_is_not_called_held_out(tmp_path):
    """`evaluate RUN --data TRAIN.npz` and `plot` called the run's own training file "held-out
    data"; run.json's sha256 of it says it is the training data, under any name or copy."""
    import shutil

    spec = tmp_path / "net.yaml"
    spec.write_text("version: 1\ngroups:\n  - {name: x, kind: input, size: 1}\n  - {name: y, kind: output, size: 1}\n"
                    "connections:\n  - {from: [x, bias], to: y}\ntraining: {learning_rate: 0.1, data: train.npz}\n")
    np.savez(tmp_path / "train.npz", inputs=np.arange(6.0), targets=np.ones(6), starts=np.array([0, 3]))
    result = CliRunner().invoke(main, ["train", str(spec), "--out", str(tmp_path / "run"), "--quiet"])
    assert result.exit_code == 0, result.output
    run = load_run(tmp_path / "run")
    shutil.copy(tmp_path / "train.npz", tmp_path / "copy.npz")
    np.savez(tmp_path / "other.npz", inputs=np.arange(3.0), targets=np.zeros(3))
    kinds = {name: sequence_source(run, Simulator(run.plan), 0, data=tmp_path / name).kind
             for name in ("train.npz", "copy.npz", "other.npz")}
    assert kinds == {"train.npz": "training data", "copy.npz": "training data", "other.npz": "held-out data"}
    result = CliRunner().invoke(main, ["evaluate", str(tmp_path / "run"), "--data", str(tmp_path / "train.npz")])
    assert result.exit_code == 0 and "of the run's training data" in result.output and "held-out" not in result.output.splitlines()[1]


@pytest.mark.parametrize("training", ["data: d.npz\n  epochs: 1", "task: {name: data_file, path: d.npz}\n  steps: 20"],
                         ids=["training data", "data_file task"])
def test_a_run_whose_own_data_changed_is_not_judged_on_it_as_its_training_data(tmp_path, training):
    """Before: evaluate and plot read whatever bytes lay at the run's data path and called them
    the sequences it trained on; only --resume compared them with run.json's sha256."""
    rng = np.random.default_rng(0)
    for name in ("d.npz", "other.npz"):
        inputs = rng.uniform(-1, 1, (40, 1))
        np.savez(tmp_path / name, inputs=inputs, targets=(inputs > 0) * 1.0, starts=np.arange(0, 40, 4))
    spec = (SPECS / "gers2002_timing.yaml").read_text().split("\ntraining:")[0]
    (tmp_path / "net.yaml").write_text(spec + f"\ntraining:\n  learning_rate: 0.1\n  {training}\n")
    trained = CliRunner().invoke(main, ["train", str(tmp_path / "net.yaml"), "--out", str(tmp_path / "run"), "--quiet"])
    assert trained.exit_code == 0, trained.output
    judged = CliRunner().invoke(main, ["evaluate", str(tmp_path / "run"), "--sequences", "3"])
    assert judged.exit_code == 0 and "training data" in judged.output, judged.output
    (tmp_path / "d.npz").write_bytes((tmp_path / "other.npz").read_bytes())
    for command in (["evaluate", str(tmp_path / "run"), "--sequences", "3"], ["plot", str(tmp_path / "run"), "-o",
                                                                            str(tmp_path / "p.png")]):
        refused = CliRunner().invoke(main, command)
        assert refused.exit_code == 2 and "the data changed; restore the run's own file" in refused.output, \
            refused.output
    held = CliRunner().invoke(main, ["evaluate", str(tmp_path / "run"), "--data", str(tmp_path / "d.npz")])
    assert held.exit_code == 0 and "held-out data" in held.output, held.output


def test_a_data_file_task_run_moved_without_its_file_is_still_judged_on_held_out_data(tmp_path):
    """Before: its spec.yaml did not compile without the training file, so neither evaluate
    --data nor plot --data could read the run (a run trained on `data:` could)."""
    rng = np.random.default_rng(0)
    for name in ("d.npz", "held.npz"):
        inputs = rng.uniform(-1, 1, (40, 1))
        np.savez(tmp_path / name, inputs=inputs, targets=(inputs > 0) * 1.0, starts=np.arange(0, 40, 4))
    np.savez(tmp_path / "wide.npz", inputs=np.zeros((4, 2)), targets=np.zeros((4, 1)))
    spec = (SPECS / "gers2002_timing.yaml").read_text().split("\ntraining:")[0]
    (tmp_path / "net.yaml").write_text(spec + "\ntraining:\n  learning_rate: 0.1\n  task: {name: data_file, path: d.npz}"
                                              "\n  steps: 20\n")
    trained = CliRunner().invoke(main, ["train", str(tmp_path / "net.yaml"), "--out", str(tmp_path / "run"), "--quiet"])
    assert trained.exit_code == 0, trained.output
    (tmp_path / "d.npz").unlink()
    held = CliRunner().invoke(main, ["evaluate", str(tmp_path / "run"), "--data", str(tmp_path / "held.npz")])
    assert held.exit_code == 0 and "held-out data" in held.output, held.output
    own = CliRunner().invoke(main, ["evaluate", str(tmp_path / "run")])
    assert own.exit_code == 2 and "d.npz: no such file" in own.output, own.output
    (tmp_path / "run" / "spec.yaml").write_text((tmp_path / "run" / "spec.yaml").read_text().replace("d.npz", "wide.npz"))
    wide = CliRunner().invoke(main, ["evaluate", str(tmp_path / "run")])  # (a hostile spec.yaml: not compiled away)
    assert wide.exit_code == 2 and "has 2 inputs and 1 outputs, the network 1 and 1" in wide.output, wide.output


def test_a_results_or_sweep_folder_given_as_a_run_is_told_where_its_trials_networks_are(tmp_path):
    """Before: `evaluate` or `plot` of a results folder (or a sweep's) said it was no run directory,
    naming only reproduce's OUT/trials/SEED, not where this folder keeps its trials' networks."""
    import shutil

    results = tmp_path / "results"
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "results" / "gers2002-gts-peephole", results)
    with pytest.raises(TrainedRunError, match=r"is a results folder, not a run directory: .* keeps none \(trials/\*\)"):
        load_run(results)
    trial = tmp_path / "sweep" / "settings" / "1" / "trials" / "3"
    trial.mkdir(parents=True)
    (tmp_path / "sweep" / "sweep.json").write_text("{}")
    (trial / "spec.yaml").write_text("")
    with pytest.raises(TrainedRunError, match=rf"is a sweep folder, not a run directory: .*e\.g\. {trial}$"):
        load_run(tmp_path / "sweep")
