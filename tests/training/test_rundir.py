"""`training.rundir`'s helpers that need no training: which paths are a run directory's own files."""

from __future__ import annotations

from lstmgraph.training.rundir import run_file_replaced


def test_a_run_directory_s_own_files_are_named_through_links(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "spec.yaml").write_text("version: 1\n")
    (tmp_path / "link").symlink_to(run)
    assert run_file_replaced(run / "weights.npz") == run.resolve()
    assert run_file_replaced(tmp_path / "link" / "metrics.csv") == run.resolve()
    assert run_file_replaced(run / "record.npz") is None  # a file of one's own beside the run's
    assert run_file_replaced(tmp_path / "weights.npz") is None  # no run directory there
    (tmp_path / "weights.npz").symlink_to(run / "weights.npz")
    assert run_file_replaced(tmp_path / "weights.npz") is None  # the link is replaced, not written through
