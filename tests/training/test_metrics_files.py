"""A run's metrics files read back (lstmgraph/training/metrics_files.py): rows checked, a reader
beside a running trainer, the CSV cut back to a checkpoint's rows, links refused."""

from __future__ import annotations

import json

import pytest

from lstmgraph.training.metrics_files import MetricsFileError, checked_rows, csv_kept, read_metric_rows


def _row(sequence: int) -> dict:
    return {"sequence": sequence, "step": 5 * sequence, "loss": 0.5, "loss_per_step": 0.1, "learning_rate": 0.1}


def test_a_reader_beside_a_trainer_leaves_out_a_cut_last_line_that_a_resume_refuses(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes((json.dumps(_row(1)) + "\n" + json.dumps(_row(2))[:-3]).encode())
    assert read_metric_rows(path, trials=1) == [_row(1)]
    with pytest.raises(MetricsFileError, match="metrics.jsonl: line 2 is cut short"):
        checked_rows(path, None, 1)


def test_rows_are_kept_with_their_lines_and_a_row_out_of_place_is_named(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [json.dumps(_row(number)) + "\n" for number in (1, 2, 3)]
    path.write_text("".join(lines))
    rows, kept = checked_rows(path, 2, 1)
    assert rows == [_row(1), _row(2)] and kept == [line.encode() for line in lines[:2]]
    path.write_text(lines[0] + lines[2])
    with pytest.raises(MetricsFileError, match="line 2: 'sequence' is 3, expected 2"):
        checked_rows(path, None, 1)


def test_the_csv_is_cut_back_to_the_checkpoint_s_rows_and_too_few_are_refused(tmp_path):
    path = tmp_path / "metrics.csv"
    header = b"sequence,step,loss,loss_per_step,learning_rate\n"
    rows = [f"{number},{5 * number},0.5,0.1,0.1\n".encode() for number in (1, 2, 3)]
    path.write_bytes(header + b"".join(rows))
    assert csv_kept(path, 2) == header + rows[0] + rows[1]
    with pytest.raises(MetricsFileError, match="holds 3 rows, but the checkpoint was written after 5"):
        csv_kept(path, 5)


def test_a_metrics_file_that_is_a_link_is_refused_and_a_missing_one_has_no_rows(tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(json.dumps(_row(1)) + "\n")
    (tmp_path / "metrics.jsonl").symlink_to(target)
    with pytest.raises(MetricsFileError, match="symbolic link"):
        read_metric_rows(tmp_path / "metrics.jsonl")
    assert read_metric_rows(tmp_path / "missing.jsonl") == []
