"""`layouts`: which paths are the own files of a folder lstmgraph writes (a run directory, a
results folder, a sweep folder), which no command given a file to write replaces."""

from __future__ import annotations

import pytest

from lstmgraph.files import OutputError
from lstmgraph.layouts import RESULTS_FOLDER, RUN_DIRECTORY, SWEEP_FOLDER, check_not_own_file, own_file_replaced


def test_a_run_directory_s_own_files_are_named_through_links(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "spec.yaml").write_text("version: 1\n")
    (tmp_path / "link").symlink_to(run)
    assert own_file_replaced(run / "weights.npz") == (RUN_DIRECTORY, run.resolve())
    assert own_file_replaced(tmp_path / "link" / "metrics.csv") == (RUN_DIRECTORY, run.resolve())
    assert own_file_replaced(run / "record.npz") is None  # a file of one's own beside the run's
    assert own_file_replaced(tmp_path / "weights.npz") is None  # no run directory there
    (tmp_path / "weights.npz").symlink_to(run / "weights.npz")
    assert own_file_replaced(tmp_path / "weights.npz") is None  # the link is replaced, not written through


def test_a_results_folder_s_and_a_sweep_folder_s_own_files_are_refused(tmp_path):
    """Before: only a run directory's files were guarded, so ``run ... --outputs OUT/trials.csv``
    replaced a results folder's table, and ``--outputs DIR/sweep.csv`` a sweep's."""
    results, sweep = tmp_path / "results", tmp_path / "sweep"
    results.mkdir()
    (results / "experiment.json").write_text("{}")
    (sweep / "settings").mkdir(parents=True)
    for name in RESULTS_FOLDER.files:
        assert own_file_replaced(results / name) == (RESULTS_FOLDER, results.resolve())
    for name in SWEEP_FOLDER.files:
        assert own_file_replaced(sweep / name) == (SWEEP_FOLDER, sweep.resolve())
    assert own_file_replaced(sweep / "trials.csv") is None and own_file_replaced(results / "sweep.csv") is None
    with pytest.raises(OutputError, match="trials.csv of the results folder .*; choose another file"):
        check_not_own_file(results / "trials.csv")
    check_not_own_file(results / "mine.csv")
