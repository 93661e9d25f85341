"""`run_sweep`: the settings' trials on one set of workers, sweep.json at a stop, and a folder
handed over by anyone: links below it and files no sweep wrote refused before anything is written."""

from __future__ import annotations

import json
import os
import signal

import pytest

from lstmgraph.errors import SpecError
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.folder import ResultsConflict
from lstmgraph.experiments.schedule import run_experiment
from lstmgraph.experiments.stops import Stopped
from lstmgraph.experiments.sweep import Subject, grid
from lstmgraph.experiments.sweep_run import SweepStopped, run_sweep, sweep_status

from conftest import invoke

ROW = find_experiment("gers2002-gts-peephole")


def test_a_stopped_sweep_s_document_keeps_every_setting_s_finished_trials(tmp_path):
    """Setting 1 finished by an earlier run, setting 0 stopped at its first trial: sweep.json
    lists setting 1's two trials (a stop once dropped the settings after the one running), and
    the same sweep then resumes to the document of a sweep run straight through."""
    settings = grid(ROW, [("learning_rate", [0.5, 0.2])], add_own=False)
    subject = Subject(ROW, "catalogue row", "the row's protocol")
    run_experiment(settings[1].experiment, 2, 1, tmp_path / "sweep" / settings[1].folder, 2000)

    def stop_in_setting_0(setting, row):
        if setting.index == 0:
            raise Stopped(signal.SIGTERM)

    with pytest.raises(SweepStopped):
        run_sweep(subject, settings, 2, 1, tmp_path / "sweep", 2000, trial_done=stop_in_setting_0)
    stopped = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [entry["trials"] for entry in stopped["settings"]] == [1, 2]
    resumed = run_sweep(subject, settings, 2, 1, tmp_path / "sweep", 2000)
    assert [entry["trials"] for entry in resumed["settings"]] == [2, 2]
    for setting in settings:  # every trial as it runs alone
        plan = setting.experiment.plan()
        alone = [setting.experiment.trial(plan, seed, 2000).run() for seed in (0, 1)]
        lines = (tmp_path / "sweep" / setting.folder / "trials.jsonl").read_text().splitlines()
        stored = [json.loads(line) for line in lines]
        strip = lambda rows: sorted(({k: v for k, v in row.items() if k not in ("seconds", "class")} for row in rows),
                                    key=lambda row: row["seed"])
        assert strip(stored) == strip(alone)


# -- no link followed below the sweep's folder, no foreign folder written --------------------------
def _subject_and_grid():
    settings = grid(ROW, [("learning_rate", [0.5, 0.2])], add_own=False)
    return Subject(ROW, "catalogue row", "the row's protocol"), settings


def _tree(folder) -> dict:
    return {path.relative_to(folder): path.is_symlink() for path in folder.rglob("*")}


@pytest.mark.parametrize("link", ["settings", "settings/1"])
def test_a_setting_s_folder_reached_through_a_link_is_refused_before_anything_is_written(tmp_path, link):
    subject, settings = _subject_and_grid()
    out, outside = tmp_path / "sweep", tmp_path / "outside"
    outside.mkdir()
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    (out / link).symlink_to(outside)
    before = _tree(out)
    with pytest.raises(ResultsConflict, match=f"sweep/{link}: is a symbolic link"):
        run_sweep(subject, settings, 1, 1, out, 2000)
    with pytest.raises(ResultsConflict, match=f"sweep/{link}: is a symbolic link"):
        sweep_status(settings, 1, out, 2000)
    code, output = invoke("sweep", ROW.name, "--vary", "learning_rate=0.5,0.2", "--no-own-setting", "--trials", "1",
                          "--max-steps", "2000", "--jobs", "1", "--out", out)
    assert code == 2 and f"{link}: is a symbolic link" in output
    assert list(outside.iterdir()) == [] and _tree(out) == before


def test_the_status_of_a_setting_holding_files_but_no_experiment_json_says_the_sweep_refuses_it(tmp_path):
    """Before: --status said the command resumes it; the sweep then refused the folder."""
    subject, settings = _subject_and_grid()
    out = tmp_path / "sweep"
    run_sweep(subject, settings, 1, 1, out, 2000)
    (out / "settings" / "1" / "experiment.json").unlink()
    listed = sweep_status(settings, 1, out, 2000)
    assert "no experiment.json" in listed["settings"][1]["conflict"]
    with pytest.raises(ResultsConflict, match="no experiment.json"):
        run_sweep(subject, settings, 1, 1, out, 2000)


def test_the_sweep_s_own_files_replace_a_link_and_a_hard_linked_lock_is_refused(tmp_path):
    subject, settings = _subject_and_grid()
    out, victim = tmp_path / "sweep", tmp_path / "victim"
    victim.write_text("precious\n")
    (out / "settings").mkdir(parents=True)
    for name in ("sweep.json", "sweep.csv", "sweep.png"):
        (out / name).symlink_to(victim)
    run_sweep(subject, settings[:1], 1, 1, out, 2000)
    assert victim.read_text() == "precious\n"
    assert not any((out / name).is_symlink() for name in ("sweep.json", "sweep.csv", "sweep.png"))
    os.link(victim, out / ".lock")
    with pytest.raises(ResultsConflict, match=r"\.lock: not a plain file of its own \(2 links\)"):
        run_sweep(subject, settings[:1], 1, 1, out, 2000)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("files", [["run.json", "checkpoint.npz"], ["experiment.json", "trials.jsonl"]])
def test_a_folder_of_files_no_sweep_wrote_is_refused_and_left_as_it_was(tmp_path, files):
    subject, settings = _subject_and_grid()
    out = tmp_path / "foreign"
    out.mkdir()
    for name in files:  # a training run's folder; a reproduce results folder
        (out / name).write_text("{}\n")
    before = _tree(out)
    with pytest.raises(ResultsConflict, match=r"foreign: holds .* but no sweep.json or settings/: not a folder "
                                              r"lstmgraph sweep writes.*choose an empty or new folder with --out"):
        run_sweep(subject, settings, 1, 1, out, 2000)
    assert _tree(out) == before  # (no lock left either)


def test_values_that_break_a_valid_spec_are_named_not_the_file_s_lines(tmp_path):
    """The file's lines would point at the entries the values changed: the setting's values and
    the fields are named instead. A spec that is itself invalid is reported at its own lines."""
    from lstmgraph.experiments.sweep import subject_of
    from lstmgraph.experiments.sweep_run import check_plans
    from lstmgraph.experiments.sweep_values import SweepError

    from conftest import SPECS

    spec = tmp_path / "cerg.yaml"
    spec.write_text((SPECS / "gers2000_cerg.yaml").read_text())
    subject = subject_of(str(spec), 1).experiment
    three = ("init.bias->memory.input_gate", [[1, 2, 3]])  # (its 4 gate units take 4 values)
    with pytest.raises(SweepError, match=r"input_gate=\[1, 2, 3\]\): these values make the net invalid") as raised:
        check_plans(grid(subject, [three]), subject)
    assert "cerg.yaml:" not in str(raised.value) and "3 values for the 4x1 weight" in str(raised.value)
    (tmp_path / "out").mkdir()  # --status refuses the same values (before: listed as "not started")
    with pytest.raises(SweepError, match="these values make the net invalid"):
        sweep_status(grid(subject, [three]), 1, tmp_path / "out", None, subject)
    spec.write_text(spec.read_text().replace("learning_rate:", "learning_rat:"))
    subject = subject_of(str(spec), 1).experiment
    with pytest.raises(SpecError, match=r"cerg.yaml:\d+:\d+: training.learning_rat: unknown key"):
        check_plans(grid(subject, [three]), subject)  # (the file's own error)


def test_a_variant_the_net_has_already_is_named_when_it_breaks_the_net():
    """CERG has output biases: variant.output_biases adds them twice. The spec's error alone said to
    rename a connection, advice that is wrong for a variant."""
    from lstmgraph.experiments.sweep import subject_of
    from lstmgraph.experiments.sweep_run import check_plans
    from lstmgraph.experiments.sweep_values import SweepError

    subject = subject_of("gers2000-cerg-forget").experiment
    with pytest.raises(SweepError, match="variant.output_biases alone makes the net invalid: does the net have what "
                                         "it adds already?"):
        check_plans(grid(subject, [("variant.output_biases", [True])], add_own=False), subject)


def test_a_sweep_from_python_takes_its_keys_from_the_grid_and_a_folder_as_text(tmp_path):
    """Before: run_sweep also took the keys and values, as the command had worked them out from
    the grid, and run_sweep and sweep_status failed on a folder given as text
    ('str' object has no attribute 'mkdir')."""
    subject = Subject(ROW, "catalogue row", "the row's protocol")
    settings = grid(ROW, [("learning_rate", [0.2, 0.3])])  # the own setting added
    out = str(tmp_path / "sweep")
    document = run_sweep(subject, settings, 1, 1, out, 2000)
    assert document["keys"] == {"learning_rate": [0.2, 0.3]}
    assert [entry["added"] for entry in document["settings"]] == [False, False, True]
    assert sweep_status(settings, 1, out, 2000)["finished"] == 3


def test_checks_passed_is_called_once_before_anything_is_written_and_never_for_a_refused_sweep(tmp_path):
    subject, settings = _subject_and_grid()
    out, seen = tmp_path / "sweep", []
    run_sweep(subject, settings[:1], 1, 1, out, 200, checks_passed=lambda: seen.append(out.exists()))
    assert seen == [False]
    with pytest.raises(ResultsConflict, match="200 in the folder, 300 in this command"):
        run_sweep(subject, settings[:1], 1, 1, out, 300, checks_passed=lambda: seen.append("again"))
    assert seen == [False]


def test_each_setting_s_plan_is_compiled_and_its_program_lowered_once_before_the_run(tmp_path, monkeypatch):
    """Before: `check_sweep` compiled and lowered every setting, then `run_experiments` checked
    each again (`check_run`): twice the checks' time, about 1.3 s more on a sweep of 1,000
    settings. Two settings of two nets (lowered once each however many settings share a net),
    the sweep run again over its finished folder: only the checks run in this process."""
    from lstmgraph.experiments.experiment import Experiment
    from lstmgraph.training import engines

    subject = Subject(ROW, "catalogue row", "the row's protocol")
    settings = grid(ROW, [("forget_gate_bias", [-2.0, 0.0])])
    run_sweep(subject, settings, 1, 1, tmp_path, 200)
    plans, lowered = [], []
    plan, lower = Experiment.plan, engines.lower
    monkeypatch.setattr(Experiment, "plan", lambda self, *args: plans.append(self.name) or plan(self, *args))
    monkeypatch.setattr(engines, "lower", lambda plan, **options: lowered.append(plan) or lower(plan, **options))
    again = run_sweep(subject, settings, 1, 1, tmp_path, 200)
    assert [entry["trials"] for entry in again["settings"]] == [1, 1]
    assert (len(plans), len(lowered)) == (2, 2)


def test_an_empty_grid_or_one_of_another_subject_is_refused_before_any_trial(tmp_path):
    """Before: every trial ran, then a KeyError (another subject's rows) or matplotlib's error
    (no setting), with no sweep.json."""
    from lstmgraph.experiments.sweep_values import SweepError

    subject, settings = _subject_and_grid()
    other = grid(find_experiment("hochreiter1997-adding-t100"), {"learning_rate": [0.1]})
    for wrong, words in (([], "the grid holds no setting"),
                         (other, "setting 0 .* is not of the subject gers2002-gts-peephole")):
        with pytest.raises(SweepError, match=words):
            run_sweep(subject, wrong, 1, 1, tmp_path / "sweep", 2000)
    assert not (tmp_path / "sweep").exists()
