"""`run_sweep`: the settings' trials on one set of workers, and sweep.json at a stop."""

from __future__ import annotations

import json
import signal

import pytest

from lstmgraph.experiments import find_experiment
from lstmgraph.experiments.schedule import run_experiment
from lstmgraph.experiments.stops import Stopped
from lstmgraph.experiments.sweep import Subject, grid
from lstmgraph.experiments.sweep_run import SweepStopped, run_sweep

ROW = find_experiment("gers2002-gts-peephole")


def test_a_stopped_sweep_s_document_keeps_every_setting_s_finished_trials(tmp_path):
    """Setting 1 finished by an earlier run, setting 0 stopped at its first trial: sweep.json
    lists setting 1's two trials (a stop once dropped the settings after the one running), and
    the same sweep then resumes to the document of a sweep run straight through."""
    settings = grid(ROW, [("learning_rate", [0.5, 0.2])], add_own=False)
    subject = Subject(ROW, "catalogue row", "the row's protocol")
    varied = {"learning_rate": [0.5, 0.2]}
    run_experiment(settings[1].experiment, 2, 1, tmp_path / "sweep" / settings[1].folder, 2000)

    def stop_in_setting_0(setting, row):
        if setting.index == 0:
            raise Stopped(signal.SIGTERM)

    with pytest.raises(SweepStopped):
        run_sweep(subject, settings, varied, 2, 1, tmp_path / "sweep", 2000, trial_done=stop_in_setting_0)
    stopped = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [entry["trials"] for entry in stopped["settings"]] == [1, 2]
    resumed = run_sweep(subject, settings, varied, 2, 1, tmp_path / "sweep", 2000)
    assert [entry["trials"] for entry in resumed["settings"]] == [2, 2]
    for setting in settings:  # every trial as it runs alone
        plan = setting.experiment.plan()
        alone = [setting.experiment.trial(plan, seed, 2000).run() for seed in (0, 1)]
        lines = (tmp_path / "sweep" / setting.folder / "trials.jsonl").read_text().splitlines()
        stored = [json.loads(line) for line in lines]
        strip = lambda rows: sorted(({k: v for k, v in row.items() if k not in ("seconds", "class")} for row in rows),
                                    key=lambda row: row["seed"])
        assert strip(stored) == strip(alone)
