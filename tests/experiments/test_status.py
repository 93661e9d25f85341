"""`folder_status`: what a results folder holds, read without running a trial."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from lstmgraph.arrays import npz_bytes
from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.folder import ResultsConflict, ResultsFolder
from lstmgraph.experiments.folder_settings import settings_digest
from lstmgraph.experiments.schedule import run_experiment
from lstmgraph.experiments.status import Checkpointed, FolderError, OtherExperiment, folder_status, seed_ranges
from lstmgraph.files import BUNDLED_SPECS

from conftest import invoke

BUDGET = 3000


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Trial 0 of a GTS row finished, trial 1 checkpointed part way (as a stopped run leaves
    it), trial 2 not started; and that checkpoint's trial."""
    out = tmp_path_factory.mktemp("results")
    experiment = find_experiment("gers2002-gts-peephole")
    run_experiment(experiment, 1, 1, out, budget_steps=BUDGET)
    trial = experiment.trial(experiment.plan(), 1, BUDGET)
    trial.advance(1000)
    assert not trial.done
    folder = ResultsFolder(out)
    folder.write_checkpoint(1, npz_bytes(trial.checkpoint()), settings_digest(folder.stored_settings()))
    return experiment, out, trial


def test_the_status_names_finished_checkpointed_and_waiting_trials(folder):
    experiment, out, trial = folder
    status = folder_status(experiment, 3, out, BUDGET, BUNDLED_SPECS)
    assert status.conflict is None
    assert status.results == json.loads((out / "results.json").read_text())
    assert status.checkpointed == [Checkpointed(1, trial.presented(), trial.steps_trained(), trial.seconds)]
    assert trial.presented() > 0 and trial.steps_trained() >= 1000
    assert status.waiting == [2]
    assert status.limit == experiment.protocol.max_streams
    assert status.as_dict()["resumes"] is True and status.holder is None
    # 3 of the row's 10 trials asked, the first stopped by the cap: no verdict, in the text and in --json alike.
    assert status.settled is None and status.as_dict()["settled_verdict"] is None
    assert status.verdict_so_far == status.as_dict()["verdict"] == \
        "none for a run of 3 of 10 trials, capped at 3,000 training steps"  # (asked; finished: a line above)
    # fewer trials asked: the checkpointed one is not among them
    assert folder_status(experiment, 1, out, BUDGET, BUNDLED_SPECS).checkpointed == []


def test_the_status_takes_a_folder_as_text_and_the_bundled_specs_by_default(folder):
    """Before: 'str' object has no attribute 'is_dir'; and ``specs`` had to be given, though
    `run_experiment` defaults it to the bundled specs."""
    experiment, out, _ = folder
    assert folder_status(experiment, 3, str(out), BUDGET) == folder_status(experiment, 3, out, BUDGET, BUNDLED_SPECS)


def test_the_status_says_why_a_command_with_other_settings_would_not_resume(folder):
    experiment, out, _ = folder
    status = folder_status(experiment, 3, out, BUDGET + 1, BUNDLED_SPECS)
    assert "run with other settings (budget_steps (--max-steps): 3,000 in the folder, 3,001 in this command)" in status.conflict
    assert not status.as_dict()["resumes"]
    other = experiment.with_protocol_options({"test_phase_stops_at_failure": True})
    conflict = folder_status(other, 3, out, BUDGET, BUNDLED_SPECS).conflict
    assert "protocol_settings.test_phase_stops_at_failure: false in the folder, true in this command" in conflict
    assert "protocol_options: not set in the folder" in conflict
    # the folder's cap judges its trials, not this command's (before: none, so the capped trial "differs")
    uncapped = folder_status(experiment, 3, out, None, BUNDLED_SPECS)
    assert uncapped.conflict is not None and uncapped.results["budget_steps"] == BUDGET
    assert uncapped.verdict_so_far == status.verdict_so_far == \
        "none for a run of 3 of 10 trials, capped at 3,000 training steps"


def test_a_missing_folder_or_one_no_run_wrote_is_named(tmp_path):
    experiment = find_experiment("gers2002-gts-peephole")
    with pytest.raises(FolderError, match="no such folder"):
        folder_status(experiment, 1, tmp_path / "absent", None, BUNDLED_SPECS)
    with pytest.raises(FolderError, match="no experiment.json"):
        folder_status(experiment, 1, tmp_path, None, BUNDLED_SPECS)


def test_seeds_print_as_ranges():
    assert seed_ranges([1, 2, 3, 7, 9, 10]) == "1-3, 7, 9-10"
    assert seed_ranges([4]) == "4"
    assert seed_ranges([]) == ""


def test_a_damaged_checkpoint_is_named(folder, tmp_path):
    experiment, out, _ = folder
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "trials" / "1" / "checkpoint.npz").write_bytes(b"not an archive")
    with pytest.raises(ResultsConflict, match=r"trials/1/checkpoint.npz: .*delete it"):
        folder_status(experiment, 3, copy, BUDGET, BUNDLED_SPECS)
    (copy / "trials" / "1" / "checkpoint.npz").write_bytes(npz_bytes({"weights": np.zeros(3)}))
    with pytest.raises(ResultsConflict, match=r"no trial/seed: not a trial's checkpoint"):
        folder_status(experiment, 3, copy, BUDGET, BUNDLED_SPECS)
    # trial 1's checkpoint copied to trial 2: refused, not resumed as trial 2
    shutil.copy(out / "trials" / "1" / "checkpoint.npz", copy / "trials" / "1" / "checkpoint.npz")
    (copy / "trials" / "2").mkdir()
    shutil.copy(out / "trials" / "1" / "checkpoint.npz", copy / "trials" / "2" / "checkpoint.npz")
    with pytest.raises(ResultsConflict, match=r"trials/2/checkpoint.npz: trial 1's checkpoint, not trial 2's"):
        folder_status(experiment, 3, copy, BUDGET, BUNDLED_SPECS)


def test_a_folder_of_another_experiment_s_trials_gives_no_verdict(folder):
    experiment, out, _ = folder
    other = find_experiment("gers2002-msd-f10-peephole")
    with pytest.raises(OtherExperiment, match=f'holds trials of "{experiment.name}", not of {other.name}, so it says '
                                              r"nothing of .* \(no verdict\)"):
        folder_status(other, 3, out, BUDGET, BUNDLED_SPECS)
    code, output = invoke("reproduce", other.name, "--status", "--max-steps", str(BUDGET), "--out", out)
    assert code == 2 and f"holds trials of \"{experiment.name}\"" in output and "verdict:" not in output


@pytest.mark.parametrize("budget", [BUDGET, BUDGET + 1])
def test_a_damaged_line_of_trials_jsonl_is_named_whatever_the_settings(folder, tmp_path, budget):
    experiment, out, _ = folder
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    rows = (copy / "trials.jsonl").read_text()
    (copy / "trials.jsonl").write_text("garbage{\n" + rows)
    with pytest.raises(ResultsConflict, match=r"trials.jsonl, line 1: not JSON") as refused:
        folder_status(experiment, 3, copy, budget, BUNDLED_SPECS)
    assert ("run with other settings" in str(refused.value)) == (budget != BUDGET)  # said after the line
