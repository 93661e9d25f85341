"""`lstmgraph evaluate`: a trained run's figures equal those computed by hand from its weights
with `Simulator.run` on the same fresh sequences."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import lstmgraph
from lstmgraph.engine import Simulator, load_weights
from lstmgraph.experiments.catalogue import EXPERIMENTS
from lstmgraph.experiments.evaluate import evaluate_run
from lstmgraph.engine.forward import run_forward
from lstmgraph.success import SuccessTest, most_active_correct, within_tolerance
from lstmgraph.training.trained import load_run
from lstmgraph.tasks import make_task, task_success_test
from lstmgraph_cli.main import main

from conftest import SPECS


def _train(base: Path, name: str, *options: str) -> Path:
    out = base / name
    result = CliRunner().invoke(main, ["train", str(SPECS / f"{name}.yaml"), "--out", str(out), "--quiet",
                                       "--engine", "numpy", *options])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("evaluate")
    return {"timing": _train(base, "gers2002_timing", "--steps", "1500", "--trials", "2"),
            "gru": _train(base, "gru", "--steps", "1600")}


def _by_hand(run: Path, sequences: int, seed: int, reset: bool, correct_at):
    """Per trial: sequences correct, mean squared error per output, sequences before the first
    error; straight from weights.npz, the task and `Simulator.run`."""
    plan = lstmgraph.compile_spec(run / "spec.yaml")
    weights = load_weights(run / "weights.npz", plan)
    task = plan.training.task
    task = make_task(task.name, task.options)
    rng = np.random.default_rng(seed)
    sim = Simulator(plan)
    trials = next(iter(weights.values())).shape[0]
    state, outputs, targets, correct = None, [], [], []
    for _ in range(sequences):
        sequence = task.sample(rng)
        if reset or state is None:
            state = sim.zero_state(trials)
        records, state = sim.run(weights, sequence.inputs, state)
        y = np.stack([np.concatenate([r.y[u.name] for u in sim.outputs], axis=1) for r in records])
        outputs.append(y)
        targets.append(sequence.targets)
        correct.append([bool(correct_at(y[:, k], sequence.judged).all()) for k in range(trials)])
    y, t, correct = np.concatenate(outputs), np.concatenate(targets), np.array(correct)
    mse = [[float(np.nanmean((y[:, k, i] - t[:, i]) ** 2)) for i in range(t.shape[1])] for k in range(trials)]
    first_wrong = [int(np.argmin(correct[:, k])) if not correct[:, k].all() else sequences for k in range(trials)]
    return correct.sum(axis=0).tolist(), mse, first_wrong


def test_timing_net_population_matches_a_computation_by_hand(runs):
    result = evaluate_run(runs["timing"], sequences=30, seed=4)
    used = result.success_test
    assert (used.test, used.basis) == task_success_test("periodic_function") and used.tolerance == 0.3
    assert not result.reset and result.sequences == 30 and len(result.trials) == 2
    correct, mse, first_wrong = _by_hand(runs["timing"], 30, 4, reset=False,
                                         correct_at=lambda y, t: within_tolerance(y, t, 0.3))
    assert [trial.correct for trial in result.trials] == correct
    assert [trial.sequences_before_error for trial in result.trials] == first_wrong
    for trial, expected in zip(result.trials, mse):
        np.testing.assert_allclose(list(trial.mse_per_output.values()), expected, rtol=1e-12)
        assert trial.wrong == 30 - trial.correct


def test_gru_matches_a_computation_by_hand_and_the_cli_prints_it(runs):
    result = evaluate_run(runs["gru"], sequences=200, seed=1)
    assert result.reset and result.success_test.kind == "most_active"
    correct, mse, _ = _by_hand(runs["gru"], 200, 1, reset=True, correct_at=most_active_correct)
    (trial,) = result.trials
    assert trial.correct == correct[0] and trial.sequences_before_error is None
    np.testing.assert_allclose(list(trial.mse_per_output.values()), mse[0], rtol=1e-12)
    assert list(trial.mse_per_output) == ["class[0]", "class[1]", "class[2]"]
    cli = CliRunner().invoke(main, ["evaluate", str(runs["gru"]), "--sequences", "200", "--seed", "1", "--json"])
    assert cli.exit_code == 0, cli.output
    data = json.loads(cli.output)
    assert data["trials"][0]["correct"] == correct[0] and data["success_test"]["kind"] == "most_active"
    table = CliRunner().invoke(main, ["evaluate", str(runs["gru"]), "--sequences", "200", "--seed", "1"])
    assert f"{correct[0]}  " in table.output and "class[2]" in table.output


def test_an_unfinished_run_is_judged_by_its_checkpoint(runs, tmp_path):
    copy = tmp_path / "unfinished"
    shutil.copytree(runs["gru"], copy)
    (copy / "weights.npz").unlink()
    result = evaluate_run(copy, sequences=20)
    assert result.weights_file == "checkpoint.npz"
    assert result.trials == evaluate_run(runs["gru"], sequences=20).trials  # the final checkpoint


def _as_reproduce_trial(run: Path, out: Path, settings: str) -> Path:
    """``run`` placed as trial 0 of a `reproduce` folder ``out`` whose experiment.json is ``settings``."""
    shutil.copytree(run, out / "trials" / "0")
    (out / "experiment.json").write_text(settings)
    return out / "trials" / "0"


def test_a_reproduce_trial_is_judged_by_its_rows_protocol_options(runs, tmp_path):
    row = EXPERIMENTS["gers2002-pfg-cos-f10-peephole"].with_protocol_options({"tolerance": 0.6})
    trial = _as_reproduce_trial(runs["timing"], tmp_path / "out", json.dumps(row.describe()))
    result = evaluate_run(trial, sequences=30, seed=4)
    assert result.success_test.tolerance == 0.6 and "gers2002-pfg-cos-f10-peephole, tolerance 0.6, as" in \
        result.success_test.basis
    correct, _, first_wrong = _by_hand(runs["timing"], 30, 4, reset=False,
                                       correct_at=lambda y, t: within_tolerance(y, t, 0.6))
    assert [trial.correct for trial in result.trials] == correct
    assert [trial.sequences_before_error for trial in result.trials] == first_wrong
    assert correct != _by_hand(runs["timing"], 30, 4, reset=False,
                               correct_at=lambda y, t: within_tolerance(y, t, 0.3))[0]  # the test mattered


def test_a_reproduce_trial_is_judged_by_the_protocol_its_folder_records(runs, tmp_path):
    """The folder's record (protocol_settings) is the authority; a folder from before it kept one
    is judged by the row's protocol with its recorded options."""
    row = EXPERIMENTS["gers2002-pfg-cos-f10-peephole"]
    recorded = row.describe()
    recorded["protocol_settings"] = {**recorded["protocol_settings"], "tolerance": 0.6}
    trial = _as_reproduce_trial(runs["timing"], tmp_path / "new", json.dumps(recorded))
    assert evaluate_run(trial, sequences=3).success_test.tolerance == 0.6
    former = {key: value for key, value in row.with_protocol_options({"tolerance": 0.5}).describe().items()
              if key != "protocol_settings"}
    trial = _as_reproduce_trial(runs["timing"], tmp_path / "former", json.dumps(former))
    assert evaluate_run(trial, sequences=3).success_test.tolerance == 0.5


def test_a_trial_of_a_row_no_longer_in_the_catalogue_is_judged_by_its_tasks_test(runs, tmp_path):
    trial = _as_reproduce_trial(runs["timing"], tmp_path / "out", json.dumps({"name": "gone-row"}))
    used = evaluate_run(trial, sequences=3).success_test
    assert (used.test, used.basis) == task_success_test("periodic_function")


def test_a_fifo_for_a_trial_s_summary_json_exits_2_without_opening_it(runs, tmp_path):
    trial = _as_reproduce_trial(runs["timing"], tmp_path / "out", json.dumps({"name": "gone-row"}))
    (trial / "summary.json").unlink(missing_ok=True)
    os.mkfifo(trial / "summary.json")  # opening it would block until a writer came
    result = CliRunner().invoke(main, ["evaluate", str(trial), "--sequences", "3"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {trial / 'summary.json'}: is not a regular file"), result.output


@pytest.mark.parametrize("settings,message", [
    ("{not json", "cannot read the trial's settings: "),
    ("[]", "expected a JSON object of settings; restore it, or rerun the lstmgraph reproduce"),
    (json.dumps({"name": "gers2002-pfg-cos-f10-peephole", "protocol_options": {"tolerans": 0.1}}),
     "has no setting 'tolerans' (did you mean 'tolerance'?)"),
    (json.dumps({"name": "gers2002-pfg-cos-f10-peephole", "protocol_settings": {"kind": "streams"}}),
     "protocol_settings: the streams protocol's settings are tolerance"),
])
def test_a_damaged_experiment_json_beside_a_trial_exits_2_naming_it(runs, tmp_path, settings, message):
    trial = _as_reproduce_trial(runs["timing"], tmp_path / "out", settings)
    result = CliRunner().invoke(main, ["evaluate", str(trial), "--sequences", "3"])
    assert result.exit_code == 2 and "experiment.json" in result.output and message in result.output
    assert "--out" not in result.output  # (evaluate has none)


@pytest.mark.parametrize("args,message", [
    (["/nonexistent/run"], "no such run directory"),
    (["--sequences", "0", "RUN"], "0 is not in the range"),
])
def test_bad_requests_exit_2(runs, args, message):
    args = [str(runs["gru"]) if a == "RUN" else a for a in args]
    result = CliRunner().invoke(main, ["evaluate", *args])
    assert result.exit_code == 2 and message in result.output


# -- held-out data (--data) ---------------------------------------------------------------------

def _data_file(path: Path, seed: int, count: int) -> Path:
    """``count`` sequences of the rnn spec's task (recall_first), in the training data format."""
    task = make_task("recall_first", {"n_inputs": 4, "n_classes": 3, "length": 8})
    rng = np.random.default_rng(seed)
    sequences = [task.sample(rng) for _ in range(count)]
    starts = np.cumsum([0] + [len(s.inputs) for s in sequences[:-1]])
    np.savez(path, inputs=np.concatenate([s.inputs for s in sequences]),
             targets=np.concatenate([s.targets for s in sequences]), starts=starts)
    return path


@pytest.fixture(scope="module")
def data_run(tmp_path_factory) -> tuple[Path, Path]:
    """A run trained from a data file (rnn, no task behind it), and a held-out file."""
    base = tmp_path_factory.mktemp("data")
    train = _data_file(base / "train.npz", 1, 40)
    run = _train(base, "rnn", "--data", str(train), "--steps", "400")
    return run, _data_file(base / "held_out.npz", 2, 25)


def test_held_out_data_is_judged_and_named(data_run):
    run, held_out = data_run
    result = evaluate_run(run, data=held_out)
    assert result.data == "held-out data" and result.source == str(held_out)
    assert result.sequences == 25 and result.steps == 200
    plan = lstmgraph.compile_spec(run / "spec.yaml")
    weights = load_weights(run / "weights.npz", plan)
    sim = Simulator(plan)
    with np.load(held_out) as arrays:
        inputs, targets, starts = arrays["inputs"], arrays["targets"], list(arrays["starts"]) + [200]
    correct = 0
    for a, b in zip(starts[:-1], starts[1:]):  # activations reset before each sequence
        records, _ = sim.run(weights, inputs[a:b])
        y = np.stack([r.y["class"][0] for r in records])
        correct += bool(within_tolerance(y, targets[a:b], 0.49).all())
    assert result.trials[0].correct == correct
    table = CliRunner().invoke(main, ["evaluate", str(run), "--data", str(held_out)])
    assert table.exit_code == 0, table.output
    assert f"25 sequences of held-out data {held_out}, 200 steps" in table.output
    assert "fresh" not in table.output and "seed" not in table.output


def test_the_fallback_test_on_targets_other_than_0_or_1_says_it_says_little(data_run, tmp_path):
    """|error| < 0.49 on regression targets passes a net that learned nothing: 100 % correct at chance MSE."""
    run, held_out = data_run
    assert "not all 0 or 1" not in evaluate_run(run, data=held_out).success_test.describe()
    with np.load(held_out) as arrays:
        inputs, targets, starts = arrays["inputs"], arrays["targets"], arrays["starts"]
    np.savez(tmp_path / "real.npz", inputs=inputs, targets=targets * 0.3 + 0.2, starts=starts)
    described = evaluate_run(run, data=tmp_path / "real.npz").success_test.describe()
    assert described.endswith("these targets are not all 0 or 1, so the test says little: give --tolerance X, or "
                              "read the mean squared error)")
    assert "not all 0 or 1" not in evaluate_run(run, data=tmp_path / "real.npz",
                                                test=SuccessTest("tolerance", 0.1)).success_test.describe()


def test_without_data_a_data_run_says_it_judges_its_training_data(data_run):
    run, _ = data_run
    result = evaluate_run(run)
    assert result.data == "training data" and result.source == "train.npz" and result.sequences == 40
    table = CliRunner().invoke(main, ["evaluate", str(run)])
    assert "40 sequences of the run's training data train.npz (not held out)" in table.output
    assert "judge held-out data with --data FILE" in table.output and "fresh" not in table.output


def test_held_out_data_of_a_task_run_is_judged_by_the_tasks_test(runs, tmp_path):
    held_out = _data_file(tmp_path / "held_out.npz", 3, 10)
    result = evaluate_run(runs["gru"], data=held_out)  # gru: the same recall_first task as rnn
    assert result.data == "held-out data" and result.success_test.kind == "most_active"
    assert result.sequences == 10


@pytest.mark.parametrize("content,message", [
    (b"not an archive", "not an .npz archive"),
    (None, "missing array 'targets'"),
    ("wrong width", "'inputs' has shape (8, 2); the network needs (steps, 4)"),
])
def test_a_bad_data_file_exits_2_naming_it(data_run, tmp_path, content, message):
    run, _ = data_run
    path = tmp_path / "bad.npz"
    if content is None:
        np.savez(path, inputs=np.zeros((8, 4)))
    elif content == "wrong width":
        np.savez(path, inputs=np.zeros((8, 2)), targets=np.zeros((8, 3)))
    else:
        path.write_bytes(content)
    result = CliRunner().invoke(main, ["evaluate", str(run), "--data", str(path)])
    assert result.exit_code == 2 and f"error: {path}: " in result.output and message in result.output


def test_a_long_evaluation_reports_its_progress_and_the_same_figures(runs):
    """2,560 sequences of a 1997 row take a minute: a report every `REPORT_EVERY` sequences."""
    from lstmgraph.experiments.evaluate import REPORT_EVERY

    reports = []
    result = evaluate_run(runs["gru"], sequences=250, seed=1, progress=reports.append)
    assert [(r.unit, r.done, r.total) for r in reports] == [("sequences", REPORT_EVERY * k, 250) for k in (1, 2)]
    assert result == evaluate_run(runs["gru"], sequences=250, seed=1)


def test_a_reproduce_trial_is_numbered_by_its_seed(runs, tmp_path):
    trial = tmp_path / "out" / "trials" / "7"
    shutil.copytree(runs["gru"], trial)
    summary = json.loads((trial / "summary.json").read_text())
    (trial / "summary.json").write_text(json.dumps({**summary, "seed": 7}))
    (result,) = evaluate_run(trial, sequences=5).trials
    assert result.trial == 7 and evaluate_run(runs["gru"], sequences=5).trials[0].trial == 0
    table = CliRunner().invoke(main, ["evaluate", str(trial), "--sequences", "5"])
    assert table.exit_code == 0 and "trial 7" in table.output and "trial 0" not in table.output
    moved = tmp_path / "elsewhere"  # the same files in a folder not named by the seed: no reproduce trial
    shutil.copytree(trial, moved)
    assert evaluate_run(moved, sequences=5).trials[0].trial == 0


def test_a_data_file_sequence_too_long_to_keep_exits_2_naming_it(data_run, tmp_path, monkeypatch):
    """A sequence's steps are kept while it is judged: one whose values would pass the limit is
    refused before it runs, naming the file and the sequence."""
    run, held_out = data_run
    monkeypatch.setattr("lstmgraph.engine.simulator.MAX_RECORD_BYTES", 1 << 16)
    path = tmp_path / "long.npz"
    np.savez(path, inputs=np.zeros((400, 4)), targets=np.zeros((400, 3)), starts=np.array([0, 8]))
    result = CliRunner().invoke(main, ["evaluate", str(run), "--data", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith(f"error: {path}: sequence 2: 392 steps of 1 network of rnn would keep")


def test_a_tolerance_given_judges_every_output_within_it_instead_of_the_task_s_test(runs):
    """Regression data has no right side of 0.5: --tolerance sets the test (before: fixed at 0.49)."""
    run = runs["timing"]
    strict = evaluate_run(run, sequences=3, test=SuccessTest("tolerance", 1e-9))
    loose = evaluate_run(run, sequences=3, test=SuccessTest("tolerance", 10.0))
    assert strict.success_test.describe().startswith("every judged output within 1e-09 of its target")
    assert "(as asked, not the task's)" in strict.success_test.describe()
    assert [t.correct for t in strict.trials] == [0, 0] and [t.correct for t in loose.trials] == [3, 3]
    assert evaluate_run(run, sequences=3).success_test.tolerance != 1e-9
    result = CliRunner().invoke(main, ["evaluate", str(run), "--sequences", "3", "--tolerance", "10"])
    assert result.exit_code == 0 and "within 10.0 of its target" in result.output
    for bad in ("0", "nan", "inf"):
        result = CliRunner().invoke(main, ["evaluate", str(run), "--tolerance", bad])
        assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit), bad


def test_most_active_asked_judges_a_classifier_by_its_largest_output(data_run):
    """Before: a softmax classifier trained on a data file was judged only by a tolerance
    (0.49), which a right but unsure output (0.45 on its class) fails."""
    run, held_out = data_run
    result = CliRunner().invoke(main, ["evaluate", str(run), "--data", str(held_out), "--success", "most_active"])
    assert result.exit_code == 0 and "the outputs whose target is 1 more active than every other" in result.output
    judged = evaluate_run(run, data=held_out, test=SuccessTest("most_active"))
    with np.load(held_out) as arrays:
        starts = list(arrays["starts"]) + [len(arrays["inputs"])]
        trained = load_run(run)
        forward = run_forward(trained.plan, trained.weights, arrays["inputs"], np.array(starts[:-1]))
        right = most_active_correct(forward.outputs, arrays["targets"])
    expected = sum(bool(right[a:b].all()) for a, b in zip(starts, starts[1:]))
    assert judged.trials[0].correct == expected
    both = CliRunner().invoke(main, ["evaluate", str(run), "--success", "most_active", "--tolerance", "0.3"])
    assert both.exit_code == 2 and "--tolerance is for --success tolerance" in both.output


def test_most_active_is_refused_for_a_net_of_one_output(runs):
    """Before: the timing net's one output was always "the most active": every sequence right."""
    refused = CliRunner().invoke(main, ["evaluate", str(runs["timing"]), "--sequences", "2", "--success", "most_active"])
    assert refused.exit_code == 2 and "gers2002_timing has one output, which most_active cannot compare" in refused.output


def test_a_data_file_task_run_with_a_test_path_is_judged_on_its_held_out_sequences(tmp_path):
    import yaml

    train, held = _data_file(tmp_path / "train.npz", 1, 40), _data_file(tmp_path / "held.npz", 2, 25)
    data = yaml.safe_load((SPECS / "rnn.yaml").read_text())
    data["training"] = {**data["training"], "task": {"name": "data_file", "path": "train.npz", "test_path": "held.npz"},
                        "steps": 100}
    (tmp_path / "net.yaml").write_text(yaml.safe_dump(data))
    run = tmp_path / "run"
    trained = CliRunner().invoke(main, ["train", str(tmp_path / "net.yaml"), "--out", str(run), "--quiet"])
    assert trained.exit_code == 0, trained.output
    result = evaluate_run(run, sequences=30)
    assert result.data == "held-out data" and result.source == str(held) and result.sequences == 30
    assert str(train) not in result.source


def test_a_data_file_task_run_on_a_file_of_one_sequence_is_judged_on_it_once(tmp_path):
    """Before: the one sequence was run again for every one of --sequences (1,000 by default: some
    40 minutes for a 20,000-step recording), and the output claimed 1,000 sequences."""
    inputs = np.random.default_rng(0).uniform(-1, 1, (50, 1))
    np.savez(tmp_path / "one.npz", inputs=inputs, targets=(inputs > 0) * 1.0)
    spec = (SPECS / "gers2002_timing.yaml").read_text().split("\ntraining:")[0]
    (tmp_path / "net.yaml").write_text(spec + "\ntraining:\n  learning_rate: 0.1\n  task: {name: data_file, path: one.npz}"
                                              "\n  steps: 10\n")
    trained = CliRunner().invoke(main, ["train", str(tmp_path / "net.yaml"), "--out", str(tmp_path / "run"), "--quiet"])
    assert trained.exit_code == 0, trained.output
    result = evaluate_run(tmp_path / "run", sequences=20)
    assert (result.sequences, result.steps, result.data) == (1, 50, "training data")
    plotted = CliRunner().invoke(main, ["plot", str(tmp_path / "run"), "-o", str(tmp_path / "p.png")])
    assert plotted.exit_code == 0 and "200 steps" in plotted.output, plotted.output  # (the sequence again and again)


def test_a_seed_or_count_of_sequences_out_of_range_is_named(runs):
    """Before: seed=None drew other sequences at each call (not reproducible), seed=-1 met
    numpy's error, sequences=1.5 a TypeError."""
    from lstmgraph.experiments.evaluate import EvaluationError

    for arguments, words in (({"seed": None}, "seed must be a whole number, not NoneType"),
                             ({"seed": -1}, "seed must be at least 0"),
                             ({"sequences": 1.5}, "sequences must be a whole number, not float")):
        with pytest.raises(EvaluationError, match=words):
            evaluate_run(runs["timing"], **arguments)
